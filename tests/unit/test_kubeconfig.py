"""--kubeconfig: what loads, and every way a bad file is refused with the file and the problem named
(the agent then exits 1: tests/e2e/test_cli.py; tests/cluster cover joining with a good one)."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path

import pytest
import yaml

from kubeletapi.errors import ConfigError
from kubeletapi.kubeconfig import load_kubeconfig, write_kubeconfig
from kubeletapi.pki import NodePKI, ensure_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> NodePKI:
    pki = NodePKI.under(tmp_path_factory.mktemp("pki"))
    ensure_pki(pki, "127.0.0.1", [], dt.datetime.now(dt.UTC), write_token=False)
    return pki


def doc(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://10.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t0k"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    base.update(over)
    return base


def write(tmp: Path, body: object) -> Path:
    path = tmp / "node.kubeconfig"
    path.write_text(body if isinstance(body, str) else yaml.safe_dump(body))
    return path


def test_inline_data_round_trips(tmp_path: Path, pki: NodePKI) -> None:
    path = tmp_path / "k"
    write_kubeconfig(path, "x", "https://127.0.0.1:6443", pki.ca_crt.read_bytes(), pki.admin_crt.read_bytes(),
                     pki.admin_key.read_bytes())
    config = load_kubeconfig(path)
    assert config.server == "https://127.0.0.1:6443" and config.ca_pem == pki.ca_crt.read_bytes()
    assert config.client_key_pem == pki.admin_key.read_bytes() and config.token is None


def test_files_relative_to_the_kubeconfig_and_a_token_file(tmp_path: Path, pki: NodePKI) -> None:
    (tmp_path / "ca.crt").write_bytes(pki.ca_crt.read_bytes())
    (tmp_path / "token").write_text("s3cret\n")
    path = write(tmp_path, doc(clusters=[{"name": "k", "cluster": {"server": "https://h:6443/",
                                                                    "certificate-authority": "ca.crt"}}],
                               users=[{"name": "u", "user": {"tokenFile": "token"}}]))
    config = load_kubeconfig(path)
    assert (config.server, config.token, config.ca_pem) == ("https://h:6443", "s3cret", pki.ca_crt.read_bytes())


def test_the_first_context_serves_without_a_current_one(tmp_path: Path) -> None:
    body = doc()
    del body["current-context"]
    assert load_kubeconfig(write(tmp_path, body)).token == "t0k"


@pytest.mark.parametrize(("body", "problem"), [
    pytest.param("garbage: [", "while parsing", id="not-yaml"),
    pytest.param("- a list", "not a kubeconfig document", id="not-a-mapping"),
    pytest.param(doc(**{"current-context": None, "contexts": []}), "no current-context and no contexts",
                 id="no-context"),
    pytest.param(doc(**{"current-context": "other"}), "no context named 'other'", id="unknown-context"),
    pytest.param(doc(contexts=[{"name": "c", "context": {"user": "u"}}]), "its context names no cluster",
                 id="context-without-cluster"),
    pytest.param(doc(clusters=[{"name": "k", "cluster": {"server": "10.0.0.1:6443"}}]), "no https server URL",
                 id="server-not-a-url"),
    pytest.param(doc(clusters=[{"name": "k", "cluster": {"server": "https://h", "certificate-authority-data":
                                                         base64.b64encode(b"not a pem").decode()}}]),
                 "does not load", id="ca-not-a-certificate"),
    pytest.param(doc(clusters=[{"name": "k", "cluster": {"server": "https://h", "certificate-authority":
                                                         "/nonexistent/ca.crt"}}]),
                 "/nonexistent/ca.crt", id="ca-file-missing"),
])
def test_bad_kubeconfigs_are_refused_naming_file_and_problem(tmp_path: Path, body: object, problem: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_kubeconfig(path)
    assert str(info.value).startswith(f"kubeconfig {path}: ") and problem in str(info.value)
