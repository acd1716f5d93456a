"""A fast Prometheus text (0.0.4) encoder for collector output, formatted like client_golang.

The cadvisor and resource endpoints render tens of thousands of samples; prometheus_client's
generic path is too slow for that and formats numbers differently from the kubelet. Values here
are written as Go's strconv.FormatFloat(v, 'g', -1, 64) does (`1.2345678e+07`, `0.5`, `3`), with
optional millisecond timestamps, label values escaped as the text format requires.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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
