"""KubeletConfiguration: strict decoding, defaults, flags over the file, and the wire form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeletapi.config import FlagValue, NodeOptions, build_config, read_config_file, redacted, validate
from kubeletapi.errors import ConfigError

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

# Every field of v1beta1 KubeletConfiguration (kubernetes/kubelet config/v1beta1/types.go, 1.35),
# in declaration order: /configz must keep the kubelet's key order and spelling.
KUBELET_FIELDS = """enableServer staticPodPath podLogsDir syncFrequency fileCheckFrequency httpCheckFrequency
staticPodURL staticPodURLHeader address port readOnlyPort tlsCertFile tlsPrivateKeyFile
tlsCipherSuites tlsCurvePreferences tlsMinVersion rotateCertificates serverTLSBootstrap
authentication authorization registryPullQPS registryBurst imagePullCredentialsVerificationPolicy
preloadedImagesVerificationAllowlist eventRecordQPS eventBurst enableDebuggingHandlers
enableContentionProfiling healthzPort healthzBindAddress oomScoreAdj clusterDomain clusterDNS
streamingConnectionIdleTimeout nodeStatusUpdateFrequency nodeStatusReportFrequency
nodeLeaseDurationSeconds imageMinimumGCAge imageMaximumGCAge imageGCHighThresholdPercent
imageGCLowThresholdPercent volumeStatsAggPeriod kubeletCgroups systemCgroups cgroupRoot
cgroupsPerQOS cgroupDriver cpuManagerPolicy singleProcessOOMKill cpuManagerPolicyOptions
cpuManagerReconcilePeriod memoryManagerPolicy topologyManagerPolicy topologyManagerScope
topologyManagerPolicyOptions qosReserved runtimeRequestTimeout hairpinMode maxPods podCIDR
podPidsLimit resolvConf runOnce cpuCFSQuota cpuCFSQuotaPeriod nodeStatusMaxImages maxOpenFiles
contentType kubeAPIQPS kubeAPIBurst serializeImagePulls maxParallelImagePulls evictionHard
evictionSoft evictionSoftGracePeriod evictionPressureTransitionPeriod evictionMaxPodGracePeriod
evictionMinimumReclaim mergeDefaultEvictionSettings podsPerCore enableControllerAttachDetach
protectKernelDefaults makeIPTablesUtilChains iptablesMasqueradeBit iptablesDropBit featureGates
failSwapOn memorySwap containerLogMaxSize containerLogMaxFiles containerLogMaxWorkers
containerLogMonitorInterval configMapAndSecretChangeDetectionStrategy systemReserved kubeReserved
reservedSystemCPUs showHiddenMetricsForVersion systemReservedCgroup kubeReservedCgroup
enforceNodeAllocatable allowedUnsafeSysctls volumePluginDir providerID kernelMemcgNotification
logging enableSystemLogHandler enableSystemLogQuery shutdownGracePeriod
shutdownGracePeriodCriticalPods shutdownGracePeriodByPodPriority crashLoopBackOff reservedMemory
enableProfilingHandler enableDebugFlagsHandler seccompDefault memoryThrottlingFactor
registerWithTaints registerNode tracing localStorageCapacityIsolation containerRuntimeEndpoint
imageServiceEndpoint failCgroupV1 userNamespaces""".split()


def load(tmp_path: Path, body: str, *flags: FlagValue, kubeconfig: bool = False):  # type: ignore[no-untyped-def]
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + body)
    return build_config(read_config_file(path), str(path), flags, has_kubeconfig=kubeconfig, has_rbac_file=False)


def test_every_kubelet_field_in_order() -> None:
    from kubeletapi.config.model import KubeletConfiguration

    names = [info.alias for info in KubeletConfiguration.model_fields.values()]
    assert names == KUBELET_FIELDS


def test_defaults_without_an_api_server(tmp_path: Path) -> None:
    cfg = load(tmp_path, "")
    wire = cfg.to_wire()
    assert wire["authentication"] == {
        "x509": {}, "webhook": {"enabled": False, "cacheTTL": "2m0s"}, "anonymous": {"enabled": False},
    }
    assert wire["authorization"] == {
        "mode": "AlwaysAllow", "webhook": {"cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"},
    }
    assert "readOnlyPort" not in wire  # 0 and omitempty
    assert wire["port"] == 10250
    assert wire["syncFrequency"] == "1m0s"
    assert wire["streamingConnectionIdleTimeout"] == "4h0m0s"
    assert wire["imageMaximumGCAge"] == "0s"  # a struct: never omitted
    assert wire["memorySwap"] == {}
    assert wire["evictionHard"] == {
        "memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
        "imagefs.available": "15%", "imagefs.inodesFree": "5%",
    }
    assert wire["logging"]["flushFrequency"] == "5s"
    assert wire["cpuCFSQuotaPeriod"] == "100ms"
    assert wire["containerRuntimeEndpoint"] == "unix:///run/containerd/containerd.sock"
    assert "rotateCertificates" not in wire  # false, non-pointer, omitempty
    assert wire["seccompDefault"] is False  # false, but a pointer: kept
    assert "tracing" not in wire and "singleProcessOOMKill" not in wire  # nil pointers
    assert list(wire)[:4] == ["enableServer", "podLogsDir", "syncFrequency", "fileCheckFrequency"]


def test_defaults_with_an_api_server(tmp_path: Path) -> None:
    cfg = load(tmp_path, "", kubeconfig=True)
    assert cfg.authentication.webhook.enabled is True
    assert cfg.authorization.mode == "Webhook"


def test_go_zero_values_get_defaults_but_pointers_keep_them(tmp_path: Path) -> None:
    cfg = load(tmp_path, "port: 0\nsyncFrequency: 0s\nhealthzPort: 0\nenableDebuggingHandlers: false\n")
    assert cfg.port == 10250
    assert str(cfg.sync_frequency) == "1m0s"
    assert cfg.healthz_port == 0
    assert cfg.enable_debugging_handlers is False


def test_null_means_absent(tmp_path: Path) -> None:
    cfg = load(tmp_path, "maxPods: null\nevictionHard: null\n")
    assert cfg.max_pods == 110
    assert cfg.eviction_hard is not None and "memory.available" in cfg.eviction_hard


def test_conditional_defaults(tmp_path: Path) -> None:
    cfg = load(tmp_path, "nodeStatusUpdateFrequency: 20s\nmaxParallelImagePulls: 3\npodPidsLimit: -5\n")
    assert str(cfg.node_status_report_frequency) == "20s"
    assert cfg.serialize_image_pulls is False
    assert cfg.pod_pids_limit == -1


def test_json_config(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "port": 11250, "authentication": {"anonymous": {"enabled": True}},
    }))
    cfg = build_config(read_config_file(path), str(path), [], has_kubeconfig=False, has_rbac_file=False)
    assert cfg.port == 11250
    assert cfg.authentication.anonymous.enabled is True


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("portt: 1\n", 'unknown field "portt"', id="unknown-field"),
        pytest.param("authentication:\n  webhook:\n    enabld: true\n",
                     'unknown field "authentication.webhook.enabld"', id="unknown-nested-field"),
        pytest.param("port: \"10250\"\n", 'field "port": Input should be a valid integer', id="string-for-int"),
        pytest.param("port: 1.5\n", 'field "port": Input should be a valid integer', id="float-for-int"),
        pytest.param("enableServer: \"yes\"\n", 'field "enableServer": Input should be a valid boolean',
                     id="string-for-bool"),
        pytest.param("syncFrequency: 10\n", 'field "syncFrequency": must be a duration string', id="int-for-duration"),
        pytest.param("syncFrequency: 1x\n", 'field "syncFrequency": time: unknown unit "x"', id="bad-duration"),
        pytest.param("authentication:\n  webhook:\n    cacheTTL: 2 minutes\n",
                     'field "authentication.webhook.cacheTTL": time: ', id="bad-nested-duration"),
        pytest.param("maxPods: 3000000000\n", 'field "maxPods": Input should be less than or equal to 2147483647',
                     id="int32-overflow"),
        pytest.param("authorization:\n  mode: Magic\n", 'field "authorization.mode"', id="bad-enum"),
        pytest.param("evictionHard:\n  memory.available: 100\n", 'field "evictionHard.memory.available"',
                     id="int-in-string-map"),
    ],
)
def test_strict_decoding_names_file_and_field(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(tmp_path, body)
    message = str(err.value)
    assert str(tmp_path / "config.yaml") in message
    assert expected in message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("port: [1\n", "is not valid YAML or JSON", id="syntax"),
        pytest.param("- 1\n- 2\n", "expected a KubeletConfiguration object", id="not-a-mapping"),
        pytest.param("kind: KubeletConfiguration\nport: 1\n", "kind and apiVersion must be", id="no-apiversion"),
        pytest.param(HEADER + "port: 1\nport: 2\n", 'duplicate field "port"', id="duplicate-key"),
        pytest.param("apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
                     "kind and apiVersion must be", id="wrong-version"),
    ],
)
def test_malformed_files(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=expected):
        read_config_file(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        read_config_file(tmp_path / "nope.yaml")


def test_flags_override_the_file(tmp_path: Path) -> None:
    cfg = load(
        tmp_path, "port: 11250\nreadOnlyPort: 11255\n",
        FlagValue("--port", ("port",), 12250),
        FlagValue("--anonymous-auth", ("authentication", "anonymous", "enabled"), True),
    )
    assert cfg.port == 12250
    assert cfg.read_only_port == 11255
    assert cfg.authentication.anonymous.enabled is True


def test_bad_flag_value_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="flag --sync-frequency"):
        load(tmp_path, "", FlagValue("--sync-frequency", ("syncFrequency",), "soon"))


@pytest.mark.parametrize(
    ("body", "opts", "expected"),
    [
        pytest.param("authentication:\n  webhook:\n    enabled: true\n", NodeOptions(),
                     "no client provided, cannot use webhook authentication", id="webhook-authn-no-kubeconfig"),
        pytest.param("authorization:\n  mode: Webhook\n", NodeOptions(),
                     "no client provided, cannot use webhook authorization", id="webhook-authz-no-kubeconfig"),
        pytest.param("authorization:\n  mode: RBAC\n", NodeOptions(), "needs --authorization-rbac-file",
                     id="rbac-without-file"),
        pytest.param("port: 70000\n", NodeOptions(), "must be between 1 and 65535", id="port-range"),
        pytest.param("address: localhost\n", NodeOptions(), "is not an IP address", id="address"),
        pytest.param("tlsCertFile: /x.crt\n", NodeOptions(), "must be given together", id="tls-pair"),
    ],
)
def test_semantic_validation(tmp_path: Path, body: str, opts: NodeOptions, expected: str) -> None:
    cfg = load(tmp_path, body)
    with pytest.raises(ConfigError, match=expected):
        validate(cfg, opts)


def test_configz_redacts_header_values(tmp_path: Path) -> None:
    body = "staticPodURL: http://127.0.0.1:1/pods\nstaticPodURLHeader:\n  Authorization: [Bearer s3cret]\n"
    cfg = load(tmp_path, body)
    wire = redacted(cfg)
    assert wire["staticPodURLHeader"] == {"Authorization": ["<redacted>"]}
    assert "s3cret" not in json.dumps(wire)


def test_configz_shows_enable_system_log_query_as_the_kubelet(tmp_path: Path) -> None:
    """The kubelet's /configz converts its internal configuration (a plain bool there) back to
    v1beta1: `enableSystemLogQuery: false` right after enableSystemLogHandler (the oracle saw it)."""
    keys = list(redacted(load(tmp_path, "")))
    assert keys[keys.index("enableSystemLogHandler") + 1] == "enableSystemLogQuery"
    assert redacted(load(tmp_path, ""))["enableSystemLogQuery"] is False
    on = "featureGates: {NodeLogQuery: true}\nenableSystemLogQuery: true\n"
    assert redacted(load(tmp_path, on))["enableSystemLogQuery"] is True
    assert "enableSystemLogQuery" not in load(tmp_path, "").to_wire()  # the file's own form is untouched


def test_gated_defaults_follow_their_feature_gates(tmp_path: Path) -> None:
    """KubeletCrashLoopBackOffMax and KubeletEnsureSecretPulledImages are on in 1.35: their fields get
    defaults; a configuration turning a gate off gets none (the kubelet then refuses them set)."""
    on = load(tmp_path, "").to_wire()
    assert on["crashLoopBackOff"] == {"maxContainerRestartPeriod": "5m0s"}
    assert on["imagePullCredentialsVerificationPolicy"] == "NeverVerifyPreloadedImages"
    off = load(tmp_path, "featureGates: {KubeletCrashLoopBackOffMax: false, KubeletEnsureSecretPulledImages: false}\n")
    wire = off.to_wire()
    assert wire["crashLoopBackOff"] == {}
    assert "imagePullCredentialsVerificationPolicy" not in wire
    kept = load(tmp_path, "crashLoopBackOff: {maxContainerRestartPeriod: 0s}\n")
    assert kept.crash_loop_back_off.max_container_restart_period is not None  # a pointer: an explicit 0 stays
    assert kept.crash_loop_back_off.max_container_restart_period.ns == 0
