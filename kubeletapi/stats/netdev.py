"""Network interface counters from /proc/net/dev, and which interface the Summary flattens.

cAdvisor reads the root container's interfaces from /proc/1/net/dev (the host network namespace)
and drops every interface whose lower-cased name starts with lo, veth, docker or nerdctl
(container/libcontainer/handler.go isIgnoredDevice); the same list is the default here. Pass
`pid` to read another process's namespace (a pod sandbox), or pid=1 to match cAdvisor exactly
when this agent itself runs in a separate network namespace.

The Summary API flattens one interface into NetworkStats next to `interfaces`: the kubelet only
ever flattens `eth0` (pkg/kubelet/stats/helper.go defaultNetworkInterfaceName) and leaves the
fields empty (name "") when there is none. `summary_interface` extends that for hosts without an
eth0, see its docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.procread import read_bytes, read_optional

KUBELET_DEFAULT_INTERFACE = "eth0"
CADVISOR_IGNORED_PREFIXES = ("lo", "veth", "docker", "nerdctl")

_RTF_UP = 0x1


@dataclass(frozen=True)
class InterfaceStats:
    """Cumulative counters of one interface (container_network_*_total per `interface` label)."""

    name: str
    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_dropped: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_dropped: int


def _net_dir(proc_root: Path, pid: int | None) -> Path:
    return proc_root / "net" if pid is None else proc_root / str(pid) / "net"


def read_interfaces(
    proc_root: Path = Path("/proc"),
    pid: int | None = None,
    ignored_prefixes: Sequence[str] = CADVISOR_IGNORED_PREFIXES,
) -> list[InterfaceStats]:
    """The interfaces of /proc/[pid/]net/dev in kernel order, minus the ignored prefixes."""
    path = _net_dir(proc_root, pid) / "dev"
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise Unavailable(f"cannot read {path}: {exc}") from exc
    return parse_net_dev(data, ignored_prefixes)


def parse_net_dev(data: bytes, ignored_prefixes: Sequence[str] = CADVISOR_IGNORED_PREFIXES) -> list[InterfaceStats]:
    """Parse /proc/net/dev; a malformed line rejects the file (cAdvisor trusts none of it then)."""
    prefixes = tuple(p.lower() for p in ignored_prefixes)
    out: list[InterfaceStats] = []
    for line in data.splitlines()[2:]:  # two header lines
        name_part, sep, counters = line.partition(b":")
        fields = counters.split()
        if not sep or len(fields) != 16 or not all(f.isdigit() for f in fields):
            raise InvalidInput(f"/proc/net/dev: malformed line {line!r}")
        name = name_part.strip().decode()
        if name.lower().startswith(prefixes):
            continue
        rx = [int(f) for f in fields[0:4]]  # bytes packets errs drop
        tx = [int(f) for f in fields[8:12]]
        out.append(InterfaceStats(name, rx[0], rx[1], rx[2], rx[3], tx[0], tx[1], tx[2], tx[3]))
    return out


def default_interface(proc_root: Path = Path("/proc"), pid: int | None = None) -> str | None:
    """The interface of the IPv4 default route (/proc/net/route), lowest metric first; None if none.

    A default route is destination 0.0.0.0 with mask 0.0.0.0 and the RTF_UP flag.
    """
    data = read_optional(_net_dir(proc_root, pid) / "route")
    if data is None:
        return None
    best: tuple[int, str] | None = None
    for line in data.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or fields[1] != b"00000000" or fields[7] != b"00000000":
            continue
        try:
            flags, metric = int(fields[3], 16), int(fields[6])
        except ValueError:
            continue
        if flags & _RTF_UP and (best is None or metric < best[0]):
            best = (metric, fields[0].decode())
    return None if best is None else best[1]


def summary_interface(names: Sequence[str], route_default: str | None) -> str:
    """The interface the node's NetworkStats flattens: `eth0` if present (the kubelet's only
    choice), else the default-route interface if listed, else the first listed, else "".

    The two fallbacks are ours: on a host whose NIC is ens5 or enp0s3 the kubelet would flatten
    nothing (name "", no counters). A caller that wants the kubelet's exact behaviour uses
    `KUBELET_DEFAULT_INTERFACE if KUBELET_DEFAULT_INTERFACE in names else ""`.
    """
    if KUBELET_DEFAULT_INTERFACE in names:
        return KUBELET_DEFAULT_INTERFACE
    if route_default is not None and route_default in names:
        return route_default
    return names[0] if names else ""
