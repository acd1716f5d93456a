"""/metrics/cadvisor, /metrics/resource, /metrics/probes and /metrics on the secure port, the
kubelet's and kubeletapi's side by side, as the text exposition is written (tests/oracle/exposition.py).

Compared: the content type; the families (names, HELP and TYPE lines as written); per family the
label names of its series in the order written (`le` last, as client_golang writes it) and whether
samples carry a timestamp; and, for the stats endpoints, which series exist, each named by its
sample name and labels after normalising what must differ between two nodes (the cgroup root's
name, pod UIDs, container and sandbox IDs). /metrics is compared by family only: its series come
from each agent's own history (which runtime operations failed, which paths were requested).

A difference's path is the family name (`<name>: missing`), `<name> HELP`, `<name> TYPE`,
`<name> labels`, `<name> timestamp`, or a series `<sample>{<labels>}`.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Difference
from tests.oracle.exposition import Family, Sample, parse
from tests.oracle.pair import Pair

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]

STATS_ENDPOINTS = ("/metrics/cadvisor", "/metrics/resource", "/metrics/probes")
_CGROUP_ROOT = re.compile(r"^/kubeletapi-[^/]+")  # each node's private cgroup root (tests/oracle/pair.py)
_POD_UID = re.compile(r"pod[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_ID = re.compile(r"\b[0-9a-f]{64}\b")  # container and sandbox IDs
_UID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")


def normalise(value: str) -> str:
    value = _CGROUP_ROOT.sub("<root>", value)
    value = _POD_UID.sub("pod<uid>", value)
    value = _ID.sub("<id>", value)
    return _UID.sub("<uid>", value)


# Labels whose values are a node's history, not its behaviour: which results a probe has had so far
# (a readiness probe that ran before the container touched its file failed once, on either node).
HISTORY = {"prober_probe_total": ("result",)}


def series(sample: Sample) -> str:
    """The sample's name and normalised labels, in name order (their written order is checked apart)."""
    history = HISTORY.get(sample.name, ())
    labels = ",".join(f'{k}="{"<history>" if k in history else normalise(v)}"' for k, v in sorted(sample.labels))
    return f"{sample.name}{{{labels}}}"


def transient(sample: Sample) -> bool:
    """The crash-looper's container, seen only in the milliseconds it runs between back-offs."""
    labels = dict(sample.labels)
    return labels.get("pod") == "crasher-testnode" and labels.get("container") == "main"


def compare_families(what: str, real: dict[str, Family], ours: dict[str, Family],
                     with_series: bool, declared: frozenset[str] = frozenset()) -> list[Difference]:
    out: list[Difference] = []
    for name in sorted(set(real) | set(ours)):
        if name not in ours:
            if name not in declared:
                out.append(Difference(what, name, "missing"))
            continue
        if name not in real:
            out.append(Difference(what, name, "extra"))
            continue
        out += compare_family(what, real[name], ours[name], with_series)
    return out


def compare_family(what: str, real: Family, ours: Family, with_series: bool) -> list[Difference]:
    out = []
    for part, a, b in (("HELP", real.help, ours.help), ("TYPE", real.type, ours.type)):
        if a != b:
            out.append(Difference(what, f"{real.name} {part}", "value", f"{a!r} != {b!r}"))
    if real.samples and ours.samples:
        names = ({tuple(k for k, _ in s.labels) for s in real.samples},
                 {tuple(k for k, _ in s.labels) for s in ours.samples})
        if names[0] != names[1]:
            out.append(Difference(what, f"{real.name} labels", "value", f"{sorted(names[0])} != {sorted(names[1])}"))
        stamped = ({s.timestamp is not None for s in real.samples}, {s.timestamp is not None for s in ours.samples})
        if stamped[0] != stamped[1]:
            out.append(Difference(what, f"{real.name} timestamp", "value", f"{stamped[0]} != {stamped[1]}"))
    if with_series:
        keys = ({series(s) for s in real.samples if not transient(s)},
                {series(s) for s in ours.samples if not transient(s)})
        out += [Difference(what, key, "missing") for key in sorted(keys[0] - keys[1])]
        out += [Difference(what, key, "extra") for key in sorted(keys[1] - keys[0])]
    return out


def compare_headers(what: str, real: httpx.Response, ours: httpx.Response) -> list[Difference]:
    out = []
    for header in ("content-type", "content-encoding", "vary", "process-start-time-unix"):
        a, b = real.headers.get(header), ours.headers.get(header)
        if header == "process-start-time-unix":  # a time: only whether it is sent
            a, b = a and "<time>", b and "<time>"
        if a != b:
            out.append(Difference(what, f"header {header}", "value", f"{a!r} != {b!r}"))
    return out


def declared(pair: Pair, path: str) -> frozenset[str]:
    """The families kubeletapi's registry behind `path` declares, with series or not."""
    endpoint = {"/metrics": "metrics", "/metrics/probes": "probes"}.get(path)
    if endpoint is None:
        return frozenset()
    metrics = pair.agent.kubelet.metrics_registry(endpoint).collect()
    return frozenset(m.name + ("_total" if m.type == "counter" else "") for m in metrics)


@pytest.mark.parametrize("path", [*STATS_ENDPOINTS, "/metrics"])
def test_metrics(pair: Pair, findings: Findings, path: str) -> None:
    real, ours = pair.kubelet.get(path), pair.ours.get(path)
    assert (real.status_code, ours.status_code) == (200, 200), (real.text[:300], ours.text[:300])
    diffs = compare_headers(path, real, ours)
    diffs += compare_families(path, parse(real.text), parse(ours.text), with_series=path in STATS_ENDPOINTS,
                              declared=declared(pair, path))
    assert findings.check(diffs, path) == []
