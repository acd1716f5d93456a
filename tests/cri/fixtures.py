"""The session's private containerd, for every test that talks CRI (tests/contract, tests/cri).

`cri_env` starts one containerd for the whole run (about a tenth of a second, plus the cached image
build) and stops it, by PID, when the run ends. It skips with the reason when this machine cannot
run it (not root, containerd/runc/umoci/busybox-static missing); under CI as root, where `make test`
installs those packages, a missing piece is a failure instead, so the CRI tests never skip there
unnoticed.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cri import containerd, images
from tests.cri.cleanup import purge_cri
from tests.helpers import Agent, agent_args


@dataclass(frozen=True)
class CRIEnv:
    endpoint: str
    containerd: containerd.PrivateContainerd
    timings: dict[str, float]
    busybox: str = "localhost/busybox:latest"
    pause: str = "localhost/pause:3.9"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") and containerd.is_root():
        pytest.fail(f"CRI tests cannot run under CI as root: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def cri_env() -> Iterator[CRIEnv]:
    if not containerd.is_root():
        _unavailable("the CRI tests run a private containerd, which needs root")
    missing = containerd.missing_tools() + images.missing_tools()
    if missing:
        _unavailable(f"the CRI tests need {', '.join(missing)} (Debian: containerd runc umoci busybox-static; "
                     "`make deb` installs them)")
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    tars = images.build_all()
    timings["images"] = time.monotonic() - t0
    daemon = containerd.PrivateContainerd()
    try:
        t0 = time.monotonic()
        daemon.start()
        timings["start"] = time.monotonic() - t0
        t0 = time.monotonic()
        daemon.import_images(tars)
        timings["import"] = time.monotonic() - t0
        yield CRIEnv(daemon.endpoint, daemon, timings)
    finally:
        daemon.stop()


@contextlib.contextmanager
def agent_on(env: CRIEnv, tmp: Path, *flags: str) -> Iterator[Agent]:
    """An in-process agent on the session's containerd (`agent_args(tmp, *flags)`); on exit it is
    stopped and everything it ran there is removed (its pods' containers and sandboxes)."""
    args = agent_args(tmp, "--container-runtime=remote", "--container-runtime-endpoint", env.endpoint, *flags)
    node = Agent(args)
    try:
        yield node
    finally:
        try:
            node.close()
        finally:
            purge_cri(env.endpoint, args)
