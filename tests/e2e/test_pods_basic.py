"""Pods from manifests: create, change, remove, and /pods follows (real processes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import Agent
from tests.podtools import container, manifest, pods, running, wait_for, write

pytestmark = pytest.mark.e2e


def test_create_change_remove(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    dirp = tmp_path / "manifests"
    write(dirp, "a.yaml", manifest("a", container("main", ["sleep", "300"])))
    pod = wait_for(lambda: running(agent, "a"), what="pod a running")
    uid = pod["metadata"]["uid"]
    assert pod["metadata"]["annotations"]["kubernetes.io/config.source"] == "file"
    assert pod["spec"]["nodeName"] == "testnode"
    write(dirp, "a.yaml", manifest("a", container("main", ["sleep", "301"])))
    changed = wait_for(lambda: (p := running(agent, "a")) and p["metadata"]["uid"] != uid and p, what="new uid")
    assert changed["spec"]["containers"][0]["command"] == ["sleep", "301"]
    (dirp / "a.yaml").unlink()
    wait_for(lambda: "a-testnode" not in pods(agent), what="pod a gone")
