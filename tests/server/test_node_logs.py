"""/logs/ on a whole agent through real TLS, over a --node-log-dir made here: Go's file server
(listings, redirects, files, traversal refused), nodes/log authorization, the disabled handler,
and the NodeLogQuery form behind its feature gate and enableSystemLogQuery."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from kubeletapi.node.gomime import MimeTypes
from tests.helpers import Agent

pytestmark = pytest.mark.e2e
QUERY_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates: {NodeLogQuery: true}
enableSystemLogQuery: true
"""


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "varlog"
    (root / "sub").mkdir(parents=True)
    (root / "a.log").write_text("line a1\nline a2\n")
    (root / "b&<x>.txt").write_text("b\n")
    (root / "sub" / "sub.log").write_text("in sub\n")
    (root / "myservice.log").write_text("service line 1\nservice line 2\n")
    (root / "escape").symlink_to("/etc")
    return root


def get(agent: Agent, path: str, **kwargs: object) -> httpx.Response:
    with agent.admin() as client:
        return client.get(agent.url("secure", path), follow_redirects=False, **kwargs)  # type: ignore[arg-type]


def test_file_server(start_agent: Callable[..., Agent], log_dir: Path) -> None:
    agent = start_agent("--node-log-dir", str(log_dir))
    listing = get(agent, "/logs/")
    assert listing.status_code == 200
    assert listing.headers["content-type"] == "text/html; charset=utf-8"
    assert "last-modified" in listing.headers
    assert listing.text == (
        '<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n'
        '<a href="a.log">a.log</a>\n<a href="b&%3Cx%3E.txt">b&amp;&lt;x&gt;.txt</a>\n'
        '<a href="escape">escape</a>\n<a href="myservice.log">myservice.log</a>\n<a href="sub/">sub/</a>\n</pre>\n')
    file = get(agent, "/logs/a.log")
    assert (file.status_code, file.text) == (200, "line a1\nline a2\n")
    # Go's type for .log on this machine (shared-mime-info says text/x-log), else sniffed as text
    assert file.headers["content-type"] == (MimeTypes().type_by_extension(".log") or "text/plain; charset=utf-8")
    assert file.headers["accept-ranges"] == "bytes"
    assert file.headers["content-length"] == "16"
    assert get(agent, "/logs/a.log", headers={"If-Modified-Since": file.headers["last-modified"]}).status_code == 304
    assert get(agent, "/logs/sub/sub.log").text == "in sub\n"
    for path, location in (("/logs/sub", "sub/"), ("/logs/sub?x=1", "sub/?x=1"), ("/logs/a.log/", "../a.log"),
                           ("/logs/sub/index.html", "./")):
        answer = get(agent, path)
        assert (answer.status_code, answer.headers["location"]) == (301, location), path
    part = get(agent, "/logs/a.log", headers={"Range": "bytes=-3"})
    assert (part.status_code, part.headers["content-range"], part.text) == (206, "bytes 13-15/16", "a2\n")
    beyond = get(agent, "/logs/a.log", headers={"Range": "bytes=100-"})
    assert (beyond.status_code, beyond.headers["content-range"], beyond.text) == (
        416, "bytes */16", "invalid range: failed to overlap\n")
    bare = get(agent, "/logs")
    assert (bare.status_code, bare.headers["location"]) == (307, "/logs/")


@pytest.mark.parametrize("path", [
    "/logs/%2e%2e/%2e%2e/etc/passwd",  # dot segments stay inside the directory: /var/log/etc/passwd
    "/logs/..%2f..%2fetc%2fpasswd",
    "/logs/escape/passwd",  # a symlink out of the directory
    "/logs/nonesuch",
])
def test_traversal_and_missing_files_are_404(start_agent: Callable[..., Agent], log_dir: Path, path: str) -> None:
    agent = start_agent("--node-log-dir", str(log_dir))
    answer = get(agent, path)
    assert (answer.status_code, answer.text) == (404, "404 page not found\n")
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_authorized_as_nodes_log_and_refused_on_the_read_only_port(
        start_agent: Callable[..., Agent], log_dir: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("proxy-token,proxier,1\nlog-token,logreader,2\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text("\n---\n".join(
        f"""apiVersion: rbac.authorization.k8s.io/v1
kind: {kind}
metadata: {{name: {name}}}
{body}""" for kind, name, body in (
            ("ClusterRole", "proxy", 'rules: [{apiGroups: [""], resources: [nodes/proxy], verbs: ["*"]}]'),
            ("ClusterRole", "log", 'rules: [{apiGroups: [""], resources: [nodes/log], verbs: [get]}]'),
            ("ClusterRoleBinding", "proxy", "roleRef: {kind: ClusterRole, name: proxy}\n"
                                            "subjects: [{kind: User, name: proxier}]"),
            ("ClusterRoleBinding", "log", "roleRef: {kind: ClusterRole, name: log}\n"
                                          "subjects: [{kind: User, name: logreader}]"))))
    agent = start_agent("--node-log-dir", str(log_dir), "--token-auth-file", str(tokens),
                        "--authorization-mode", "RBAC", "--authorization-rbac-file", str(rbac))
    with agent.client(token="proxy-token") as proxier:
        answer = proxier.get(agent.url("secure", "/logs/a.log"))
        assert (answer.status_code, answer.text) == (
            403, "Forbidden (user=proxier, verb=get, resource=nodes, subresource(s)=[log])\n")
    with agent.client(token="log-token") as reader:
        assert reader.get(agent.url("secure", "/logs/a.log")).text == "line a1\nline a2\n"
    answer = httpx.get(agent.url("read-only", "/logs/a.log"))
    assert (answer.status_code, answer.text) == (405, "Debug endpoints are disabled.\n")


def test_disabled_handler(start_agent: Callable[..., Agent], log_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "enableSystemLogHandler: false\n")
    agent = start_agent("--node-log-dir", str(log_dir), "--config", str(config))
    for path in ("/logs/", "/logs/a.log"):
        answer = get(agent, path)
        assert (answer.status_code, answer.text) == (405, "logs endpoint is disabled.\n")


@pytest.fixture
def query_agent(start_agent: Callable[..., Agent], log_dir: Path, tmp_path: Path) -> Agent:
    config = tmp_path / "query.yaml"
    config.write_text(QUERY_CONFIG)
    return start_agent("--node-log-dir", str(log_dir), "--config", str(config))


@pytest.mark.parametrize(("path", "status", "body"), [
    pytest.param("/logs/?query=myservice", 200, "service line 1\nservice line 2\n", id="service-file"),
    pytest.param("/logs/?query=sub", 200, "in sub\n", id="service-dir-file"),
    pytest.param("/logs/?query=nosuch", 200, "\nlog not found for nosuch\n", id="service-missing"),
    pytest.param("/logs/?query=myservice&tailLines=1", 200,
                 "\noptions present and query resolved to log files for [myservice]\ntry without specifying options\n",
                 id="file-with-options"),
    pytest.param("/logs/?query=sub/sub.log", 200, "in sub\n", id="file-query"),
    pytest.param("/logs/?query=", 400, 'query: Invalid value: [""]: may not be empty\n', id="empty"),
    pytest.param("/logs/?query=x&sinceTime=yesterday&boot=z", 400,
                 '[sinceTime: Invalid value: "yesterday": invalid time format, boot: Invalid value: "z": '
                 'strconv.Atoi: parsing "z": invalid syntax]\n', id="undecodable"),
    pytest.param("/logs/sub?query=x", 406, "path not allowed in query mode\n", id="path"),
    pytest.param("/logs/?query=a&query=b&query=c&query=d&query=e", 406,
                 "query: Too many: 5: must have at most 4 items\n", id="too-many"),
    pytest.param("/logs/?query=x&tailLines=100001", 406,
                 "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive\n", id="tail"),
    pytest.param("/logs/?query=a;b", 406, 'query: Invalid value: "a;b": input contains unsupported characters\n',
                 id="unsafe-name"),
    pytest.param("/logs/?query=../x/y", 406,
                 'query: Invalid value: ["../x/y"]: statat ../x/y: path escapes from parent\n', id="file-escapes"),
    pytest.param("/logs/?query=x&boot=1", 406, "boot: Invalid value: 1: must be less than 1\n", id="boot"),
    pytest.param("/logs/?tailLines=5", 406, "query: Required value: cannot be empty with options\n", id="options-only"),
])
def test_node_log_query(query_agent: Agent, path: str, status: int, body: str) -> None:
    answer = get(query_agent, path)
    assert (answer.status_code, answer.text) == (status, body)


def test_query_needs_the_gate_and_the_option(start_agent: Callable[..., Agent], log_dir: Path) -> None:
    agent = start_agent("--node-log-dir", str(log_dir))
    answer = get(agent, "/logs/?query=myservice")
    assert answer.status_code == 200 and answer.text.startswith("<!doctype html>")  # the plain file server
    assert os.path.exists(log_dir / "myservice.log")
