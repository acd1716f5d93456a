"""Semantic validation: every check of the kubelet's ValidateKubeletConfiguration and of its start-up
(server.go, NewMainKubelet, the eviction manager), with the kubelet's exact message, then kubeletapi's
own limits; and the one message that names the file, the field, its flag and where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletapi.cli import configuration
from kubeletapi.config import FlagValue, HostFacts, NodeOptions, build_config, read_config_file
from kubeletapi.config.problems import Problem
from kubeletapi.config.validate import problems
from kubeletapi.errors import ConfigError

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
V1, V2 = HostFacts(cgroup_v1=True), HostFacts(cgroup_v1=False)
QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
LOG_MANAGER = "failed to initialize container log manager: failed to parse container log max size"
P = pytest.param


def found(tmp_path: Path, body: str, host: HostFacts = V2) -> list[Problem]:
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + body)
    cfg = build_config(read_config_file(path), str(path), [], has_kubeconfig=False, has_rbac_file=False)
    return problems(cfg, NodeOptions(), host)


# (config body, field, the kubelet's message), one row per check in validation.go's order.
KUBELET_VALIDATION = [
    P("featureGates: {NodeSwap: false}\n", "featureGates",
      "cannot set feature gate NodeSwap to false, feature is locked to true", id="locked-gate"),
    P("nodeLeaseDurationSeconds: -1\n", "nodeLeaseDurationSeconds",
      "invalid configuration: nodeLeaseDurationSeconds must be greater than 0", id="node-lease"),
    P("systemCgroups: /system.slice\n", "systemCgroups", "invalid configuration: systemCgroups (--system-cgroups) "
      "was specified and cgroupRoot (--cgroup-root) was not specified", id="system-cgroups-without-root"),
    P("eventBurst: -1\n", "eventBurst",
      "invalid configuration: eventBurst (--event-burst) -1 must not be a negative number", id="event-burst"),
    P("eventRecordQPS: -1\n", "eventRecordQPS",
      "invalid configuration: eventRecordQPS (--event-qps) -1 must not be a negative number", id="event-qps"),
    P("healthzPort: 65536\n", "healthzPort",
      "invalid configuration: healthzPort (--healthz-port) 65536 must be between 1 and 65535, inclusive",
      id="healthz-port"),
    P("cpuCFSQuotaPeriod: 200ms\n", "cpuCFSQuotaPeriod", "invalid configuration: cpuCFSQuotaPeriod "
      "(--cpu-cfs-quota-period) {200ms} requires feature gate CustomCPUCFSQuotaPeriod", id="cfs-period-gate"),
    P("featureGates: {CustomCPUCFSQuotaPeriod: true}\ncpuCFSQuotaPeriod: 2s\n", "cpuCFSQuotaPeriod",
      "invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) {2s} must be between 1ms and 1sec, "
      "inclusive", id="cfs-period-range"),
    P("imageGCHighThresholdPercent: 101\n", "imageGCHighThresholdPercent", "invalid configuration: "
      "imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive",
      id="gc-high"),
    P("imageGCLowThresholdPercent: -1\n", "imageGCLowThresholdPercent", "invalid configuration: "
      "imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive", id="gc-low"),
    P("imageGCLowThresholdPercent: 90\n", "imageGCLowThresholdPercent", "invalid configuration: "
      "imageGCLowThresholdPercent (--image-gc-low-threshold) 90 must be less than imageGCHighThresholdPercent "
      "(--image-gc-high-threshold) 85", id="gc-low-above-high"),
    P("imageMaximumGCAge: -1s\n", "imageMaximumGCAge",
      "invalid configuration: imageMaximumGCAge -1s must not be negative", id="gc-max-age-negative"),
    P("imageMaximumGCAge: 1m\n", "imageMaximumGCAge", "invalid configuration: imageMaximumGCAge 1m0s must be "
      "greater than imageMinimumGCAge 2m0s", id="gc-max-age-below-min"),
    P("iptablesDropBit: 32\n", "iptablesDropBit", "invalid configuration: iptablesDropBit (--iptables-drop-bit) 32 "
      "must be between 0 and 31, inclusive", id="drop-bit"),
    P("iptablesMasqueradeBit: -1\n", "iptablesMasqueradeBit", "invalid configuration: iptablesMasqueradeBit "
      "(--iptables-masquerade-bit) -1 must be between 0 and 31, inclusive", id="masquerade-bit"),
    P("kubeAPIBurst: -1\n", "kubeAPIBurst",
      "invalid configuration: kubeAPIBurst (--kube-api-burst) -1 must not be a negative number", id="api-burst"),
    P("kubeAPIQPS: -1\n", "kubeAPIQPS",
      "invalid configuration: kubeAPIQPS (--kube-api-qps) -1 must not be a negative number", id="api-qps"),
    P("nodeStatusMaxImages: -2\n", "nodeStatusMaxImages", "invalid configuration: nodeStatusMaxImages "
      "(--node-status-max-images) -2 must be -1 or greater", id="status-max-images"),
    P("maxOpenFiles: -1\n", "maxOpenFiles",
      "invalid configuration: maxOpenFiles (--max-open-files) -1 must not be a negative number", id="open-files"),
    P("maxPods: -1\n", "maxPods",
      "invalid configuration: maxPods (--max-pods) -1 must not be a negative number", id="max-pods"),
    P("oomScoreAdj: 1001\n", "oomScoreAdj", "invalid configuration: oomScoreAdj (--oom-score-adj) 1001 must be "
      "between -1000 and 1000, inclusive", id="oom-score-adj"),
    P("podsPerCore: -1\n", "podsPerCore",
      "invalid configuration: podsPerCore (--pods-per-core) -1 must not be a negative number", id="pods-per-core"),
    P("port: 70000\n", "port",
      "invalid configuration: port (--port) 70000 must be between 1 and 65535, inclusive", id="port"),
    P("readOnlyPort: 65536\n", "readOnlyPort", "invalid configuration: readOnlyPort (--read-only-port) 65536 must be "
      "between 0 and 65535, inclusive", id="read-only-port"),
    P("registryBurst: -1\n", "registryBurst",
      "invalid configuration: registryBurst (--registry-burst) -1 must not be a negative number", id="reg-burst"),
    P("registryPullQPS: -1\n", "registryPullQPS",
      "invalid configuration: registryPullQPS (--registry-qps) -1 must not be a negative number", id="reg-qps"),
    P("maxParallelImagePulls: 0\n", "maxParallelImagePulls",
      "invalid configuration: maxParallelImagePulls 0 must be a positive number", id="parallel-pulls"),
    P("serializeImagePulls: true\nmaxParallelImagePulls: 3\n", "maxParallelImagePulls", "invalid configuration: "
      "maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to "
      "false", id="parallel-pulls-serialized"),
    P("featureGates: {RotateKubeletServerCertificate: false}\nserverTLSBootstrap: true\n", "serverTLSBootstrap",
      "invalid configuration: serverTLSBootstrap true requires feature gate RotateKubeletServerCertificate",
      id="tls-bootstrap-gate"),
    P("runOnce: true\n", "runOnce", "invalid configuration: runOnce (--runOnce) true, Runonce mode has been "
      "deprecated and should not be set", id="run-once"),
    P("registerWithTaints: [{key: 'a b', effect: NoSchedule}]\n", "registerWithTaints",
      "invalid taint: {a b  NoSchedule <nil>}", id="taint-key"),
    P("registerWithTaints: [{key: a, value: 'x y', effect: NoSchedule}]\n", "registerWithTaints",
      "invalid taint: {a x y NoSchedule <nil>}", id="taint-value"),
    P("registerWithTaints: [{key: a, effect: NoSchedule, timeAdded: '2025-01-01T00:00:00Z'}]\n",
      "registerWithTaints", "invalid configuration: taint.TimeAdded is not nil", id="taint-time-added"),
    P("topologyManagerPolicy: magic\n", "topologyManagerPolicy", 'invalid configuration: topologyManagerPolicy '
      '(--topology-manager-policy) "magic" must be one of: ["none" "best-effort" "restricted" "single-numa-node"]',
      id="topology-policy"),
    P("topologyManagerScope: node\n", "topologyManagerScope", 'invalid configuration: topologyManagerScope '
      '(--topology-manager-scope) "node" must be one of: "container", or "pod"', id="topology-scope"),
    P("shutdownGracePeriod: 1s\nshutdownGracePeriodCriticalPods: 2s\n", "shutdownGracePeriodCriticalPods",
      "invalid configuration: shutdownGracePeriodCriticalPods {2s} must be <= shutdownGracePeriod {1s}",
      id="shutdown-critical-above-total"),
    P("shutdownGracePeriod: 500ms\n", "shutdownGracePeriod", "invalid configuration: shutdownGracePeriod {500ms} "
      "must be either zero or otherwise >= 1 sec", id="shutdown-sub-second"),
    P("featureGates: {GracefulNodeShutdown: false}\nshutdownGracePeriod: 30s\n", "shutdownGracePeriod",
      "invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature "
      "gate GracefulNodeShutdown", id="shutdown-gate"),
    P("shutdownGracePeriod: 30s\nshutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 5}]\n",
      "shutdownGracePeriodByPodPriority", "invalid configuration: Cannot specify both "
      "shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time", id="shutdown-both"),
    P("featureGates: {GracefulNodeShutdownBasedOnPodPriority: false}\n"
      "shutdownGracePeriodByPodPriority: [{priority: 1, shutdownGracePeriodSeconds: 5}]\n",
      "shutdownGracePeriodByPodPriority", "invalid configuration: Specifying shutdownGracePeriodByPodPriority "
      "requires feature gate GracefulNodeShutdownBasedOnPodPriority", id="shutdown-priority-gate"),
    P("memorySwap: {swapBehavior: Unlimited}\n", "memorySwap.swapBehavior", 'invalid configuration: '
      'memorySwap.swapBehavior "Unlimited" must be one of: "", "LimitedSwap" or "NoSwap"', id="swap-behavior"),
    P("crashLoopBackOff: {maxContainerRestartPeriod: 10m}\n", "crashLoopBackOff.maxContainerRestartPeriod",
      "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 600 seconds) must be set between 1s "
      "and 300s", id="crash-loop-max-above"),
    P("crashLoopBackOff: {maxContainerRestartPeriod: 500ms}\n", "crashLoopBackOff.maxContainerRestartPeriod",
      "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be set between 1s "
      "and 300s", id="crash-loop-max-below"),
    P("featureGates: {KubeletCrashLoopBackOffMax: false}\ncrashLoopBackOff: {maxContainerRestartPeriod: 1m}\n",
      "crashLoopBackOff.maxContainerRestartPeriod", "invalid configuration: FeatureGate KubeletCrashLoopBackOffMax "
      "not enabled, CrashLoopBackOff.MaxContainerRestartPeriod must not be set", id="crash-loop-gate-off"),
    P("cgroupsPerQOS: false\n", "cgroupsPerQOS", 'invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be '
      'set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable)',
      id="enforce-without-qos-cgroups"),
    P("enforceNodeAllocatable: [pods, system-reserved]\n", "enforceNodeAllocatable", 'invalid configuration: '
      'systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" or '
      '"system-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable)',
      id="enforce-system-reserved-cgroup"),
    P("enforceNodeAllocatable: [kube-reserved-compressible]\n", "enforceNodeAllocatable", 'invalid configuration: '
      'kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved" or '
      '"kube-reserved-compressible" included in enforceNodeAllocatable (--enforce-node-allocatable)',
      id="enforce-kube-reserved-cgroup"),
    P("kubeReservedCgroup: /k\nenforceNodeAllocatable: [kube-reserved, kube-reserved-compressible]\n",
      "enforceNodeAllocatable", 'invalid configuration: both "kube-reserved" and "kube-reserved-compressible" '
      'cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)', id="enforce-both"),
    P("enforceNodeAllocatable: [none, pods]\n", "enforceNodeAllocatable", 'invalid configuration: '
      'enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is '
      'specified', id="enforce-none-and-more"),
    P("enforceNodeAllocatable: [pods, pods]\n", "enforceNodeAllocatable", 'invalid configuration: duplicated '
      'enforcements "pods" in enforceNodeAllocatable (--enforce-node-allocatable)', id="enforce-duplicate"),
    P("enforceNodeAllocatable: [everything]\n", "enforceNodeAllocatable", 'invalid configuration: option '
      '"everything" specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "pods", '
      '"system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"',
      id="enforce-unknown"),
    P("hairpinMode: magic\n", "hairpinMode", 'invalid configuration: option "magic" specified for hairpinMode '
      '(--hairpin-mode). Valid options are "none", "hairpin-veth" or "promiscuous-bridge"', id="hairpin"),
    P("preloadedImagesVerificationAllowlist: [registry.k8s.io/*]\n", "preloadedImagesVerificationAllowlist",
      "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if "
      '`imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"', id="allowlist-policy"),
    P("featureGates: {KubeletEnsureSecretPulledImages: false}\nimagePullCredentialsVerificationPolicy: AlwaysVerify\n",
      "imagePullCredentialsVerificationPolicy", "invalid configuration: `imagePullCredentialsVerificationPolicy` "
      "must not be set if KubeletEnsureSecretPulledImages feature gate is not enabled", id="pull-policy-gate"),
    P("featureGates: {KubeletEnsureSecretPulledImages: false}\npreloadedImagesVerificationAllowlist: [a/*]\n",
      "preloadedImagesVerificationAllowlist", "invalid configuration: `preloadedImagesVerificationAllowlist` must "
      "not be set if KubeletEnsureSecretPulledImages feature gate is not enabled", id="allowlist-gate"),
    P("reservedSystemCPUs: 0-x\n", "reservedSystemCPUs", 'invalid configuration: unable to parse '
      'reservedSystemCPUs (--reserved-cpus) 0-x, error: strconv.Atoi: parsing "x": invalid syntax', id="cpus-syntax"),
    P("reservedSystemCPUs: 3-1\n", "reservedSystemCPUs", 'invalid configuration: unable to parse reservedSystemCPUs '
      '(--reserved-cpus) 3-1, error: invalid range "3-1" (3 > 1)', id="cpus-range"),
    P("reservedSystemCPUs: '0'\nsystemReservedCgroup: /s\n", "reservedSystemCPUs", "invalid configuration: can't "
      "use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or "
      "kubeReservedCgroup (--kube-reserved-cgroup)", id="cpus-and-cgroup"),
    P("reservedMemory: [{numaNode: 0, limits: {cpu: '1'}}]\n", "reservedMemory", 'invalid configuration: the limit '
      'type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted',
      id="reserved-memory-type"),
    P("reservedMemory: [{numaNode: 1, limits: {memory: '0'}}]\n", "reservedMemory", 'invalid configuration: '
      'reserved memory may not be zero for NUMA node 1 and resource "memory"', id="reserved-memory-zero"),
    P("reservedMemory: [{numaNode: 0, limits: {hugepages-2Mi: 1Gi}}, {numaNode: 0, limits: {hugepages-2Mi: 2Gi}}]\n",
      "reservedMemory", 'invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and '
      'resource "hugepages-2Mi"', id="reserved-memory-duplicate"),
    P("showHiddenMetricsForVersion: '1.30'\n", "showHiddenMetricsForVersion", "--show-hidden-metrics-for-version must "
      "be omitted or have the value '1.34'. Only the previous minor version is allowed", id="hidden-metrics"),
    P("logging: {vmodule: [{filePattern: '', verbosity: 2}]}\n", "logging.vmodule",
      "logging.vmodule[0]: Required value: File pattern must not be empty", id="vmodule-empty"),
    P("logging: {vmodule: [{filePattern: 'a=b', verbosity: 2}]}\n", "logging.vmodule",
      'logging.vmodule[0]: Invalid value: "a=b": File pattern must not contain equal sign or comma',
      id="vmodule-equals"),
    P("logging: {format: json, vmodule: [{filePattern: a, verbosity: 2}]}\n", "logging.vmodule",
      "logging.vmodule: Forbidden: Only supported for text log format", id="vmodule-json"),
    P("featureGates: {LoggingBetaOptions: false}\nlogging: {format: json}\n", "logging.format",
      "logging.format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature", id="json-gate"),
    P("logging: {options: {text: {splitStream: true}}}\n", "logging.options.text.splitStream",
      "logging.options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled", id="split-stream"),
    P("logging: {options: {json: {infoBufferSize: 1Mi}}}\n", "logging.options.json.infoBufferSize",
      "logging.options.json.infoBufferSize: Forbidden: Feature LoggingAlphaOptions is disabled", id="info-buffer"),
    P("logging: {options: {json: {infoBufferSize: lots}}}\n", "logging.options.json.infoBufferSize",
      f"logging.options.json.infoBufferSize: {QUANTITY}", id="info-buffer-unparsable"),
    P("tracing: {samplingRatePerMillion: -1}\n", "tracing.samplingRatePerMillion",
      "tracing.samplingRatePerMillion: Invalid value: -1: sampling rate must be positive", id="sampling-negative"),
    P("tracing: {samplingRatePerMillion: 1000001}\n", "tracing.samplingRatePerMillion",
      "tracing.samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal "
      "to one million",
      id="sampling-above"),
    P("tracing: {endpoint: 'http://collector:4317'}\n", "tracing.endpoint", 'tracing.endpoint: Invalid value: '
      '"http://collector:4317": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract.  See '
      'https://github.com/grpc/grpc/blob/master/doc/naming.md', id="tracing-scheme"),
    P("tracing: {endpoint: '//collector:4317'}\n", "tracing.endpoint", 'tracing.endpoint: Invalid value: '
      '"//collector:4317": unsupported scheme: .  Options are none, dns, unix, or unix-abstract.  See '
      'https://github.com/grpc/grpc/blob/master/doc/naming.md', id="tracing-no-scheme"),
    P("memoryThrottlingFactor: 1.5\n", "memoryThrottlingFactor", "invalid configuration: memoryThrottlingFactor 1.5 "
      "must be greater than 0 and less than or equal to 1.0", id="throttling-above"),
    P("memoryThrottlingFactor: 0\n", "memoryThrottlingFactor", "invalid configuration: memoryThrottlingFactor 0 must "
      "be greater than 0 and less than or equal to 1.0", id="throttling-zero"),
    P("enableSystemLogQuery: true\n", "enableSystemLogQuery",
      "invalid configuration: NodeLogQuery feature gate is required for enableSystemLogQuery", id="log-query-gate"),
    P("featureGates: {NodeLogQuery: true}\nenableSystemLogQuery: true\nenableSystemLogHandler: false\n",
      "enableSystemLogQuery", "invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery",
      id="log-query-handler"),
    P("containerLogMaxWorkers: 0\n", "containerLogMaxWorkers",
      "invalid configuration: containerLogMaxWorkers must be greater than or equal to 1", id="log-workers"),
    P("containerLogMonitorInterval: 1s\n", "containerLogMonitorInterval", "invalid configuration: "
      "containerLogMonitorInterval must be a positive time duration greater than or equal to 3s", id="log-monitor"),
    P("containerLogMaxFiles: 1\n", "containerLogMaxFiles",
      "invalid configuration: containerLogMaxFiles must be greater than 1", id="log-files-one"),
    P("containerLogMaxFiles: 0\n", "containerLogMaxFiles",
      "invalid configuration: containerLogMaxFiles must be greater than 1", id="log-files-zero"),
    P("podLogsDir: logs\n", "podLogsDir",
      'invalid configuration: pod logs path "logs" must be absolute path', id="logs-dir-relative"),
    P("podLogsDir: /var/log//pods/\n", "podLogsDir",
      'invalid configuration: pod logs path "/var/log//pods/" must be normalized', id="logs-dir-unclean"),
    P("podLogsDir: /var/log/pödś\n", "podLogsDir",
      'invalid configuration: pod logs path "/var/log/pödś" mut contains ASCII characters only', id="logs-dir-ascii"),
]

# What the kubelet refuses while starting (server.go, NewMainKubelet, the eviction manager).
KUBELET_START = [
    P("syncFrequency: -10s\n", "syncFrequency", "invalid sync frequency -10000000000", id="sync-frequency"),
    P("containerLogMaxSize: abc\n", "containerLogMaxSize", f'{LOG_MANAGER} "abc": {QUANTITY}', id="log-size-syntax"),
    P("containerLogMaxSize: 10MM\n", "containerLogMaxSize", f"{LOG_MANAGER} \"10MM\": unable to parse quantity's "
      "suffix", id="log-size-suffix"),
    P("containerLogMaxSize: '1.5'\n", "containerLogMaxSize", f'{LOG_MANAGER} "1.5": invalid max log size',
      id="log-size-fraction"),
    P("containerLogMaxSize: 1Ei\n", "containerLogMaxSize", f'{LOG_MANAGER} "1Ei": invalid max log size',
      id="log-size-beyond-int64-fast-path"),
    P("evictionHard: {memory.available: lots}\n", "evictionHard", f"memory.available: {QUANTITY}",
      id="hard-quantity"),
    P("evictionHard: {memory.available: -1Gi}\n", "evictionHard",
      "eviction threshold memory.available must be positive: -1Gi", id="hard-negative"),
    P("evictionHard: {memory.available: '0'}\n", "evictionHard",
      "eviction threshold memory.available must be positive: 0", id="hard-zero"),
    P("evictionHard: {nodefs.available: 120%}\n", "evictionHard",
      "eviction percentage threshold nodefs.available must be <= 100%: 120%", id="hard-percent-above"),
    P("evictionHard: {nodefs.available: -5%}\n", "evictionHard",
      "eviction percentage threshold nodefs.available must be >= 0%: -5%", id="hard-percent-negative"),
    P("evictionHard: {nodefs.available: abc%}\n", "evictionHard",
      'nodefs.available: strconv.ParseFloat: parsing "abc": invalid syntax', id="hard-percent-syntax"),
    P("evictionHard: {nodefs.available: 1e40%}\n", "evictionHard",
      'nodefs.available: strconv.ParseFloat: parsing "1e40": value out of range', id="hard-percent-range"),
    P("evictionHard: {disk.available: 1Gi}\n", "evictionHard", "unsupported eviction signal disk.available",
      id="hard-signal"),
    P("evictionSoft: {memory.available: 1Gi}\n", "evictionSoft",
      "grace period must be specified for the soft eviction threshold memory.available", id="soft-no-grace"),
    P("evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: -1s}\n",
      "evictionSoftGracePeriod", "invalid eviction grace period specified: -1s, must be a positive value",
      id="grace-negative"),
    P("evictionSoftGracePeriod: {memory.available: soon}\n", "evictionSoftGracePeriod",
      'memory.available: time: invalid duration "soon"', id="grace-syntax"),
    P("evictionSoftGracePeriod: {swap.available: 1m}\n", "evictionSoftGracePeriod",
      "unsupported eviction signal swap.available", id="grace-signal"),
    P("evictionMinimumReclaim: {memory.available: -1Mi}\n", "evictionMinimumReclaim",
      "negative eviction minimum reclaim specified for memory.available", id="reclaim-negative"),
    P("evictionMinimumReclaim: {nodefs.available: 0%}\n", "evictionMinimumReclaim",
      "eviction percentage minimum reclaim nodefs.available must be positive: 0%", id="reclaim-percent-zero"),
    P("kubeReserved: {cpu: abc}\n", "kubeReserved", '--kube-reserved value failed to parse: failed to parse quantity '
      f'"abc" for "cpu" resource: {QUANTITY}', id="kube-reserved-syntax"),
    P("kubeReserved: {memory: -1Gi}\n", "kubeReserved", '--kube-reserved value failed to parse: resource quantity '
      'for "memory" cannot be negative: -1Gi', id="kube-reserved-negative"),
    P("systemReserved: {nvidia.com/gpu: '1'}\n", "systemReserved",
      '--system-reserved value failed to parse: cannot reserve "nvidia.com/gpu" resource', id="system-reserved-gpu"),
    P("qosReserved: {memory: '50'}\n", "qosReserved", '--qos-reserved value failed to parse: failed to parse '
      "percentage \"50\" for \"memory\" resource: percentage expected, got '50'", id="qos-no-percent"),
    P("qosReserved: {memory: x%}\n", "qosReserved", '--qos-reserved value failed to parse: failed to parse '
      "percentage \"x%\" for \"memory\" resource: invalid number in percentage 'x%'", id="qos-syntax"),
    P("qosReserved: {memory: 150%}\n", "qosReserved", '--qos-reserved value failed to parse: failed to parse '
      'percentage "150%" for "memory" resource: percentage must be between 0 and 100', id="qos-range"),
    P("qosReserved: {cpu: 10%}\n", "qosReserved", '--qos-reserved value failed to parse: cannot reserve "cpu" '
      "resource", id="qos-cpu"),
    P("featureGates: {TopologyManagerPolicyOptions: false}\n"
      "topologyManagerPolicyOptions: {prefer-closest-numa-nodes: 'true'}\n", "topologyManagerPolicyOptions",
      "topology manager policy options map[prefer-closest-numa-nodes:true] require feature gates "
      '"TopologyManagerPolicyOptions" enabled', id="topology-options-gate"),
]

# What kubeletapi cannot honour, although the kubelet accepts it.
KUBELETAPI_LIMITS = [
    P("maxPods: 20000\n", "maxPods", "maxPods 20000 must be between 1 and 10000 (kubeletapi's limit)", id="max-pods"),
    P("containerLogMaxSize: '-1'\n", "containerLogMaxSize", 'containerLogMaxSize "-1" must be greater than 0: '
      "kubeletapi always rotates container logs (the kubelet turns rotation off for a negative size)",
      id="log-size-negative"),
    P("containerLogMaxSize: '0'\n", "containerLogMaxSize", 'containerLogMaxSize "0" must be greater than 0: '
      "kubeletapi always rotates container logs (the kubelet turns rotation off for a negative size)",
      id="log-size-zero"),
    P("containerLogMaxFiles: 100001\n", "containerLogMaxFiles",
      "containerLogMaxFiles 100001 must be at most 100000 (kubeletapi's container shim keeps no more)",
      id="log-files-above-shim"),
    P("volumeStatsAggPeriod: -1s\n", "volumeStatsAggPeriod", "volumeStatsAggPeriod -1s must not be negative: "
      "kubeletapi cannot turn volume stats off (the kubelet does for a negative period)", id="volume-period"),
]


@pytest.mark.parametrize(("body", "field", "message"), KUBELET_VALIDATION + KUBELET_START + KUBELETAPI_LIMITS)
def test_each_rule_gives_its_message(tmp_path: Path, body: str, field: str, message: str) -> None:
    got = found(tmp_path, body)
    assert (field, message) in [(p.fields[0], p.message) for p in got], got


@pytest.mark.parametrize(
    ("body", "host", "field", "message"),
    [
        P("failCgroupV1: true\n", V1, "failCgroupV1", "kubelet is configured to not run on a host using cgroup v1. "
          "cgroup v1 support is in maintenance mode", id="fail-cgroup-v1"),
        P("singleProcessOOMKill: false\n", V1, "singleProcessOOMKill", "invalid configuration: singleProcessOOMKill "
          "must not be explicitly set to false when using cgroup v1", id="single-process-oom-kill"),
        P("memorySwap: {swapBehavior: LimitedSwap}\n", V1, "memorySwap.swapBehavior", "swap feature is enabled and "
          "LimitedSwap but it is only supported with cgroupv2", id="limited-swap"),
    ],
)
def test_host_checks_on_cgroup_v1(tmp_path: Path, body: str, host: HostFacts, field: str, message: str) -> None:
    assert [(p.fields[0], p.message) for p in found(tmp_path, body, host)] == [(field, message)]
    assert found(tmp_path, body, V2) == []  # the same configuration on cgroup v2
    assert found(tmp_path, body, HostFacts()) == []  # a host whose cgroups cannot be read: not checked


@pytest.mark.parametrize(
    "body",
    [
        P("", id="defaults"),
        P("evictionHard: {nodefs.available: 0%, imagefs.available: 100%, memory.available: 1.5Gi}\n",
          id="eviction-0-and-100-percent-are-ignored"),
        P("evictionSoft: {memory.available: 10%}\nevictionSoftGracePeriod: {memory.available: 1m30s}\n"
          "evictionMinimumReclaim: {memory.available: 0.5Gi, nodefs.available: 5%}\n", id="eviction-soft"),
        P("featureGates: {KubeletCrashLoopBackOffMax: false, KubeletEnsureSecretPulledImages: false}\n",
          id="gates-off-no-gated-defaults"),
        P("featureGates: {NodeSwap: true, ImageMaximumGCAge: true}\n", id="locked-gates-at-their-value"),
        P("featureGates: {SomeFutureGate: true}\n", id="gates-kubeletapi-does-not-know"),
        P("shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n", id="shutdown"),
        P("imageMaximumGCAge: 1h\n", id="image-max-age"),
        P("featureGates: {CustomCPUCFSQuotaPeriod: true}\ncpuCFSQuotaPeriod: 50ms\n", id="cfs-period-with-gate"),
        P("registerWithTaints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}]\n", id="taint"),
        P("reservedSystemCPUs: 0-1,3\n", id="reserved-cpus"),
        P("reservedMemory: [{numaNode: 0, limits: {memory: 1Gi, hugepages-1Gi: 2Gi}}]\n", id="reserved-memory"),
        P("tracing: {endpoint: 'localhost:4317', samplingRatePerMillion: 100}\n", id="tracing-dns"),
        P("tracing: {endpoint: 'unix:///run/otel.sock'}\n", id="tracing-unix"),
        P("showHiddenMetricsForVersion: '1.34'\n", id="hidden-metrics-previous-minor"),
        P("containerLogMaxSize: 1.5M\ncontainerLogMaxFiles: 2\n", id="log-size-decimal"),
        P("qosReserved: {memory: 50%}\nkubeReserved: {cpu: 100m, memory: 1Gi, ephemeral-storage: 1Gi, pid: '1000'}\n",
          id="reservations"),
        P("cgroupsPerQOS: false\nenforceNodeAllocatable: [none]\n", id="enforce-none-without-qos-cgroups"),
        P("systemReservedCgroup: /system.slice\nenforceNodeAllocatable: [pods, system-reserved-compressible]\n",
          id="enforce-system-reserved"),
        P("logging: {format: json, options: {json: {infoBufferSize: '0'}}}\n", id="json-logs"),
        P("featureGates: {LoggingAlphaOptions: true}\nlogging: {options: {text: {splitStream: true}}}\n",
          id="split-stream-with-gate"),
        P("memorySwap: {swapBehavior: LimitedSwap}\nfailCgroupV1: true\n", id="cgroup-v2-only-settings"),
        P("syncFrequency: 0s\ncontainerLogMaxFiles: 100000\nmaxPods: 10000\n", id="limits"),
    ],
)
def test_valid_configurations(tmp_path: Path, body: str) -> None:
    assert found(tmp_path, body) == []


def test_all_problems_at_once_naming_file_field_flag_and_origin(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + "containerLogMaxSize: abc\ncontainerLogMaxFiles: 1\nsyncFrequency: -10s\n"
                      "evictionHard: {memory.available: 100Mee}\nimageGCLowThresholdPercent: 90\n")
    with pytest.raises(ConfigError) as err:
        configuration(["--config", str(config), "--max-pods", "-3", "--root-dir", str(tmp_path / "root")], V2)
    assert str(err.value).splitlines() == [
        f"invalid configuration in kubelet config file {config} (6 errors):",
        "  imageGCLowThresholdPercent (--image-gc-low-threshold): invalid configuration: imageGCLowThresholdPercent "
        "(--image-gc-low-threshold) "
        "90 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85",
        "  maxPods (--max-pods, given on the command line): invalid configuration: maxPods (--max-pods) -3 must not "
        "be a negative number",
        "  containerLogMaxFiles: invalid configuration: containerLogMaxFiles must be greater than 1",
        "  syncFrequency (--sync-frequency): invalid sync frequency -10000000000",
        "  evictionHard (--eviction-hard): memory.available: unable to parse quantity's suffix",
        f'  containerLogMaxSize: {LOG_MANAGER} "abc": {QUANTITY}',
    ]


def test_a_default_that_conflicts_with_a_flag_is_labelled_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        configuration(["--sync-frequency=-1s", "--root-dir", str(tmp_path)], V2)
    assert str(err.value).splitlines() == [
        "invalid configuration in the command line (no --config file) (1 error):",
        "  syncFrequency (--sync-frequency, given on the command line): invalid sync frequency -1000000000",
    ]
    path = tmp_path / "c.yaml"
    path.write_text(HEADER + "imageGCHighThresholdPercent: 70\n")
    with pytest.raises(ConfigError) as err:
        configuration(["--config", str(path)], V2)
    assert err.value.args[0].splitlines()[1].startswith(
        "  imageGCLowThresholdPercent (--image-gc-low-threshold, default): ")


def test_a_flag_overriding_a_good_file_value_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEADER + "podLogsDir: /var/log/pods\n")
    flags = [FlagValue("--pod-logs-dir", ("podLogsDir",), "relative/logs")]
    cfg = build_config(read_config_file(path), str(path), flags, has_kubeconfig=False, has_rbac_file=False)
    assert [p.message for p in problems(cfg, NodeOptions(), V2)] == [
        'invalid configuration: pod logs path "relative/logs" must be absolute path']
    with pytest.raises(ConfigError, match=r"podLogsDir \(--pod-logs-dir, given on the command line\): invalid "):
        configuration(["--config", str(path), "--pod-logs-dir", "relative/logs"], V2)
