"""The core/v1 Pod, as the kubelet reads it from manifests and serves it on /pods.

Field names, field order and omitempty rules follow k8s.io/api core/v1 types.go. Python code uses
snake_case names; the wire uses the camelCase JSON names (aliases). Decoding is strict: a value of
the wrong JSON type is an error, and so is a key that is not a v1 field of its object.

Objects kubeletapi acts on are modelled field by field. Valid v1 fields it does not act on
(affinity, security contexts, tolerations, most volume sources ...) are declared too, as opaque
JSON kept verbatim, and their keys are checked against the tables in `fields`.

`to_wire()` encodes like Go's encoding/json with the struct tags of types.go: fields in struct
order, `omitempty` fields left out when empty, pointers left out only when nil, structs always
present, map keys sorted, times as RFC 3339 in UTC with second precision, zero times as null.
"""

from __future__ import annotations

import re
import typing
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, WithJsonSchema

from kubeletapi.api import fields
from kubeletapi.api.gowire import GoStruct, format_time, unwrap
from kubeletapi.api.quantity import ZERO, QuantityValue

# --- scalar types --------------------------------------------------------------------------------

_ACRONYMS = {"ip": "IP", "ips": "IPs", "id": "ID", "pid": "PID", "ipc": "IPC", "fqdn": "FQDN", "api": "API", "io": "IO"}
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def wire_name(name: str) -> str:
    """The JSON name of a field: camelCase, with Go's initialisms (hostIP, imageID, downwardAPI)."""
    first, *rest = name.rstrip("_").split("_")
    return first + "".join(_ACRONYMS.get(part, part.capitalize()) for part in rest)


def parse_time(value: Any) -> datetime:
    """metav1.Time from JSON: an RFC 3339 string (or a datetime); naive datetimes are UTC."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and (match := _RFC3339.match(value)):
        day, clock, frac, zone = match.groups()
        zone = "+00:00" if zone in "Zz" else zone
        return datetime.fromisoformat(f"{day}T{clock}.{(frac or '0')[:6]:0<6}{zone}")
    raise ValueError("must be an RFC 3339 date-time such as 2006-01-02T15:04:05Z")


def _int_or_string(value: Any) -> int | str:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError("must be an integer or a string")


def _null_values_empty(value: Any) -> Any:
    # A JSON null inside a map[string]string decodes to "" in Go.
    return {k: "" if v is None else v for k, v in value.items()} if isinstance(value, dict) else value


def _str_map(value: Any) -> dict[str, str]:
    value = _null_values_empty(value)
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("must be a map of strings to strings")
    return dict(value)


Time = Annotated[
    datetime,
    PlainValidator(parse_time),
    PlainSerializer(format_time, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
IntOrString = Annotated[
    int | str, PlainValidator(_int_or_string), WithJsonSchema({"oneOf": [{"type": "integer"}, {"type": "string"}]})
]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
StrMap = Annotated[dict[str, str], PlainValidator(_str_map), WithJsonSchema({"type": "object"})]
ResourceList = dict[str, QuantityValue]
Opaque = dict[str, Any]  # an unmodelled v1 object, kept verbatim
OpaqueList = list[Any]  # a list of unmodelled v1 objects, kept verbatim


# --- encoding ------------------------------------------------------------------------------------

_CHILDREN: dict[type, dict[str, Any]] = {}  # a cache: each object's modelled and opaque children


class WireModel(GoStruct):
    """Base of every v1 object: strict decoding, unknown keys rejected, Go-style `to_wire()`
    (gowire.GoStruct: `_always` names the fields without omitempty, or struct-valued)."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        alias_generator=wire_name,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )
    _opaque: ClassVar[dict[str, str]] = {}  # JSON name -> table in fields.SCHEMAS for its keys

    def _set_keys(self, *names: str) -> list[str]:
        """JSON names, in field order, of those of `names` whose value is not None."""
        return [key for name, key, _, _ in self.wire_rules() if name in names and getattr(self, name) is not None]

    @classmethod
    def opaque_errors(cls, raw: Any, path: str = "") -> list[str]:
        """Unknown keys inside the opaque fields of `raw` (undecoded JSON of this object)."""
        if not isinstance(raw, dict):
            return []
        errors: list[str] = []
        children = cls._children()
        for key, value in raw.items():
            if key in children:
                sub = f"{path}.{key}" if path else key
                target = children[key]
                if isinstance(target, str):
                    errors.extend(fields.unknown_fields(target, value, sub))
                else:
                    errors.extend(_opaque_errors_in(target, value, sub))
        return errors

    @classmethod
    def _children(cls) -> dict[str, Any]:
        children = _CHILDREN.get(cls)
        if children is None:
            children = dict(cls._opaque)
            for info in cls.model_fields.values():
                key = info.alias or ""
                if key not in children and (model := _model_in(info.annotation)) is not None:
                    children[key] = model
            _CHILDREN[cls] = children
        return children


def _model_in(tp: Any) -> tuple[str, type[WireModel]] | None:
    tp = unwrap(tp)
    origin = typing.get_origin(tp)
    if origin in (list, dict):
        inner = unwrap(typing.get_args(tp)[-1])
        if isinstance(inner, type) and issubclass(inner, WireModel):
            return ("list" if origin is list else "map", inner)
        return None
    if isinstance(tp, type) and issubclass(tp, WireModel):
        return ("one", tp)
    return None


def _opaque_errors_in(target: tuple[str, type[WireModel]], value: Any, path: str) -> list[str]:
    shape, model = target
    if shape == "list" and isinstance(value, list):
        return [err for i, item in enumerate(value) for err in model.opaque_errors(item, f"{path}[{i}]")]
    if shape == "map" and isinstance(value, dict):
        return [err for k, item in value.items() for err in model.opaque_errors(item, f"{path}[{k}]")]
    return model.opaque_errors(value, path) if shape == "one" else []





# --- metadata ------------------------------------------------------------------------------------


class ObjectMeta(WireModel):
    # creationTimestamp is `omitempty,omitzero` since apimachinery 0.34: a pod without one (a static
    # pod, /runningpods) leaves it out, as the 1.34 kubelet does (the oracle compares them).
    _opaque = {"ownerReferences": "OwnerReference", "managedFields": "ManagedFieldsEntry"}

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    self_link: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: Int64 = 0
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: StrMap = Field(default_factory=dict)
    annotations: StrMap = Field(default_factory=dict)
    owner_references: OpaqueList = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    managed_fields: OpaqueList = Field(default_factory=list)


class ListMeta(WireModel):
    self_link: str = ""
    resource_version: str = ""
    continue_: str = Field("", alias="continue")
    remaining_item_count: Int64 | None = None


# --- containers ----------------------------------------------------------------------------------


class ContainerPort(WireModel):
    _always = frozenset({"container_port"})

    name: str = ""
    host_port: Int32 = 0
    container_port: Int32 = 0
    protocol: str = ""
    host_ip: str = ""


class ObjectFieldSelector(WireModel):
    _always = frozenset({"field_path"})

    api_version: str = ""
    field_path: str = ""


class ResourceFieldSelector(WireModel):
    _always = frozenset({"resource", "divisor"})

    container_name: str = ""
    resource: str = ""
    divisor: QuantityValue = Field(default_factory=lambda: ZERO)


class KeySelector(WireModel):
    """ConfigMapKeySelector and SecretKeySelector (the same JSON shape)."""

    _always = frozenset({"key"})

    name: str = ""
    key: str = ""
    optional: bool | None = None


class EnvVarSource(WireModel):
    _opaque = {"fileKeyRef": "FileKeySelector"}

    field_ref: ObjectFieldSelector | None = None
    resource_field_ref: ResourceFieldSelector | None = None
    config_map_key_ref: KeySelector | None = None
    secret_key_ref: KeySelector | None = None
    file_key_ref: Opaque | None = None

    def sources(self) -> list[str]:
        """JSON names of the sources that are set (exactly one is valid)."""
        return self._set_keys(*type(self).model_fields)


class EnvVar(WireModel):
    _always = frozenset({"name"})

    name: str = ""
    value: str = ""
    value_from: EnvVarSource | None = None


class EnvSourceRef(WireModel):
    """ConfigMapEnvSource and SecretEnvSource (the same JSON shape)."""

    name: str = ""
    optional: bool | None = None


class EnvFromSource(WireModel):
    prefix: str = ""
    config_map_ref: EnvSourceRef | None = None
    secret_ref: EnvSourceRef | None = None


class ResourceClaim(WireModel):
    _always = frozenset({"name"})

    name: str = ""
    request: str = ""


class ResourceRequirements(WireModel):
    limits: ResourceList = Field(default_factory=dict)
    requests: ResourceList = Field(default_factory=dict)
    claims: list[ResourceClaim] = Field(default_factory=list)


class VolumeMount(WireModel):
    _always = frozenset({"name", "mount_path"})

    name: str = ""
    read_only: bool = False
    recursive_read_only: str | None = None
    mount_path: str = ""
    sub_path: str = ""
    mount_propagation: str | None = None
    sub_path_expr: str = ""


class ExecAction(WireModel):
    command: list[str] = Field(default_factory=list)


class HTTPHeader(WireModel):
    _always = frozenset({"name", "value"})

    name: str = ""
    value: str = ""


class HTTPGetAction(WireModel):
    _always = frozenset({"port"})

    path: str = ""
    port: IntOrString = 0
    host: str = ""
    scheme: str = ""
    http_headers: list[HTTPHeader] = Field(default_factory=list)

    def url(self, container: Container, pod_ip: str) -> str:
        """The URL the kubelet requests (probes and hooks alike): the scheme lowercased (default
        http), the host defaulting to the pod IP, a named port resolved, the path as written.
        ValueError when the port does not resolve."""
        scheme = (self.scheme or "HTTP").lower()
        host = self.host or pod_ip
        port = container.resolve_port(self.port)
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        path = self.path if self.path.startswith("/") else f"/{self.path}"
        return f"{scheme}://{hostport}{path}"


class TCPSocketAction(WireModel):
    _always = frozenset({"port"})

    port: IntOrString = 0
    host: str = ""


class GRPCAction(WireModel):
    _always = frozenset({"port", "service"})

    port: Int32 = 0
    service: str | None = None


class SleepAction(WireModel):
    _always = frozenset({"seconds"})

    seconds: Int64 = 0


class Probe(WireModel):
    # ProbeHandler is inlined first, as in Go.
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: Int32 = 0
    timeout_seconds: Int32 = 0
    period_seconds: Int32 = 0
    success_threshold: Int32 = 0
    failure_threshold: Int32 = 0
    termination_grace_period_seconds: Int64 | None = None

    def handlers(self) -> list[str]:
        """JSON names of the handlers that are set (exactly one is valid)."""
        return self._set_keys("exec", "http_get", "tcp_socket", "grpc")


class LifecycleHandler(WireModel):
    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None

    def handlers(self) -> list[str]:
        """JSON names of the actions that are set (exactly one is valid)."""
        return self._set_keys("exec", "http_get", "tcp_socket", "sleep")


class Lifecycle(WireModel):
    post_start: LifecycleHandler | None = None
    pre_stop: LifecycleHandler | None = None
    stop_signal: str | None = None


class Container(WireModel):
    _always = frozenset({"name", "resources"})
    _opaque = {
        "resizePolicy": "ContainerResizePolicy",
        "restartPolicyRules": "ContainerRestartRule",
        "volumeDevices": "VolumeDevice",
        "securityContext": "SecurityContext",
    }

    name: str = ""
    image: str = ""
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    working_dir: str = ""
    ports: list[ContainerPort] = Field(default_factory=list)
    env_from: list[EnvFromSource] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    resize_policy: OpaqueList = Field(default_factory=list)
    restart_policy: str | None = None
    restart_policy_rules: OpaqueList = Field(default_factory=list)
    volume_mounts: list[VolumeMount] = Field(default_factory=list)
    volume_devices: OpaqueList = Field(default_factory=list)
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: Lifecycle | None = None
    termination_message_path: str = ""
    termination_message_policy: str = ""
    image_pull_policy: str = ""
    security_context: Opaque | None = None
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False

    def resolve_port(self, port: int | str) -> int:
        """A probe's or hook's port: a number, or the name of one of this container's ports (a
        numeric string also works), 1-65535; ValueError with the kubelet's message otherwise
        (pkg/probe ResolveContainerPort)."""
        if isinstance(port, int):
            number = port
        elif named := [p.container_port for p in self.ports if p.name == port]:
            number = named[0]
        elif re.fullmatch(r"[+-]?\d+", port):
            number = int(port)
        else:
            raise ValueError(f'strconv.Atoi: parsing "{port}": invalid syntax')
        if not 0 < number < 65536:
            raise ValueError(f"invalid port number: {number}")
        return number


class EphemeralContainer(Container):
    target_container_name: str = ""


# --- volumes -------------------------------------------------------------------------------------


class HostPathVolumeSource(WireModel):
    _always = frozenset({"path"})

    path: str = ""
    type: str | None = None


class EmptyDirVolumeSource(WireModel):
    medium: str = ""
    size_limit: QuantityValue | None = None


class Volume(WireModel):
    """A volume: its name, then exactly one VolumeSource member (inlined, Go struct order)."""

    _always = frozenset({"name"})
    _opaque = {key: schema for key, schema in fields.VOLUME_SOURCES.items() if schema}

    name: str = ""
    host_path: HostPathVolumeSource | None = None
    empty_dir: EmptyDirVolumeSource | None = None
    gce_persistent_disk: Opaque | None = None
    aws_elastic_block_store: Opaque | None = None
    git_repo: Opaque | None = None
    secret: Opaque | None = None
    nfs: Opaque | None = None
    iscsi: Opaque | None = None
    glusterfs: Opaque | None = None
    persistent_volume_claim: Opaque | None = None
    rbd: Opaque | None = None
    flex_volume: Opaque | None = None
    cinder: Opaque | None = None
    cephfs: Opaque | None = None
    flocker: Opaque | None = None
    downward_api: Opaque | None = None
    fc: Opaque | None = None
    azure_file: Opaque | None = None
    config_map: Opaque | None = None
    vsphere_volume: Opaque | None = None
    quobyte: Opaque | None = None
    azure_disk: Opaque | None = None
    photon_persistent_disk: Opaque | None = None
    projected: Opaque | None = None
    portworx_volume: Opaque | None = None
    scale_io: Opaque | None = None
    storageos: Opaque | None = None
    csi: Opaque | None = None
    ephemeral: Opaque | None = None
    image: Opaque | None = None

    def sources(self) -> list[str]:
        """JSON names of the volume sources that are set (exactly one is valid)."""
        return self._set_keys(*(name for name in type(self).model_fields if name != "name"))


# --- pod spec ------------------------------------------------------------------------------------


class PodSpec(WireModel):
    _always = frozenset({"containers"})
    _opaque = {
        "securityContext": "PodSecurityContext",
        "imagePullSecrets": "LocalObjectReference",
        "affinity": "Affinity",
        "tolerations": "Toleration",
        "hostAliases": "HostAlias",
        "dnsConfig": "PodDNSConfig",
        "readinessGates": "PodReadinessGate",
        "topologySpreadConstraints": "TopologySpreadConstraint",
        "os": "PodOS",
        "schedulingGates": "PodSchedulingGate",
        "resourceClaims": "PodResourceClaim",
        "workloadRef": "WorkloadReference",
    }

    volumes: list[Volume] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    containers: list[Container] = Field(default_factory=list)
    ephemeral_containers: list[EphemeralContainer] = Field(default_factory=list)
    restart_policy: str = ""
    termination_grace_period_seconds: Int64 | None = None
    active_deadline_seconds: Int64 | None = None
    dns_policy: str = ""
    node_selector: StrMap = Field(default_factory=dict)
    service_account_name: str = ""
    service_account: str = ""  # deprecated alias of serviceAccountName
    automount_service_account_token: bool | None = None
    node_name: str = ""
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    share_process_namespace: bool | None = None
    security_context: Opaque | None = None
    image_pull_secrets: OpaqueList = Field(default_factory=list)
    hostname: str = ""
    subdomain: str = ""
    affinity: Opaque | None = None
    scheduler_name: str = ""
    tolerations: OpaqueList = Field(default_factory=list)
    host_aliases: OpaqueList = Field(default_factory=list)
    priority_class_name: str = ""
    priority: Int32 | None = None
    dns_config: Opaque | None = None
    readiness_gates: OpaqueList = Field(default_factory=list)
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    preemption_policy: str | None = None
    overhead: ResourceList = Field(default_factory=dict)
    topology_spread_constraints: OpaqueList = Field(default_factory=list)
    set_hostname_as_fqdn: bool | None = None
    os: Opaque | None = None
    host_users: bool | None = None
    scheduling_gates: OpaqueList = Field(default_factory=list)
    resource_claims: OpaqueList = Field(default_factory=list)
    resources: ResourceRequirements | None = None
    hostname_override: str | None = None
    workload_ref: Opaque | None = None

    def all_containers(self) -> list[Container]:
        """Init containers first, then app containers (the order the kubelet starts them)."""
        return [*self.init_containers, *self.containers]


# --- pod status ----------------------------------------------------------------------------------


class PodCondition(WireModel):
    _always = frozenset({"type", "status", "last_probe_time", "last_transition_time"})

    type: str = ""
    observed_generation: Int64 = 0
    status: str = ""
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class ContainerStateWaiting(WireModel):
    reason: str = ""
    message: str = ""


class ContainerStateRunning(WireModel):
    _always = frozenset({"started_at"})

    started_at: Time | None = None


class ContainerStateTerminated(WireModel):
    _always = frozenset({"exit_code", "started_at", "finished_at"})

    exit_code: Int32 = 0
    signal: Int32 = 0
    reason: str = ""
    message: str = ""
    started_at: Time | None = None
    finished_at: Time | None = None
    container_id: str = ""


class ContainerState(WireModel):
    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(WireModel):
    _always = frozenset({"name", "state", "last_state", "ready", "restart_count", "image", "image_id"})
    _opaque = {"volumeMounts": "VolumeMountStatus", "user": "ContainerUser"}

    name: str = ""
    state: ContainerState = Field(default_factory=ContainerState)
    last_state: ContainerState = Field(default_factory=ContainerState)
    ready: bool = False
    restart_count: Int32 = 0
    image: str = ""
    image_id: str = ""
    container_id: str = ""
    started: bool | None = None
    allocated_resources: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None
    volume_mounts: OpaqueList = Field(default_factory=list)
    user: Opaque | None = None
    allocated_resources_status: OpaqueList = Field(default_factory=list)
    stop_signal: str | None = None


class HostIP(WireModel):
    _always = frozenset({"ip"})

    ip: str = ""


class PodIP(WireModel):
    _always = frozenset({"ip"})

    ip: str = ""


# The phases of a pod that ran to its end: it will not run again (PodSucceeded, PodFailed).
TERMINAL_PHASES = ("Succeeded", "Failed")


class PodStatus(WireModel):
    observed_generation: Int64 = 0
    phase: str = ""
    conditions: list[PodCondition] = Field(default_factory=list)
    message: str = ""
    reason: str = ""
    nominated_node_name: str = ""
    host_ip: str = ""
    host_ips: list[HostIP] = Field(default_factory=list)
    pod_ip: str = ""
    pod_ips: list[PodIP] = Field(default_factory=list)
    start_time: Time | None = None
    init_container_statuses: list[ContainerStatus] = Field(default_factory=list)
    container_statuses: list[ContainerStatus] = Field(default_factory=list)
    qos_class: str = ""
    ephemeral_container_statuses: list[ContainerStatus] = Field(default_factory=list)
    resize: str = ""
    resource_claim_statuses: OpaqueList = Field(default_factory=list)
    extended_resource_claim_status: Opaque | None = None
    allocated_resources: ResourceList = Field(default_factory=dict)
    resources: ResourceRequirements | None = None


# --- pod and list --------------------------------------------------------------------------------


class Pod(WireModel):
    """A v1 Pod. kind/apiVersion are empty on pods the kubelet holds (its items carry none)."""

    kind: str = ""
    api_version: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


class PodList(WireModel):
    """The /pods envelope: `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[...]}`."""

    _always = frozenset({"metadata", "items"})

    kind: str = "PodList"
    api_version: str = "v1"
    metadata: ListMeta = Field(default_factory=ListMeta)
    items: list[Pod] = Field(default_factory=list)
