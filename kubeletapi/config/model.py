"""KubeletConfiguration (kubelet.config.k8s.io/v1beta1): every field, its JSON name and default.

The field table follows kubernetes/kubelet config/v1beta1/types.go (1.35) in declaration order,
so /configz keeps the kubelet's key order. Decoding is strict: unknown fields, wrong types and
bad durations are errors. Go semantics that matter on the wire:
- JSON null means "absent"; absent and zero-valued non-pointer fields get the default
  (`port: 0` becomes 10250), pointer fields keep an explicit false or 0.
- Encoding omits a zero non-pointer omitempty field and a nil pointer, but never a struct
  (durations, memorySwap, logging) nor a field without omitempty.
The table is the spec, like a metric table: it is exempt from the module size budget.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, model_validator

from kubeletapi.api.gowire import GoStruct, Tag
from kubeletapi.config.durations import Duration, coerce
from kubeletapi.config.featuregates import default_enabled

API_VERSION = "kubelet.config.k8s.io/v1beta1"
KIND = "KubeletConfiguration"

GoDuration = Annotated[Duration, PlainValidator(coerce), PlainSerializer(str, return_type=str)]


def _flush_duration(value: Any) -> Duration:
    """logging.flushFrequency (TimeOrMetaDuration) also takes integer nanoseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Duration(value)
    return coerce(value)


FlushDuration = Annotated[Duration, PlainValidator(_flush_duration), PlainSerializer(str, return_type=str)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
UInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]


def go_duration(text: str) -> Duration:
    """A default written as Go writes it in types.go ("2m", "5s")."""
    return Duration.parse(text)


def json_field(alias: str, default: Any = None, **kw: Any) -> Any:
    """A field with its exact JSON name (types.go's json tag) and its default."""
    if "default_factory" in kw:
        return Field(alias=alias, **kw)
    return Field(default, alias=alias, **kw)


class WireModel(GoStruct):
    """Strict decoding by JSON name; wire encoding with Go's omitempty rules (gowire.GoStruct).
    `_pointers` and `_always` name fields by their JSON names, as types.go spells them."""

    model_config = ConfigDict(
        extra="forbid", strict=True, populate_by_name=False
    )

    @classmethod
    def _tag(cls, name: str, alias: str, default: Any) -> Tag:
        return super()._tag(alias, alias, default)

    @model_validator(mode="after")
    def _zero_gets_default(self) -> WireModel:
        for name, info in type(self).model_fields.items():
            alias = info.alias or name
            value = getattr(self, name)
            if alias in self._pointers or info.default in (None, 0, "", False) or info.default == Duration(0):
                continue
            if value in (0, "") or value == Duration(0):
                object.__setattr__(self, name, info.default)
        return self


class X509Authentication(WireModel):
    client_ca_file: str = json_field("clientCAFile", "")


class WebhookAuthentication(WireModel):
    _pointers = frozenset({"enabled"})
    enabled: bool = json_field("enabled", True)
    cache_ttl: GoDuration = json_field("cacheTTL", go_duration("2m"))


class AnonymousAuthentication(WireModel):
    _pointers = frozenset({"enabled"})
    enabled: bool = json_field("enabled", False)


class Authentication(WireModel):
    _always = frozenset({"x509", "webhook", "anonymous"})
    x509: X509Authentication = json_field("x509", default_factory=X509Authentication)
    webhook: WebhookAuthentication = json_field("webhook", default_factory=WebhookAuthentication)
    anonymous: AnonymousAuthentication = json_field("anonymous", default_factory=AnonymousAuthentication)


class WebhookAuthorization(WireModel):
    cache_authorized_ttl: GoDuration = json_field("cacheAuthorizedTTL", go_duration("5m"))
    cache_unauthorized_ttl: GoDuration = json_field("cacheUnauthorizedTTL", go_duration("30s"))


AUTHORIZATION_MODES = ("AlwaysAllow", "Webhook", "RBAC")


class Authorization(WireModel):
    _always = frozenset({"webhook"})
    # RBAC is kubeletapi's extension: ClusterRoles/Bindings from --authorization-rbac-file.
    mode: str = json_field("mode", "Webhook", pattern=r"^(|AlwaysAllow|Webhook|RBAC)$")
    webhook: WebhookAuthorization = json_field("webhook", default_factory=WebhookAuthorization)


class MemorySwap(WireModel):
    swap_behavior: str = json_field("swapBehavior", "")


class CrashLoopBackOff(WireModel):
    _pointers = frozenset({"maxContainerRestartPeriod"})
    # Defaulted to 5m only while KubeletCrashLoopBackOffMax is on (KubeletConfiguration._gated_defaults).
    max_container_restart_period: GoDuration | None = json_field("maxContainerRestartPeriod")


class ShutdownGracePeriodByPodPriority(WireModel):
    _always = frozenset({"priority", "shutdownGracePeriodSeconds"})
    priority: Int32 = json_field("priority", 0)
    shutdown_grace_period_seconds: Int64 = json_field("shutdownGracePeriodSeconds", 0)


class MemoryReservation(WireModel):
    _always = frozenset({"numaNode", "limits"})
    numa_node: Int32 = json_field("numaNode", 0)
    limits: dict[str, str | int | float] = json_field("limits", default_factory=dict)


class Taint(WireModel):
    _always = frozenset({"key", "effect"})
    key: str = json_field("key", "")
    value: str = json_field("value", "")
    effect: str = json_field("effect", "", pattern=r"^(NoSchedule|PreferNoSchedule|NoExecute)$")
    time_added: str | None = json_field("timeAdded")


class VModuleItem(WireModel):
    _always = frozenset({"filePattern", "verbosity"})
    file_pattern: str = json_field("filePattern", "")
    verbosity: UInt32 = json_field("verbosity", 0)


class OutputRouting(WireModel):
    split_stream: bool = json_field("splitStream", False)
    info_buffer_size: str | int = json_field("infoBufferSize", "0")


class FormatOptions(WireModel):
    text: OutputRouting = json_field("text", default_factory=OutputRouting)
    json_: OutputRouting = json_field("json", default_factory=OutputRouting)


class Logging(WireModel):
    _always = frozenset({"flushFrequency", "verbosity"})
    format: str = json_field("format", "text", pattern=r"^(|text|json)$")
    flush_frequency: FlushDuration = json_field("flushFrequency", go_duration("5s"))
    verbosity: UInt32 = json_field("verbosity", 0)
    vmodule: list[VModuleItem] = json_field("vmodule", default_factory=list)
    options: FormatOptions = json_field("options", default_factory=FormatOptions)


class Tracing(WireModel):
    endpoint: str | None = json_field("endpoint")
    sampling_rate_per_million: Int32 | None = json_field("samplingRatePerMillion")


class UserNamespaces(WireModel):
    ids_per_pod: Int64 | None = json_field("idsPerPod")


LINUX_EVICTION_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}

_POINTERS = frozenset(
    [
        "enableServer", "registryPullQPS", "eventRecordQPS", "enableDebuggingHandlers", "healthzPort",
        "oomScoreAdj", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "cgroupsPerQOS",
        "singleProcessOOMKill", "podPidsLimit", "resolvConf", "cpuCFSQuota", "cpuCFSQuotaPeriod",
        "nodeStatusMaxImages", "kubeAPIQPS", "serializeImagePulls", "maxParallelImagePulls",
        "mergeDefaultEvictionSettings", "enableControllerAttachDetach", "makeIPTablesUtilChains",
        "iptablesMasqueradeBit", "iptablesDropBit", "failSwapOn", "containerLogMaxFiles",
        "containerLogMaxWorkers", "containerLogMonitorInterval", "enableSystemLogHandler",
        "enableSystemLogQuery", "enableProfilingHandler", "enableDebugFlagsHandler", "seccompDefault",
        "memoryThrottlingFactor", "registerNode", "tracing", "localStorageCapacityIsolation",
        "failCgroupV1", "userNamespaces",
    ]
)


class KubeletConfiguration(WireModel):
    """The v1beta1 configuration; see the module docstring for the decoding rules."""

    _pointers = _POINTERS
    _always = frozenset({"authentication", "authorization", "containerRuntimeEndpoint"})

    enable_server: bool = json_field("enableServer", True)
    static_pod_path: str = json_field("staticPodPath", "")
    pod_logs_dir: str = json_field("podLogsDir", "/var/log/pods")
    sync_frequency: GoDuration = json_field("syncFrequency", go_duration("1m"))
    file_check_frequency: GoDuration = json_field("fileCheckFrequency", go_duration("20s"))
    http_check_frequency: GoDuration = json_field("httpCheckFrequency", go_duration("20s"))
    static_pod_url: str = json_field("staticPodURL", "")
    static_pod_url_header: dict[str, list[str]] = json_field("staticPodURLHeader", default_factory=dict)
    address: str = json_field("address", "0.0.0.0")  # noqa: S104 - the kubelet's default
    port: Int32 = json_field("port", 10250)
    read_only_port: Int32 = json_field("readOnlyPort", 0)
    tls_cert_file: str = json_field("tlsCertFile", "")
    tls_private_key_file: str = json_field("tlsPrivateKeyFile", "")
    tls_cipher_suites: list[str] = json_field("tlsCipherSuites", default_factory=list)
    tls_curve_preferences: list[Int32] = json_field("tlsCurvePreferences", default_factory=list)
    tls_min_version: str = json_field("tlsMinVersion", "")
    rotate_certificates: bool = json_field("rotateCertificates", False)
    server_tls_bootstrap: bool = json_field("serverTLSBootstrap", False)
    authentication: Authentication = json_field("authentication", default_factory=Authentication)
    authorization: Authorization = json_field("authorization", default_factory=Authorization)
    registry_pull_qps: Int32 = json_field("registryPullQPS", 5)
    registry_burst: Int32 = json_field("registryBurst", 10)
    # Defaulted only while KubeletEnsureSecretPulledImages is on (_gated_defaults).
    image_pull_credentials_verification_policy: str = json_field(
        "imagePullCredentialsVerificationPolicy",
        "",
        pattern=r"^(|NeverVerify|NeverVerifyPreloadedImages|NeverVerifyAllowlistedImages|AlwaysVerify)$",
    )
    preloaded_images_verification_allowlist: list[str] = json_field(
        "preloadedImagesVerificationAllowlist", default_factory=list
    )
    event_record_qps: Int32 = json_field("eventRecordQPS", 50)
    event_burst: Int32 = json_field("eventBurst", 100)
    enable_debugging_handlers: bool = json_field("enableDebuggingHandlers", True)
    enable_contention_profiling: bool = json_field("enableContentionProfiling", False)
    healthz_port: Int32 = json_field("healthzPort", 10248)
    healthz_bind_address: str = json_field("healthzBindAddress", "127.0.0.1")
    oom_score_adj: Int32 = json_field("oomScoreAdj", -999)
    cluster_domain: str = json_field("clusterDomain", "")
    cluster_dns: list[str] = json_field("clusterDNS", default_factory=list)
    streaming_connection_idle_timeout: GoDuration = json_field("streamingConnectionIdleTimeout", go_duration("4h"))
    node_status_update_frequency: GoDuration = json_field("nodeStatusUpdateFrequency", go_duration("10s"))
    node_status_report_frequency: GoDuration = json_field("nodeStatusReportFrequency", go_duration("5m"))
    node_lease_duration_seconds: Int32 = json_field("nodeLeaseDurationSeconds", 40)
    image_minimum_gc_age: GoDuration = json_field("imageMinimumGCAge", go_duration("2m"))
    image_maximum_gc_age: GoDuration = json_field("imageMaximumGCAge", go_duration("0s"))
    image_gc_high_threshold_percent: Int32 = json_field("imageGCHighThresholdPercent", 85)
    image_gc_low_threshold_percent: Int32 = json_field("imageGCLowThresholdPercent", 80)
    volume_stats_agg_period: GoDuration = json_field("volumeStatsAggPeriod", go_duration("1m"))
    kubelet_cgroups: str = json_field("kubeletCgroups", "")
    system_cgroups: str = json_field("systemCgroups", "")
    cgroup_root: str = json_field("cgroupRoot", "")
    cgroups_per_qos: bool = json_field("cgroupsPerQOS", True)
    cgroup_driver: str = json_field("cgroupDriver", "cgroupfs", pattern=r"^(|cgroupfs|systemd)$")
    cpu_manager_policy: str = json_field("cpuManagerPolicy", "none")
    single_process_oom_kill: bool | None = json_field("singleProcessOOMKill")
    cpu_manager_policy_options: dict[str, str] = json_field("cpuManagerPolicyOptions", default_factory=dict)
    cpu_manager_reconcile_period: GoDuration = json_field("cpuManagerReconcilePeriod", go_duration("10s"))
    memory_manager_policy: str = json_field("memoryManagerPolicy", "None")
    topology_manager_policy: str = json_field("topologyManagerPolicy", "none")
    topology_manager_scope: str = json_field("topologyManagerScope", "container")
    topology_manager_policy_options: dict[str, str] = json_field("topologyManagerPolicyOptions", default_factory=dict)
    qos_reserved: dict[str, str] = json_field("qosReserved", default_factory=dict)
    runtime_request_timeout: GoDuration = json_field("runtimeRequestTimeout", go_duration("2m"))
    hairpin_mode: str = json_field("hairpinMode", "promiscuous-bridge")
    max_pods: Int32 = json_field("maxPods", 110)
    pod_cidr: str = json_field("podCIDR", "")
    pod_pids_limit: Int64 = json_field("podPidsLimit", -1)
    resolv_conf: str = json_field("resolvConf", "/etc/resolv.conf")
    run_once: bool = json_field("runOnce", False)
    cpu_cfs_quota: bool = json_field("cpuCFSQuota", True)
    cpu_cfs_quota_period: GoDuration = json_field("cpuCFSQuotaPeriod", go_duration("100ms"))
    node_status_max_images: Int32 = json_field("nodeStatusMaxImages", 50)
    max_open_files: Int64 = json_field("maxOpenFiles", 1000000)
    content_type: str = json_field("contentType", "application/vnd.kubernetes.protobuf")
    kube_api_qps: Int32 = json_field("kubeAPIQPS", 50)
    kube_api_burst: Int32 = json_field("kubeAPIBurst", 100)
    serialize_image_pulls: bool = json_field("serializeImagePulls", True)
    max_parallel_image_pulls: Int32 | None = json_field("maxParallelImagePulls")
    eviction_hard: dict[str, str] | None = json_field("evictionHard")
    eviction_soft: dict[str, str] = json_field("evictionSoft", default_factory=dict)
    eviction_soft_grace_period: dict[str, str] = json_field("evictionSoftGracePeriod", default_factory=dict)
    eviction_pressure_transition_period: GoDuration = json_field("evictionPressureTransitionPeriod", go_duration("5m"))
    eviction_max_pod_grace_period: Int32 = json_field("evictionMaxPodGracePeriod", 0)
    eviction_minimum_reclaim: dict[str, str] = json_field("evictionMinimumReclaim", default_factory=dict)
    merge_default_eviction_settings: bool = json_field("mergeDefaultEvictionSettings", False)
    pods_per_core: Int32 = json_field("podsPerCore", 0)
    enable_controller_attach_detach: bool = json_field("enableControllerAttachDetach", True)
    protect_kernel_defaults: bool = json_field("protectKernelDefaults", False)
    make_iptables_util_chains: bool = json_field("makeIPTablesUtilChains", True)
    iptables_masquerade_bit: Int32 = json_field("iptablesMasqueradeBit", 14)
    iptables_drop_bit: Int32 = json_field("iptablesDropBit", 15)
    feature_gates: dict[str, bool] = json_field("featureGates", default_factory=dict)
    fail_swap_on: bool = json_field("failSwapOn", True)
    memory_swap: MemorySwap = json_field("memorySwap", default_factory=MemorySwap)
    container_log_max_size: str = json_field("containerLogMaxSize", "10Mi")
    container_log_max_files: Int32 = json_field("containerLogMaxFiles", 5)
    container_log_max_workers: Int32 = json_field("containerLogMaxWorkers", 1)
    container_log_monitor_interval: GoDuration = json_field("containerLogMonitorInterval", go_duration("10s"))
    config_map_and_secret_change_detection_strategy: str = json_field(
        "configMapAndSecretChangeDetectionStrategy", "Watch", pattern=r"^(|Get|Cache|Watch)$"
    )
    system_reserved: dict[str, str] = json_field("systemReserved", default_factory=dict)
    kube_reserved: dict[str, str] = json_field("kubeReserved", default_factory=dict)
    reserved_system_cpus: str = json_field("reservedSystemCPUs", "")
    show_hidden_metrics_for_version: str = json_field("showHiddenMetricsForVersion", "")
    system_reserved_cgroup: str = json_field("systemReservedCgroup", "")
    kube_reserved_cgroup: str = json_field("kubeReservedCgroup", "")
    enforce_node_allocatable: list[str] = json_field("enforceNodeAllocatable", default_factory=lambda: ["pods"])
    allowed_unsafe_sysctls: list[str] = json_field("allowedUnsafeSysctls", default_factory=list)
    volume_plugin_dir: str = json_field("volumePluginDir", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/")
    provider_id: str = json_field("providerID", "")
    kernel_memcg_notification: bool = json_field("kernelMemcgNotification", False)
    logging: Logging = json_field("logging", default_factory=Logging)
    enable_system_log_handler: bool = json_field("enableSystemLogHandler", True)
    enable_system_log_query: bool | None = json_field("enableSystemLogQuery")
    shutdown_grace_period: GoDuration = json_field("shutdownGracePeriod", go_duration("0s"))
    shutdown_grace_period_critical_pods: GoDuration = json_field("shutdownGracePeriodCriticalPods", go_duration("0s"))
    shutdown_grace_period_by_pod_priority: list[ShutdownGracePeriodByPodPriority] = json_field(
        "shutdownGracePeriodByPodPriority", default_factory=list
    )
    crash_loop_back_off: CrashLoopBackOff = json_field("crashLoopBackOff", default_factory=CrashLoopBackOff)
    reserved_memory: list[MemoryReservation] = json_field("reservedMemory", default_factory=list)
    enable_profiling_handler: bool = json_field("enableProfilingHandler", True)
    enable_debug_flags_handler: bool = json_field("enableDebugFlagsHandler", True)
    seccomp_default: bool = json_field("seccompDefault", False)
    memory_throttling_factor: float = json_field("memoryThrottlingFactor", 0.9)
    register_with_taints: list[Taint] = json_field("registerWithTaints", default_factory=list)
    register_node: bool = json_field("registerNode", True)
    tracing: Tracing | None = json_field("tracing")
    local_storage_capacity_isolation: bool = json_field("localStorageCapacityIsolation", True)
    container_runtime_endpoint: str = json_field("containerRuntimeEndpoint", "unix:///run/containerd/containerd.sock")
    image_service_endpoint: str = json_field("imageServiceEndpoint", "")
    # 1.35 defaults this to true (refuse cgroup v1); kubeletapi supports v1, so it keeps the
    # 1.31-1.34 default.
    fail_cgroup_v1: bool = json_field("failCgroupV1", False)
    user_namespaces: UserNamespaces | None = json_field("userNamespaces")

    @model_validator(mode="before")
    @classmethod
    def _conditional_defaults(cls, data: Any) -> Any:
        """Defaults that depend on other fields (defaults.go, cmd/kubelet/app/server.go)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        update = data.get("nodeStatusUpdateFrequency")
        if not data.get("nodeStatusReportFrequency") and update not in (None, "", "0s", "0"):
            data["nodeStatusReportFrequency"] = update  # copy of an explicit update frequency
        parallel = data.get("maxParallelImagePulls")
        if data.get("serializeImagePulls") is None and isinstance(parallel, int) and parallel >= 2:
            data["serializeImagePulls"] = False
        if isinstance(data.get("podPidsLimit"), int) and data["podPidsLimit"] < 0:
            data["podPidsLimit"] = -1
        hard = data.get("evictionHard")
        if hard is None:
            data["evictionHard"] = dict(LINUX_EVICTION_HARD)
        elif data.get("mergeDefaultEvictionSettings") is True and isinstance(hard, dict):
            data["evictionHard"] = {**LINUX_EVICTION_HARD, **hard}  # server.go: the defaults fill the gaps
        _gated_defaults(data)
        return data


CRASH_LOOP_MAX_DEFAULT = "5m0s"
PULL_POLICY_DEFAULT = "NeverVerifyPreloadedImages"


def _gated_defaults(data: dict[str, Any]) -> None:
    """Defaults the kubelet applies only while their feature gate is on (v1beta1 defaults.go)."""
    gates = data.get("featureGates")
    if default_enabled("KubeletCrashLoopBackOffMax", gates):
        backoff = data.get("crashLoopBackOff")
        if backoff is None:
            data["crashLoopBackOff"] = {"maxContainerRestartPeriod": CRASH_LOOP_MAX_DEFAULT}
        elif isinstance(backoff, dict) and backoff.get("maxContainerRestartPeriod") is None:
            data["crashLoopBackOff"] = {**backoff, "maxContainerRestartPeriod": CRASH_LOOP_MAX_DEFAULT}
    policy = data.get("imagePullCredentialsVerificationPolicy")
    if default_enabled("KubeletEnsureSecretPulledImages", gates) and policy in (None, ""):
        data["imagePullCredentialsVerificationPolicy"] = PULL_POLICY_DEFAULT
