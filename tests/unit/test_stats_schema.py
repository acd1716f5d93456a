"""The published Summary schema (api/stats_schema.py) holds what the encoder writes: every golden
summary (full and CPU-and-memory, cgroup v1 and v2) validates, and the schema is closed, so a key
the encoder adds without the schema fails here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from kubeletapi.api.stats_schema import SCHEMAS

GOLDEN = Path(__file__).resolve().parents[1] / "testdata" / "golden"


def validator() -> Any:
    root = {"$ref": "#/components/schemas/Summary", "components": {"schemas": SCHEMAS}}
    return jsonschema_rs.validator_for(root, validate_formats=True)


@pytest.mark.parametrize("name", ["summary-v1.json", "summary-v2.json", "summary-cpu-memory-v1.json",
                                  "summary-cpu-memory-v2.json"])
def test_golden_summaries_match_the_schema(name: str) -> None:
    summary = json.loads((GOLDEN / name).read_text())
    errors = [f"{e.instance_path}: {e.message}" for e in validator().iter_errors(summary)]
    assert not errors


def test_the_schema_is_closed() -> None:
    summary = json.loads((GOLDEN / "summary-v2.json").read_text())
    summary["pods"][0]["containers"][0]["cpu"]["usageNanoCorez"] = 1
    summary["node"]["startTime"] = "yesterday"
    found = {(tuple(e.instance_path), e.message.split(" ")[0]) for e in validator().iter_errors(summary)}
    assert len(found) == 2, found
