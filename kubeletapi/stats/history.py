"""The last 15 minutes of housekeeping, for the web UI's charts: a bounded ring of samples.

Each housekeeping cycle adds one sample taken from that cycle's Summary, the same object
/stats/summary is encoded from, so a chart never shows a figure the API would show differently:
CPU is usageNanoCores in cores, memory the working set; network rates (bytes per second) are the
difference of the summary's rxBytes/txBytes between two samples. Filesystem figures are usedBytes.

Memory is bounded: a fixed number of slots (window / housekeeping interval, plus one), each series
a flat array of doubles (8 bytes a figure), a missing figure NaN. A series (a pod, a container)
not seen for a whole window is dropped. `add` runs in the housekeeping worker thread and readers
on the event loop: one lock guards the ring, and a read copies what it returns.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubeletapi.api import stats_v1alpha1 as api

WINDOW_S = 900.0
NODE_FIELDS = ("cpu", "memory", "rx", "tx", "fs", "imagefs")
POD_FIELDS = ("cpu", "memory", "rx", "tx")
CONTAINER_FIELDS = ("cpu", "memory")
NODE_KEY = ("node",)
Key = tuple[str, ...]
NAN = math.nan


def pod_key(uid: str) -> Key:
    return ("pod", uid)


def container_key(uid: str, name: str) -> Key:
    return ("container", uid, name)


def cores(cpu: api.CPUStats | None) -> float | None:
    """usageNanoCores as cores (None when the summary has no rate yet)."""
    if cpu is None or cpu.usage_nano_cores is None:
        return None
    return cpu.usage_nano_cores / 1e9


def working_set(memory: api.MemoryStats | None) -> int | None:
    return None if memory is None else memory.working_set_bytes


def fs_used(fs: api.FsStats | None) -> int | None:
    return None if fs is None else fs.used_bytes


@dataclass
class _Series:
    fields: tuple[str, ...]
    values: array[float]
    last_seq: int
    counters: tuple[float, int, int] | None = None  # (time s, rxBytes, txBytes) of the last sample


@dataclass(frozen=True)
class Latest:
    """The last cycle added: its generation, time, Summary and load averages (1, 5, 15 min)."""

    generation: int = 0
    time_s: float = 0.0
    summary: api.Summary | None = None
    load: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Sampled:
    """One series read out, oldest first: `t` in Unix seconds and one list per field (None: no figure)."""

    t: list[float]
    values: Mapping[str, list[float | None]]

    def to_wire(self) -> dict[str, list[float] | list[float | None]]:
        return {"t": self.t, **self.values}


class History:
    """The ring; `latest()` is the last cycle added (what the UI's tables show)."""

    def __init__(self, interval_s: float, window_s: float = WINDOW_S) -> None:
        self.capacity = math.ceil(window_s / interval_s) + 1
        self._times: array[float] = array("d", [NAN] * self.capacity)
        self._seq = 0  # samples added so far; the next goes to slot seq % capacity
        self._series: dict[Key, _Series] = {}
        self._latest = Latest()
        self._lock = threading.Lock()

    def latest(self) -> Latest:
        """The last cycle added (generation 0 and no Summary before the first)."""
        with self._lock:
            return self._latest

    def add(self, generation: int, time_s: float, summary: api.Summary,
            load: tuple[float, float, float] | None = None) -> None:
        """Record one housekeeping cycle."""
        with self._lock:
            slot = self._seq % self.capacity
            self._times[slot] = time_s
            for series in self._series.values():
                _blank(series, slot)
            node = summary.node
            self._put(NODE_KEY, NODE_FIELDS, slot, time_s, (cores(node.cpu), working_set(node.memory)), node.network,
                      (fs_used(node.fs), fs_used(node.image_fs)))
            for pod in summary.pods:
                self._put(pod_key(pod.uid), POD_FIELDS, slot, time_s, (cores(pod.cpu), working_set(pod.memory)),
                          pod.network)
                for c in pod.containers:
                    self._put(container_key(pod.uid, c.name), CONTAINER_FIELDS, slot, time_s,
                              (cores(c.cpu), working_set(c.memory)), None)
            self._seq += 1
            self._drop_stale()
            self._latest = Latest(generation, time_s, summary, load)

    def series(self, key: Key) -> Sampled | None:
        """The series of `key` (NODE_KEY, pod_key(uid), container_key(uid, name)), oldest first."""
        with self._lock:
            found = self._series.get(key)
            if found is None:
                return None
            order = self._slots()
            width = len(found.fields)
            values = found.values
            columns = {name: [_figure(values[slot * width + i]) for slot in order]
                       for i, name in enumerate(found.fields)}
            return Sampled([self._times[slot] for slot in order], columns)

    def series_keys(self) -> list[Key]:
        with self._lock:
            return list(self._series)

    def _slots(self) -> Iterable[int]:
        count = min(self._seq, self.capacity)
        start = self._seq - count
        return [(start + i) % self.capacity for i in range(count)]

    def _put(self, key: Key, fields: tuple[str, ...], slot: int, time_s: float,
             head: tuple[float | int | None, ...], network: api.NetworkStats | None,
             tail: tuple[float | int | None, ...] = ()) -> None:
        """Write `head`, then (for series with rx and tx) the network rates, then `tail`."""
        series = self._series.get(key)
        if series is None:
            series = _Series(fields, array("d", [NAN] * (self.capacity * len(fields))), self._seq)
            self._series[key] = series
        series.last_seq = self._seq
        rates: tuple[float | None, ...] = ()
        if "rx" in fields:
            rates = _rates(series, time_s, network)
        base = slot * len(fields)
        series.values[base:base + len(fields)] = array(
            "d", [NAN if value is None else value for value in (*head, *rates, *tail)])

    def _drop_stale(self) -> None:
        gone = [key for key, s in self._series.items() if self._seq - s.last_seq > self.capacity]
        for key in gone:
            del self._series[key]


_BLANKS = {width: array("d", [NAN] * width) for width in {len(NODE_FIELDS), len(POD_FIELDS), len(CONTAINER_FIELDS)}}


def _blank(series: _Series, slot: int) -> None:
    width = len(series.fields)
    series.values[slot * width:slot * width + width] = _BLANKS[width]


def _figure(value: float) -> float | None:
    return None if math.isnan(value) else value


def _rates(series: _Series, time_s: float, network: api.NetworkStats | None) -> tuple[float | None, ...]:
    """rx and tx in bytes per second since the series' last sample (None for the first, or after a
    counter reset)."""
    rx = network.default.rx_bytes if network is not None else None
    tx = network.default.tx_bytes if network is not None else None
    previous, series.counters = series.counters, (time_s, rx or 0, tx or 0) if rx is not None else None
    if previous is None or rx is None or tx is None or time_s <= previous[0]:
        return None, None
    elapsed = time_s - previous[0]
    rx_rate = (rx - previous[1]) / elapsed if rx >= previous[1] else None
    tx_rate = (tx - previous[2]) / elapsed if tx >= previous[2] else None
    return rx_rate, tx_rate
