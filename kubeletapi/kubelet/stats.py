"""Wiring of the stats provider: collector, housekeeping loop, and the stats side of Host
(/stats/summary, /metrics/resource, /metrics/cadvisor), each rendered once per housekeeping
generation and served from that cache until the next cycle.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubeletapi import __version__
from kubeletapi.api.stats_v1alpha1 import Summary
from kubeletapi.cgroups import detect, new_reader
from kubeletapi.cgroups.read_common import CgroupReader
from kubeletapi.clock import Clock
from kubeletapi.cm.cgroupnames import qos_parent
from kubeletapi.cm.qos import QOSClass
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import KubeletError
from kubeletapi.kubelet.pods import PodWiring
from kubeletapi.metrics.cadvisor import render_cadvisor
from kubeletapi.metrics.resource import render_resource
from kubeletapi.stats.collect import Collector, CollectorConfig, own_start_ns
from kubeletapi.stats.history import History
from kubeletapi.stats.housekeeping import Housekeeper
from kubeletapi.stats.rendercache import RenderCache
from kubeletapi.stats.snapshot import Snapshot
from kubeletapi.stats.summary import SummaryError, cpu_and_memory_summary, encode, full_summary

if TYPE_CHECKING:  # --influxdb-url only: the sink and its HTTP client (httpx) are imported then
    from kubeletapi.sinks.sink import InfluxSink

log = logging.getLogger(__name__)


def _reader() -> CgroupReader | None:
    try:
        return new_reader(detect())
    except (OSError, KubeletError) as exc:
        log.warning("no cgroup hierarchy to read stats from (%s): node stats come from /proc", exc)
        return None


class StatsProvider:
    """The kubelet's stats provider, wired: the collector and its housekeeping loop (with the CRI
    runtime's stats when there is one), the InfluxDB sink when configured, and the bodies of the
    stats endpoints that Host serves (summary, /metrics/resource, /metrics/cadvisor)."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, clock: Clock,
                 pods: PodWiring) -> None:
        node = pods.node
        config = CollectorConfig(
            node_name=node_name,
            root_dir=opts.root_dir,
            runtime_dir=None if pods.cri is not None else opts.root_dir / "runtime",
            pod_logs_dir=node.pod_logs_dir,
            pods_cgroup=qos_parent(node.cgroup_root, QOSClass.GUARANTEED) if node.isolated else None,
            agent_pid=os.getpid(),
            agent_start_ns=own_start_ns(),
            kubelet_cgroup=cfg.kubelet_cgroups,
            system_cgroup=cfg.system_cgroups,
        )
        def now_ns() -> int:
            return int(clock.now() * 1e9)

        self.collector = Collector(config, _reader(), now_ns)
        self._cache = RenderCache(clock.monotonic)
        self.history = History(opts.housekeeping_interval.seconds)
        self.housekeeper = Housekeeper(self.collector, pods.inventory, clock, opts.housekeeping_interval.seconds,
                                       cfg.volume_stats_agg_period.seconds or 60.0, self._prepare,
                                       pods.cri.stats_source(now_ns) if pods.cri is not None else None)
        self.sink: InfluxSink | None = None
        if opts.influxdb is not None:
            from kubeletapi.sinks.influxdb import InfluxWriter  # noqa: PLC0415 - see TYPE_CHECKING above
            from kubeletapi.sinks.sink import InfluxSink  # noqa: PLC0415

            influx = opts.influxdb
            self.sink = InfluxSink(InfluxWriter(influx), clock, influx.effective_batch_size, influx.buffer_size)
            self.housekeeper.add_observer(self.sink.observe)

    async def start(self) -> None:
        if self.sink is not None:
            await self.sink.start()
        await self.housekeeper.start()

    async def stop(self) -> None:
        await self.housekeeper.stop()
        if self.sink is not None:
            await self.sink.stop()

    def _snapshot(self) -> Snapshot:
        snap = self.housekeeper.latest()
        if snap is None:
            raise SummaryError("failed to get root cgroup stats: no stats collected yet")
        return snap

    def summary(self, only_cpu_and_memory: bool) -> bytes:
        snap = self._snapshot()
        kind = "summary-cpu-memory" if only_cpu_and_memory else "summary"
        return self._cache.get(snap.generation, kind, False, _renderers(snap)[kind])

    def metrics(self, endpoint: str, gzipped: bool) -> bytes:
        if endpoint not in METRICS_ENDPOINTS:
            raise KubeletError(f"no stats metrics endpoint {endpoint!r}")
        snap = self.housekeeper.latest()
        generation = snap.generation if snap is not None else 0
        return self._cache.get(generation, endpoint, gzipped, _renderers(snap)[endpoint])

    def _prepare(self, snap: Snapshot) -> None:
        """In the housekeeping thread: the cycle's Summary is built once, for the UI's history and
        the /stats/summary body alike (so they never differ), then the bodies asked for lately."""
        try:
            built: Summary | None = full_summary(snap)
        except SummaryError as exc:
            log.debug("housekeeping cycle %d not recorded in the history: %s", snap.generation, exc)
            built = None
        if built is not None:
            load = snap.node.load
            self.history.add(snap.generation, snap.time_ns / 1e9, built,
                             (load.load1, load.load5, load.load15) if load is not None else None)
        self._cache.prepare(snap.generation, _renderers(snap, built))


METRICS_ENDPOINTS = ("cadvisor", "resource")
VERSION = f"kubeletapi-{__version__}"


def _renderers(snap: Snapshot | None, built: Summary | None = None) -> dict[str, Callable[[], bytes]]:
    """Every body the stats endpoints serve, as functions of one Snapshot (None: none yet);
    `built`: its full Summary when already built."""
    out: dict[str, Callable[[], bytes]] = {
        "resource": lambda: render_resource(_cpu_memory(snap)),
        "cadvisor": lambda: render_cadvisor(snap, version=VERSION),
    }
    if snap is not None:
        out["summary"] = lambda: encode(built if built is not None else full_summary(snap))
        out["summary-cpu-memory"] = lambda: encode(cpu_and_memory_summary(snap))
    return out


def _cpu_memory(snap: Snapshot | None) -> Summary | None:
    if snap is None:
        return None
    try:
        return cpu_and_memory_summary(snap)
    except SummaryError as exc:
        log.error("Error getting summary for resourceMetric prometheus endpoint: %s", exc)
        return None
