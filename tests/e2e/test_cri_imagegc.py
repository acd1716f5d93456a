"""Image GC on containerd: a real agent on the session's private containerd with an image a pod
uses (localhost/busybox) and one nobody uses (a marked busybox of its own ID), the thresholds set
so low that the image filesystem is over them whatever the disk: the unused image stays while it
is younger than the minimum age, then it is removed; the image in use and the pause image (its
sandbox's) stay, the shortfall is the kubelet's error, kubelet_image_garbage_collected_total counts
the removal, and the reclaim then finds nothing more to free."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeletapi.pods.imagegc import ImageGCError
from kubeletapi.runtime.types import ContainerState, Image
from tests.cri import images
from tests.cri.fixtures import CRIEnv, agent_on
from tests.helpers import Agent
from tests.podtools import manifest, pods, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.cri]

UNUSED = "localhost/gc-unused"


@pytest.fixture
def agent(cri_env: CRIEnv, tmp_path: Path) -> Iterator[Agent]:
    marked = images.build_marked(images.DEFAULT_BUILD_DIR, UNUSED, "1")
    cri_env.containerd.import_images([marked])
    manifests = tmp_path / "manifests"
    write(manifests, "user.yaml", manifest("user", '- name: main\n  image: localhost/busybox:latest\n'
                                                   '  imagePullPolicy: Never\n  command: ["sleep", "3600"]\n'))
    config = tmp_path / "kubelet.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "imageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\n"
                      "imageMinimumGCAge: 1s\n")  # 0 means the default 2m
    try:
        with agent_on(cri_env, tmp_path, "--pod-manifest-path", str(manifests), "--housekeeping-interval", "1s",
                      "--config", str(config)) as node:
            yield node
    finally:
        cri_env.containerd.remove_images(UNUSED)
        cri_env.containerd.import_images(images.build_all())  # whatever the GC took from the session


def _names(agent: Agent) -> set[str]:
    assert agent.kubelet.pods is not None and agent.kubelet.pods.cri is not None
    listed: Any = agent.run(agent.kubelet.pods.cri.list_images())
    return {tag for image in listed if isinstance(image, Image) for tag in image.tags}


def _running(agent: Agent) -> dict[str, Any] | None:
    pod = pods(agent).get("user-testnode")
    statuses = pod["status"].get("containerStatuses", []) if pod else []
    return pod if statuses and all("running" in s["state"] for s in statuses) else None


def test_image_gc_removes_the_unused_image_only(agent: Agent) -> None:
    wait_for(lambda: _running(agent), what="the pod using busybox runs")
    assert agent.kubelet.stats is not None and agent.kubelet.gc is not None
    stats = agent.kubelet.stats
    wait_for(lambda: (snap := stats.housekeeper.latest()) is not None and snap.node.imagefs is not None,
             what="the image filesystem's figures")
    assert f"{UNUSED}:1" in _names(agent)
    image_gc = agent.kubelet.gc.images
    assert image_gc is not None

    shortfall = r"Failed to garbage collect required amount of images\. Attempted to free \d+ bytes, but only found"
    with pytest.raises(ImageGCError, match=shortfall + r" 0 bytes eligible to free\."):
        agent.run(image_gc.garbage_collect())  # first seen now: younger than the minimum age
    assert f"{UNUSED}:1" in _names(agent)
    time.sleep(1.1)  # the minimum age (1 s) passes
    with pytest.raises(ImageGCError, match=shortfall):  # the whole disk cannot be freed: the kubelet's error
        agent.run(image_gc.garbage_collect())

    left = _names(agent)
    assert f"{UNUSED}:1" not in left
    assert {"localhost/busybox:latest", "localhost/pause:3.9"} <= left  # a container's; the sandbox's
    metrics = httpx.get(agent.url("read-only", "/metrics"), timeout=10).text
    assert 'kubelet_image_garbage_collected_total{reason="space"} 1' in metrics
    reclaim = agent.kubelet.gc.reclaim
    assert agent.run(reclaim.delete_unused_images()) == 0  # nothing unused is left
    agent.run(reclaim.delete_all_unused_containers())  # the running pod's container is no dead one
    assert agent.kubelet.pods is not None
    listed: Any = agent.run(agent.kubelet.pods.runtime.list_containers())
    assert [c.name for c in listed if c.state is ContainerState.RUNNING] == ["main"]
