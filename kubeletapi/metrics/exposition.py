"""A fast Prometheus text (0.0.4) encoder for collector output, formatted like client_golang.

The cadvisor and resource endpoints render tens of thousands of samples; prometheus_client's
generic path is too slow for that and formats numbers differently from the kubelet. Values here
are written as Go's strconv.FormatFloat(v, 'g', -1, 64) does (`1.2345678e+07`, `0.5`, `3`), with
optional millisecond timestamps, label values escaped as the text format requires.

render_registry writes a prometheus_client registry (/metrics, /metrics/probes) the same way, so
those endpoints read like the kubelet's too (prometheus_client's own encoder writes `1.0`,
`le="1.0"` and `le` among the sorted labels).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client.metrics_core import Metric

from kubeletapi.gofmt import go_float

Labels = tuple[tuple[str, str], ...]
# (sample name, labels, value, timestamp in ms or None)
Sample = tuple[str, Labels, float, int | None]

def escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


@dataclass
class Family:
    """One metric family: HELP (with its stability prefix), TYPE and samples."""

    name: str
    help: str
    type: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, labels: Labels, value: float, timestamp_ms: int | None = None, suffix: str = "") -> None:
        self.samples.append((self.name + suffix, labels, value, timestamp_ms))


def render(families: Iterable[Family], sort: bool = True) -> bytes:
    """The text exposition; families in name order and series in label order when `sort`
    (what client_golang's gatherer does), families without samples left out."""
    out: list[str] = []
    ordered: Sequence[Family] = sorted(families, key=lambda f: f.name) if sort else list(families)
    for family in ordered:
        if not family.samples:
            continue
        help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {family.name} {help_text}\n# TYPE {family.name} {family.type}\n")
        samples = sorted(family.samples, key=lambda s: (s[0], s[1])) if sort else family.samples
        for name, labels, value, ts in samples:
            label_text = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
            series = f"{name}{{{label_text}}}" if label_text else name
            out.append(f"{series} {go_float(value)} {ts}\n" if ts is not None else f"{series} {go_float(value)}\n")
    return "".join(out).encode()


# --- prometheus_client registries, written as client_golang writes them ---------------------
_LAST_LABELS = ("le", "quantile")  # client_golang appends these after the sorted label pairs
_SERIES_RANK = {"_bucket": 0, "_sum": 1, "_count": 2}  # a histogram's rows: buckets, sum, count
_TYPES = {"unknown": "untyped", "info": "gauge", "stateset": "gauge"}


class Collected(Protocol):
    """What prometheus_client's registries and collectors offer: collect()."""

    def collect(self) -> Iterable[Metric]: ...


def render_registry(registry: Collected) -> bytes:
    """A registry's text as the kubelet's client_golang writes it: families by name; labels by
    name with `le` (and `quantile`) last; series in label-value order, a histogram's buckets then
    _sum then _count; numbers in Go's form (`1`, not `1.0`, bucket bounds too); no _created rows."""
    families = [_family(metric) for metric in registry.collect()]
    return render(sorted(families, key=lambda f: f.name), sort=False)


def _family(metric: Metric) -> Family:
    name = metric.name + ("_total" if metric.type == "counter" else "_info" if metric.type == "info" else "")
    family = Family(name, metric.documentation, _TYPES.get(metric.type, metric.type))
    rows: list[tuple[Labels, int, int, Sample]] = []
    for index, s in enumerate(metric.samples):
        if s.name.endswith("_created"):
            continue
        labels = tuple(sorted((k, v) for k, v in s.labels.items() if k not in _LAST_LABELS))
        last = tuple((k, _bound(s.labels[k])) for k in _LAST_LABELS if k in s.labels)
        rank = _SERIES_RANK.get(s.name[len(metric.name):], 0) if metric.type == "histogram" else 0
        ts = None if s.timestamp is None else int(float(s.timestamp) * 1000)
        rows.append((labels, rank, index, (s.name, labels + last, s.value, ts)))
    rows.sort(key=lambda row: (tuple(v for _, v in row[0]), row[1], row[2]))
    family.samples = [row[3] for row in rows]
    return family


def _bound(text: str) -> str:
    """A bucket bound or quantile as Go formats the float (`1`, `0.005`, `+Inf`)."""
    try:
        return go_float(float(text))
    except ValueError:
        return text
