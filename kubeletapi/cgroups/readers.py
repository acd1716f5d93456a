"""cgroup stat readers: what housekeeping samples every interval, for cgroup v1 and v2 alike.

    reader = new_reader(detect())                 # or detect(fixture_root) in tests
    sample = reader.sample("/kubepods/burstable/pod<uid>/<id>", clock.now_ns())
    if sample is None: ...                          # the cgroup is gone (container exited)
    for child in reader.children("/kubepods"): ...

The protocol, the filesystem seam and the parsers are in read_common; the per-version readers in
read_v1 and read_v2 (their docstrings list each file and how it maps onto the stats model).
"""

from __future__ import annotations

from kubeletapi.cgroups.layout import CgroupLayout
from kubeletapi.cgroups.read_common import CgroupReader, OsReaderFs, ReaderFs
from kubeletapi.cgroups.read_v1 import V1Reader
from kubeletapi.cgroups.read_v2 import V2Reader, cpu_weight_to_shares


def new_reader(layout: CgroupLayout, fs: ReaderFs | None = None) -> CgroupReader:
    """The stat reader for the layout's cgroup version (fs: the real cgroupfs unless given)."""
    return V2Reader(layout, fs) if layout.version == 2 else V1Reader(layout, fs)


__all__ = ["CgroupReader", "OsReaderFs", "ReaderFs", "V1Reader", "V2Reader", "cpu_weight_to_shares", "new_reader"]
