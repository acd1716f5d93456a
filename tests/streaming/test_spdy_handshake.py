"""X-Stream-Protocol-Version negotiation (streaming/spdy/handshake.py) and the 101 head
(server/hijack.py), without a connection."""

from __future__ import annotations

import pytest

from kubeletapi.server.hijack import switching_protocols
from kubeletapi.streaming.spdy import handshake as hs


@pytest.mark.parametrize(("values", "chosen"), [
    (["v4.channel.k8s.io"], "v4.channel.k8s.io"),
    (["v5.channel.k8s.io, v4.channel.k8s.io"], "v4.channel.k8s.io"),  # comma lists, client order
    (["channel.k8s.io", "v4.channel.k8s.io"], "channel.k8s.io"),  # repeated headers, client order
    ([" , v3.channel.k8s.io ,"], "v3.channel.k8s.io"),  # empty items and spaces dropped
])
def test_first_offered_version_wins(values: list[str], chosen: str) -> None:
    assert hs.negotiate(values, hs.REMOTE_COMMAND, port_forward=False) == chosen


def test_refusals() -> None:
    assert hs.negotiate([], hs.REMOTE_COMMAND, False) == hs.Refusal(
        400, "unable to upgrade: X-Stream-Protocol-Version is required\n")
    assert hs.negotiate([" , "], hs.PORT_FORWARD, True) == hs.Refusal(200, "")
    refused = hs.negotiate(["a, b"], hs.PORT_FORWARD, True)
    assert refused == hs.Refusal(403, "unable to upgrade: unable to negotiate protocol: client supports [a b], "
                                      "server accepts [portforward.k8s.io]\n",
                                 (("X-Accepted-Stream-Protocol-Versions", "portforward.k8s.io"),))
    twice = hs.negotiate(["x"], hs.REMOTE_COMMAND, False)
    assert isinstance(twice, hs.Refusal) and twice.status == 403
    line = ("unable to upgrade: unable to negotiate protocol: client supports [x], server accepts "
            "[v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n")
    assert twice.body == line * 2  # Handshake's http.Error, then the caller's on the same response
    assert [v for _, v in twice.headers] == list(hs.REMOTE_COMMAND)


def test_switching_protocols_head() -> None:
    head = switching_protocols([("Upgrade", "SPDY/3.1"), ("Connection", "Upgrade"),
                                ("X-Stream-Protocol-Version", "v4.channel.k8s.io")]).decode()
    lines = head.split("\r\n")
    assert lines[0] == "HTTP/1.1 101 Switching Protocols"
    names = [line.split(":")[0] for line in lines[1:-2]]
    assert names == ["Connection", "Date", "Upgrade", "X-Stream-Protocol-Version"]
    assert head.endswith("\r\n\r\n") and lines[3] == "Upgrade: SPDY/3.1"
