"""The CRI proto and its committed stubs: regenerating changes nothing, and every declared message,
field, enum value and call is the public CRI v1 API's (k8s.io/cri-api pkg/apis/runtime/v1/api.proto),
so the client talks to any CRI v1 runtime on the wire."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, ServiceDescriptor

from kubeletapi.runtime.cri.gen import api_pb2

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "cri_proto.sh"
GEN = Path("kubeletapi/runtime/cri/gen")
STUBS = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py")

# The public CRI v1 API, as checked against k8s.io/cri-api pkg/apis/runtime/v1/api.proto (the copy in
# kubernetes/kubernetes staging/src/k8s.io/cri-api): for each message the project declares, every field
# of the public message as `name=number:type`, where `*type` is repeated and `map` is map<string, string>.
# Public fields kubeletapi leaves undeclared are listed too (PodSandboxConfig.port_mappings=5,
# ContainerConfig.devices=8, ...): their numbers must never be reused for something else.
PUBLIC_MESSAGES = """
Int64Value  value=1:int64
UInt64Value  value=1:uint64
KeyValue  key=1:string value=2:string
ImageSpec  image=1:string annotations=2:map user_specified_image=18:string runtime_handler=19:string
    image_ref=20:string
NamespaceOption  network=1:NamespaceMode pid=2:NamespaceMode ipc=3:NamespaceMode target_id=4:string
    userns_options=5:UserNamespace
LinuxContainerResources  cpu_period=1:int64 cpu_quota=2:int64 cpu_shares=3:int64 memory_limit_in_bytes=4:int64
    oom_score_adj=5:int64 cpuset_cpus=6:string cpuset_mems=7:string hugepage_limits=8:*HugepageLimit
    unified=9:map memory_swap_limit_in_bytes=10:int64
VersionRequest  version=1:string
VersionResponse  version=1:string runtime_name=2:string runtime_version=3:string runtime_api_version=4:string
StatusRequest  verbose=1:bool
RuntimeCondition  type=1:string status=2:bool reason=3:string message=4:string
RuntimeStatus  conditions=1:*RuntimeCondition
StatusResponse  status=1:RuntimeStatus info=2:map runtime_handlers=3:*RuntimeHandler features=4:RuntimeFeatures
NetworkConfig  pod_cidr=1:string
RuntimeConfig  network_config=1:NetworkConfig
UpdateRuntimeConfigRequest  runtime_config=1:RuntimeConfig
UpdateRuntimeConfigResponse
DNSConfig  servers=1:*string searches=2:*string options=3:*string
LinuxSandboxSecurityContext  namespace_options=1:NamespaceOption selinux_options=2:SELinuxOption
    run_as_user=3:Int64Value readonly_rootfs=4:bool supplemental_groups=5:*int64 privileged=6:bool
    seccomp_profile_path=7:string run_as_group=8:Int64Value seccomp=9:SecurityProfile apparmor=10:SecurityProfile
    supplemental_groups_policy=11:SupplementalGroupsPolicy
LinuxPodSandboxConfig  cgroup_parent=1:string security_context=2:LinuxSandboxSecurityContext sysctls=3:map
    overhead=4:LinuxContainerResources resources=5:LinuxContainerResources
PodSandboxMetadata  name=1:string uid=2:string namespace=3:string attempt=4:uint32
PodSandboxConfig  metadata=1:PodSandboxMetadata hostname=2:string log_directory=3:string dns_config=4:DNSConfig
    port_mappings=5:*PortMapping labels=6:map annotations=7:map linux=8:LinuxPodSandboxConfig
    windows=9:WindowsPodSandboxConfig
RunPodSandboxRequest  config=1:PodSandboxConfig runtime_handler=2:string
RunPodSandboxResponse  pod_sandbox_id=1:string
StopPodSandboxRequest  pod_sandbox_id=1:string
StopPodSandboxResponse
RemovePodSandboxRequest  pod_sandbox_id=1:string
RemovePodSandboxResponse
PodSandboxStatusRequest  pod_sandbox_id=1:string verbose=2:bool
PodIP  ip=1:string
PodSandboxNetworkStatus  ip=1:string additional_ips=2:*PodIP
Namespace  options=2:NamespaceOption
LinuxPodSandboxStatus  namespaces=1:Namespace
PodSandboxStatus  id=1:string metadata=2:PodSandboxMetadata state=3:PodSandboxState created_at=4:int64
    network=5:PodSandboxNetworkStatus linux=6:LinuxPodSandboxStatus labels=7:map annotations=8:map
    runtime_handler=9:string
PodSandboxStatusResponse  status=1:PodSandboxStatus info=2:map containers_statuses=3:*ContainerStatus
    timestamp=4:int64
PodSandboxStateValue  state=1:PodSandboxState
PodSandboxFilter  id=1:string state=2:PodSandboxStateValue label_selector=3:map
ListPodSandboxRequest  filter=1:PodSandboxFilter
PodSandbox  id=1:string metadata=2:PodSandboxMetadata state=3:PodSandboxState created_at=4:int64 labels=5:map
    annotations=6:map runtime_handler=7:string
ListPodSandboxResponse  items=1:*PodSandbox
Mount  container_path=1:string host_path=2:string readonly=3:bool selinux_relabel=4:bool
    propagation=5:MountPropagation uidMappings=6:*IDMapping gidMappings=7:*IDMapping recursive_read_only=8:bool
    image=9:ImageSpec image_sub_path=10:string
LinuxContainerSecurityContext  capabilities=1:Capability privileged=2:bool namespace_options=3:NamespaceOption
    selinux_options=4:SELinuxOption run_as_user=5:Int64Value run_as_username=6:string readonly_rootfs=7:bool
    supplemental_groups=8:*int64 apparmor_profile=9:string seccomp_profile_path=10:string no_new_privs=11:bool
    run_as_group=12:Int64Value masked_paths=13:*string readonly_paths=14:*string seccomp=15:SecurityProfile
    apparmor=16:SecurityProfile supplemental_groups_policy=17:SupplementalGroupsPolicy
LinuxContainerConfig  resources=1:LinuxContainerResources security_context=2:LinuxContainerSecurityContext
ContainerMetadata  name=1:string attempt=2:uint32
ContainerConfig  metadata=1:ContainerMetadata image=2:ImageSpec command=3:*string args=4:*string
    working_dir=5:string envs=6:*KeyValue mounts=7:*Mount devices=8:*Device labels=9:map annotations=10:map
    log_path=11:string stdin=12:bool stdin_once=13:bool tty=14:bool linux=15:LinuxContainerConfig
    windows=16:WindowsContainerConfig CDI_devices=17:*CDIDevice stop_signal=18:Signal
CreateContainerRequest  pod_sandbox_id=1:string config=2:ContainerConfig sandbox_config=3:PodSandboxConfig
CreateContainerResponse  container_id=1:string
StartContainerRequest  container_id=1:string
StartContainerResponse
StopContainerRequest  container_id=1:string timeout=2:int64
StopContainerResponse
RemoveContainerRequest  container_id=1:string
RemoveContainerResponse
ContainerStateValue  state=1:ContainerState
ContainerFilter  id=1:string state=2:ContainerStateValue pod_sandbox_id=3:string label_selector=4:map
ListContainersRequest  filter=1:ContainerFilter
Container  id=1:string pod_sandbox_id=2:string metadata=3:ContainerMetadata image=4:ImageSpec image_ref=5:string
    state=6:ContainerState created_at=7:int64 labels=8:map annotations=9:map image_id=10:string
ListContainersResponse  containers=1:*Container
ContainerStatusRequest  container_id=1:string verbose=2:bool
ContainerStatus  id=1:string metadata=2:ContainerMetadata state=3:ContainerState created_at=4:int64
    started_at=5:int64 finished_at=6:int64 exit_code=7:int32 image=8:ImageSpec image_ref=9:string
    reason=10:string message=11:string labels=12:map annotations=13:map mounts=14:*Mount log_path=15:string
    resources=16:ContainerResources image_id=17:string user=18:ContainerUser stop_signal=19:Signal
ContainerStatusResponse  status=1:ContainerStatus info=2:map
ReopenContainerLogRequest  container_id=1:string
ReopenContainerLogResponse
ExecSyncRequest  container_id=1:string cmd=2:*string timeout=3:int64
ExecSyncResponse  stdout=1:bytes stderr=2:bytes exit_code=3:int32
ExecRequest  container_id=1:string cmd=2:*string tty=3:bool stdin=4:bool stdout=5:bool stderr=6:bool
    audit_request_id=7:string
ExecResponse  url=1:string
AttachRequest  container_id=1:string stdin=2:bool tty=3:bool stdout=4:bool stderr=5:bool
    audit_request_id=6:string
AttachResponse  url=1:string
PortForwardRequest  pod_sandbox_id=1:string port=2:*int32
PortForwardResponse  url=1:string
ImageFilter  image=1:ImageSpec
ListImagesRequest  filter=1:ImageFilter
Image  id=1:string repo_tags=2:*string repo_digests=3:*string size=4:uint64 uid=5:Int64Value username=6:string
    spec=7:ImageSpec pinned=8:bool
ListImagesResponse  images=1:*Image
ImageStatusRequest  image=1:ImageSpec verbose=2:bool
ImageStatusResponse  image=1:Image info=2:map
AuthConfig  username=1:string password=2:string auth=3:string server_address=4:string identity_token=5:string
    registry_token=6:string
PullImageRequest  image=1:ImageSpec auth=2:AuthConfig sandbox_config=3:PodSandboxConfig
PullImageResponse  image_ref=1:string
RemoveImageRequest  image=1:ImageSpec
RemoveImageResponse
ImageFsInfoRequest
FilesystemIdentifier  mountpoint=1:string
FilesystemUsage  timestamp=1:int64 fs_id=2:FilesystemIdentifier used_bytes=3:UInt64Value inodes_used=4:UInt64Value
ImageFsInfoResponse  image_filesystems=1:*FilesystemUsage container_filesystems=2:*FilesystemUsage
CpuUsage  timestamp=1:int64 usage_core_nano_seconds=2:UInt64Value usage_nano_cores=3:UInt64Value psi=4:PsiStats
MemoryUsage  timestamp=1:int64 working_set_bytes=2:UInt64Value available_bytes=3:UInt64Value
    usage_bytes=4:UInt64Value rss_bytes=5:UInt64Value page_faults=6:UInt64Value major_page_faults=7:UInt64Value
    psi=8:PsiStats
ContainerAttributes  id=1:string metadata=2:ContainerMetadata labels=3:map annotations=4:map
ContainerStats  attributes=1:ContainerAttributes cpu=2:CpuUsage memory=3:MemoryUsage
    writable_layer=4:FilesystemUsage swap=5:SwapUsage io=6:IoUsage
ContainerStatsRequest  container_id=1:string
ContainerStatsResponse  stats=1:ContainerStats
ContainerStatsFilter  id=1:string pod_sandbox_id=2:string label_selector=3:map
ListContainerStatsRequest  filter=1:ContainerStatsFilter
ListContainerStatsResponse  stats=1:*ContainerStats
PodSandboxAttributes  id=1:string metadata=2:PodSandboxMetadata labels=3:map annotations=4:map
NetworkInterfaceUsage  name=1:string rx_bytes=2:UInt64Value rx_errors=3:UInt64Value tx_bytes=4:UInt64Value
    tx_errors=5:UInt64Value
NetworkUsage  timestamp=1:int64 default_interface=2:NetworkInterfaceUsage interfaces=3:*NetworkInterfaceUsage
ProcessUsage  timestamp=1:int64 process_count=2:UInt64Value
LinuxPodSandboxStats  cpu=1:CpuUsage memory=2:MemoryUsage network=3:NetworkUsage process=4:ProcessUsage
    containers=5:*ContainerStats io=6:IoUsage
PodSandboxStats  attributes=1:PodSandboxAttributes linux=2:LinuxPodSandboxStats windows=3:WindowsPodSandboxStats
PodSandboxStatsRequest  pod_sandbox_id=1:string
PodSandboxStatsResponse  stats=1:PodSandboxStats
PodSandboxStatsFilter  id=1:string label_selector=2:map
ListPodSandboxStatsRequest  filter=1:PodSandboxStatsFilter
ListPodSandboxStatsResponse  stats=1:*PodSandboxStats
"""

PUBLIC_ENUMS: dict[str, dict[str, int]] = {
    "NamespaceMode": {"POD": 0, "CONTAINER": 1, "NODE": 2, "TARGET": 3},
    "PodSandboxState": {"SANDBOX_READY": 0, "SANDBOX_NOTREADY": 1},
    "ContainerState": {"CONTAINER_CREATED": 0, "CONTAINER_RUNNING": 1, "CONTAINER_EXITED": 2, "CONTAINER_UNKNOWN": 3},
}

# The public unary calls (each takes <Name>Request and answers <Name>Response). The public API's
# streaming calls (StreamPodSandboxes, GetContainerEvents, ...) are left out: kubeletapi makes none.
PUBLIC_UNARY_CALLS: dict[str, set[str]] = {
    "RuntimeService": {
        "Version", "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
        "CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ListContainers",
        "ContainerStatus", "UpdateContainerResources", "ReopenContainerLog", "ExecSync", "Exec", "Attach",
        "PortForward", "ContainerStats", "ListContainerStats", "PodSandboxStats", "ListPodSandboxStats",
        "UpdateRuntimeConfig", "Status", "CheckpointContainer", "ListMetricDescriptors", "ListPodSandboxMetrics",
        "RuntimeConfig", "UpdatePodSandboxResources",
    },
    "ImageService": {"ListImages", "ImageStatus", "PullImage", "RemoveImage", "ImageFsInfo"},
}

# Wire facts kubeletapi relies on: these fields must be declared, with these numbers.
PINNED: dict[str, dict[str, int]] = {
    "VersionResponse": {"version": 1, "runtime_name": 2, "runtime_version": 3, "runtime_api_version": 4},
    # port_mappings=5 is public but not declared (the agent maps no host ports through the runtime)
    "PodSandboxConfig": {"metadata": 1, "hostname": 2, "log_directory": 3, "dns_config": 4, "labels": 6,
                         "annotations": 7, "linux": 8},
    # devices=8 is public but not declared (the agent passes no host devices)
    "ContainerConfig": {"metadata": 1, "image": 2, "command": 3, "args": 4, "working_dir": 5, "envs": 6,
                        "mounts": 7, "labels": 9, "annotations": 10, "log_path": 11, "stdin": 12,
                        "stdin_once": 13, "tty": 14, "linux": 15},
    "ContainerStatus": {"id": 1, "metadata": 2, "state": 3, "created_at": 4, "started_at": 5, "finished_at": 6,
                        "exit_code": 7, "image": 8, "image_ref": 9, "reason": 10, "message": 11, "labels": 12,
                        "annotations": 13, "mounts": 14, "log_path": 15},
    "LinuxContainerResources": {"cpu_period": 1, "cpu_quota": 2, "cpu_shares": 3, "memory_limit_in_bytes": 4,
                                "oom_score_adj": 5},
    "ContainerStats": {"attributes": 1, "cpu": 2, "memory": 3, "writable_layer": 4},
    "CpuUsage": {"timestamp": 1, "usage_core_nano_seconds": 2, "usage_nano_cores": 3},
    "MemoryUsage": {"timestamp": 1, "working_set_bytes": 2, "available_bytes": 3, "usage_bytes": 4,
                    "rss_bytes": 5, "page_faults": 6, "major_page_faults": 7},
    "ContainerStatusResponse": {"status": 1, "info": 2},
    "StopContainerRequest": {"container_id": 1, "timeout": 2},
    "ExecSyncRequest": {"container_id": 1, "cmd": 2, "timeout": 3},
    "ExecSyncResponse": {"stdout": 1, "stderr": 2, "exit_code": 3},
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string", FieldDescriptor.TYPE_BYTES: "bytes", FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32", FieldDescriptor.TYPE_INT64: "int64", FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
}


def _public_messages() -> dict[str, dict[str, tuple[int, str]]]:
    messages: dict[str, dict[str, tuple[int, str]]] = {}
    name = ""
    for line in PUBLIC_MESSAGES.strip().splitlines():
        words = line.split()
        if not line.startswith(" "):
            name, words = words[0], words[1:]
            messages[name] = {}
        for word in words:
            field, rest = word.split("=")
            number, kind = rest.split(":")
            messages[name][field] = (int(number), kind)
    return messages


PUBLIC = _public_messages()


def _kind(field: FieldDescriptor) -> str:
    """A declared field's type in PUBLIC_MESSAGES' notation."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        assert (_kind(key), _kind(value)) == ("string", "string"), f"{field.full_name}: only map<string, string>"
        return "map"
    if field.message_type is not None:
        kind = field.message_type.name
    elif field.enum_type is not None:
        kind = field.enum_type.name
    else:
        kind = _SCALARS[field.type]
    return f"*{kind}" if field.is_repeated else kind


def _message(name: str) -> Descriptor:
    return api_pb2.DESCRIPTOR.message_types_by_name[name]


def test_regenerating_the_stubs_changes_nothing(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert result.returncode == 0, f"scripts/cri_proto.sh failed:\n{result.stdout}{result.stderr}"
    stale = [name for name in STUBS
             if (tmp_path / GEN / name).read_bytes() != (REPO / GEN / name).read_bytes()]
    assert not stale, (f"{', '.join(stale)} in {GEN} differ from what kubeletapi/runtime/cri/api.proto generates: "
                       "run `make proto` and commit the result")


def test_package_and_services() -> None:
    descriptor = api_pb2.DESCRIPTOR
    assert descriptor.package == "runtime.v1"
    assert set(descriptor.services_by_name) == {"RuntimeService", "ImageService"}
    assert descriptor.services_by_name["RuntimeService"].full_name == "runtime.v1.RuntimeService"
    assert descriptor.services_by_name["ImageService"].full_name == "runtime.v1.ImageService"


@pytest.mark.parametrize("message", sorted(PINNED))
def test_pinned_wire_facts(message: str) -> None:
    declared = {field.name: field.number for field in _message(message).fields}
    missing = {name: number for name, number in PINNED[message].items() if name not in declared}
    assert not missing, f"runtime.v1.{message} does not declare {missing}"
    wrong = {name: (declared[name], number) for name, number in PINNED[message].items() if declared[name] != number}
    assert not wrong, f"runtime.v1.{message}: field numbers (declared, public) differ: {wrong}"


@pytest.mark.parametrize("message", sorted(api_pb2.DESCRIPTOR.message_types_by_name))
def test_declared_fields_are_the_public_apis(message: str) -> None:
    """Every declared field exists in the public message with the same number and type (nothing invented)."""
    assert message in PUBLIC, f"runtime.v1.{message} is not a public CRI v1 message (or missing from PUBLIC)"
    public = PUBLIC[message]
    for field in _message(message).fields:
        assert field.name in public, f"runtime.v1.{message}.{field.name} is not in the public CRI v1 API"
        assert (field.number, _kind(field)) == public[field.name], (
            f"runtime.v1.{message}.{field.name}: declared {field.number}:{_kind(field)}, "
            f"public {public[field.name][0]}:{public[field.name][1]}"
        )


def test_every_public_message_listed_is_declared() -> None:
    """PUBLIC lists exactly the declared messages (a stale entry would hide a dropped message)."""
    assert set(PUBLIC) == set(api_pb2.DESCRIPTOR.message_types_by_name)


@pytest.mark.parametrize("enum", sorted(api_pb2.DESCRIPTOR.enum_types_by_name))
def test_declared_enums_are_the_public_apis(enum: str) -> None:
    descriptor: EnumDescriptor = api_pb2.DESCRIPTOR.enum_types_by_name[enum]
    assert enum in PUBLIC_ENUMS, f"runtime.v1.{enum} is not a public CRI v1 enum"
    assert {value.name: value.number for value in descriptor.values} == PUBLIC_ENUMS[enum]


@pytest.mark.parametrize("service", ["RuntimeService", "ImageService"])
def test_declared_calls_are_public_unary_calls(service: str) -> None:
    descriptor: ServiceDescriptor = api_pb2.DESCRIPTOR.services_by_name[service]
    for method in descriptor.methods:
        assert method.name in PUBLIC_UNARY_CALLS[service], f"runtime.v1.{service}/{method.name} is not public"
        assert not method.client_streaming and not method.server_streaming, method.full_name
        assert (method.input_type.full_name, method.output_type.full_name) == (
            f"runtime.v1.{method.name}Request", f"runtime.v1.{method.name}Response"), method.full_name
