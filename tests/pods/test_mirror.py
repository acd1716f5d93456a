"""Mirror pods against a scripted API (the real API server's answers, NodeRestriction included,
are exercised in tests/cluster/test_mirror.py): creation, re-creation, replacement on a new
version, deletion of orphans, the Node's UID, refusals with back-off, outages; statuses through
the mirror; the API source's mirror list; the pod manager's view of static pods."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import itertools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod, PodStatus
from kubeletapi.clock import FakeClock, RealClock
from kubeletapi.errors import Conflict, Forbidden, KubeletError, NotFound, Unavailable
from kubeletapi.kubelet.cluster import JoinedBoundPods
from kubeletapi.pods.apisource import ApiServerSource
from kubeletapi.pods.apistatus import BoundPod
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.mirror import FIRST_BACKOFF_S, NODE_WAIT_S, PENDING_S, PERIOD_S, MirrorPods, mirror_body
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.sources import ManifestResult, MirrorPod, PodUpdate
from kubeletapi.pods.static import CONFIG_HASH, CONFIG_MIRROR, make_static
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.podtools import container, manifest

Json = dict[str, Any]
NODE = "n1"
NODE_UID = "node-uid-1"
PODS = "/api/v1/namespaces/default/pods"


def static(name: str, command: Sequence[str] = ("sleep", "300"), path: str = "") -> Pod:
    base = decode_pod(manifest(name, container("c", list(command))).encode(), "test")
    return make_static(base, NODE, "file", path or f"/etc/manifests/{name}.yaml", dt.datetime.now(dt.UTC))


def mirror_of(pod: Pod, uid: str, *, deleting: bool = False, hash_: str = "", status: PodStatus | None = None
              ) -> MirrorPod:
    meta = pod.metadata
    return MirrorPod(meta.namespace, meta.name, uid, hash_ or meta.annotations[CONFIG_HASH], deleting, status)


@dataclass
class ScriptedApi:
    """Records creates and deletes; `fail` maps (verb, pod name) to errors raised first, in order."""

    fail: dict[tuple[str, str], list[KubeletError]] = field(default_factory=dict)
    calls: list[tuple[str, str, Json | None]] = field(default_factory=list)
    uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    created: dict[str, str] = field(default_factory=dict)  # pod name -> the UID it was created with

    def _step(self, verb: str, path: str, name: str, body: Json | None) -> None:
        self.calls.append((verb, path, copy.deepcopy(body)))
        pending = self.fail.get((verb, name))
        if pending:
            raise pending.pop(0)

    async def create(self, path: str, body: Json) -> Json:
        self._step("POST", path, body["metadata"]["name"], body)
        uid = self.created[body["metadata"]["name"]] = f"mirror-{next(self.uids)}"
        return {**body, "metadata": {**body["metadata"], "uid": uid}}

    async def delete(self, path: str, options: Json | None = None) -> Json:
        self._step("DELETE", path, path.rsplit("/", 1)[-1], options)
        return {}

    def verbs(self) -> list[tuple[str, str]]:
        return [(verb, path) for verb, path, _ in self.calls]


@dataclass
class FakeStaticPods:
    """The pod manager as the mirror pods see it."""

    pods: list[Pod] = field(default_factory=list)
    mirrors: list[MirrorPod] | None = field(default_factory=list)
    stopping: set[tuple[str, str]] = field(default_factory=set)
    not_ready: str | None = None

    def static_pods(self) -> list[Pod]:
        return list(self.pods)

    def static_stopping(self) -> set[tuple[str, str]]:
        return set(self.stopping)

    def mirror_pods(self) -> Sequence[MirrorPod] | None:
        return self.mirrors

    def sources_not_ready(self) -> str | None:
        return self.not_ready


@dataclass
class Rig:
    api: ScriptedApi = field(default_factory=ScriptedApi)
    pods: FakeStaticPods = field(default_factory=FakeStaticPods)
    clock: FakeClock = field(default_factory=FakeClock)
    statuses: dict[str, PodStatus] = field(default_factory=dict)
    node_uid: str = NODE_UID
    changes: int = 0
    mirrors: MirrorPods = field(init=False)

    def __post_init__(self) -> None:
        self.mirrors = MirrorPods(self.api, self.pods, NODE, self._uid, self.statuses.get, self.clock,
                                  mirrors_changed=self._changed)

    async def _uid(self) -> str:
        return self.node_uid

    def _changed(self) -> None:
        self.changes += 1

    def sync(self) -> None:
        asyncio.run(self.mirrors.sync())

    def listed(self, *mirrors: MirrorPod) -> None:
        """The API source's next snapshot lists these mirror pods."""
        self.pods.mirrors = list(mirrors)


def node_restriction_refusal(body: Json, node: str, node_uid: str) -> str | None:
    """What plugin/pkg/admission/noderestriction admitPodCreate checks of a node's pod (None: admitted)."""
    meta, spec = body["metadata"], body["spec"]
    if CONFIG_MIRROR not in (meta.get("annotations") or {}):
        return "not a mirror pod"
    if spec.get("nodeName") != node:
        return "spec.nodeName is not the node"
    owners = meta.get("ownerReferences") or []
    if len(owners) != 1:
        return "not exactly one owner reference"
    (owner,) = owners
    if (owner.get("apiVersion"), owner.get("kind"), owner.get("name"), owner.get("uid")) != ("v1", "Node", node,
                                                                                          node_uid):
        return "the owner is not the node"
    if owner.get("controller") is not True or owner.get("blockOwnerDeletion"):
        return "not a controller reference, or blocking"
    if spec.get("serviceAccountName") or spec.get("serviceAccount"):
        return "references a service account"
    return None


# --- creation ------------------------------------------------------------------------------------
def test_a_static_pod_gets_a_mirror_pod_node_restriction_admits() -> None:
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.sync()
    ((verb, path, body),) = rig.api.calls
    assert (verb, path) == ("POST", PODS)
    assert body is not None
    assert node_restriction_refusal(body, NODE, NODE_UID) is None
    meta = body["metadata"]
    assert (body["apiVersion"], body["kind"], meta["name"], meta["namespace"]) == ("v1", "Pod", "web-n1", "default")
    assert meta["annotations"][CONFIG_MIRROR] == web.metadata.uid == meta["annotations"][CONFIG_HASH]
    assert meta["annotations"]["kubernetes.io/config.source"] == "file"
    assert not {"uid", "resourceVersion", "creationTimestamp"} & set(meta)
    assert "status" not in body
    assert body["spec"] == web.to_wire()["spec"]


def test_mirror_body_keeps_labels_and_replaces_any_owner() -> None:
    web = static("web")
    web.metadata.labels = {"app": "web"}
    web.metadata.owner_references = [{"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "u"}]
    body = mirror_body(web, NODE, NODE_UID)
    assert body["metadata"]["labels"] == {"app": "web"}
    assert node_restriction_refusal(body, NODE, NODE_UID) is None
    assert web.metadata.annotations.get(CONFIG_MIRROR) is None  # the static pod itself is untouched


def test_created_once_while_the_api_has_not_listed_it_then_again_if_it_never_shows() -> None:
    rig = Rig()
    rig.pods.pods = [static("web")]
    rig.sync()
    rig.sync()  # the watch has not shown the new mirror yet: no second create
    assert rig.api.verbs() == [("POST", PODS)]
    rig.clock.advance(PENDING_S)
    rig.sync()  # never listed (deleted meanwhile, or lost): created again
    assert rig.api.verbs() == [("POST", PODS)] * 2


def test_nothing_before_the_api_pods_are_listed_or_the_node_uid_is_known() -> None:
    rig = Rig(node_uid="")
    rig.pods.pods = [static("web")]
    rig.pods.mirrors = None
    rig.sync()
    assert rig.api.calls == []
    rig.pods.mirrors = []
    rig.sync()  # listed, but the Node is not registered yet
    assert rig.api.calls == []
    rig.node_uid = NODE_UID
    rig.sync()
    assert rig.api.verbs() == [("POST", PODS)]


def test_a_listed_mirror_of_the_same_version_is_kept() -> None:
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.listed(mirror_of(web, "m1"))
    rig.sync()
    rig.clock.advance(60)
    rig.sync()
    assert rig.api.calls == []


# --- re-creation and replacement -----------------------------------------------------------------
@pytest.mark.parametrize(("deleting", "hash_", "why"), [
    pytest.param(True, "", "it is being deleted", id="deleted-by-kubectl"),
    pytest.param(False, "0123", "it mirrors another version of the static pod", id="manifest-changed"),
])
def test_a_mirror_being_deleted_or_of_another_version_is_replaced_at_once(
        deleting: bool, hash_: str, why: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kubeletapi.pods.mirror")
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.listed(mirror_of(web, "m1", deleting=deleting, hash_=hash_))
    rig.sync()
    assert rig.api.calls[0] == ("DELETE", f"{PODS}/web-n1", {"gracePeriodSeconds": 0, "preconditions": {"uid": "m1"}})
    assert rig.api.verbs()[1:] == [("POST", PODS)]
    assert f"Deleted mirror pod default/web-n1 (m1): {why}" in caplog.text
    rig.sync()  # the API still lists the old one: it is not deleted twice, nor the new one created twice
    assert len(rig.api.calls) == 2


@pytest.mark.parametrize("error", [pytest.param(NotFound("gone"), id="already-gone"),
                                   pytest.param(Conflict("uid precondition"), id="replaced-by-another")])
def test_a_mirror_gone_or_replaced_before_its_delete_is_no_error(error: KubeletError,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.listed(mirror_of(web, "m1", deleting=True))
    rig.api.fail[("DELETE", "web-n1")] = [error]
    rig.sync()
    assert rig.api.verbs() == [("DELETE", f"{PODS}/web-n1"), ("POST", PODS)]
    assert "retrying" not in caplog.text


# --- orphans -------------------------------------------------------------------------------------
def test_a_mirror_without_its_static_pod_is_deleted_once_sources_are_read_and_the_pod_stopped() -> None:
    rig = Rig()
    web = static("web")
    rig.listed(mirror_of(web, "m1"))
    rig.pods.not_ready = "pod sources not read yet: file"
    rig.sync()
    assert rig.api.calls == []  # the file source may still define it
    rig.pods.not_ready = None
    rig.pods.stopping = {("default", "web-n1")}
    rig.sync()
    assert rig.api.calls == []  # its containers are still being killed
    rig.pods.stopping = set()
    rig.sync()
    assert rig.api.calls == [("DELETE", f"{PODS}/web-n1", {"gracePeriodSeconds": 0, "preconditions": {"uid": "m1"}})]
    rig.sync()
    assert len(rig.api.calls) == 1


# --- refusals and outages ------------------------------------------------------------------------
def test_forbidden_is_logged_with_the_pod_named_and_retried_with_back_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kubeletapi.pods.mirror")
    rig = Rig()
    refs, web = static("refs"), static("web")
    rig.pods.pods = [refs, web]
    message = 'pods "refs-n1" is forbidden: node "n1" can not create pods that reference configmaps'
    rig.api.fail[("POST", "refs-n1")] = [Forbidden(message), Forbidden(message)]
    rig.sync()
    posts = [body["metadata"]["name"] for verb, _, body in rig.api.calls if verb == "POST" and body]
    assert posts == ["refs-n1", "web-n1"]  # the other static pod is unaffected
    assert f"mirror pod default/refs-n1: {message}; retrying in 1s" in caplog.text
    rig.listed(mirror_of(web, "m-web"))
    rig.sync()
    assert len(rig.api.calls) == 2  # refs waits for its back-off
    rig.clock.advance(FIRST_BACKOFF_S)
    rig.sync()
    assert len(rig.api.calls) == 3
    assert caplog.text.count("can not create pods that reference configmaps") == 1  # the same refusal: logged once
    rig.clock.advance(FIRST_BACKOFF_S)
    rig.sync()
    assert len(rig.api.calls) == 3  # the back-off doubled
    rig.clock.advance(FIRST_BACKOFF_S)
    rig.sync()
    assert len(rig.api.calls) == 4  # admitted now
    assert "mirror pod default/refs-n1: done after earlier failures" in caplog.text


def test_an_outage_ends_the_pass_and_passes_resume_with_back_off(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "kubeletapi.pods.mirror")
    rig = Rig()
    a, b = static("a"), static("b")
    rig.pods.pods = [a, b]
    rig.api.fail[("POST", "a-n1")] = [Unavailable("POST https://api/pods: connection refused")] * 2
    rig.sync()
    assert rig.api.verbs() == [("POST", PODS)]  # b is not tried while the API server is away
    assert "mirror pods: POST https://api/pods: connection refused; the static pods keep running" in caplog.text
    rig.sync()
    assert len(rig.api.calls) == 1
    rig.clock.advance(1)
    rig.sync()
    assert len(rig.api.calls) == 2
    rig.clock.advance(1)
    rig.sync()
    assert len(rig.api.calls) == 2  # 2 s now
    rig.clock.advance(1)
    rig.sync()
    assert [body["metadata"]["name"] for _, _, body in rig.api.calls if body][-2:] == ["a-n1", "b-n1"]
    assert "mirror pods: the API server answers again" in caplog.text
    assert rig.pods.pods == [a, b]


# --- statuses ------------------------------------------------------------------------------------
def test_a_static_pods_status_goes_to_its_mirror() -> None:
    rig = Rig()
    web, old, gone = static("web"), static("old"), static("gone")
    status = PodStatus(phase="Running")
    reported = PodStatus(phase="Pending")
    rig.statuses[web.metadata.uid] = status
    rig.pods.pods = [web, old, gone]
    rig.listed(mirror_of(web, "m-web", status=reported), mirror_of(old, "m-old", hash_="other"),
               mirror_of(gone, "m-gone", deleting=True))
    assert rig.mirrors.bound_pods() == [BoundPod("default", "web-n1", "m-web", status, reported)]
    (bound,) = rig.mirrors.bound_pods()
    assert bound.status is status and bound.reported is reported
    assert not bound.deleting and not bound.finished  # the status sync never deletes a mirror


def test_the_status_sync_sees_the_api_pods_then_the_mirrored_static_pods() -> None:
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.listed(mirror_of(web, "m-web"))

    @dataclass
    class ApiPods:
        def bound_pods(self) -> list[BoundPod]:
            return [BoundPod("default", "api-pod", "u1", None, None)]

    joined = JoinedBoundPods(ApiPods(), rig.mirrors)
    assert [(p.name, p.uid) for p in joined.bound_pods()] == [("api-pod", "u1"), ("web-n1", "m-web")]


def test_the_status_sync_hears_when_a_static_pod_reports_through_another_mirror() -> None:
    rig = Rig()
    web = static("web")
    rig.pods.pods = [web]
    rig.sync()
    assert rig.changes == 0
    rig.listed(mirror_of(web, "m1"))
    rig.sync()
    assert rig.changes == 1
    rig.sync()
    assert rig.changes == 1
    rig.listed(mirror_of(web, "m2"))
    rig.sync()
    assert rig.changes == 2


def test_the_next_pass_comes_with_the_earliest_retry_else_after_the_period() -> None:
    rig = Rig(node_uid="")
    rig.sync()
    assert rig.mirrors.next_pass_in() == PERIOD_S  # idle
    rig.pods.pods = [static("a"), static("b")]
    rig.sync()
    assert rig.mirrors.next_pass_in() == NODE_WAIT_S  # the Node's UID is awaited
    rig.node_uid = NODE_UID
    rig.api.fail[("POST", "a-n1")] = [Forbidden("no")]
    rig.sync()
    assert rig.mirrors.next_pass_in() == FIRST_BACKOFF_S  # a's retry, before b's pending wait ends
    rig.clock.advance(FIRST_BACKOFF_S)
    rig.api.fail[("POST", "a-n1")] = [Unavailable("away")]
    rig.sync()
    assert rig.mirrors.next_pass_in() == FIRST_BACKOFF_S  # the outage's pause
    rig.clock.advance(FIRST_BACKOFF_S)
    rig.sync()
    # The created mirrors are not listed yet: b's wait (created 2 s ago) ends first.
    assert rig.mirrors.next_pass_in() == PENDING_S - 2 * FIRST_BACKOFF_S
    rig.listed(mirror_of(static("a"), rig.api.created["a-n1"]), mirror_of(static("b"), rig.api.created["b-n1"]))
    rig.sync()
    assert rig.mirrors.next_pass_in() == PERIOD_S


def test_run_passes_on_notify() -> None:
    async def go() -> None:
        api = ScriptedApi()
        pods = FakeStaticPods(mirrors=None)
        pods.pods = [static("web")]

        async def uid() -> str:
            return NODE_UID

        mirrors = MirrorPods(api, pods, NODE, uid, lambda _: None, RealClock())
        task = asyncio.create_task(mirrors.run())
        try:
            await asyncio.sleep(0.05)
            assert api.calls == []
            pods.mirrors = []
            mirrors.notify()
            for _ in range(100):
                if api.calls:
                    break
                await asyncio.sleep(0.01)
            assert api.verbs() == [("POST", PODS)]
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())


# --- the API source's mirror list ----------------------------------------------------------------
@dataclass
class ListOnlyApi:
    items: list[Json]

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json:
        return {"metadata": {"resourceVersion": "10"}, "items": copy.deepcopy(self.items)}

    async def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
                    timeout_s: int = 300) -> AsyncIterator[Json]:
        await asyncio.Event().wait()  # a watch with no events
        yield {}


def test_the_api_source_reports_mirrors_with_their_status_beside_the_pods() -> None:
    mirror = {"metadata": {"name": "web-n1", "namespace": "default", "uid": "m1", "resourceVersion": "7",
                           "annotations": {CONFIG_MIRROR: "abc", CONFIG_HASH: "abc"}},
              "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox"}]},
              "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    odd = copy.deepcopy(mirror)
    odd["metadata"].update(name="odd-n1", uid="m2")
    odd["status"]["unknownField"] = 1
    updates: list[PodUpdate] = []

    async def go() -> None:
        async def ready() -> None:
            return None

        source = ApiServerSource(ListOnlyApi([mirror, odd]), NODE, ready, FakeClock())
        task = asyncio.create_task(source.run(updates.append))
        for _ in range(100):
            if updates:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    (update,) = updates
    assert update.results == ()  # mirror pods are never run
    first, second = update.mirrors
    assert (first.namespace, first.name, first.uid, first.config_hash, first.deleting) == (
        "default", "web-n1", "m1", "abc", False)
    assert first.status is not None and first.status.phase == "Running"
    assert first.status.conditions[0].type == "Ready"
    assert second.status is None  # not decodable: the status sync compares with nothing


# --- the pod manager's view of static pods (real process runtime) --------------------------------
async def until(check: Callable[[], bool], timeout: float) -> None:
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s")


def test_the_manager_tells_static_pods_mirrors_and_stopping_ones(tmp_path: Path) -> None:
    async def go() -> None:
        clock = RealClock()
        node = NodeEnv(node_name=NODE, node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        pleg = PLEG(runtime, clock)
        statuses = StatusStore()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses)
        manager = PodManager(syncer, pleg, statuses, clock, 110, ["file", "api"])
        heard: list[int] = []
        manager.subscribe(lambda: heard.append(1))
        web = static("web", ["sleep", "300"])
        try:
            assert manager.mirror_pods() is None
            manager.apply(PodUpdate("file", (ManifestResult("/etc/manifests/web.yaml", pod=web),)))
            assert manager.static_pods() == [web] and heard == [1]
            mirror = mirror_of(web, "m1")
            manager.apply(PodUpdate("api", (), (mirror,)))
            assert manager.mirror_pods() == (mirror,) and manager.sources_not_ready() is None
            assert manager.static_pods() == [web]  # the mirror is not a pod to run
            await until(lambda: statuses.get(web.metadata.uid) is not None, 10)
            manager.apply(PodUpdate("file", ()))
            assert manager.static_pods() == []
            assert manager.static_stopping() == {("default", "web-n1")}
            await until(lambda: not manager.static_stopping(), 20)
            assert len(heard) >= 4  # every update, and the worker that finished
        finally:
            await manager.stop()
        assert await runtime.list_containers() == []

    asyncio.run(go())
