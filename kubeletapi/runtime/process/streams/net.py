"""Port-forward connections of the process runtime: its pods use the host's network."""

from __future__ import annotations

import asyncio
import os

from kubeletapi.errors import InvalidInput, Unavailable

CONNECT_TIMEOUT_S = 10.0


async def connect(host: str, port: int, sandbox_id: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection to the pod's port. As containerd dials localhost in the pod's network
    namespace over IPv4 then IPv6, loopback is tried as 127.0.0.1 then ::1."""
    if not 0 < port < 65536:
        raise InvalidInput(f"invalid port {port}: must be in 1-65535")
    hosts = [host, "::1"] if host == "127.0.0.1" else [host]
    problems = []
    for h in hosts:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                return await asyncio.open_connection(h, port)
        except TimeoutError:
            problems.append(f"{h}: timed out after {CONNECT_TIMEOUT_S:g}s")
        except OSError as exc:  # asyncio's own text names the call, not the error: use the OS's
            problems.append(f"{h}: {os.strerror(exc.errno) if exc.errno else exc}")
    raise Unavailable(f"failed to connect to port {port} of pod sandbox {sandbox_id}: {'; '.join(problems)}")
