"""`python -m kubeletapi` as a real process: exit codes, messages, restarts, kubectl."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args, tls_client_context

pytestmark = pytest.mark.e2e
HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletapi", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param("readOnlyPortt: 10255\n", 'unknown field "readOnlyPortt"', id="unknown-field"),
        pytest.param("syncFrequency: 5 minutes\n", 'field "syncFrequency": time: unknown unit', id="bad-duration"),
        pytest.param("maxPods: lots\n", 'field "maxPods": Input should be a valid integer', id="wrong-type"),
    ],
)
def test_malformed_config_file_exits_1_naming_the_field(tmp_path: Path, body: str, field: str) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + body)
    result = run_cli("--config", str(config), *agent_args(tmp_path))
    assert result.returncode == 1
    assert str(config) in result.stderr
    assert field in result.stderr
    assert not (tmp_path / "certs").exists()  # nothing was started or written


@pytest.mark.parametrize(("body", "problem"), [
    pytest.param(None, "No such file or directory", id="missing"),
    pytest.param("clusters: [\n", "while parsing", id="not-yaml"),
    pytest.param("apiVersion: v1\nkind: Config\ncurrent-context: nope\n", "no context named 'nope'", id="no-context"),
])
def test_a_bad_kubeconfig_exits_1_naming_the_file_and_the_problem(tmp_path: Path, body: str | None,
                                                                    problem: str) -> None:
    kubeconfig = tmp_path / "node.kubeconfig"
    if body is not None:
        kubeconfig.write_text(body)
    result = run_cli("--kubeconfig", str(kubeconfig), *agent_args(tmp_path))
    assert result.returncode == 1
    assert f"kubeconfig {kubeconfig}: " in result.stderr and problem in result.stderr


KUBELETAPI = str(Path(sys.executable).with_name("kubeletapi"))  # the installed command
POD = """apiVersion: v1
kind: Pod
metadata: {name: idle, namespace: default}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
"""


def refused_before_starting(tmp_path: Path, body: str, *flags: str) -> str:
    """Run the real command with `body` as its --config file and a pod to run, the secure port held
    by this test: the agent must exit 1 on the configuration alone, having bound, written and started
    nothing (an agent that got as far as its listeners would fail on the held port instead)."""
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + body)
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "idle.yaml").write_text(POD)
    args = agent_args(tmp_path, "--config", str(config), "--pod-manifest-path", str(tmp_path / "manifests"), *flags)
    port = int(args[args.index("--port") + 1])
    with socket.socket() as held:
        held.bind((LOOPBACK, port))
        held.listen()
        result = subprocess.run([KUBELETAPI, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "secure server" not in result.stderr and "address already in use" not in result.stderr
    for started in ("certs", "root", "logs"):  # PKI, runtime state (containers), pod logs
        assert not (tmp_path / started).exists(), started
    lines = result.stderr.splitlines()
    assert lines[0].startswith("E") and f"invalid configuration in kubelet config file {config} (" in lines[0]
    assert all(line.startswith("  ") for line in lines[1:]), result.stderr  # no other log line: nothing ran
    return result.stderr


@pytest.mark.parametrize(
    ("body", "line"),
    [
        pytest.param("containerLogMaxSize: abc\n", "  containerLogMaxSize: failed to initialize container log manager: "
                     'failed to parse container log max size "abc": quantities must match', id="log-size-unparsable"),
        pytest.param("containerLogMaxSize: '0'\n", '  containerLogMaxSize: containerLogMaxSize "0" must be greater '
                     "than 0", id="log-size-zero"),
        pytest.param("containerLogMaxSize: -10Mi\n", '  containerLogMaxSize: containerLogMaxSize "-10Mi" must be '
                     "greater than 0", id="log-size-negative"),
        pytest.param("containerLogMaxFiles: 1\n", "  containerLogMaxFiles: invalid configuration: "
                     "containerLogMaxFiles must be greater than 1", id="log-files-one"),
        pytest.param("syncFrequency: -10s\n", "  syncFrequency (--sync-frequency): invalid sync frequency "
                     "-10000000000", id="sync-frequency-negative"),
        pytest.param("evictionHard: {memory.available: 100 megs}\n", "  evictionHard (--eviction-hard): "
                     "memory.available: quantities must match", id="eviction-quantity"),
        pytest.param("evictionHard: {nodefs.available: ten%}\n", "  evictionHard (--eviction-hard): nodefs.available: "
                     'strconv.ParseFloat: parsing "ten": invalid syntax', id="eviction-percentage"),
        pytest.param("evictionHard: {disk.free: 1Gi}\n",
                     "  evictionHard (--eviction-hard): unsupported eviction signal disk.free", id="eviction-signal"),
    ],
)
def test_config_the_kubelet_refuses_exits_1_before_starting(tmp_path: Path, body: str, line: str) -> None:
    stderr = refused_before_starting(tmp_path, body)
    assert any(got.startswith(line) for got in stderr.splitlines()), stderr


def test_every_problem_is_reported_at_once_with_its_flag(tmp_path: Path) -> None:
    stderr = refused_before_starting(tmp_path, "containerLogMaxFiles: 1\nsyncFrequency: -10s\n", "--max-pods", "-5")
    assert "(3 errors):" in stderr.splitlines()[0]
    assert stderr.splitlines()[1:] == [
        "  maxPods (--max-pods, given on the command line): invalid configuration: maxPods (--max-pods) -5 must not "
        "be a negative number",
        "  containerLogMaxFiles: invalid configuration: containerLogMaxFiles must be greater than 1",
        "  syncFrequency (--sync-frequency): invalid sync frequency -10000000000",
    ]


def test_unknown_tls_names_exit_1_naming_the_setting(tmp_path: Path) -> None:
    """As the kubelet: a cipher suite or TLS version it does not know stops start-up."""
    result = run_cli(*agent_args(tmp_path, "--tls-cipher-suites", "TLS_RSA_WITH_RC4_128_SHA,TLS_FOO",
                                 "--tls-min-version", "VersionTLS9"))
    assert result.returncode == 1
    assert ("tlsCipherSuites (--tls-cipher-suites, given on the command line): Cipher suite TLS_FOO not supported "
            "or doesn't exist" in result.stderr)
    assert ("tlsMinVersion (--tls-min-version, given on the command line): unknown tls version 'VersionTLS9'"
            in result.stderr)
    assert not (tmp_path / "certs").exists()


def test_bad_flag_exits_1(tmp_path: Path) -> None:
    result = run_cli("--port", "many", *agent_args(tmp_path)[2:])
    assert result.returncode == 1
    assert "--port" in result.stderr


def test_port_in_use_exits_1_naming_the_port(tmp_path: Path) -> None:
    args = agent_args(tmp_path)
    port = int(args[args.index("--port") + 1])
    with socket.socket() as taken:
        taken.bind((LOOPBACK, port))
        taken.listen()
        result = run_cli(*args)
    assert result.returncode == 1
    assert f"{LOOPBACK}:{port}" in result.stderr
    assert "secure server" in result.stderr


@pytest.mark.parametrize("which", ["cert", "key"])
def test_unreadable_certificate_exits_1_naming_the_file(tmp_path: Path, which: str) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n")
    key.write_text("not a key")
    missing = tmp_path / "missing.pem"
    args = ["--tls-cert-file", str(missing if which == "cert" else cert),
            "--tls-private-key-file", str(missing if which == "key" else key)]
    result = run_cli(*agent_args(tmp_path, *args))
    assert result.returncode == 1
    assert str(missing) in result.stderr
    bad = run_cli(*agent_args(tmp_path, "--tls-cert-file", str(cert), "--tls-private-key-file", str(key)))
    assert bad.returncode == 1
    assert str(cert) in bad.stderr


def test_sigterm_stops_cleanly_and_pki_is_reused(tmp_path: Path) -> None:
    args = agent_args(tmp_path)
    healthz = f"http://{LOOPBACK}:{args[args.index('--healthz-port') + 1]}/healthz"
    first = AgentProcess(args)
    first.wait_healthy(healthz)
    code, out = first.stop()
    assert code == 0, out
    assert "Generating node CA" in out and "Shutting down" in out
    before = {p.name: p.read_bytes() for p in (tmp_path / "certs").iterdir() if p.name != "admin.kubeconfig"}
    second = AgentProcess(args)
    second.wait_healthy(healthz)
    code, out = second.stop()
    assert code == 0
    assert "Generating" not in out
    after = {p.name: p.read_bytes() for p in (tmp_path / "certs").iterdir() if p.name != "admin.kubeconfig"}
    assert after == before


def test_sigterm_closes_an_idle_tls_keep_alive_connection_at_once(tmp_path: Path) -> None:
    """A client holds an idle keep-alive HTTPS connection (one request served) when the agent is
    stopped: the agent closes it at once (the client reads close_notify, then EOF) and exits 0
    without waiting out uvicorn's graceful shutdown. asyncio's TLS close used to wait for the
    client's close_notify, which an idle pooled client never sends: the connection stayed open
    until uvicorn gave up ("Cancel 0 running task(s), timeout graceful shutdown exceeded")."""
    args = agent_args(tmp_path)
    agent = AgentProcess(args)
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{args[args.index('--healthz-port') + 1]}/healthz")
        certs = tmp_path / "certs"
        ctx = tls_client_context(certs / "ca.crt", (certs / "admin.crt", certs / "admin.key"))
        conn = http.client.HTTPSConnection(LOOPBACK, int(args[args.index("--port") + 1]), timeout=30, context=ctx)
        try:
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, b"ok")
            assert not response.will_close  # the connection is kept alive, idle
            agent.proc.send_signal(signal.SIGTERM)
            code, out = agent.wait_exit()  # the client neither reads nor closes meanwhile, as a pool
            assert conn.sock is not None
            assert conn.sock.recv(1) == b""  # the agent closed it (close_notify, then EOF)
        finally:
            conn.close()
    finally:
        agent.stop()
    assert code == 0, out
    assert "graceful shutdown exceeded" not in out, out


@pytest.fixture
def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.skip("kubectl is not installed on this machine")
    return path


def test_kubectl_get_raw(tmp_path: Path, kubectl: str) -> None:
    args = agent_args(tmp_path)
    agent = AgentProcess(args)
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{args[args.index('--healthz-port') + 1]}/healthz")
        kubeconfig = str(tmp_path / "certs" / "admin.kubeconfig")

        def raw(path: str) -> str:
            result = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "--raw", path],
                                    capture_output=True, text=True, timeout=30)
            assert result.returncode == 0, result.stderr
            return result.stdout

        assert raw("/healthz") == "ok"
        assert '"kubeletconfig":{' in raw("/configz")
        assert raw("/api/v1/nodes/testnode/proxy/healthz/ping") == "ok"
        assert "kubelet_node_name" in raw("/metrics")
    finally:
        code, out = agent.stop()
    assert code == 0, out


def test_help_lists_every_flag_with_its_text() -> None:
    # argparse formats help texts with %: a threshold written as nodefs.available<10% broke --help.
    proc = subprocess.run([sys.executable, "-m", "kubeletapi", "--help"], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "COLUMNS": "300"})  # one line per flag's text
    assert proc.returncode == 0, proc.stderr
    assert "e.g. memory.available<100Mi,nodefs.available<10% (default" in proc.stdout, proc.stdout
    assert all(flag in proc.stdout for flag in ("--config", "--kubeconfig", "--influxdb-url", "--reserved-memory"))
