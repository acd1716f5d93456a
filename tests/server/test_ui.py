"""The web UI's routes (server/routes/ui.py) around a FakeHost: the JSON views carry the Summary's
own figures and the PodList's, unknown pods and containers get a 404 page, the secure port
authorizes nodes/ui (then nodes/proxy), the read-only port serves the views without logs.

One test runs a real agent with a running and a crash-looping pod and checks the pods view
against /stats/summary and /pods of the same housekeeping cycle.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from kubeletapi.cli import configuration
from kubeletapi.server import uipage
from kubeletapi.server.routes import ui
from kubeletapi.server.uiassets import Assets
from kubeletapi.stats.history import History
from tests.fakehost import FakeHost, FakeNode
from tests.helpers import Agent, agent_args, client_cert, free_port, load_ca
from tests.podtools import container, manifest, wait_for, write
from tests.stats.test_history import summary

Mi = 1 << 20


def pod(name: str, uid: str, restarts: int = 0, ready: bool = True, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"containers": [{"name": "c0", "image": "busybox:1.36", "resources": {
            "requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5}}, {"name": "c1", "image": "b"}]},
        "status": {"phase": phase, "qosClass": "Burstable", "startTime": "2026-11-26T10:00:00Z",
                   "containerStatuses": [
                       {"name": "c0", "ready": ready, "restartCount": restarts, "state": {"running": {}}},
                       {"name": "c1", "ready": True, "restartCount": 0, "state": {"running": {}}}]},
    }


POD_LIST = {"kind": "PodList", "apiVersion": "v1", "metadata": {},
            "items": [pod("web", "uid-0"), pod("crasher", "uid-9", restarts=4, ready=False)]}
NODE_VIEW = {"capacity": {"cpu": "2", "memory": "4Gi"}, "allocatable": {"cpu": "1900m", "memory": "3Gi"},
             "conditions": [{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                             "message": "kubelet has sufficient memory available", "lastHeartbeatTime": "x"}]}


BACK_OFF = {"type": "Warning", "reason": "BackOff", "object": "spec.containers{c0}", "count": 4,
            "message": "Back-off restarting failed container c0 in pod crasher_default(uid-9)",
            "firstTimestamp": "2026-11-26T10:00:10Z", "lastTimestamp": "2026-11-26T10:01:40Z"}


def ui_host() -> FakeHost:
    history = History(10.0)
    history.add(1, 100.0, summary(rx=0))
    history.add(2, 110.0, summary(rx=5000, cpu=3_000_000), (0.5, 0.25, 0.125))
    return FakeHost(stats_history=lambda: history, pod_list=lambda: POD_LIST, node_status_view=lambda: NODE_VIEW,
                    pod_events=lambda uid: [BACK_OFF] if uid == "uid-9" else [])


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNode]:
    served = FakeNode(agent_args(tmp_path_factory.mktemp("ui")), ui_host())
    yield served
    served.close()


def test_node_view(node: FakeNode) -> None:
    with node.admin() as client:
        view = client.get(node.url(path="/ui/api/node")).json()
    assert view["node"] == "testnode" and view["generation"] == 2 and view["logs"] is True
    assert view["cpu"] == {"cores": 0.03, "capacity": 2.0, "allocatable": 1.9}
    assert view["memory"] == {"workingSet": 100 * Mi, "capacity": 4 * 1024 * Mi, "allocatable": 3 * 1024 * Mi}
    assert view["network"] == {"rx": 500.0, "tx": 1000.0}  # (5000 - 0) B over 10 s
    assert view["fs"]["used"] == 5 * Mi and view["imageFs"]["used"] == 7 * Mi
    assert view["load"] == [0.5, 0.25, 0.125]
    assert (view["pods"], view["containers"], view["runningContainers"]) == (2, 4, 4)
    assert view["conditions"] == [{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                                   "message": "kubelet has sufficient memory available"}]
    assert view["series"]["t"] == [100.0, 110.0] and view["series"]["cpu"] == [0.01, 0.03]


def test_pods_view_rows(node: FakeNode) -> None:
    with node.admin() as client:
        rows = {r["name"]: r for r in client.get(node.url(path="/ui/api/pods")).json()["pods"]}
    assert rows["web"] == {"namespace": "default", "name": "web", "uid": "uid-0", "phase": "Running", "ready": 2,
                           "containers": 2, "restarts": 0, "cpu": 0.003, "memory": 10 * Mi,
                           "startTime": 1_795_687_200.0, "qos": "Burstable", "reason": ""}
    # Not in the summary (as a pod with no running container is not): no usage figures.
    assert (rows["crasher"]["restarts"], rows["crasher"]["ready"], rows["crasher"]["cpu"]) == (4, 1, None)


def test_pod_view_containers_and_series(node: FakeNode) -> None:
    with node.admin() as client:
        view = client.get(node.url(path="/ui/api/pods/default/web")).json()
    assert view["pod"]["name"] == "web" and view["network"] == {"rx": 500.0, "tx": 500.0}
    c0 = view["containers"][0]
    assert c0["name"] == "c0" and c0["requests"] == {"cpu": 0.1, "memory": 64 * Mi}
    assert c0["limits"] == {"cpu": None, "memory": 128 * Mi}
    assert c0["probes"]["livenessProbe"] == {"handler": "exec", "periodSeconds": 5, "failureThreshold": 3,
                                             "initialDelaySeconds": 0}
    assert c0["probes"]["readinessProbe"] is None
    assert c0["series"]["memory"] == [5 * Mi, 5 * Mi] and c0["cpu"] == 0.0015
    assert (view["node"], view["logs"], view["time"], view["events"]) == ("testnode", True, 110.0, [])


def test_pod_view_events_of_a_crash_looper(node: FakeNode) -> None:
    with node.admin() as client:
        view = client.get(node.url(path="/ui/api/pods/default/crasher")).json()
    assert view["events"] == [BACK_OFF]
    # Not in the summary: no series, so the page says "no samples yet" rather than drawing frames.
    assert view["series"] is None and all(c["series"] is None for c in view["containers"])


@pytest.mark.parametrize(("path", "message", "back"), [
    ("/ui/pods/default/nope", 'pod "nope" in namespace "default" does not exist on this node', "../../"),
    ("/ui/pods/other/web", 'pod "web" in namespace "other" does not exist on this node', "../../"),
    ("/ui/pods/default/web/nope", 'container "nope" is not in pod "default/web"', "../../../"),
])
def test_unknown_pod_or_container_is_a_404_page(node: FakeNode, path: str, message: str, back: str) -> None:
    for listener in ("secure", "read-only"):
        with node.admin() as client:
            response = client.get(node.url(listener, path))
        assert response.status_code == 404
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        assert f'<p role="alert">{message.replace(chr(34), "&quot;")}</p>' in response.text
        # The way back is relative (the page may be under /api/v1/nodes/<node>/proxy/): it leads to /ui/.
        assert f'<a href="{back}">Back to the node</a>' in response.text
        assert urljoin(path, back) == "/ui/"


def test_unknown_pod_json_is_a_404_status(node: FakeNode) -> None:
    with node.admin() as client:
        response = client.get(node.url(path="/ui/api/pods/default/nope"))
    assert response.status_code == 404
    assert response.json()["reason"] == "NotFound"


def test_read_only_port_serves_the_views_without_logs(node: FakeNode) -> None:
    with httpx.Client() as client:
        view = client.get(node.url("read-only", "/ui/api/node")).json()
        assert view["logs"] is False and view["generation"] == 2
        assert client.get(node.url("read-only", "/ui/api/pods")).status_code == 200
        logs = client.get(node.url("read-only", "/containerLogs/default/web/c0"))
    assert (logs.status_code, logs.text) == (405, "Debug endpoints are disabled.\n")


def test_pages_and_assets(node: FakeNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ui, "ASSETS", Assets(tmp_path))
    with node.admin() as client:
        missing = client.get(node.url(path="/ui/"))
        assert (missing.status_code, missing.text) == (503, ui.NOT_BUILT)
        (tmp_path / "index.html").write_text("<!doctype html><title>node</title>")
        (tmp_path / "ui.js").write_text("1;")
        for path in ("/ui/", "/ui/pods/default/web", "/ui/pods/default/web/c1"):
            page = client.get(node.url(path=path))
            assert (page.status_code, page.text) == (200, "<!doctype html><title>node</title>"), path
        script = client.get(node.url(path="/ui/assets/ui.js"))
        assert script.headers["content-type"] == "text/javascript; charset=utf-8" and script.text == "1;"
        etag = script.headers["etag"]
        again = client.get(node.url(path="/ui/assets/ui.js"), headers={"If-None-Match": etag})
        assert (again.status_code, again.content) == (304, b"")
        (tmp_path / "ui.js").write_text("2;;")  # a new build: a new body and ETag
        rebuilt = client.get(node.url(path="/ui/assets/ui.js"), headers={"If-None-Match": etag})
        assert (rebuilt.status_code, rebuilt.text) == (200, "2;;") and rebuilt.headers["etag"] != etag
        for name in ("nope.js", "..%2Fui.py", "ui.py"):
            assert client.get(node.url(path=f"/ui/assets/{name}")).status_code == 404, name
        bare = client.get(node.url(path="/ui"))
    assert (bare.status_code, bare.headers["location"]) == (301, "/ui/")


def _built(tmp_path: Path) -> Assets:
    """The page as ui/build.mjs writes it (its source: the same blanks), with stand-in assets."""
    (tmp_path / "index.html").write_bytes((Path(__file__).resolve().parents[2] / "ui/src/index.html").read_bytes())
    (tmp_path / "ui.js").write_text("1;")
    (tmp_path / "ui.css").write_text("body{}")
    return Assets(tmp_path)


def _inlined(page: str) -> dict[str, Any]:
    tag = '<script id="ui-data" type="application/json">'
    start = page.index(tag) + len(tag)
    data: dict[str, Any] = json.loads(page[start:page.index("</script>", start)])
    return data


def test_pages_carry_their_first_views_inline(node: FakeNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ui, "ASSETS", _built(tmp_path))
    with node.admin() as client:
        page = client.get(node.url(path="/ui/")).text
        views = client.get(node.url(path="/ui/api/node")).json(), client.get(node.url(path="/ui/api/pods")).json()
        pod_page = client.get(node.url(path="/ui/pods/default/crasher/c0")).text
        pod_view = client.get(node.url(path="/ui/api/pods/default/crasher")).json()
    assert _inlined(page) == {"node": views[0], "pods": views[1]}
    assert _inlined(pod_page) == {"pod": pod_view} and pod_view["events"] == [BACK_OFF]
    assert "@" not in page.replace("@data@", "")  # every blank filled in


def test_inlined_json_cannot_end_its_script() -> None:
    text = uipage.inline_json({"message": "</script><script>alert(1)</script><!--"})
    assert "<" not in text and json.loads(text) == {"message": "</script><script>alert(1)</script><!--"}


@pytest.mark.parametrize("mount", ["", "/api/v1/nodes/testnode/proxy"])
def test_every_address_of_a_page_is_relative(node: FakeNode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             mount: str) -> None:
    """Under the API server's node proxy path the pages, their assets, views, links and logs resolve
    below the same prefix: nothing in them names /ui/ absolutely."""
    monkeypatch.setattr(ui, "ASSETS", _built(tmp_path))
    with node.admin() as client:
        for path in ("/ui/", "/ui/pods/default/web", "/ui/pods/default/web/c1", "/ui/pods/default/nope"):
            address = node.url(path=mount + path)
            page = client.get(address)
            assert page.status_code == (404 if "nope" in path else 200), path
            refs = re.findall(r'(?:href|src|data-base)="([^"#][^"]*)"', page.text)
            assert refs and not [r for r in refs if r.startswith("/") or "//" in r], (path, refs)
            for ref in refs:
                if ref.startswith("data:"):
                    continue
                assert urljoin(address, ref).startswith(node.url(path=mount + "/ui/")), (path, ref)
                assert client.get(urljoin(address, ref)).status_code == 200, (path, ref)
            if "nope" in path:
                continue
            # What the script asks, relative to the UI's root (<html data-base>): the views, a pod's
            # page, its container's logs beside /ui/.
            root = urljoin(address, re.search(r'data-base="([^"]+)"', page.text)[1])  # type: ignore[index]
            assert root == node.url(path=mount + "/ui/")
            for ref in ("api/node", "api/pods", "api/pods/default/web", "pods/default/crasher"):
                assert client.get(urljoin(root, ref)).status_code == 200, (path, ref)
            logs = client.get(urljoin(root, "../containerLogs/default/web/c0?tailLines=1"))
            assert (logs.status_code, logs.text) == (404, 'pod "web" does not exist')  # the logs handler's answer


def test_secure_port_authorizes_nodes_ui(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: viewer}\n"
        "rules: [{apiGroups: [''], resources: [nodes/ui], verbs: [get]}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: viewer}\n"
        "roleRef: {kind: ClusterRole, name: viewer}\nsubjects: [{kind: User, name: viewer}]\n"
    )
    node = start_node("--authorization-mode", "RBAC", "--authorization-rbac-file", str(rbac), host=ui_host())
    with node.client() as anonymous:
        assert anonymous.get(node.url(path="/ui/api/pods")).status_code == 401
    ca, key = load_ca(node.certs)
    for user, allowed in (("viewer", True), ("stranger", False)):
        pair = client_cert(tmp_path, ca, key, user)
        with node.client(cert=(pair.cert, pair.key)) as client:
            response = client.get(node.url(path="/ui/api/pods"))
            logs = client.get(node.url(path="/containerLogs/default/web/c0"))
        if allowed:
            assert response.status_code == 200
        else:
            assert response.text == "Forbidden (user=stranger, verb=get, resource=nodes, subresource(s)=[ui proxy])\n"
        # Logs stay nodes/proxy: a viewer of the UI does not read them.
        assert logs.status_code == 403, user


# --- a real agent with pods ---------------------------------------------------------------------
RUNNER = manifest("runner", container("main", ["sh", "-c", "while :; do echo tick; sleep 1; done"]))
CRASHER = manifest("crasher", container("crash", ["sh", "-c", "echo boom; exit 3"]))


def _same_cycle(agent: Agent) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(summary, pods view, /pods) read within one housekeeping cycle: the summary before and after
    the views is the same body."""
    with httpx.Client(timeout=10) as client:
        def read() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
            before = client.get(agent.url("read-only", "/stats/summary")).text
            view = client.get(agent.url("read-only", "/ui/api/pods")).json()
            pods = client.get(agent.url("read-only", "/pods")).json()
            after = client.get(agent.url("read-only", "/stats/summary")).text
            return (json.loads(before), view, pods) if before == after else None
        return wait_for(read, what="the views inside one housekeeping cycle")


def test_agent_pods_view_matches_summary_and_pods(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent("--housekeeping-interval", "1s", "--file-check-frequency", "1s", manifests=True)
    write(tmp_path / "manifests", "runner.yaml", RUNNER)
    write(tmp_path / "manifests", "crasher.yaml", CRASHER)

    def settled() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
        doc, view, _ = found = _same_cycle(agent)
        rows = {r["name"]: r for r in view["pods"]}
        runner = next((p for p in doc["pods"] if p["podRef"]["name"] == "runner-testnode"), None)
        ok = (runner is not None and "usageNanoCores" in runner.get("cpu", {})
              and rows.get("crasher-testnode", {}).get("restarts", 0) >= 1)
        return found if ok else None

    doc, view, pods = wait_for(settled, timeout=30, what="a CPU rate for runner and a restart of crasher")
    rows = {r["name"]: r for r in view["pods"]}
    runner = next(p for p in doc["pods"] if p["podRef"]["name"] == "runner-testnode")
    assert rows["runner-testnode"]["cpu"] == runner["cpu"]["usageNanoCores"] / 1e9
    assert rows["runner-testnode"]["memory"] == runner["memory"]["workingSetBytes"]
    for item in pods["items"]:
        row = rows[item["metadata"]["name"]]
        assert row["restarts"] == sum(s["restartCount"] for s in item["status"].get("containerStatuses", []))
        assert row["phase"] == item["status"]["phase"] and row["qos"] == item["status"]["qosClass"]
    node = httpx.get(agent.url("read-only", "/ui/api/node"), timeout=10).json()
    assert [c["type"] for c in node["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    assert node["pods"] == 2

    # The crash-looper's events, kept by the agent (standalone: none posted anywhere).
    def back_off() -> list[dict[str, Any]] | None:
        events = httpx.get(agent.url("read-only", "/ui/api/pods/default/crasher-testnode"), timeout=10).json()["events"]
        return events if any(e["reason"] == "BackOff" for e in events) else None

    events = {e["reason"]: e for e in wait_for(back_off, timeout=30, what="a BackOff event of crasher")}
    assert events["BackOff"]["message"].startswith(
        "Back-off restarting failed container crash in pod crasher-testnode_default(")
    assert events["BackOff"]["type"] == "Warning" and events["BackOff"]["object"] == "spec.containers{crash}"
    assert events["Started"]["count"] >= 2 and events["Started"]["message"] == "Started container crash"
    assert events["Started"]["firstTimestamp"] <= events["Started"]["lastTimestamp"]


def test_views_share_one_pod_list_for_a_quarter_second() -> None:
    now = [100.0]
    built: list[int] = []

    def pod_list() -> dict[str, Any]:
        built.append(1)
        return {"items": [], "n": len(built)}

    shared = ui.SharedPodList(lambda: now[0])
    host = FakeHost(pod_list=pod_list)
    assert shared.get(host)["n"] == 1 and shared.get(host)["n"] == 1  # fetched together: one build
    now[0] += ui.TTL_S
    assert shared.get(host)["n"] == 2


def test_unchanged_pods_are_not_built_again() -> None:
    now = [100.0]
    version = [7]
    built: list[int] = []

    def pod_list() -> dict[str, Any]:
        built.append(1)
        return {"items": [], "n": len(built)}

    shared = ui.SharedPodList(lambda: now[0])
    host = FakeHost(pod_list=pod_list, pods_version=lambda: version[0])
    assert shared.get(host)["n"] == 1
    now[0] += 5 * ui.TTL_S
    assert shared.get(host)["n"] == 1  # no pod or status changed: the same PodList
    version[0] += 1
    assert shared.get(host)["n"] == 2  # a change: built again
    now[0] += ui.MAX_AGE_S
    assert shared.get(host)["n"] == 3  # unchanged, but as old as allowed


def test_ui_port_serves_the_ui_alone(start_agent: Callable[..., Agent]) -> None:
    port = free_port()
    agent = start_agent("--ui-port", str(port))
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=10) as client:
        root = client.get(base + "/")
        assert (root.status_code, root.headers["location"]) == (301, "/ui/")
        page = client.get(base + "/ui/")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        view = client.get(base + "/ui/api/node").json()
        assert view["logs"] is False  # no logs here, as on the read-only port
        assert client.get(base + "/ui/api/pods").json() == client.get(agent.url("read-only", "/ui/api/pods")).json()
        for path in ("/pods", "/stats/summary", "/metrics", "/healthz", "/containerLogs/default/p/c", "/configz"):
            assert client.get(base + path).status_code == 404, path  # the kubelet API is not on this port


@pytest.mark.parametrize("value", ["70000", "-1", "web"])
def test_a_bad_ui_port_is_refused(value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        configuration([f"--ui-port={value}", "--root-dir", str(tmp_path)])
    assert exited.value.code == 1  # as every bad flag: exit 1 naming it
    assert "argument --ui-port: " in capsys.readouterr().err
