"""Manifest URL, httpGet hooks, cleanup after removal, and the pod metrics on /metrics."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import Agent
from tests.podtools import container, manifest, pods, polled, running, wait_for, write

pytestmark = pytest.mark.e2e
ROOT = os.geteuid() == 0


class Recorder:
    """A local HTTP server (127.0.0.1): serves `body` on GET /pods, records every request path."""

    def __init__(self) -> None:
        self.body = b""
        self.status = 200
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.paths.append(self.path)
                recorder.headers.append(dict(self.headers))
                body = recorder.body if self.path == "/pods" else b"ok"
                self.send_response(recorder.status if self.path == "/pods" else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.close()


def test_manifest_url(start_agent: Callable[..., Agent], recorder: Recorder) -> None:
    pod_list = ('{"kind":"PodList","apiVersion":"v1","items":['
                '{"metadata":{"name":"u1"},"spec":{"containers":[{"name":"c","image":"busybox","command":["sleep","300"]}]}},'
                '{"metadata":{"name":"u2"},"spec":{"containers":[{"name":"c","image":"busybox","command":["sleep","301"]}]}}'
                "]}")
    recorder.body = pod_list.encode()
    agent = start_agent("--manifest-url", f"http://127.0.0.1:{recorder.port}/pods",
                        "--manifest-url-header", "X-Token:abc", "--http-check-frequency", "1s")
    pod = wait_for(lambda: running(agent, "u1") and running(agent, "u2") and pods(agent)["u1-testnode"],
                   what="url pods")
    assert pod["metadata"]["annotations"]["kubernetes.io/config.source"] == "http"
    assert recorder.headers[0]["X-Token"] == "abc"
    recorder.status = 500  # unreachable or failing: the last good set stays
    seen = len(recorder.paths)
    wait_for(lambda: len(recorder.paths) >= seen + 2, what="more polls")
    assert running(agent, "u1") and running(agent, "u2")
    recorder.status = 200
    recorder.body = pod_list.split(",{\"metadata\":{\"name\":\"u2\"", maxsplit=1)[0].encode() + b"]}"
    wait_for(lambda: "u2-testnode" not in pods(agent), what="u2 removed")
    assert running(agent, "u1")


def test_http_get_hooks(start_agent: Callable[..., Agent], tmp_path: Path, recorder: Recorder) -> None:
    agent = start_agent(manifests=True)
    hooks = (f"ports:\n- {{name: hooks, containerPort: {recorder.port}}}\n"
             "lifecycle:\n"
             "  postStart: {httpGet: {path: /started, port: hooks}}\n"
             f"  preStop: {{httpGet: {{path: /stopping, port: {recorder.port}}}}}")
    write(tmp_path / "manifests", "p.yaml", manifest("p", container("c", ["sleep", "300"], hooks)))
    wait_for(lambda: running(agent, "p"), what="running")
    wait_for(lambda: "/started" in recorder.paths, what="postStart")
    (tmp_path / "manifests" / "p.yaml").unlink()
    # /pods drops the pod as soon as its manifest goes; its preStop hook runs with the kill after.
    wait_for(lambda: "p-testnode" not in pods(agent), what="removed")
    wait_for(lambda: "/stopping" in recorder.paths, what="preStop")
    assert recorder.paths.index("/started") < recorder.paths.index("/stopping")


def test_failed_post_start_hook_kills_the_container(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    hook = "lifecycle:\n  postStart: {exec: {command: [sh, -c, 'exit 3']}}"
    write(tmp_path / "manifests", "p.yaml", manifest("p", container("c", ["sleep", "300"], hook),
                                                     "restartPolicy: Never"))
    pod = wait_for(lambda: (p := pods(agent).get("p-testnode")) and "terminated" in polled(p, "c")["state"]
                   and p, what="killed")
    assert pod["status"]["phase"] == "Failed"
    # A pod that is finished (terminal, not being killed) is still desired but no longer active.

    def counts() -> tuple[float, float]:
        with agent.admin() as client:
            fams = {f.name: f for f in text_string_to_metric_families(client.get(agent.url(path="/metrics")).text)}
        return _value(fams, "kubelet_desired_pods", static="true"), _value(fams, "kubelet_active_pods", static="true")

    wait_for(lambda: counts() == (1, 0), what="desired 1, active 0")


def test_removal_cleans_cgroups_state_and_volumes(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    volumes = "volumes:\n- {name: scratch, emptyDir: {}}" if ROOT else ""
    mounts = "volumeMounts:\n- {name: scratch, mountPath: /scratch}" if ROOT else ""
    write(tmp_path / "manifests", "p.yaml", manifest("p", container("c", ["sleep", "300"], mounts), volumes))
    pod = wait_for(lambda: running(agent, "p"), what="running")
    uid = pod["metadata"]["uid"]
    cgroup_root = agent.args[agent.args.index("--cgroup-root") + 1].strip("/")
    pod_cgroup = Path(f"/sys/fs/cgroup/memory/{cgroup_root}/kubepods/besteffort/pod{uid}")
    state = tmp_path / "root" / "runtime" / "process"
    if ROOT:
        assert pod_cgroup.is_dir()
        assert (tmp_path / "root" / "pods" / uid / "volumes").is_dir()
    assert list((state / "containers").iterdir())
    (tmp_path / "manifests" / "p.yaml").unlink()
    wait_for(lambda: "p-testnode" not in pods(agent), what="removed")
    # The kill goes on after the pod leaves /pods: containers, sandbox (and its cgroup), then volumes.

    def cleaned() -> bool:
        return not (list((state / "containers").iterdir()) or list((state / "sandboxes").iterdir())
                    or (tmp_path / "root" / "pods" / uid).exists() or pod_cgroup.exists())

    wait_for(cleaned, what="container and sandbox state, the pod directory and its cgroup removed")
    logs = list((tmp_path / "logs").glob(f"default_p-testnode_{uid}/c/0.log"))
    assert logs, "logs are kept until the log GC"


BUCKETS = {
    "kubelet_pod_start_duration_seconds": [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480,
                                           600, 900, 1200, 1800, 2700, 3600],
    "kubelet_containers_per_pod_count": [1, 2, 4, 8, 16],
    "kubelet_pod_worker_duration_seconds": [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    "kubelet_runtime_operations_duration_seconds": [0.005 * 2.5**i for i in range(14)],
}


def test_pod_metrics(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    write(tmp_path / "manifests", "a.yaml", manifest("a", container("c", ["sleep", "300"]) + container(
        "d", ["sleep", "300"])))
    wait_for(lambda: running(agent, "a"), what="running")

    def scrape() -> dict[str, Any]:
        with agent.admin() as client:
            text = client.get(agent.url(path="/metrics")).text
        return {f.name: f for f in text_string_to_metric_families(text)}

    desired = {"lifecycle": "sync", "config": "desired", "static": "true"}
    fams = wait_for(lambda: (f := scrape()) and _value(f, "kubelet_running_pods") == 1
                    and _value(f, "kubelet_working_pods", **desired) == 1 and f, what="counts")
    assert _value(fams, "kubelet_running_containers", container_state="running") == 2
    assert _value(fams, "kubelet_desired_pods", static="true") == 1
    assert _value(fams, "kubelet_active_pods", static="true") == 1
    assert _value(fams, "kubelet_started_pods") == 1
    assert _value(fams, "kubelet_started_containers", container_type="container") == 2
    assert _value(fams, "kubelet_containers_per_pod_count_sum") == 2
    assert _value(fams, "kubelet_pod_start_duration_seconds_count") == 1
    assert _value(fams, "kubelet_pod_worker_duration_seconds_count", operation_type="create") == 1
    assert _value(fams, "kubelet_runtime_operations", operation_type="start_container") == 2
    assert _value(fams, "kubelet_pleg_relist_duration_seconds_count") >= 1
    assert _value(fams, "kubelet_pleg_last_seen_seconds") > 1.7e9
    assert "kubelet_restarted_pods" in fams and "kubelet_pleg_relist_interval_seconds" in fams
    # the pod workers' families: every working-pods combination, the one pod's worker start and sandbox
    working = fams["kubelet_working_pods"].samples
    assert len(working) == 15 and sum(s.value for s in working) == 1
    assert _value(fams, "kubelet_pod_worker_start_duration_seconds_count") == 1
    assert _value(fams, "kubelet_run_podsandbox_duration_seconds_count", runtime_handler="") == 1
    assert _value(fams, "kubelet_started_pods_errors") == 0 and _value(fams, "kubelet_orphaned_runtime_pods") == 0
    assert _value(fams, "kubelet_mirror_pods") == 0 and _value(fams, "kubelet_lifecycle_handler_http_fallbacks") == 0
    assert _value(fams, "kubelet_node_startup_duration_seconds") == 0  # standalone: no registration
    # the pod startup SLI: static pods are never measured; the first network pod's gauge shows its 0
    assert _value(fams, "kubelet_first_network_pod_start_sli_duration_seconds") == 0
    assert "kubelet_pod_start_sli_duration_seconds" not in fams
    assert "kubelet_pod_start_total_duration_seconds" not in fams
    logs = fams["kubelet_container_log_filesystem_used_bytes"]
    assert {tuple(sorted(s.labels)) for s in logs.samples} == {("container", "namespace", "pod", "uid")}
    for name, buckets in BUCKETS.items():
        les = sorted({float(s.labels["le"]) for s in fams[name].samples if s.name.endswith("_bucket")})
        assert les[:-1] == pytest.approx(sorted(buckets)), name
    assert fams["kubelet_runtime_operations"].type == "counter"
    assert fams["kubelet_pod_start_duration_seconds"].type == "histogram"


def _value(fams: dict[str, Any], sample: str, **labels: str) -> float:
    for fam in fams.values():
        for s in fam.samples:
            if s.name in (sample, f"{sample}_total") and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return -1.0
