"""The process_* families client_golang's process collector writes beyond prometheus_client's, so
/metrics has the kubelet's whole process set: process_network_receive_bytes_total and
process_network_transmit_bytes_total (IpExt InOctets/OutOctets of /proc/self/net/netstat: the
counters of the process's network namespace, as client_golang reads them) and
process_virtual_memory_max_bytes (the address-space limit of /proc/self/limits; unlimited is
2^64 - 1, as Go's procfs parses it)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

UNLIMITED = float(2**64 - 1)


def ip_octets(netstat: str) -> tuple[float, float]:
    """(InOctets, OutOctets) of the IpExt lines of a net/netstat file; zeros where absent."""
    rows = [line.split() for line in netstat.splitlines() if line.startswith("IpExt:")]
    if len(rows) < 2:
        return 0.0, 0.0
    values = dict(zip(rows[0][1:], rows[1][1:], strict=False))
    return float(values.get("InOctets", 0)), float(values.get("OutOctets", 0))


def address_space_limit(limits: str) -> float:
    """The soft "Max address space" of a limits file, in bytes."""
    for line in limits.splitlines():
        if line.startswith("Max address space"):
            soft = line[len("Max address space"):].split()[0]
            return UNLIMITED if soft == "unlimited" else float(soft)
    return UNLIMITED


class ProcessExtrasCollector(Collector):
    """Read at each scrape from `proc` (the process's /proc/self); a family it cannot read is left
    out and logged, never failing the scrape."""

    def __init__(self, proc: Path = Path("/proc/self")) -> None:
        self._proc = proc

    def collect(self) -> Iterable[Metric]:
        out: list[Metric] = []
        try:
            received, sent = ip_octets((self._proc / "net" / "netstat").read_text())
            out.append(CounterMetricFamily("process_network_receive_bytes",
                                           "Number of bytes received by the process over the network.",
                                           value=received))
            out.append(CounterMetricFamily("process_network_transmit_bytes",
                                           "Number of bytes sent by the process over the network.", value=sent))
        except (OSError, ValueError) as exc:
            log.debug("process metrics: %s", exc)
        try:
            limit = address_space_limit((self._proc / "limits").read_text())
            out.append(GaugeMetricFamily("process_virtual_memory_max_bytes",
                                         "Maximum amount of virtual memory available in bytes.", value=limit))
        except (OSError, ValueError) as exc:
            log.debug("process metrics: %s", exc)
        return out
