"""Loopback ports for the agents and peers a benchmark starts."""

from __future__ import annotations

import socket


def free_ports(n: int) -> list[int]:
    """n distinct free TCP ports on 127.0.0.1 (held together while chosen, so they differ)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports
