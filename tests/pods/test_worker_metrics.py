"""The pod workers' kubelet_* families (pkg/kubelet/metrics/metrics.go), recorded where the kubelet
records them: the worker's first sync (kubelet_pod_worker_start_duration_seconds), a sandbox that
cannot be created (kubelet_started_pods_errors_total, kubelet_run_podsandbox_*), and housekeeping
(kubelet_working_pods, kubelet_orphaned_runtime_pods_total, kubelet_mirror_pods)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from kubeletapi.api.core_v1 import ObjectMeta, Pod, PodSpec
from kubeletapi.clock import FakeClock
from kubeletapi.metrics.exposition import render_registry
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.runtime import InstrumentedRuntime
from kubeletapi.metrics.spec import new_registry
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.sources import ManifestResult, PodUpdate
from kubeletapi.pods.static import CONFIG_SEEN, config_seen, make_static
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.pods.workingpods import CONFIGS, LIFECYCLES, count_pods, count_working
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import POD_UID, PodMeta, SandboxConfig
from tests.podtools import container, manifest

START = 1_800_000_000.0


def static_pod(name: str, seen: float) -> Pod:
    base = decode_pod(manifest(name, container("c", ["sleep", "300"])).encode(), "test")
    return make_static(base, "n", "file", f"/x/{name}.yaml", dt.datetime.fromtimestamp(seen, dt.UTC))


def api_pod(uid: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=uid, namespace="ns", uid=uid), spec=PodSpec())


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def managed(tmp_path: Path, sources: list[str]) -> tuple[CollectorRegistry, ProcessRuntime, PodSyncer, PodManager]:
    """A pod manager over the real process runtime, its kubelet_* families in the registry returned.
    Build it inside the test's event loop; stop the manager and kill its pods at the end."""
    clock = FakeClock(start=START)
    registry = new_registry()
    metrics = PodMetrics(registry)
    node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
    runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
    pleg, statuses = PLEG(runtime, clock), StatusStore()
    syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses, metrics)
    return registry, runtime, syncer, PodManager(syncer, pleg, statuses, clock, 10, sources, metrics)


def test_config_seen_reads_the_annotation() -> None:
    assert config_seen(static_pod("a", START + 0.25)) == START + 0.25
    assert config_seen(api_pod("u")) is None
    bad = api_pod("u")
    bad.metadata.annotations[CONFIG_SEEN] = "yesterday"
    assert config_seen(bad) is None


def test_working_pods_counts_every_combination() -> None:
    static, other = static_pod("s", START), api_pod("api")
    stopping, deleted, evicted, orphan = static_pod("t", START), api_pod("del"), api_pod("ev"), static_pod("o", START)
    runtime_only = api_pod("rt")
    desired = {"s": static, "api": other, "del": deleted, "done": api_pod("done")}
    killing = {"del": deleted, "o": orphan, "rt": runtime_only, "t2": stopping}
    counts = count_working(desired, killing, {"done"}, {"ev": evicted}, {"rt"})
    assert len(counts) == len(CONFIGS) * len(LIFECYCLES) == 15
    assert {k: v for k, v in counts.items() if v} == {
        ("sync", "desired", "true"): 1, ("sync", "desired", ""): 1,
        ("terminating", "desired", ""): 1, ("terminated", "desired", ""): 2,
        ("terminating", "orphan", "true"): 2, ("terminating", "runtime_only", "unknown"): 1,
    }


def test_desired_and_active_counts_keep_static_pods_apart() -> None:
    static, api, done = static_pod("s", START), api_pod("api"), api_pod("done")
    assert count_pods([static, api, done], [static, api]) == {True: (1, 1), False: (2, 1)}
    assert count_pods([], []) == {True: (0, 0), False: (0, 0)}


def test_pod_metrics_record_and_render_as_the_kubelet() -> None:
    registry = new_registry()
    m = PodMetrics(registry)
    m.pod_worker_started(0.3)
    m.pod_start_failed()
    m.pods_cleaned_up({("sync", "desired", "true"): 2, ("terminating", "runtime_only", "unknown"): 0}, 1, 3)
    m.pods_cleaned_up({("sync", "desired", "true"): 1}, 0, 0)
    assert value(registry, "kubelet_pod_worker_start_duration_seconds_count") == 1
    assert value(registry, "kubelet_pod_worker_start_duration_seconds_bucket", le="0.5") == 1
    assert value(registry, "kubelet_pod_worker_start_duration_seconds_bucket", le="0.25") == 0
    assert value(registry, "kubelet_started_pods_errors_total") == 1
    assert value(registry, "kubelet_working_pods", lifecycle="sync", config="desired", static="true") == 1
    assert value(registry, "kubelet_working_pods", lifecycle="terminating", config="runtime_only",
                 static="unknown") == 0
    assert value(registry, "kubelet_orphaned_runtime_pods_total") == 1
    assert value(registry, "kubelet_mirror_pods") == 0
    text = render_registry(registry).decode()
    assert "# TYPE kubelet_orphaned_runtime_pods_total counter\nkubelet_orphaned_runtime_pods_total 1\n" in text
    assert ("# HELP kubelet_mirror_pods [ALPHA] The number of mirror pods the kubelet will try to create "
            "(one per admitted static pod)\n") in text
    assert "kubelet_run_podsandbox_errors_total" not in text  # no series until a sandbox failed


def test_sandbox_failures_and_the_workers_first_sync(tmp_path: Path) -> None:
    """A sandbox the runtime cannot create (its log directory's parent is a file) counts an error
    on both families; the worker's start is measured once, from config.seen on the pod."""

    async def go() -> None:
        clock = FakeClock(start=START)
        registry = new_registry()
        metrics = PodMetrics(registry)
        logs = tmp_path / "logs"
        logs.write_text("not a directory")
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=logs)
        runtime = InstrumentedRuntime(ProcessRuntime(tmp_path / "state", shim_path(), clock), metrics)
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock),
                           StatusStore(), metrics)
        pod = static_pod("p", START - 2.5)
        try:
            with pytest.raises(OSError):
                await syncer.sync(pod)
            assert value(registry, "kubelet_started_pods_errors_total") == 1
            assert value(registry, "kubelet_run_podsandbox_errors_total", runtime_handler="") == 1
            assert value(registry, "kubelet_started_pods_total") == 1  # attempts, as the kubelet counts
            logs.unlink()
            await syncer.sync(pod)
            await syncer.sync(pod)
            assert value(registry, "kubelet_started_pods_total") == 2  # the third sync found it running
            assert value(registry, "kubelet_containers_per_pod_count_count") == 1  # the worker's first sync
            assert value(registry, "kubelet_started_pods_errors_total") == 1
            assert value(registry, "kubelet_run_podsandbox_duration_seconds_count", runtime_handler="") == 2
            assert value(registry, "kubelet_pod_worker_start_duration_seconds_count") == 1
            assert value(registry, "kubelet_pod_worker_start_duration_seconds_sum") == 2.5
        finally:
            await syncer.kill(pod)

    asyncio.run(go())


def test_housekeeping_counts_runtime_only_pods_once(tmp_path: Path) -> None:
    """A sandbox in the runtime that no source defines and no worker knows is an orphaned runtime
    pod: counted once, `terminating/runtime_only` while its kill runs, gone once it is killed."""

    async def go() -> None:
        registry, runtime, syncer, manager = managed(tmp_path, ["file"])
        kept = static_pod("kept", START)
        await runtime.run_pod_sandbox(SandboxConfig(PodMeta("gone", "default", "uid-gone"), "gone",
                                                    str(tmp_path / "logs" / "gone"), "", labels={POD_UID: "uid-gone"}))
        try:
            await manager.housekeeping()  # sources not ready: nothing is counted yet
            assert value(registry, "kubelet_working_pods", lifecycle="sync", config="desired", static="true") is None
            manager.apply(PodUpdate("file", (ManifestResult("/x/kept.yaml", pod=kept),)))
            await manager.housekeeping()
            assert value(registry, "kubelet_orphaned_runtime_pods_total") == 1
            assert value(registry, "kubelet_working_pods", lifecycle="sync", config="desired", static="true") == 1
            assert value(registry, "kubelet_working_pods", lifecycle="terminating", config="runtime_only",
                         static="unknown") == 1
            assert value(registry, "kubelet_mirror_pods") == 0
            await manager._workers.wait_idle("uid-gone")  # the orphan's kill is done
            await manager.housekeeping()
            assert value(registry, "kubelet_orphaned_runtime_pods_total") == 1  # not counted again
            assert value(registry, "kubelet_working_pods", lifecycle="terminating", config="runtime_only",
                         static="unknown") == 0
            assert [s.meta.uid for s in await runtime.list_pod_sandboxes()] == [kept.metadata.uid]
        finally:
            await manager.stop()
            await syncer.kill(kept)

    asyncio.run(go())


def test_desired_and_active_pods_count_static_pods_apart(tmp_path: Path) -> None:
    """kubelet_desired_pods and kubelet_active_pods as the kubelet's HandlePodCleanups sets them:
    static="true" for static pods, static="" for the others (API pods here), both always present."""

    async def go() -> None:
        registry, _, syncer, manager = managed(tmp_path, ["file", "api"])
        for static in ("true", ""):
            assert value(registry, "kubelet_desired_pods", static=static) == 0
            assert value(registry, "kubelet_active_pods", static=static) == 0
        kept = static_pod("kept", START)
        api = decode_pod(manifest("web", container("c", ["sleep", "300"])).encode(), "test")
        api.metadata.uid = "uid-web"
        try:
            manager.apply(PodUpdate("file", (ManifestResult("/x/kept.yaml", pod=kept),)))
            manager.apply(PodUpdate("api", (ManifestResult("api", pod=api),)))
            await manager.housekeeping()  # HandlePodCleanups sets them
            assert value(registry, "kubelet_desired_pods", static="true") == 1
            assert value(registry, "kubelet_active_pods", static="true") == 1
            assert value(registry, "kubelet_desired_pods", static="") == 1
            assert value(registry, "kubelet_active_pods", static="") == 1
            assert value(registry, "kubelet_desired_pods", static="false") is None
        finally:
            await manager.stop()
            await syncer.kill(kept)
            await syncer.kill(api)

    asyncio.run(go())


def test_a_pod_that_ran_to_completion_is_desired_but_not_active(tmp_path: Path) -> None:
    """filterOutInactivePods: a pod in a terminal phase (restartPolicy Never, its container exited 0:
    Succeeded) whose termination is not under way is not active (nor an eviction candidate); its
    source still defines it, so it stays desired. The counts are set at housekeeping
    (HandlePodCleanups), not on an update."""

    async def go() -> None:
        registry, _, syncer, manager = managed(tmp_path, ["file"])
        base = decode_pod(manifest("done", container("c", ["true"]), "restartPolicy: Never").encode(), "test")
        done = make_static(base, "n", "file", "/x/done.yaml", dt.datetime.fromtimestamp(START, dt.UTC))
        try:
            manager.apply(PodUpdate("file", (ManifestResult("/x/done.yaml", pod=done),)))
            assert value(registry, "kubelet_desired_pods", static="true") == 0  # not before housekeeping
            for _ in range(400):  # until the pod's status says its container is done
                await manager.housekeeping()
                if [p.status.phase for p in manager.pods()] == ["Succeeded"]:
                    break
                await asyncio.sleep(0.025)
            assert [p.status.phase for p in manager.pods()] == ["Succeeded"]
            await manager.housekeeping()
            assert value(registry, "kubelet_desired_pods", static="true") == 1
            assert value(registry, "kubelet_active_pods", static="true") == 0
            assert manager.active_pods() == []  # nothing eviction could free
        finally:
            await manager.stop()
            await syncer.kill(done)

    asyncio.run(go())
