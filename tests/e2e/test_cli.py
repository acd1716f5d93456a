"""`python -m kubeletapi` as a real process: exit codes, messages, restarts, kubectl."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args

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


def test_unknown_tls_names_exit_1_naming_the_setting(tmp_path: Path) -> None:
    """As the kubelet: a cipher suite or TLS version it does not know stops start-up."""
    result = run_cli(*agent_args(tmp_path, "--tls-cipher-suites", "TLS_RSA_WITH_RC4_128_SHA,TLS_FOO",
                                 "--tls-min-version", "VersionTLS9"))
    assert result.returncode == 1
    assert ("tlsCipherSuites (--tls-cipher-suites): Cipher suite TLS_FOO not supported or doesn't exist"
            in result.stderr)
    assert "tlsMinVersion (--tls-min-version): unknown tls version 'VersionTLS9'" in result.stderr
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
