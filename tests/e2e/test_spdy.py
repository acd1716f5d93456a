"""/exec, /attach and /portForward over SPDY/3.1 end to end: a real agent, real pods, the raw SPDY
client of tests/streaming/spdyclient.py (frames on the wire, as the API server sends them)."""

from __future__ import annotations

import json

import pytest

from kubeletapi.streaming.spdy import frames as fr
from tests.e2e.test_exec import SHELL, Node, node  # noqa: F401 - the module's agent and pods
from tests.streaming.spdyclient import SpdyClient, upgrade

pytestmark = pytest.mark.e2e


def _exec(node: Node, *cmd: str, query: str = "output=1&error=1") -> SpdyClient:  # noqa: F811
    answer = upgrade(node.agent, node.exec_path(*cmd, query=query))
    assert answer.status == 101, (answer.status, answer.body)
    assert answer.client is not None
    return answer.client


def _outputs(frames: list[fr.Frame], ids: dict[int, str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for frame in frames:
        if isinstance(frame, fr.Data) and frame.stream_id in ids:
            out[ids[frame.stream_id]] = out.get(ids[frame.stream_id], b"") + frame.data
    return out


def test_exec_output_and_status(node: Node) -> None:  # noqa: F811
    client = _exec(node, "sh", "-c", "echo out; echo err >&2; exit 3")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdout", "stderr")}
    frames = client.frames_until_closed()
    client.close()
    replies = [f.stream_id for f in frames if isinstance(f, fr.SynReply)]
    assert sorted(replies) == sorted(ids)
    out = _outputs(frames, ids)
    assert out["stdout"] == b"out\n"
    assert out["stderr"] == b"err\n"
    status = json.loads(out["error"])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert isinstance(frames[-1], fr.GoAway)
