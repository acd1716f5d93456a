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


def dur(text: str) -> Duration:
    return Duration.parse(text)


def jf(alias: str, default: Any = None, **kw: Any) -> Any:
    """A field with its exact JSON name."""
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
    client_ca_file: str = jf("clientCAFile", "")


class WebhookAuthentication(WireModel):
    _pointers = frozenset({"enabled"})
    enabled: bool = jf("enabled", True)
    cache_ttl: GoDuration = jf("cacheTTL", dur("2m"))


class AnonymousAuthentication(WireModel):
    _pointers = frozenset({"enabled"})
    enabled: bool = jf("enabled", False)


class Authentication(WireModel):
    _always = frozenset({"x509", "webhook", "anonymous"})
    x509: X509Authentication = jf("x509", default_factory=X509Authentication)
    webhook: WebhookAuthentication = jf("webhook", default_factory=WebhookAuthentication)
    anonymous: AnonymousAuthentication = jf("anonymous", default_factory=AnonymousAuthentication)


class WebhookAuthorization(WireModel):
    cache_authorized_ttl: GoDuration = jf("cacheAuthorizedTTL", dur("5m"))
    cache_unauthorized_ttl: GoDuration = jf("cacheUnauthorizedTTL", dur("30s"))


AUTHORIZATION_MODES = ("AlwaysAllow", "Webhook", "RBAC")


class Authorization(WireModel):
    _always = frozenset({"webhook"})
    # RBAC is kubeletapi's extension: ClusterRoles/Bindings from --authorization-rbac-file.
    mode: str = jf("mode", "Webhook", pattern=r"^(|AlwaysAllow|Webhook|RBAC)$")
    webhook: WebhookAuthorization = jf("webhook", default_factory=WebhookAuthorization)


class MemorySwap(WireModel):
    swap_behavior: str = jf("swapBehavior", "")


class CrashLoopBackOff(WireModel):
    _pointers = frozenset({"maxContainerRestartPeriod"})
    max_container_restart_period: GoDuration = jf("maxContainerRestartPeriod", dur("5m"))


class ShutdownGracePeriodByPodPriority(WireModel):
    _always = frozenset({"priority", "shutdownGracePeriodSeconds"})
    priority: Int32 = jf("priority", 0)
    shutdown_grace_period_seconds: Int64 = jf("shutdownGracePeriodSeconds", 0)


class MemoryReservation(WireModel):
    _always = frozenset({"numaNode", "limits"})
    numa_node: Int32 = jf("numaNode", 0)
    limits: dict[str, str | int | float] = jf("limits", default_factory=dict)


class Taint(WireModel):
    _always = frozenset({"key", "effect"})
    key: str = jf("key", "")
    value: str = jf("value", "")
    effect: str = jf("effect", "", pattern=r"^(NoSchedule|PreferNoSchedule|NoExecute)$")
    time_added: str | None = jf("timeAdded")


class VModuleItem(WireModel):
    _always = frozenset({"filePattern", "verbosity"})
    file_pattern: str = jf("filePattern", "")
    verbosity: UInt32 = jf("verbosity", 0)


class OutputRouting(WireModel):
    split_stream: bool = jf("splitStream", False)
    info_buffer_size: str | int = jf("infoBufferSize", "0")


class FormatOptions(WireModel):
    text: OutputRouting = jf("text", default_factory=OutputRouting)
    json_: OutputRouting = jf("json", default_factory=OutputRouting)


class Logging(WireModel):
    _always = frozenset({"flushFrequency", "verbosity"})
    format: str = jf("format", "text", pattern=r"^(|text|json)$")
    flush_frequency: FlushDuration = jf("flushFrequency", dur("5s"))
    verbosity: UInt32 = jf("verbosity", 0)
    vmodule: list[VModuleItem] = jf("vmodule", default_factory=list)
    options: FormatOptions = jf("options", default_factory=FormatOptions)


class Tracing(WireModel):
    endpoint: str | None = jf("endpoint")
    sampling_rate_per_million: Int32 | None = jf("samplingRatePerMillion")


class UserNamespaces(WireModel):
    ids_per_pod: Int64 | None = jf("idsPerPod")


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

    enable_server: bool = jf("enableServer", True)
    static_pod_path: str = jf("staticPodPath", "")
    pod_logs_dir: str = jf("podLogsDir", "/var/log/pods")
    sync_frequency: GoDuration = jf("syncFrequency", dur("1m"))
    file_check_frequency: GoDuration = jf("fileCheckFrequency", dur("20s"))
    http_check_frequency: GoDuration = jf("httpCheckFrequency", dur("20s"))
    static_pod_url: str = jf("staticPodURL", "")
    static_pod_url_header: dict[str, list[str]] = jf("staticPodURLHeader", default_factory=dict)
    address: str = jf("address", "0.0.0.0")  # noqa: S104 - the kubelet's default
    port: Int32 = jf("port", 10250)
    read_only_port: Int32 = jf("readOnlyPort", 0)
    tls_cert_file: str = jf("tlsCertFile", "")
    tls_private_key_file: str = jf("tlsPrivateKeyFile", "")
    tls_cipher_suites: list[str] = jf("tlsCipherSuites", default_factory=list)
    tls_curve_preferences: list[Int32] = jf("tlsCurvePreferences", default_factory=list)
    tls_min_version: str = jf("tlsMinVersion", "")
    rotate_certificates: bool = jf("rotateCertificates", False)
    server_tls_bootstrap: bool = jf("serverTLSBootstrap", False)
    authentication: Authentication = jf("authentication", default_factory=Authentication)
    authorization: Authorization = jf("authorization", default_factory=Authorization)
    registry_pull_qps: Int32 = jf("registryPullQPS", 5)
    registry_burst: Int32 = jf("registryBurst", 10)
    image_pull_credentials_verification_policy: str = jf(
        "imagePullCredentialsVerificationPolicy",
        "NeverVerifyPreloadedImages",
        pattern=r"^(|NeverVerify|NeverVerifyPreloadedImages|NeverVerifyAllowlistedImages|AlwaysVerify)$",
    )
    preloaded_images_verification_allowlist: list[str] = jf(
        "preloadedImagesVerificationAllowlist", default_factory=list
    )
    event_record_qps: Int32 = jf("eventRecordQPS", 50)
    event_burst: Int32 = jf("eventBurst", 100)
    enable_debugging_handlers: bool = jf("enableDebuggingHandlers", True)
    enable_contention_profiling: bool = jf("enableContentionProfiling", False)
    healthz_port: Int32 = jf("healthzPort", 10248)
    healthz_bind_address: str = jf("healthzBindAddress", "127.0.0.1")
    oom_score_adj: Int32 = jf("oomScoreAdj", -999)
    cluster_domain: str = jf("clusterDomain", "")
    cluster_dns: list[str] = jf("clusterDNS", default_factory=list)
    streaming_connection_idle_timeout: GoDuration = jf("streamingConnectionIdleTimeout", dur("4h"))
    node_status_update_frequency: GoDuration = jf("nodeStatusUpdateFrequency", dur("10s"))
    node_status_report_frequency: GoDuration = jf("nodeStatusReportFrequency", dur("5m"))
    node_lease_duration_seconds: Int32 = jf("nodeLeaseDurationSeconds", 40)
    image_minimum_gc_age: GoDuration = jf("imageMinimumGCAge", dur("2m"))
    image_maximum_gc_age: GoDuration = jf("imageMaximumGCAge", dur("0s"))
    image_gc_high_threshold_percent: Int32 = jf("imageGCHighThresholdPercent", 85)
    image_gc_low_threshold_percent: Int32 = jf("imageGCLowThresholdPercent", 80)
    volume_stats_agg_period: GoDuration = jf("volumeStatsAggPeriod", dur("1m"))
    kubelet_cgroups: str = jf("kubeletCgroups", "")
    system_cgroups: str = jf("systemCgroups", "")
    cgroup_root: str = jf("cgroupRoot", "")
    cgroups_per_qos: bool = jf("cgroupsPerQOS", True)
    cgroup_driver: str = jf("cgroupDriver", "cgroupfs", pattern=r"^(|cgroupfs|systemd)$")
    cpu_manager_policy: str = jf("cpuManagerPolicy", "none")
    single_process_oom_kill: bool | None = jf("singleProcessOOMKill")
    cpu_manager_policy_options: dict[str, str] = jf("cpuManagerPolicyOptions", default_factory=dict)
    cpu_manager_reconcile_period: GoDuration = jf("cpuManagerReconcilePeriod", dur("10s"))
    memory_manager_policy: str = jf("memoryManagerPolicy", "None")
    topology_manager_policy: str = jf("topologyManagerPolicy", "none")
    topology_manager_scope: str = jf("topologyManagerScope", "container")
    topology_manager_policy_options: dict[str, str] = jf("topologyManagerPolicyOptions", default_factory=dict)
    qos_reserved: dict[str, str] = jf("qosReserved", default_factory=dict)
    runtime_request_timeout: GoDuration = jf("runtimeRequestTimeout", dur("2m"))
    hairpin_mode: str = jf("hairpinMode", "promiscuous-bridge")
    max_pods: Int32 = jf("maxPods", 110)
    pod_cidr: str = jf("podCIDR", "")
    pod_pids_limit: Int64 = jf("podPidsLimit", -1)
    resolv_conf: str = jf("resolvConf", "/etc/resolv.conf")
    run_once: bool = jf("runOnce", False)
    cpu_cfs_quota: bool = jf("cpuCFSQuota", True)
    cpu_cfs_quota_period: GoDuration = jf("cpuCFSQuotaPeriod", dur("100ms"))
    node_status_max_images: Int32 = jf("nodeStatusMaxImages", 50)
    max_open_files: Int64 = jf("maxOpenFiles", 1000000)
    content_type: str = jf("contentType", "application/vnd.kubernetes.protobuf")
    kube_api_qps: Int32 = jf("kubeAPIQPS", 50)
    kube_api_burst: Int32 = jf("kubeAPIBurst", 100)
    serialize_image_pulls: bool = jf("serializeImagePulls", True)
    max_parallel_image_pulls: Int32 | None = jf("maxParallelImagePulls")
    eviction_hard: dict[str, str] | None = jf("evictionHard")
    eviction_soft: dict[str, str] = jf("evictionSoft", default_factory=dict)
    eviction_soft_grace_period: dict[str, str] = jf("evictionSoftGracePeriod", default_factory=dict)
    eviction_pressure_transition_period: GoDuration = jf("evictionPressureTransitionPeriod", dur("5m"))
    eviction_max_pod_grace_period: Int32 = jf("evictionMaxPodGracePeriod", 0)
    eviction_minimum_reclaim: dict[str, str] = jf("evictionMinimumReclaim", default_factory=dict)
    merge_default_eviction_settings: bool = jf("mergeDefaultEvictionSettings", False)
    pods_per_core: Int32 = jf("podsPerCore", 0)
    enable_controller_attach_detach: bool = jf("enableControllerAttachDetach", True)
    protect_kernel_defaults: bool = jf("protectKernelDefaults", False)
    make_iptables_util_chains: bool = jf("makeIPTablesUtilChains", True)
    iptables_masquerade_bit: Int32 = jf("iptablesMasqueradeBit", 14)
    iptables_drop_bit: Int32 = jf("iptablesDropBit", 15)
    feature_gates: dict[str, bool] = jf("featureGates", default_factory=dict)
    fail_swap_on: bool = jf("failSwapOn", True)
    memory_swap: MemorySwap = jf("memorySwap", default_factory=MemorySwap)
    container_log_max_size: str = jf("containerLogMaxSize", "10Mi")
    container_log_max_files: Int32 = jf("containerLogMaxFiles", 5)
    container_log_max_workers: Int32 = jf("containerLogMaxWorkers", 1)
    container_log_monitor_interval: GoDuration = jf("containerLogMonitorInterval", dur("10s"))
    config_map_and_secret_change_detection_strategy: str = jf(
        "configMapAndSecretChangeDetectionStrategy", "Watch", pattern=r"^(|Get|Cache|Watch)$"
    )
    system_reserved: dict[str, str] = jf("systemReserved", default_factory=dict)
    kube_reserved: dict[str, str] = jf("kubeReserved", default_factory=dict)
    reserved_system_cpus: str = jf("reservedSystemCPUs", "")
    show_hidden_metrics_for_version: str = jf("showHiddenMetricsForVersion", "")
    system_reserved_cgroup: str = jf("systemReservedCgroup", "")
    kube_reserved_cgroup: str = jf("kubeReservedCgroup", "")
    enforce_node_allocatable: list[str] = jf("enforceNodeAllocatable", default_factory=lambda: ["pods"])
    allowed_unsafe_sysctls: list[str] = jf("allowedUnsafeSysctls", default_factory=list)
    volume_plugin_dir: str = jf("volumePluginDir", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/")
    provider_id: str = jf("providerID", "")
    kernel_memcg_notification: bool = jf("kernelMemcgNotification", False)
    logging: Logging = jf("logging", default_factory=Logging)
    enable_system_log_handler: bool = jf("enableSystemLogHandler", True)
    enable_system_log_query: bool | None = jf("enableSystemLogQuery")
    shutdown_grace_period: GoDuration = jf("shutdownGracePeriod", dur("0s"))
    shutdown_grace_period_critical_pods: GoDuration = jf("shutdownGracePeriodCriticalPods", dur("0s"))
    shutdown_grace_period_by_pod_priority: list[ShutdownGracePeriodByPodPriority] = jf(
        "shutdownGracePeriodByPodPriority", default_factory=list
    )
    crash_loop_back_off: CrashLoopBackOff = jf("crashLoopBackOff", default_factory=CrashLoopBackOff)
    reserved_memory: list[MemoryReservation] = jf("reservedMemory", default_factory=list)
    enable_profiling_handler: bool = jf("enableProfilingHandler", True)
    enable_debug_flags_handler: bool = jf("enableDebugFlagsHandler", True)
    seccomp_default: bool = jf("seccompDefault", False)
    memory_throttling_factor: float = jf("memoryThrottlingFactor", 0.9)
    register_with_taints: list[Taint] = jf("registerWithTaints", default_factory=list)
    register_node: bool = jf("registerNode", True)
    tracing: Tracing | None = jf("tracing")
    local_storage_capacity_isolation: bool = jf("localStorageCapacityIsolation", True)
    container_runtime_endpoint: str = jf("containerRuntimeEndpoint", "unix:///run/containerd/containerd.sock")
    image_service_endpoint: str = jf("imageServiceEndpoint", "")
    # 1.35 defaults this to true (refuse cgroup v1); kubeletapi supports v1, so it keeps the
    # 1.31-1.34 default.
    fail_cgroup_v1: bool = jf("failCgroupV1", False)
    user_namespaces: UserNamespaces | None = jf("userNamespaces")

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
        if data.get("evictionHard") is None:
            data["evictionHard"] = dict(LINUX_EVICTION_HARD)
        return data
