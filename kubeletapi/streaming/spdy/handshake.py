"""X-Stream-Protocol-Version negotiation of a SPDY upgrade, and the answers when it fails.

As apimachinery's httpstream.Handshake: the client's values (comma lists, repeatable) in order,
the first the server supports wins. The refusals are those of the kubelet's CRI streaming server:
- exec/attach: no header at all is 400 `unable to upgrade: X-Stream-Protocol-Version is
  required`; no common version is 403 with X-Accepted-Stream-Protocol-Versions naming each
  server version, and the message twice (Handshake writes it, then the caller's http.Error
  appends it again to the already started response);
- port-forward: no common version is the same 403 once; no header at all makes the server's
  handler return without writing anything, which Go's net/http answers 200 with an empty body.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubeletapi.gofmt import go_list

HEADER = "x-stream-protocol-version"
ACCEPTED_HEADER = "X-Accepted-Stream-Protocol-Versions"
REMOTE_COMMAND = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
PORT_FORWARD = ("portforward.k8s.io",)


@dataclass(frozen=True)
class Refusal:
    """The HTTP answer to an upgrade that cannot be negotiated."""

    status: int
    body: str
    headers: tuple[tuple[str, str], ...] = ()


def offered(values: Sequence[str]) -> list[str]:
    """The client's versions, in order, from every X-Stream-Protocol-Version value."""
    return [item.strip(" ") for value in values for item in value.split(",") if item.strip(" ")]


def negotiate(values: Sequence[str], server: Sequence[str], port_forward: bool) -> str | Refusal:
    """The version to answer with, or the refusal."""
    client = offered(values)
    if not client:
        if port_forward:
            return Refusal(200, "")
        return Refusal(400, "unable to upgrade: X-Stream-Protocol-Version is required\n")
    for name in client:
        if name in server:
            return name
    message = (f"unable to upgrade: unable to negotiate protocol: client supports {go_list(client)}, "
               f"server accepts {go_list(server)}\n")
    return Refusal(403, message if port_forward else message * 2,
                   tuple((ACCEPTED_HEADER, name) for name in server))
