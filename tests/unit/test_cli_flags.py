"""Every flag of the issue parses, with the kubelet's name, into the right config field or option."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.config import build_config, validate
from kubeletapi.errors import ConfigError
from kubeletapi.flags import parse


def effective(*args: str) -> tuple[dict[str, Any], Any]:
    opts, flags = parse(list(args))
    cfg = build_config(None, None, flags, has_kubeconfig=opts.kubeconfig is not None,
                       has_rbac_file=opts.authorization_rbac_file is not None)
    return cfg.to_wire(), opts


@pytest.mark.parametrize(
    ("args", "field", "value"),
    [
        (["--address", "127.0.0.1"], ("address",), "127.0.0.1"),
        (["--port", "11250"], ("port",), 11250),
        (["--read-only-port=10255"], ("readOnlyPort",), 10255),
        (["--healthz-port", "0"], ("healthzPort",), 0),
        (["--healthz-bind-address", "127.0.0.2"], ("healthzBindAddress",), "127.0.0.2"),
        (["--tls-cert-file", "/a.crt", "--tls-private-key-file", "/a.key"], ("tlsCertFile",), "/a.crt"),
        (["--tls-cert-file", "/a.crt", "--tls-private-key-file", "/a.key"], ("tlsPrivateKeyFile",), "/a.key"),
        (["--tls-cipher-suites", "TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"], ("tlsCipherSuites",),
         ["TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]),
        (["--tls-min-version", "VersionTLS13"], ("tlsMinVersion",), "VersionTLS13"),
        (["--client-ca-file", "/ca.crt"], ("authentication", "x509", "clientCAFile"), "/ca.crt"),
        (["--anonymous-auth"], ("authentication", "anonymous", "enabled"), True),
        (["--anonymous-auth=false"], ("authentication", "anonymous", "enabled"), False),
        (["--authentication-token-webhook", "--kubeconfig", "/k"], ("authentication", "webhook", "enabled"), True),
        (["--authorization-mode", "RBAC"], ("authorization", "mode"), "RBAC"),
        (["--authorization-mode=Webhook", "--kubeconfig", "/k"], ("authorization", "mode"), "Webhook"),
        (["--pod-manifest-path", "/etc/kubernetes/manifests"], ("staticPodPath",), "/etc/kubernetes/manifests"),
        (["--manifest-url", "http://127.0.0.1/p"], ("staticPodURL",), "http://127.0.0.1/p"),
        (["--manifest-url-header", "A:1", "--manifest-url-header", "A:2"], ("staticPodURLHeader",), {"A": ["1", "2"]}),
        (["--file-check-frequency", "5s"], ("fileCheckFrequency",), "5s"),
        (["--http-check-frequency", "1m"], ("httpCheckFrequency",), "1m0s"),
        (["--sync-frequency", "30s"], ("syncFrequency",), "30s"),
        (["--pod-logs-dir", "/logs"], ("podLogsDir",), "/logs"),
        (["--cgroup-root", "/kubeletapi"], ("cgroupRoot",), "/kubeletapi"),
        (["--max-pods", "20"], ("maxPods",), 20),
        (["--enable-debugging-handlers=false"], ("enableDebuggingHandlers",), False),
        (["--container-runtime-endpoint", "unix:///c.sock"], ("containerRuntimeEndpoint",), "unix:///c.sock"),
        (["-v", "4"], ("logging", "verbosity"), 4),
        (["--v=2"], ("logging", "verbosity"), 2),
        (["--memory-manager-policy", "Static"], ("memoryManagerPolicy",), "Static"),
        (["--reserved-memory", "0:memory=1Gi,hugepages-2Mi=4Mi;1:memory=512Mi", "--reserved-memory", "2:memory=1"],
         ("reservedMemory",), [{"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-2Mi": "4Mi"}},
                               {"numaNode": 1, "limits": {"memory": "512Mi"}},
                               {"numaNode": 2, "limits": {"memory": "1"}}]),
    ],
)
def test_config_flags(args: list[str], field: tuple[str, ...], value: Any) -> None:
    wire, _ = effective(*args)
    for key in field:
        wire = wire[key]
    assert wire == value


@pytest.mark.parametrize(("value", "error"), [
    pytest.param("0", "the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], "
                      "got 0", id="no-colon"),
    pytest.param("x:memory=1Gi", "failed to convert the NUMA node ID, exptected integer, got x", id="node-id"),
    pytest.param("0:memory", "the reserved limit has incorrect value, expected type=quantatity, got memory",
                 id="no-equals"),
    pytest.param("0:cpu=1", 'memory type conversion error, unknown type: "cpu"', id="type"),
    pytest.param("0:memory=1GG", "failed to parse the quantatity, expected quantatity, got 1GG", id="quantity"),
])
def test_malformed_reserved_memory_exits_1(value: str, error: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(["--reserved-memory", value])
    assert exited.value.code == 1
    assert f"argument --reserved-memory: {error}" in capsys.readouterr().err


def test_node_option_flags(tmp_path: Path) -> None:
    _, opts = effective(
        "--hostname-override", "Node-A", "--node-ip", "10.0.0.1,fd00::1", "--root-dir", "/r", "--cert-dir", "/c",
        "--kubeconfig", "/k", "--container-runtime", "remote", "--housekeeping-interval", "2s",
        "--token-auth-file", "/t.csv", "--authorization-rbac-file", "/rbac.yaml", "--config", "/cfg.yaml",
    )
    assert opts.hostname_override == "Node-A"
    assert opts.node_ip == "10.0.0.1,fd00::1"
    assert (opts.root_dir, opts.cert_dir, opts.kubeconfig) == (Path("/r"), Path("/c"), Path("/k"))
    assert opts.container_runtime == "remote"
    assert str(opts.housekeeping_interval) == "2s"
    assert (opts.token_auth_file, opts.authorization_rbac_file) == (Path("/t.csv"), Path("/rbac.yaml"))
    assert opts.config_file == Path("/cfg.yaml")


def test_defaults_without_flags() -> None:
    wire, opts = effective()
    assert opts.container_runtime == "process"
    assert opts.effective_cert_dir == Path("/var/lib/kubelet/pki")
    assert str(opts.housekeeping_interval) == "10s"
    assert "readOnlyPort" not in wire


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "x"], "--port"),
        (["--anonymous-auth=maybe"], "--anonymous-auth"),
        (["--sync-frequency", "1y"], "--sync-frequency"),
        (["--container-runtime", "docker"], "--container-runtime"),
        (["--no-such-flag"], "unrecognized arguments"),
        (["extra"], "unrecognized arguments"),
    ],
)
def test_bad_flags_exit_1(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(args)
    assert exit_.value.code == 1
    assert message in capsys.readouterr().err


def test_housekeeping_interval_bounds() -> None:
    with pytest.raises(ConfigError, match="between 1s and 15m"):
        parse(["--housekeeping-interval", "100ms"])


def test_webhook_flag_without_kubeconfig_is_refused() -> None:
    opts, flags = parse(["--authentication-token-webhook"])
    cfg = build_config(None, None, flags, has_kubeconfig=False, has_rbac_file=False)
    with pytest.raises(ConfigError, match="no client provided, cannot use webhook authentication"):
        validate(cfg, opts)


def test_influxdb_flags_make_the_sink_options() -> None:
    opts, _ = parse(["--influxdb-url", "http://127.0.0.1:8086", "--influxdb-database", "metrics",
                     "--influxdb-retention-policy", "week", "--influxdb-username", "u",
                     "--influxdb-password", "hunter2",
                     "--influxdb-batch-size", "100", "--influxdb-buffer-size", "1000", "--influxdb-timeout", "2s"])
    influx = opts.influxdb
    assert influx is not None and not influx.v2
    assert (influx.url, influx.database, influx.retention_policy, influx.username, influx.password) == (
        "http://127.0.0.1:8086", "metrics", "week", "u", "hunter2")
    assert (influx.batch_size, influx.buffer_size, influx.timeout.seconds) == (100, 1000, 2.0)
    assert "hunter2" not in repr(influx)  # secrets stay out of log lines


def test_influxdb_v2_flags() -> None:
    opts, _ = parse(["--influxdb-url", "https://influx:8086", "--influxdb-token", "t", "--influxdb-org", "o",
                     "--influxdb-bucket", "b"])
    assert opts.influxdb is not None and opts.influxdb.v2 and opts.influxdb.token == "t"


def test_influxdb_secrets_from_the_environment_unless_flags_give_them() -> None:
    env = {"KUBELETAPI_INFLUXDB_TOKEN": "from-env", "KUBELETAPI_INFLUXDB_PASSWORD": "pw-env"}
    opts, _ = parse(["--influxdb-url", "http://h"], env=env)
    assert opts.influxdb is not None and (opts.influxdb.token, opts.influxdb.password) == ("from-env", "pw-env")
    opts, _ = parse(["--influxdb-url", "http://h", "--influxdb-token", "flag"], env=env)
    assert opts.influxdb is not None and opts.influxdb.token == "flag"
    assert parse([], env=env)[0].influxdb is None  # the environment alone turns nothing on


def test_a_small_buffer_alone_bounds_the_batch() -> None:
    opts, _ = parse(["--influxdb-url", "http://h", "--influxdb-buffer-size", "40"])
    assert opts.influxdb is not None and opts.influxdb.effective_batch_size == 40


def test_no_influxdb_url_no_sink() -> None:
    assert parse([])[1] == [] and parse([])[0].influxdb is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--influxdb-database", "k8s"], "--influxdb-database given without --influxdb-url", id="no-url"),
        pytest.param(["--influxdb-url", "127.0.0.1:8086"], "must be an http(s) URL", id="no-scheme"),
        pytest.param(["--influxdb-url", "http://h", "--influxdb-bucket", "b"], "needs --influxdb-org", id="v2-org"),
        pytest.param(["--influxdb-url", "http://h", "--influxdb-batch-size", "0"], "--influxdb-batch-size",
                     id="batch-zero"),
    ],
)
def test_bad_influxdb_flags(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse(args)
