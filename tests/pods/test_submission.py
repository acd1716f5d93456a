"""The api-http source (pods/submission.py) on its own: whole-or-nothing submissions, the file it
keeps, and a file that cannot be used at start (no news: nothing emitted)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.sources import PodUpdate
from kubeletapi.pods.submission import SubmissionSource

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}


async def first_update(source: SubmissionSource, timeout: float = 0.2) -> PodUpdate | None:
    got: list[PodUpdate] = []
    task = asyncio.create_task(source.run(got.append))
    await asyncio.sleep(timeout)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return got[0] if got else None


def test_submissions_are_whole_or_nothing_and_kept(tmp_path: Path) -> None:
    async def scenario() -> None:
        state = tmp_path / "submitted_pods.json"
        source = SubmissionSource("node", FakeClock(), state)
        pods = await source.submit(json.dumps(POD).encode())
        assert pods[0].metadata.name == "p-node"
        assert pods[0].metadata.annotations["kubernetes.io/config.source"] == "api-http"
        with pytest.raises(InvalidInput, match="is given more than once"):
            await source.submit(json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [POD, POD]}).encode())
        assert json.loads(state.read_bytes()) == POD  # the refused list was not kept
        again = await first_update(SubmissionSource("node", FakeClock(), state))
        assert again is not None
        assert [r.pod.metadata.uid for r in again.results if r.pod] == [pods[0].metadata.uid]

    asyncio.run(scenario())


def test_an_unusable_file_at_start_is_no_news(tmp_path: Path) -> None:
    state = tmp_path / "submitted_pods.json"
    state.write_text("{not json")
    assert asyncio.run(first_update(SubmissionSource("node", FakeClock(), state))) is None
    state.unlink()
    update = asyncio.run(first_update(SubmissionSource("node", FakeClock(), state)))
    assert update is not None and update.results == ()
