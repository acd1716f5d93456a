"""The kubelet's ValidateKubeletConfiguration (pkg/kubelet/apis/config/validation: validation.go,
validation_linux.go, validation_reserved_memory.go; logs and tracing API validation), 1.35.

Every check on a field kubeletapi's model has, in the kubelet's order and with its message (Go's
%v of a metav1.Duration is "{2s}", of a time.Duration "2s"). The feature gates are 1.35's defaults
with the configuration's featureGates applied. Checks left out: draManagerReconcilePeriod and
memoryReservationPolicy (not in v1beta1 1.35), imageMinimumGCAge < 0 (added in 1.36), an empty
containerRuntimeEndpoint or podLogsDir (defaulting fills both), unknown feature gate names.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from kubeletapi.api.quantity import QuantityError, coerce_quantity
from kubeletapi.config.componentrules import logging, tracing
from kubeletapi.config.durations import Duration
from kubeletapi.config.featuregates import FeatureGates
from kubeletapi.config.gosyntax import cpuset_error
from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.problems import HostFacts, Problem, problem
from kubeletapi.gofmt import go_float, go_quote

INVALID = "invalid configuration: "
KUBELET_MINOR = 35  # kubeletapi answers as a 1.35 kubelet (showHiddenMetricsForVersion)
_MS, _SECOND = Duration.parse("1ms"), Duration.parse("1s")
_DEFAULT_CFS_QUOTA = Duration.parse("100ms")
_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
TOPOLOGY_POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
HAIRPIN_MODES = ("none", "hairpin-veth", "promiscuous-bridge")
PULL_POLICIES = ("NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages", "AlwaysVerify")
ENFORCE_KEYS = ("pods", "system-reserved", "system-reserved-compressible", "kube-reserved",
                "kube-reserved-compressible", "none")

Rule = Callable[[KubeletConfiguration, FeatureGates, HostFacts], Iterable[Problem]]


def braced(value: Duration) -> str:
    """Go's %v of a metav1.Duration (a struct around time.Duration)."""
    return "{" + str(value) + "}"


def go_list(values: Iterable[str]) -> str:
    """Go's %q of a []string."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def _negative(cfg: KubeletConfiguration, name: str, flag: str, attr: str) -> Iterable[Problem]:
    value = getattr(cfg, attr)
    if value < 0:
        yield problem(name, f"{INVALID}{name} ({flag}) {value} must not be a negative number")


def _between(name: str, flag: str, value: int, low: int, high: int) -> Iterable[Problem]:
    if not low <= value <= high:
        yield problem(name, f"{INVALID}{name} ({flag}) {value} must be between {low} and {high}, inclusive")


def node_and_cgroups(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    for message in gates.problems():
        yield problem("featureGates", message)
    if cfg.node_lease_duration_seconds <= 0:
        yield problem("nodeLeaseDurationSeconds", f"{INVALID}nodeLeaseDurationSeconds must be greater than 0")
    if cfg.system_cgroups and not cfg.cgroup_root:
        yield problem(("systemCgroups", "cgroupRoot"), f"{INVALID}systemCgroups (--system-cgroups) was specified "
                      "and cgroupRoot (--cgroup-root) was not specified")
    yield from _negative(cfg, "eventBurst", "--event-burst", "event_burst")
    yield from _negative(cfg, "eventRecordQPS", "--event-qps", "event_record_qps")
    if cfg.healthz_port != 0:
        yield from _between("healthzPort", "--healthz-port", cfg.healthz_port, 1, 65535)
    period = cfg.cpu_cfs_quota_period
    if not gates.enabled("CustomCPUCFSQuotaPeriod") and period != _DEFAULT_CFS_QUOTA:
        yield problem(("cpuCFSQuotaPeriod", "featureGates"), f"{INVALID}cpuCFSQuotaPeriod (--cpu-cfs-quota-period) "
                      f"{braced(period)} requires feature gate CustomCPUCFSQuotaPeriod")
    if gates.enabled("CustomCPUCFSQuotaPeriod") and not _MS <= period <= _SECOND:
        yield problem("cpuCFSQuotaPeriod", f"{INVALID}cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {braced(period)} "
                      "must be between 1ms and 1sec, inclusive")


def image_gc(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    high, low = cfg.image_gc_high_threshold_percent, cfg.image_gc_low_threshold_percent
    yield from _between("imageGCHighThresholdPercent", "--image-gc-high-threshold", high, 0, 100)
    yield from _between("imageGCLowThresholdPercent", "--image-gc-low-threshold", low, 0, 100)
    if low >= high:
        yield problem(("imageGCLowThresholdPercent", "imageGCHighThresholdPercent"),
                      f"{INVALID}imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less than "
                      f"imageGCHighThresholdPercent (--image-gc-high-threshold) {high}")
    max_age, min_age = cfg.image_maximum_gc_age, cfg.image_minimum_gc_age
    if max_age.ns != 0 and not gates.enabled("ImageMaximumGCAge"):
        yield problem("imageMaximumGCAge", f"{INVALID}ImageMaximumGCAge feature gate is required for Kubelet "
                      "configuration option imageMaximumGCAge")
    if max_age.ns < 0:
        yield problem("imageMaximumGCAge", f"{INVALID}imageMaximumGCAge {max_age} must not be negative")
    if max_age.ns > 0 and max_age <= min_age:
        yield problem(("imageMaximumGCAge", "imageMinimumGCAge"),
                      f"{INVALID}imageMaximumGCAge {max_age} must be greater than imageMinimumGCAge {min_age}")


def limits(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    yield from _between("iptablesDropBit", "--iptables-drop-bit", cfg.iptables_drop_bit, 0, 31)
    yield from _between("iptablesMasqueradeBit", "--iptables-masquerade-bit", cfg.iptables_masquerade_bit, 0, 31)
    yield from _negative(cfg, "kubeAPIBurst", "--kube-api-burst", "kube_api_burst")
    yield from _negative(cfg, "kubeAPIQPS", "--kube-api-qps", "kube_api_qps")
    if cfg.node_status_max_images < -1:
        yield problem("nodeStatusMaxImages", f"{INVALID}nodeStatusMaxImages (--node-status-max-images) "
                      f"{cfg.node_status_max_images} must be -1 or greater")
    yield from _negative(cfg, "maxOpenFiles", "--max-open-files", "max_open_files")
    yield from _negative(cfg, "maxPods", "--max-pods", "max_pods")
    yield from _between("oomScoreAdj", "--oom-score-adj", cfg.oom_score_adj, -1000, 1000)
    yield from _negative(cfg, "podsPerCore", "--pods-per-core", "pods_per_core")
    yield from _between("port", "--port", cfg.port, 1, 65535)
    if cfg.read_only_port != 0:
        yield from _between("readOnlyPort", "--read-only-port", cfg.read_only_port, 0, 65535)
    yield from _negative(cfg, "registryBurst", "--registry-burst", "registry_burst")
    yield from _negative(cfg, "registryPullQPS", "--registry-qps", "registry_pull_qps")
    parallel = cfg.max_parallel_image_pulls
    if parallel is not None and parallel < 1:
        yield problem("maxParallelImagePulls", f"{INVALID}maxParallelImagePulls {parallel} must be a positive number")
    if cfg.serialize_image_pulls and parallel is not None and parallel > 1:
        yield problem(("maxParallelImagePulls", "serializeImagePulls"), f"{INVALID}maxParallelImagePulls cannot be "
                      "larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false")
    if cfg.server_tls_bootstrap and not gates.enabled("RotateKubeletServerCertificate"):
        yield problem("serverTLSBootstrap", f"{INVALID}serverTLSBootstrap true requires feature gate "
                      "RotateKubeletServerCertificate")
    if cfg.run_once:
        yield problem("runOnce", f"{INVALID}runOnce (--runOnce) true, Runonce mode has been deprecated and should "
                      "not be set")


def _taint_valid(key: str, value: str, effect: str) -> bool:
    """utiltaints.CheckTaintValidation: a qualified-name key, a label value, a known effect."""
    prefix, _, name = key.rpartition("/")
    if not re.fullmatch(_NAME, name) or len(name) > 63 or ("/" in key and not prefix):
        return False
    if prefix and (len(prefix) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, prefix)):
        return False
    if value and (len(value) > 63 or not re.fullmatch(_NAME, value)):
        return False
    return effect in ("", "NoSchedule", "PreferNoSchedule", "NoExecute")


def taints_and_topology(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    for taint in cfg.register_with_taints:
        if not _taint_valid(taint.key, taint.value, taint.effect):
            added = "<nil>" if taint.time_added is None else taint.time_added
            yield problem("registerWithTaints", f"invalid taint: {{{taint.key} {taint.value} {taint.effect} {added}}}")
        if taint.time_added is not None:
            yield problem("registerWithTaints", f"{INVALID}taint.TimeAdded is not nil")
    if cfg.topology_manager_policy not in TOPOLOGY_POLICIES:
        yield problem("topologyManagerPolicy", f"{INVALID}topologyManagerPolicy (--topology-manager-policy) "
                      f"{go_quote(cfg.topology_manager_policy)} must be one of: {go_list(TOPOLOGY_POLICIES)}")
    if cfg.topology_manager_scope not in ("container", "pod"):
        yield problem("topologyManagerScope", f"{INVALID}topologyManagerScope (--topology-manager-scope) "
                      f'{go_quote(cfg.topology_manager_scope)} must be one of: "container", or "pod"')


def shutdown(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    period, critical = cfg.shutdown_grace_period, cfg.shutdown_grace_period_critical_pods
    if gates.enabled("GracefulNodeShutdown"):
        if critical > period:
            yield problem(("shutdownGracePeriodCriticalPods", "shutdownGracePeriod"),
                          f"{INVALID}shutdownGracePeriodCriticalPods {braced(critical)} must be <= shutdownGracePeriod "
                          f"{braced(period)}")
        for name, value in (("shutdownGracePeriod", period), ("shutdownGracePeriodCriticalPods", critical)):
            if value.ns < 0 or 0 < value.ns < _SECOND.ns:
                yield problem(name, f"{INVALID}{name} {braced(value)} must be either zero or otherwise >= 1 sec")
    if (period.ns > 0 or critical.ns > 0) and not gates.enabled("GracefulNodeShutdown"):
        yield problem(("shutdownGracePeriod", "featureGates"), f"{INVALID}specifying shutdownGracePeriod or "
                      "shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown")
    by_priority = cfg.shutdown_grace_period_by_pod_priority
    if gates.enabled("GracefulNodeShutdownBasedOnPodPriority"):
        if by_priority and (period.ns > 0 or critical.ns > 0):
            yield problem(("shutdownGracePeriodByPodPriority", "shutdownGracePeriod"), f"{INVALID}Cannot specify "
                          "both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
    elif by_priority:
        yield problem(("shutdownGracePeriodByPodPriority", "featureGates"), f"{INVALID}Specifying "
                      "shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority")


def swap_and_backoff(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    behavior = cfg.memory_swap.swap_behavior
    if gates.enabled("NodeSwap") and behavior not in ("", "NoSwap", "LimitedSwap"):
        yield problem("memorySwap.swapBehavior", f"{INVALID}memorySwap.swapBehavior {go_quote(behavior)} must be "
                      'one of: "", "LimitedSwap" or "NoSwap"')
    if not gates.enabled("NodeSwap") and behavior:
        yield problem("memorySwap.swapBehavior", f"{INVALID}memorySwap.swapBehavior cannot be set when NodeSwap "
                      "feature flag is disabled")
    period = cfg.crash_loop_back_off.max_container_restart_period
    name = "crashLoopBackOff.maxContainerRestartPeriod"
    if gates.enabled("KubeletCrashLoopBackOffMax"):
        if period is None:
            yield problem(name, f"{INVALID}FeatureGate KubeletCrashLoopBackOffMax is enabled, "
                          "CrashLoopBackOff.MaxContainerRestartPeriod must be set")
        elif not 1000 <= int(period.ns / 1_000_000) <= 300000:
            yield problem(name, f"{INVALID}CrashLoopBackOff.MaxContainerRestartPeriod (got: {go_float(period.seconds)} "
                          "seconds) must be set between 1s and 300s")
    elif period is not None:
        yield problem((name, "featureGates"), f"{INVALID}FeatureGate KubeletCrashLoopBackOffMax not enabled, "
                      "CrashLoopBackOff.MaxContainerRestartPeriod must not be set")


def _enforcement(cfg: KubeletConfiguration, val: str) -> Iterable[Problem]:
    flag = "enforceNodeAllocatable (--enforce-node-allocatable)"
    if val.startswith("system-reserved") and val in ENFORCE_KEYS and not cfg.system_reserved_cgroup:
        yield problem(("enforceNodeAllocatable", "systemReservedCgroup"), f"{INVALID}systemReservedCgroup "
                      '(--system-reserved-cgroup) must be specified when "system-reserved" or '
                      f'"system-reserved-compressible" included in {flag}')
    if val.startswith("kube-reserved") and val in ENFORCE_KEYS and not cfg.kube_reserved_cgroup:
        yield problem(("enforceNodeAllocatable", "kubeReservedCgroup"), f"{INVALID}kubeReservedCgroup "
                      '(--kube-reserved-cgroup) must be specified when "kube-reserved" or '
                      f'"kube-reserved-compressible" included in {flag}')
    if val == "none" and len(cfg.enforce_node_allocatable) > 1:
        yield problem("enforceNodeAllocatable", f'{INVALID}{flag} may not contain additional enforcements when '
                      '"none" is specified')
    if val not in ENFORCE_KEYS:
        yield problem("enforceNodeAllocatable", f"{INVALID}option {go_quote(val)} specified for {flag}. Valid options "
                      f"are {', '.join(go_quote(k) for k in ENFORCE_KEYS[:-1])} or {go_quote(ENFORCE_KEYS[-1])}")
    elif val != "none" and not cfg.cgroups_per_qos:
        yield problem(("cgroupsPerQOS", "enforceNodeAllocatable"), f"{INVALID}cgroupsPerQOS (--cgroups-per-qos) must "
                      f"be set to true when {go_quote(val)} contained in {flag}")


def node_allocatable(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    flag = "enforceNodeAllocatable (--enforce-node-allocatable)"
    keys = set(cfg.enforce_node_allocatable)
    for full in ("system-reserved", "kube-reserved"):
        if full in keys and f"{full}-compressible" in keys:
            yield problem("enforceNodeAllocatable", f"{INVALID}both {go_quote(full)} and "
                          f"{go_quote(full + '-compressible')} cannot be specified together in {flag}")
    seen: set[str] = set()
    for val in cfg.enforce_node_allocatable:
        if val in seen:
            yield problem("enforceNodeAllocatable", f"{INVALID}duplicated enforcements {go_quote(val)} in {flag}")
            continue
        seen.add(val)
        yield from _enforcement(cfg, val)
    if cfg.hairpin_mode not in HAIRPIN_MODES:
        yield problem("hairpinMode", f"{INVALID}option {go_quote(cfg.hairpin_mode)} specified for hairpinMode "
                      f"(--hairpin-mode). Valid options are {go_quote(HAIRPIN_MODES[0])}, "
                      f"{go_quote(HAIRPIN_MODES[1])} or {go_quote(HAIRPIN_MODES[2])}")


def image_pulls(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    policy, allowlist = cfg.image_pull_credentials_verification_policy, cfg.preloaded_images_verification_allowlist
    name = "imagePullCredentialsVerificationPolicy"
    if gates.enabled("KubeletEnsureSecretPulledImages"):
        if policy not in PULL_POLICIES:
            yield problem(name, f"{INVALID}option {go_quote(policy)} specified for {name}. Valid options are "
                          f"{', '.join(go_quote(p) for p in PULL_POLICIES[:-1])} or {go_quote(PULL_POLICIES[-1])}")
        if allowlist and policy != "NeverVerifyAllowlistedImages":
            yield problem(("preloadedImagesVerificationAllowlist", name), f"{INVALID}can't set "
                          "`preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is "
                          'not "NeverVerifyAllowlistedImages"')
        return
    if policy:
        yield problem((name, "featureGates"), f"{INVALID}`{name}` must not be set if KubeletEnsureSecretPulledImages "
                      "feature gate is not enabled")
    if allowlist:
        yield problem(("preloadedImagesVerificationAllowlist", "featureGates"), f"{INVALID}"
                      "`preloadedImagesVerificationAllowlist` must not be set if KubeletEnsureSecretPulledImages "
                      "feature gate is not enabled")


def reservations(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    cpus = cfg.reserved_system_cpus
    if cpus:
        if cfg.system_reserved_cgroup or cfg.kube_reserved_cgroup:
            yield problem("reservedSystemCPUs", f"{INVALID}can't use reservedSystemCPUs (--reserved-cpus) with "
                          "systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup "
                          "(--kube-reserved-cgroup)")
        error = cpuset_error(cpus)
        if error:
            yield problem("reservedSystemCPUs", f"{INVALID}unable to parse reservedSystemCPUs (--reserved-cpus) "
                          f"{cpus}, error: {error}")
    seen: set[tuple[int, str]] = set()
    for entry in cfg.reserved_memory:
        for resource in sorted(entry.limits):
            yield from _reserved_memory(entry.numa_node, resource, entry.limits[resource], seen)


def _reserved_memory(node: int, resource: str, value: object, seen: set[tuple[int, str]]) -> Iterable[Problem]:
    if resource != "memory" and not resource.startswith("hugepages-"):
        yield problem("reservedMemory", f"{INVALID}the limit type {go_quote(resource)} for NUMA node {node} is not "
                      "supported, only [memory hugepages-<HugePageSize>] is accepted")
    try:
        zero = coerce_quantity(value).is_zero()
    except QuantityError as exc:
        yield problem("reservedMemory", f"{go_quote(str(value))} for NUMA node {node} and resource "
                      f"{go_quote(resource)}: {exc}")
        zero = False
    if zero:
        yield problem("reservedMemory", f"{INVALID}reserved memory may not be zero for NUMA node {node} and resource "
                      f"{go_quote(resource)}")
    if (node, resource) in seen:
        yield problem("reservedMemory", f"{INVALID}the reserved memory has a duplicate value for NUMA node {node} and "
                      f"resource {go_quote(resource)}")
    seen.add((node, resource))


def host_and_metrics(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    if host.cgroup_v1 and cfg.fail_cgroup_v1:
        yield problem("failCgroupV1", "kubelet is configured to not run on a host using cgroup v1. cgroup v1 support "
                      "is in maintenance mode")
    elif host.cgroup_v1 and cfg.single_process_oom_kill is False:
        yield problem("singleProcessOOMKill", f"{INVALID}singleProcessOOMKill must not be explicitly set to false "
                      "when using cgroup v1")
    wanted = f"1.{KUBELET_MINOR - 1}"
    if cfg.show_hidden_metrics_for_version not in ("", wanted):
        yield problem("showHiddenMetricsForVersion", "--show-hidden-metrics-for-version must be omitted or have the "
                      f"value '{wanted}'. Only the previous minor version is allowed")


def go_clean(path: str) -> str:
    """Go's filepath.Clean on Linux (a leading "//" is one slash, unlike posixpath.normpath)."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def logs_and_queries(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> Iterable[Problem]:
    factor = cfg.memory_throttling_factor
    if not 0 < factor <= 1.0:
        yield problem("memoryThrottlingFactor", f"{INVALID}memoryThrottlingFactor {go_float(factor)} must be greater "
                      "than 0 and less than or equal to 1.0")
    if cfg.enable_system_log_query and not gates.enabled("NodeLogQuery"):
        yield problem(("enableSystemLogQuery", "featureGates"), f"{INVALID}NodeLogQuery feature gate is required for "
                      "enableSystemLogQuery")
    if cfg.enable_system_log_query and not cfg.enable_system_log_handler:
        yield problem(("enableSystemLogQuery", "enableSystemLogHandler"), f"{INVALID}enableSystemLogHandler is "
                      "required for enableSystemLogQuery")
    if cfg.container_log_max_workers < 1:
        yield problem("containerLogMaxWorkers", f"{INVALID}containerLogMaxWorkers must be greater than or equal to 1")
    if cfg.container_log_monitor_interval.seconds < 3:
        yield problem("containerLogMonitorInterval", f"{INVALID}containerLogMonitorInterval must be a positive time "
                      "duration greater than or equal to 3s")
    if cfg.container_log_max_files <= 1:
        yield problem("containerLogMaxFiles", f"{INVALID}containerLogMaxFiles must be greater than 1")
    logs_dir = cfg.pod_logs_dir
    if not logs_dir.startswith("/"):
        yield problem("podLogsDir", f"{INVALID}pod logs path {go_quote(logs_dir)} must be absolute path")
    if go_clean(logs_dir) != logs_dir:
        yield problem("podLogsDir", f"{INVALID}pod logs path {go_quote(logs_dir)} must be normalized")
    if any(ord(c) > 127 for c in logs_dir):
        yield problem("podLogsDir", f"{INVALID}pod logs path {go_quote(logs_dir)} mut contains ASCII characters only")


RULES: tuple[Rule, ...] = (
    node_and_cgroups, image_gc, limits, taints_and_topology, shutdown, swap_and_backoff, node_allocatable,
    image_pulls, reservations, host_and_metrics, logging, tracing, logs_and_queries,
)


def kubelet_problems(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> list[Problem]:
    """Everything ValidateKubeletConfiguration would refuse, in its order."""
    return [p for rule in RULES for p in rule(cfg, gates, host)]
