"""The machine's NUMA nodes and their memory, as cAdvisor's MachineInfo.Topology reports them.

Read from an injected root (default /sys/devices/system/node): every node<N> directory, its
memory from node<N>/meminfo (`Node N MemTotal: X kB`) and its huge pages from
node<N>/hugepages/hugepages-<size>kB/nr_hugepages (sizes with no pages included, as cAdvisor
lists them). A machine without that tree is one node 0 with /proc/meminfo's MemTotal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import Unavailable

NODE_ROOT = Path("/sys/devices/system/node")
_NODE_DIR = re.compile(r"node(\d+)")
_HUGEPAGES_DIR = re.compile(r"hugepages-(\d+)kB")
_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")
_BINARY = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))


@dataclass(frozen=True)
class HugePages:
    page_size_kb: int
    pages: int

    @property
    def resource(self) -> str:
        """v1helper.HugePageResourceName of the page size: hugepages-2Mi, hugepages-1Gi."""
        return f"hugepages-{binary_quantity(self.page_size_kb * 1024)}"

    @property
    def total(self) -> int:
        return self.pages * self.page_size_kb * 1024


@dataclass(frozen=True)
class NUMANode:
    id: int
    memory: int  # bytes
    hugepages: tuple[HugePages, ...] = ()


def binary_quantity(value: int) -> str:
    """A byte count in resource.Quantity's BinarySI canonical form (the largest exact suffix)."""
    for suffix, shift in _BINARY:
        if value and value % (1 << shift) == 0:
            return f"{value >> shift}{suffix}"
    return str(value)


def read_topology(root: Path = NODE_ROOT, meminfo: Path = Path("/proc/meminfo")) -> list[NUMANode]:
    """The NUMA nodes under `root`, by id; Unavailable naming the file that cannot be read."""
    try:
        entries = sorted((int(m.group(1)), p) for p in root.iterdir() if (m := _NODE_DIR.fullmatch(p.name)))
    except FileNotFoundError:
        entries = []
    except OSError as exc:
        raise Unavailable(f"cannot list NUMA nodes in {root}: {exc.strerror}") from exc
    if not entries:
        return [NUMANode(0, _memtotal(meminfo))]
    return [NUMANode(node_id, _memtotal(path / "meminfo"), _hugepages(path / "hugepages")) for node_id, path in entries]


def _memtotal(path: Path) -> int:
    try:
        text = path.read_text()
    except OSError as exc:
        raise Unavailable(f"cannot read {path}: {exc.strerror}") from exc
    match = _MEMTOTAL.search(text)
    if match is None:
        raise Unavailable(f"{path}: no MemTotal line")
    return int(match.group(1)) * 1024


def _hugepages(directory: Path) -> tuple[HugePages, ...]:
    if not directory.is_dir():
        return ()
    out = []
    for sub in sorted(directory.iterdir()):
        match = _HUGEPAGES_DIR.fullmatch(sub.name)
        if match is None:
            continue
        count = sub / "nr_hugepages"
        try:
            pages = int(count.read_text().strip())
        except (OSError, ValueError) as exc:
            raise Unavailable(f"cannot read {count}: {exc}") from exc
        out.append(HugePages(int(match.group(1)), pages))
    return tuple(sorted(out, key=lambda h: h.page_size_kb))
