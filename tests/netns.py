"""A test-owned network: a network namespace and a veth pair whose host end carries a private
address. The API server refuses to proxy to loopback nodes (`nodes/<n>/proxy`: the address must be
global unicast), and EndpointSlices refuse loopback endpoints, so cluster tests put the node (and
anything the API server must dial) on these addresses. Nothing leaves the machine: both ends are
local, and `remove` deletes the namespace (and with it the pair)."""

from __future__ import annotations

import random
import subprocess
import uuid
from dataclasses import dataclass
from typing import ClassVar


def run_ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def free_subnet() -> int:
    used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True, timeout=30).stdout
    free = [n for n in range(1, 255) if f" 10.250.{n}." not in used]
    if not free:
        raise RuntimeError("no free 10.250.x.0/30 for a test network")
    return random.choice(free)


@dataclass(frozen=True)
class TestNetwork:
    """`host` is on the host end of the pair (in the test's own namespace), `peer` inside the
    namespace `name`; both in a /30 of 10.250.0.0/16 chosen by `subnet`."""

    __test__: ClassVar[bool] = False  # not a test class, whatever its name

    name: str
    host_if: str
    host: str
    peer: str

    @classmethod
    def create(cls, subnet: int | None = None) -> TestNetwork:
        """`subnet`: the third octet; by default one no interface of this machine uses (several
        test sessions may run at once)."""
        if subnet is None:
            subnet = free_subnet()
        tag = uuid.uuid4().hex[:6]
        net = cls(name=f"kla-test-{tag}", host_if=f"kla{tag}",
                  host=f"10.250.{subnet}.1", peer=f"10.250.{subnet}.2")
        run_ip("netns", "add", net.name)
        try:
            run_ip("link", "add", net.host_if, "type", "veth", "peer", "name", "eth0", "netns", net.name)
            run_ip("addr", "add", f"{net.host}/30", "dev", net.host_if)
            run_ip("link", "set", net.host_if, "up")
            run_ip("-n", net.name, "addr", "add", f"{net.peer}/30", "dev", "eth0")
            run_ip("-n", net.name, "link", "set", "eth0", "up")
            run_ip("-n", net.name, "link", "set", "lo", "up")
        except BaseException:
            net.remove()
            raise
        return net

    def remove(self) -> None:
        """Deleting the namespace deletes its veth end, which takes the host end with it."""
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, check=False, timeout=30)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False, timeout=30)

    def run_in(self) -> list[str]:
        """A command prefix that runs a program inside the namespace (network only: the mount
        namespace, and with it the cgroup file system, stays the host's)."""
        return ["nsenter", f"--net=/run/netns/{self.name}", "--"]
