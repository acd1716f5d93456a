"""The GC and --runonce flags (node options), RunOnce's verdict on a pod status, and the refusal
of --runonce without static pods."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import ConfigError
from kubeletapi.flags import parse
from kubeletapi.kubelet.gc import container_policy, image_policy
from kubeletapi.kubelet.runonce import RunOnce, outcome
from kubeletapi.pods.containergc import GCPolicy
from kubeletapi.pods.imagegc import ImageGCPolicy


def test_gc_defaults_are_the_kubelets() -> None:
    opts, _ = parse([])
    assert container_policy(opts) == GCPolicy(0.0, 1, -1)
    assert image_policy(KubeletConfiguration()) == ImageGCPolicy(85, 80, 120.0, 0.0)
    assert not opts.run_once


def test_gc_flags() -> None:
    opts, _ = parse(["--minimum-container-ttl-duration", "1m30s", "--maximum-dead-containers-per-container", "3",
                     "--maximum-dead-containers", "100", "--runonce"])
    assert container_policy(opts) == GCPolicy(90.0, 3, 100)
    assert opts.run_once


@pytest.mark.parametrize(("args", "message"), [
    (["--minimum-container-ttl-duration=-1s"], "--minimum-container-ttl-duration must not be negative"),
])
def test_bad_gc_flags(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(args)


def test_runonce_needs_static_pods() -> None:
    with pytest.raises(ConfigError, match=r"--runonce needs static pods: --pod-manifest-path \(staticPodPath\)"):
        RunOnce(KubeletConfiguration(), NodeOptions(run_once=True))


def pod(phase: str = "Running", policy: str = "Always", **states: dict[str, Any]) -> Pod:
    return Pod.model_validate({
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"restartPolicy": policy, "containers": [{"name": n, "image": "busybox"} for n in states]},
        "status": {"phase": phase, "containerStatuses": [
            {"name": n, "image": "busybox", "imageID": "", "ready": False, "restartCount": 0, "state": s}
            for n, s in states.items()]},
    })


RUNNING: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}


@pytest.mark.parametrize(("p", "expected"), [
    (pod(a=RUNNING, b=RUNNING), (True, "Running")),
    (pod("Pending", a=RUNNING, b={"waiting": {"reason": "ContainerCreating"}}), None),
    (pod("Pending", a=RUNNING).model_copy(update={"status": Pod().status}), None),  # no status yet
    (pod("Succeeded", a={"terminated": {"exitCode": 0, "reason": "Completed"}}), (True, "Succeeded")),
    (pod("Failed", "Never", a={"terminated": {"exitCode": 3, "reason": "Error"}}),
     (False, 'Failed: container "a" exited with 3 (Error)')),
    (pod("Running", a={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}}),
     (False, 'container "a": CrashLoopBackOff: back-off 10s')),
    (pod("Pending", a={"waiting": {"reason": "ErrImagePull"}}), (False, 'container "a": ErrImagePull')),
])
def test_outcome(p: Pod, expected: tuple[bool, str] | None) -> None:
    assert outcome(p) == expected
