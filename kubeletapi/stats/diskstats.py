"""/proc/diskstats: per-device I/O counters (cAdvisor's disk I/O of the root container).

Format (Documentation/admin-guide/iostats.rst): major minor name, then reads completed, reads
merged, sectors read, ms reading, writes completed, writes merged, sectors written, ms writing,
I/Os in progress, ms doing I/O, weighted ms; newer kernels append discard and flush fields.
Lines that do not parse are skipped; devices with no I/O at all (idle loop and ram devices) are
left out.
"""

from __future__ import annotations

from pathlib import Path

from kubeletapi.procread import read_optional
from kubeletapi.stats.snapshot import DiskIO


def parse_diskstats(data: bytes) -> list[DiskIO]:
    out = []
    for line in data.split(b"\n"):
        f = line.split()
        if len(f) < 14:
            continue
        try:
            v = [int(x) for x in f[3:14]]
            major, minor = int(f[0]), int(f[1])
        except ValueError:
            continue
        if not any(v):
            continue
        out.append(DiskIO(major, minor, f[2].decode(errors="replace"), *v))
    return out


def read_diskstats(proc_root: Path = Path("/proc")) -> list[DiskIO]:
    """The devices of proc_root/diskstats; [] when the file cannot be read."""
    data = read_optional(proc_root / "diskstats")
    return [] if data is None else parse_diskstats(data)
