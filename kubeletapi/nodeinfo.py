"""Node identity: the node name and its IP addresses, without DNS (no traffic leaves the host)."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import psutil

from kubeletapi.errors import ConfigError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def node_name(hostname_override: str) -> str:
    """--hostname-override or the OS hostname, lower-cased (the kubelet's nodeName)."""
    return (hostname_override or socket.gethostname()).strip().lower()


def node_ips(node_ip_flag: str, proc_root: Path = Path("/proc")) -> list[IPAddress]:
    """--node-ip (comma-separated, dual-stack), else the address of the default-route interface."""
    if node_ip_flag:
        try:
            return [ipaddress.ip_address(part.strip()) for part in node_ip_flag.split(",")]
        except ValueError as exc:
            raise ConfigError(f"--node-ip {node_ip_flag!r}: {exc}") from exc
    iface = default_interface(proc_root)
    addrs = psutil.net_if_addrs().get(iface or "", [])
    found = [ipaddress.ip_address(a.address) for a in addrs if a.family == socket.AF_INET]
    return found[:1] or [ipaddress.ip_address("127.0.0.1")]


def default_interface(proc_root: Path = Path("/proc")) -> str | None:
    """The interface of the IPv4 default route, from /proc/net/route."""
    try:
        lines = (proc_root / "net" / "route").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 2 and fields[1] == "00000000":
            return fields[0]
    return None
