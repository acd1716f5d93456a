"""Golden files: the summary JSON and the metrics texts built from the fixture trees (tests/stats/fixture.py).

A difference fails with a unified diff; `pytest --update-golden tests/stats/test_golden.py`
rewrites the files (review the diff before committing them). Each golden is also checked for
what must hold whatever its bytes: it parses, and no series appears twice.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.metrics.cadvisor import render_cadvisor
from kubeletapi.metrics.resource import render_resource
from kubeletapi.sinks.lineprotocol import encode_all
from kubeletapi.sinks.telegraf import snapshot_points
from kubeletapi.stats.snapshot import Snapshot
from kubeletapi.stats.summary import cpu_and_memory_summary, encode, full_summary
from tests.stats.fixture import TESTDATA, fixture_snapshots

GOLDEN = TESTDATA / "golden"
RENDERERS: dict[str, Callable[[Snapshot], bytes]] = {
    "summary.json": lambda s: encode(full_summary(s)),
    "summary-cpu-memory.json": lambda s: encode(cpu_and_memory_summary(s)),
    "metrics-resource.txt": lambda s: render_resource(cpu_and_memory_summary(s)),
    "metrics-cadvisor.txt": lambda s: render_cadvisor(s, version="kubeletapi-golden"),
    # the InfluxDB sink's line protocol (Telegraf's kubernetes schema)
    "influxdb.lp": lambda s: b"".join(line + b"\n" for line in encode_all(snapshot_points(s))),
}


def _compare(name: str, actual: bytes, update: bool) -> None:
    path = GOLDEN / name
    if update or not path.exists():
        if not update:
            pytest.fail(f"{path} is missing: run pytest --update-golden")
        path.write_bytes(actual)
        return
    expected = path.read_bytes()
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.decode().splitlines(keepends=True), actual.decode().splitlines(keepends=True),
            str(path), "actual", n=2,
        ))
        pytest.fail(f"{name} differs from its golden file (pytest --update-golden to accept):\n{diff[:6000]}")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_golden(tmp_path: Path, version: int, name: str, update_golden: bool) -> None:
    _, snap = fixture_snapshots(tmp_path, version)
    body = RENDERERS[name](snap)
    stem, ext = name.rsplit(".", 1)
    _compare(f"{stem}-v{version}.{ext}", body, update_golden)
    if ext == "json":
        json.loads(body)
        return
    if ext == "lp":
        lines = body.decode().splitlines()
        assert len(lines) == len(set(lines)) and all(line.count(" ") == 2 for line in lines), lines
        return
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in seen, f"duplicate series {key}"
            seen.add(key)
