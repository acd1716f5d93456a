"""Authentication over real TLS: client certificates, tokens, the WebSocket token, anonymous.

Authentication and authorization are wired from the flags by the agent's own code; where the
point is how they decide, they run around a FakeHost (tests.fakehost), and where it is the files
the agent generates or is given (admin certificate, tokens.csv, serving certificate, client CA,
TLS versions), on a real agent."""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.fakehost import FakeNode
from tests.helpers import Agent, Listening, client_cert, load_ca, make_ca, tls_client_context
from tests.streaming.wsclient import refused


@pytest.fixture
def node(shared_node: FakeNode) -> FakeNode:
    """The tests here only send requests and read the answers: they share one node."""
    return shared_node


def test_admin_client_certificate(agent: Agent) -> None:
    with agent.admin() as client:
        response = client.get(agent.url(path="/healthz"))
    assert (response.status_code, response.text) == (200, "ok")


def test_client_certificate_user_and_groups_reach_authorization(
    start_node: Callable[..., FakeNode], tmp_path: Path
) -> None:
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: m}\n"
        "rules: [{apiGroups: [''], resources: [nodes/metrics], verbs: [get]}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: m}\n"
        "roleRef: {kind: ClusterRole, name: m}\nsubjects: [{kind: Group, name: scrapers}]\n"
    )
    node = start_node("--authorization-mode", "RBAC", "--authorization-rbac-file", str(rbac))
    ca, key = load_ca(node.certs)
    pair = client_cert(tmp_path, ca, key, "carol", ["scrapers"])
    with node.client(cert=(pair.cert, pair.key)) as client:
        assert client.get(node.url(path="/metrics")).status_code == 200
        denied = client.get(node.url(path="/configz"))
    assert denied.status_code == 403
    assert denied.text == "Forbidden (user=carol, verb=get, resource=nodes, subresource(s)=[configz proxy])\n"


def assert_refused(
    node: Listening,
    refused: tuple[Path, Path],
    accepted: tuple[Path, Path] | None = None,
) -> None:
    """A request with `refused` fails in TLS, over TLS 1.2 and 1.3, while the same client setup
    with `accepted` (default: the node's admin certificate) succeeds: the certificate is what fails."""
    good = accepted or (node.certs / "admin.crt", node.certs / "admin.key")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        for pair, ok in ((refused, False), (good, True)):
            ctx = tls_client_context(node.certs / "ca.crt", pair)
            ctx.maximum_version = version
            with httpx.Client(verify=ctx) as client:
                if ok:
                    assert client.get(node.url(path="/healthz")).status_code == 200
                else:
                    with pytest.raises(httpx.TransportError):
                        client.get(node.url(path="/healthz"))


def test_certificate_from_another_ca_is_refused(node: FakeNode, tmp_path: Path) -> None:
    ca, key, _ = make_ca(tmp_path, "other-ca")
    pair = client_cert(tmp_path, ca, key, "mallory", ["system:masters"])
    assert_refused(node, (pair.cert, pair.key))


def test_expired_certificate_is_refused(node: FakeNode, tmp_path: Path) -> None:
    ca, key = load_ca(node.certs)
    now = dt.datetime.now(dt.UTC)
    pair = client_cert(tmp_path, ca, key, "old", ["system:masters"], not_before=now - dt.timedelta(days=10),
                       not_after=now - dt.timedelta(days=1))
    assert_refused(node, (pair.cert, pair.key))


def test_no_credentials(node: FakeNode) -> None:
    with node.client() as client:
        response = client.get(node.url(path="/healthz"))
    assert (response.status_code, response.text) == (401, "Unauthorized")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"


def test_token_file(agent: Agent) -> None:
    with agent.client(token=agent.token()) as client:
        assert client.get(agent.url(path="/configz")).status_code == 200
    with agent.client(token="not-a-token") as client:
        response = client.get(agent.url(path="/configz"))
    assert (response.status_code, response.text) == (401, "Unauthorized")


def test_custom_token_auth_file(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('prom-token,prometheus,uid-9,"monitoring,system:monitoring"\n')
    agent = start_agent("--token-auth-file", str(tokens))
    assert not (agent.certs / "tokens.csv").exists()
    with agent.client(token="prom-token") as client:
        assert client.get(agent.url(path="/metrics")).status_code == 200


def test_anonymous(start_node: Callable[..., FakeNode]) -> None:
    node = start_node("--anonymous-auth=true")
    with node.client() as client:
        assert client.get(node.url(path="/healthz")).text == "ok"
        # A presented but invalid token is an error: no anonymous fallback.
        bad = client.get(node.url(path="/healthz"), headers={"Authorization": "Bearer wrong"})
    assert (bad.status_code, bad.text) == (401, "Unauthorized")


def test_anonymous_is_authorized_as_system_anonymous(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: none}\n")
    node = start_node("--anonymous-auth", "--authorization-rbac-file", str(rbac))
    with node.client() as client:
        response = client.get(node.url(path="/metrics"))
    assert response.status_code == 403
    assert response.text == "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[metrics])\n"


def test_websocket_subprotocol_token(node: FakeNode) -> None:
    # /healthz has no WebSocket handler: an authenticated, authorized handshake reaches routing
    # and is refused there with 403 and an empty body, unlike the 401 of a bad token below.
    status, body = refused(node, "/healthz", cert=None, token=node.token())
    assert status == 403
    assert b"Forbidden" not in body
    assert refused(node, "/healthz", cert=None, token="wrong") == (401, b"Unauthorized")
    alone, _ = refused(node, "/healthz", subprotocols=(), cert=None, token=node.token())
    assert alone == 401


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_tls_minimum_version_is_1_2(agent: Agent) -> None:
    ctx = tls_client_context(agent.certs / "ca.crt")
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_1
    with httpx.Client(verify=ctx) as client, pytest.raises(httpx.ConnectError):
        client.get(agent.url(path="/healthz"))


def test_serving_certificate_has_ip_sans(agent: Agent) -> None:
    # Connecting by IP with hostname checking on: the real kubelet's self-signed cert fails this.
    ctx = tls_client_context(agent.certs / "ca.crt", (agent.certs / "admin.crt", agent.certs / "admin.key"))
    assert ctx.check_hostname
    with httpx.Client(verify=ctx) as client:
        assert client.get(f"https://127.0.0.1:{agent.kubelet.port('secure')}/healthz").status_code == 200
        assert client.get(f"https://localhost:{agent.kubelet.port('secure')}/healthz").status_code == 200


def test_client_ca_file_replaces_the_generated_ca(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    ca, key, ca_file = make_ca(tmp_path, "corp-ca")
    agent = start_agent("--client-ca-file", str(ca_file))
    pair = client_cert(tmp_path, ca, key, "corp-user", ["system:masters"])
    # the node CA's admin certificate no longer chains to the client CA; the corporate one does
    assert_refused(agent, (agent.certs / "admin.crt", agent.certs / "admin.key"), (pair.cert, pair.key))


def test_rbac_allows_metrics_but_not_proxy(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("prom-token,prometheus,uid-1\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: scraper}\n"
        "rules: [{apiGroups: [''], resources: [nodes/metrics, nodes/stats], verbs: [get]}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: prometheus}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: scraper}\n"
        "subjects: [{kind: User, name: prometheus}]\n"
    )
    node = start_node("--token-auth-file", str(tokens), "--authorization-rbac-file", str(rbac))
    with node.client(token="prom-token") as client:
        assert client.get(node.url(path="/metrics")).status_code == 200
        proxy = client.get(node.url(path="/openapi.json"))
        healthz = client.get(node.url(path="/healthz"))
    assert (proxy.status_code, proxy.text) == (
        403, "Forbidden (user=prometheus, verb=get, resource=nodes, subresource(s)=[proxy])\n"
    )
    assert healthz.text == "Forbidden (user=prometheus, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n"
