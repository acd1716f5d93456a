"""The Grafana provisioning in deploy/grafana, checked without servers: the provisioning files,
and every dashboard as Grafana's file provider loads it (schema version, uid, panels and their
grid, data sources by the provisioned uids, variables). Every PromQL expression goes through
promtool's parser; the queries themselves run against a real Prometheus in
test_grafana_queries.py, and the InfluxQL ones against a real influxd in test_influxdb_sink.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ecosystem import dashboards as d

PROMTOOL = shutil.which("promtool")
COMPOSE = d.REPO / "docker-compose.yml"
PROMETHEUS_YML = d.REPO / "deploy" / "prometheus" / "prometheus.yml"

EXPECTED = {*d.PROMETHEUS_DASHBOARDS, *d.INFLUXDB_DASHBOARDS}
PANEL_TYPES = {"row", "timeseries", "stat", "table"}
UID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")  # Grafana's limit is 40 characters
# Grafana's built-in variables the dashboards may use without defining them.
BUILTINS = {
    "prometheus": {"__rate_interval", "__interval", "__range"},
    "influxdb": {"timeFilter", "__interval"},
}
# What the test values for the static checks stand for: promtool parses, never evaluates.
PARSE_VALUES = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}


def provisioned() -> dict[str, str]:
    """uid -> type of every provisioned data source."""
    return {ds["uid"]: ds["type"] for ds in d.datasources()}


def dashboard_params() -> list[Any]:
    return [pytest.param(path, id=path.stem) for path in d.dashboard_files()]


def ds_refs(dashboard: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where, reference) of every data source reference: panels, targets and variables."""
    refs: list[tuple[str, Any]] = []
    for panel in d.walk_panels(dashboard, rows=True):
        if panel.get("type") == "row":
            if "datasource" in panel:
                refs.append((f"row {panel.get('title')!r}", panel["datasource"]))
            continue
        refs.append((f"panel {panel.get('title')!r}", panel.get("datasource")))
        for target in panel.get("targets", []):
            refs.append((f"panel {panel.get('title')!r} target {target.get('refId')}", target.get("datasource")))
    for variable in d.template_variables(dashboard):
        if variable.get("type") == "query":
            refs.append((f"variable {variable.get('name')}", variable.get("datasource")))
    return refs


def dashboard_type(dashboard: dict[str, Any]) -> str:
    """The data source type all of a dashboard's panels use (the dashboards do not mix)."""
    kinds = {ref.get("type") for _, ref in ds_refs(dashboard) if isinstance(ref, dict)}
    assert len(kinds) == 1, kinds
    return str(kinds.pop())


def queries(path: Path) -> list[tuple[str, str]]:
    """(where, text) of every query of a dashboard: targets and query variables."""
    dashboard = d.load(path)
    out = [(t.id, t.text) for t in d.targets(path)]
    out += [(f"variable {v['name']}", d.variable_query(v)) for v in d.variables_of_type(dashboard, "query")]
    return out


# -- provisioning files --------------------------------------------------------------------------


def test_the_dashboards_are_the_expected_ones() -> None:
    assert {p.name for p in d.dashboard_files()} == EXPECTED


def test_datasource_provisioning() -> None:
    doc = yaml.safe_load(d.DATASOURCES_YML.read_text())
    assert doc["apiVersion"] == 1
    by_uid = {ds["uid"]: ds for ds in doc["datasources"]}
    assert set(by_uid) == {"prometheus", "influxdb"}
    assert len({ds["name"] for ds in doc["datasources"]}) == len(doc["datasources"]), "duplicate names"
    prom, influx = by_uid["prometheus"], by_uid["influxdb"]
    assert (prom["type"], prom["access"], prom["url"]) == ("prometheus", "proxy", "http://prometheus:9090")
    assert (influx["type"], influx["access"], influx["url"]) == ("influxdb", "proxy", "http://influxdb:8086")
    assert [ds["uid"] for ds in doc["datasources"] if ds.get("isDefault")] == ["prometheus"]
    assert influx["jsonData"]["dbName"] == "k8s" == influx.get("database", "k8s")
    assert influx["jsonData"].get("version", "InfluxQL") == "InfluxQL"
    assert influx["jsonData"]["httpMode"] in ("GET", "POST")
    # $__rate_interval is four scrape intervals only if Grafana knows the scrape interval.
    scrape_interval = yaml.safe_load(PROMETHEUS_YML.read_text())["global"]["scrape_interval"]
    assert prom["jsonData"]["timeInterval"] == scrape_interval


def test_dashboard_provider_points_where_compose_mounts_the_dashboards() -> None:
    doc = yaml.safe_load(d.PROVIDERS_YML.read_text())
    assert doc["apiVersion"] == 1
    [provider] = doc["providers"]
    assert provider["type"] == "file"
    assert provider["folder"] == "kubeletapi"
    path = provider["options"]["path"]
    assert path == "/var/lib/grafana/dashboards"

    grafana = yaml.safe_load(COMPOSE.read_text())["services"]["grafana"]
    mounts = {}
    for volume in grafana["volumes"]:
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
        else:
            source, target = volume["source"], volume["target"]
        mounts[target] = (COMPOSE.parent / source).resolve()
    assert mounts.get(path) == d.DASHBOARDS.resolve(), mounts
    assert mounts.get("/etc/grafana/provisioning") == (d.GRAFANA / "provisioning").resolve(), mounts


# -- dashboards ----------------------------------------------------------------------------------


def test_uids_and_titles_are_unique() -> None:
    docs = [d.load(p) for p in d.dashboard_files()]
    uids = [doc.get("uid") for doc in docs]
    titles = [doc.get("title") for doc in docs]
    assert len(set(uids)) == len(uids), uids
    assert len(set(titles)) == len(titles), titles


@pytest.mark.parametrize("path", dashboard_params())
def test_dashboard_top_level(path: Path) -> None:
    doc = d.load(path)
    assert isinstance(doc, dict)
    assert isinstance(doc.get("schemaVersion"), int) and doc["schemaVersion"] >= 36, doc.get("schemaVersion")
    assert isinstance(doc.get("uid"), str) and UID_RE.match(doc["uid"]), doc.get("uid")
    assert doc["uid"] == path.stem, "file name and uid differ"
    assert isinstance(doc.get("title"), str) and doc["title"].strip()
    # A database id in a provisioned file would clash with the dashboards Grafana already has.
    assert doc.get("id") is None
    assert isinstance(doc.get("panels"), list) and doc["panels"]
    assert isinstance(doc.get("templating", {}).get("list"), list)
    assert set(doc.get("time", {})) >= {"from", "to"}
    assert isinstance(doc.get("refresh"), str) and re.match(r"^\d+[smh]$", doc["refresh"]), doc.get("refresh")


@pytest.mark.parametrize("path", dashboard_params())
def test_panels_have_unique_ids_and_a_grid_place(path: Path) -> None:
    doc = d.load(path)
    panels = list(d.walk_panels(doc, rows=True))
    ids = [p.get("id") for p in panels]
    assert all(isinstance(i, int) for i in ids), ids
    assert len(set(ids)) == len(ids), f"duplicate panel ids: {ids}"
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        title = panel.get("title")
        assert panel.get("type") in PANEL_TYPES, (title, panel.get("type"))
        assert isinstance(title, str) and title.strip(), panel.get("id")
        pos = panel.get("gridPos", {})
        assert all(isinstance(pos.get(k), int) for k in ("h", "w", "x", "y")), (title, pos)
        assert pos["h"] >= 1 and pos["w"] >= 1 and pos["x"] >= 0 and pos["y"] >= 0, (title, pos)
        assert pos["x"] + pos["w"] <= 24, (title, pos)
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{title!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = title
        if panel["type"] == "row":
            assert not panel.get("targets"), title
        else:
            assert panel.get("targets"), f"{title!r} has no queries"


@pytest.mark.parametrize("path", dashboard_params())
def test_datasources_are_referenced_by_provisioned_uid(path: Path) -> None:
    doc = d.load(path)
    uids = provisioned()
    bad = []
    for where, ref in ds_refs(doc):
        if not (isinstance(ref, dict) and set(ref) == {"type", "uid"} and uids.get(ref["uid"]) == ref["type"]):
            bad.append((where, ref))
    assert not bad, f"references that are not {{type, uid}} of a provisioned data source {uids}: {bad}"
    for annotation in doc.get("annotations", {}).get("list", []):
        ref = annotation.get("datasource")
        ok = ref == d.GRAFANA_BUILTIN_DS or (isinstance(ref, dict) and uids.get(str(ref.get("uid"))) == ref.get("type"))
        assert ok, f"annotation {annotation.get('name')!r}: {ref}"


@pytest.mark.parametrize("path", dashboard_params())
def test_every_target_has_a_query(path: Path) -> None:
    kind = dashboard_type(d.load(path))
    assert kind == ("influxdb" if path.name in d.INFLUXDB_DASHBOARDS else "prometheus")
    by_panel: dict[int, list[str]] = {}
    for target in d.targets(path):
        assert target.ref_id, target.id
        by_panel.setdefault(target.panel["id"], []).append(target.ref_id)
        assert target.text.strip(), f"{target.id}: empty query"
        if kind == "influxdb":
            assert target.target.get("rawQuery") is True, f"{target.id}: not a raw InfluxQL query"
            assert "$timeFilter" in target.text, f"{target.id}: not limited to the dashboard's time range"
        else:
            assert "expr" in target.target, target.id
    for panel_id, refs in by_panel.items():
        assert len(set(refs)) == len(refs), (panel_id, refs)


@pytest.mark.parametrize("path", dashboard_params())
def test_every_variable_used_is_defined_before_use(path: Path) -> None:
    doc = d.load(path)
    builtins = BUILTINS[dashboard_type(doc)]
    names = [v.get("name") for v in d.template_variables(doc)]
    assert len(set(names)) == len(names), names
    for variable in d.template_variables(doc):
        assert variable.get("type") == "query", variable
        earlier = set(names[: names.index(variable["name"])])
        used = d.used_variables(d.variable_query(variable)) - builtins
        assert used <= earlier, f"variable {variable['name']} uses {used - earlier}, not defined before it"
    used_anywhere: set[str] = set()
    for where, text in queries(path):
        used = d.used_variables(text)
        assert used <= set(names) | builtins, f"{where}: undefined {used - set(names) - builtins} in {text!r}"
        used_anywhere |= used
    assert set(names) <= used_anywhere, f"variables no query uses: {set(names) - used_anywhere}"


@pytest.mark.parametrize("path", [p for p in dashboard_params() if p.values[0].name in d.PROMETHEUS_DASHBOARDS])
def test_prometheus_selectors_pick_the_kubelet_job_and_the_node(path: Path) -> None:
    """Every series selector reads the node's scrapes only: job="kubelet" and the $node picked."""
    for where, text in queries(path):
        if where.startswith("variable node"):
            continue  # the node variable lists the nodes
        selectors = re.findall(r"\{([^{}]*)\}", text)
        assert selectors, f"{where}: no label matchers in {text!r}"
        for selector in selectors:
            assert 'job="kubelet"' in selector and 'node=~"$node"' in selector, f"{where}: {{{selector}}}"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`)")
def test_promtool_parses_every_promql_expression(tmp_path: Path) -> None:
    """Each expression (variables filled with placeholders) as a recording rule: `promtool check
    rules` parses them all."""
    assert PROMTOOL is not None
    rules: list[dict[str, str]] = []
    names: dict[str, str] = {}
    for name in d.PROMETHEUS_DASHBOARDS:
        path = d.DASHBOARDS / name
        doc = d.load(path)
        values = {**PARSE_VALUES, **{v["name"]: "placeholder" for v in d.template_variables(doc)}}
        for where, text in queries(path):
            expr = d.fill(text, values)
            if where.startswith("variable "):
                selector, _ = d.label_values_query(expr)
                expr = selector or "up"  # label_values() is Grafana's; its selector is PromQL
            record = f"dashboard_query_{len(rules)}"
            names[record] = f"{path.stem}: {where}"
            rules.append({"record": record, "expr": expr})
    assert len(rules) > 50
    file = tmp_path / "dashboard-queries.yml"
    file.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    proc = subprocess.run([PROMTOOL, "check", "rules", str(file)], capture_output=True, text=True, timeout=60)
    output = proc.stdout + proc.stderr
    for record, where in names.items():
        output = re.sub(rf"\b{record}\b", f"{record} ({where})", output)
    assert proc.returncode == 0, output
    assert f"SUCCESS: {len(rules)} rules found" in output, output


GOLDEN_LINES = d.REPO / "tests" / "testdata" / "golden" / "influxdb-v1.lp"


def sink_schema() -> dict[str, tuple[set[str], set[str]]]:
    """measurement -> (tag keys, field keys) of the InfluxDB sink's output, from the line protocol
    its golden test pins (tests/testdata/golden/influxdb-v1.lp)."""
    schema: dict[str, tuple[set[str], set[str]]] = {}
    for line in GOLDEN_LINES.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        series, fields = re.split(r"(?<!\\) ", line)[:2]
        measurement, *tags = re.split(r"(?<!\\),", series)
        tag_keys, field_keys = schema.setdefault(measurement, (set(), set()))
        tag_keys.update(t.split("=", 1)[0] for t in tags)
        field_keys.update(f.split("=", 1)[0] for f in re.split(r"(?<!\\),", fields))
    return schema


def test_influxdb_queries_use_the_sinks_measurements_fields_and_tags() -> None:
    """A misspelt field in a multi-field SELECT comes back as a null column next to real data, so
    a query returning series is not enough: every name must be one the sink writes."""
    schema = sink_schema()
    assert set(schema) == {"kubernetes_node", "kubernetes_system_container", "kubernetes_pod_container",
                           "kubernetes_pod_network", "kubernetes_pod_volume"}, schema
    path = d.DASHBOARDS / "kubeletapi-influxdb.json"
    for where, text in queries(path):
        measurements = re.findall(r'\bFROM "(\w+)"', text)
        assert len(measurements) == 1 and measurements[0] in schema, f"{where}: {text}"
        tag_keys, field_keys = schema[measurements[0]]
        fields = set(re.findall(r'\b\w+\("(\w+)"\)', text))
        tags = set(re.findall(r'"(\w+)" =~', text)) | set(re.findall(r'WITH KEY = "(\w+)"', text))
        group_by = re.search(r"\bGROUP BY (.*?)(?: fill\(\w+\))?$", text)
        if group_by:
            tags |= set(re.findall(r'"(\w+)"', group_by[1]))
        if where.startswith("variable "):
            assert not fields, f"{where}: {text}"
        else:
            assert fields, f"{where}: no field in {text}"
        assert fields <= field_keys, f"{where}: fields {fields - field_keys} not in {measurements[0]}"
        assert tags <= tag_keys, f"{where}: tags {tags - tag_keys} not in {measurements[0]}"
