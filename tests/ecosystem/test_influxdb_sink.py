"""The InfluxDB sink end to end: a real influxd (Debian's 1.x) on loopback, a real agent with real pods
writing to it every housekeeping interval, and the data read back over InfluxDB's HTTP API.

Checked against the contract of Telegraf's kubernetes input (plugins/inputs/kubernetes) and the agent's own
/stats/summary: the five measurements with exactly Telegraf's tags and integer fields, values equal
to the summary's for the same sample, one point per interval; then an outage of influxd (points
buffered and replayed, the API unaffected), a bounded buffer dropping its oldest points, and every
query of the InfluxDB Grafana dashboard answering with data.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ecosystem import dashboards
from tests.ecosystem.influxd import INFLUXD, INSTALL_HINT, Influxd
from tests.helpers import Agent, agent_args
from tests.podtools import container, manifest, running, wait_for, write

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: pods run in cgroups and mount namespaces"),
    pytest.mark.skipif(INFLUXD is None, reason=f"influxd not installed {INSTALL_HINT}"),
]

DB = "k8s"
NODE = "testnode"
NAMESPACE = "default"
SECOND = 1_000_000_000
BLOB = 2 * 1024 * 1024  # bytes the writer puts into its emptyDir
# (pod, container) of every test container.
CONTAINERS = {("alpha-testnode", "web"), ("alpha-testnode", "burn"), ("beta-testnode", "writer")}
ALPHA = manifest("alpha", container("web", ["sleep", "3600"]) + container(
    # holds a ~8 MB string in the shell's memory, then spins (held to 0.2 CPU by its limit)
    "burn", ["sh", "-c", "x=$(head -c 8000000 /dev/zero | tr '\\000' x); while :; do :; done"], """
    resources:
      limits: {cpu: 200m}
"""))
BETA = manifest("beta", container(
    "writer", ["sh", "-c", f"head -c {BLOB} /dev/urandom > /scratch/blob; sleep 3600"], """
    volumeMounts: [{name: scratch, mountPath: /scratch}]
"""), spec_extra="volumes: [{name: scratch, emptyDir: {}}]")
# Volume usage is measured every volumeStatsAggPeriod (1m by default).
CONFIG = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nvolumeStatsAggPeriod: 1s\n"

# Telegraf's kubernetes input (plugins/inputs/kubernetes): measurement -> tag keys, and field -> summary path.
CONTAINER_FIELDS = {
    "cpu_usage_nanocores": "cpu.usageNanoCores",
    "cpu_usage_core_nanoseconds": "cpu.usageCoreNanoSeconds",
    "memory_usage_bytes": "memory.usageBytes",
    "memory_working_set_bytes": "memory.workingSetBytes",
    "memory_rss_bytes": "memory.rssBytes",
    "memory_page_faults": "memory.pageFaults",
    "memory_major_page_faults": "memory.majorPageFaults",
    "rootfs_available_bytes": "rootfs.availableBytes",
    "rootfs_capacity_bytes": "rootfs.capacityBytes",
    "logsfs_available_bytes": "logs.availableBytes",
    "logsfs_capacity_bytes": "logs.capacityBytes",
}
FIELDS: dict[str, dict[str, str]] = {
    "kubernetes_node": {
        "cpu_usage_nanocores": "cpu.usageNanoCores",
        "cpu_usage_core_nanoseconds": "cpu.usageCoreNanoSeconds",
        "memory_available_bytes": "memory.availableBytes",
        "memory_usage_bytes": "memory.usageBytes",
        "memory_working_set_bytes": "memory.workingSetBytes",
        "memory_rss_bytes": "memory.rssBytes",
        "memory_page_faults": "memory.pageFaults",
        "memory_major_page_faults": "memory.majorPageFaults",
        "network_rx_bytes": "network.rxBytes",
        "network_rx_errors": "network.rxErrors",
        "network_tx_bytes": "network.txBytes",
        "network_tx_errors": "network.txErrors",
        "fs_available_bytes": "fs.availableBytes",
        "fs_capacity_bytes": "fs.capacityBytes",
        "fs_used_bytes": "fs.usedBytes",
        "runtime_image_fs_available_bytes": "runtime.imageFs.availableBytes",
        "runtime_image_fs_capacity_bytes": "runtime.imageFs.capacityBytes",
        "runtime_image_fs_used_bytes": "runtime.imageFs.usedBytes",
    },
    "kubernetes_system_container": CONTAINER_FIELDS,
    "kubernetes_pod_container": {
        **CONTAINER_FIELDS, "rootfs_used_bytes": "rootfs.usedBytes", "logsfs_used_bytes": "logs.usedBytes"},
    "kubernetes_pod_network": {
        "rx_bytes": "rxBytes", "rx_errors": "rxErrors", "tx_bytes": "txBytes", "tx_errors": "txErrors"},
    "kubernetes_pod_volume": {
        "available_bytes": "availableBytes", "capacity_bytes": "capacityBytes", "used_bytes": "usedBytes"},
}
TAGS = {
    "kubernetes_node": {"node_name"},
    "kubernetes_system_container": {"node_name", "container_name"},
    "kubernetes_pod_container": {"node_name", "namespace", "container_name", "pod_name", "image", "version"},
    "kubernetes_pod_network": {"node_name", "pod_name", "namespace"},
    "kubernetes_pod_volume": {"node_name", "pod_name", "namespace", "volume_name"},
}
WRITTEN = "kubeletapi_influxdb_points_written_total"
RETRIED = "kubeletapi_influxdb_points_retried_total"
DROPPED_FULL = 'kubeletapi_influxdb_points_dropped_total{reason="buffer_full"}'
BUFFERED = "kubeletapi_influxdb_buffered_points"
READY: dict[str, int] = {}  # database -> when every series of the test's agent was being written


# -- fixtures -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def influx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Influxd]:
    server = Influxd(tmp_path_factory.mktemp("influxd"))
    try:
        server.start()
        server.wait_ready()
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def influx_up(influx: Influxd) -> None:
    """Every test starts with influxd serving (a failed outage test must not break the next one)."""
    if not influx.running:
        influx.start()
    influx.wait_ready()


def sink_args(influx: Influxd, db: str, *extra: str) -> list[str]:
    return ["--housekeeping-interval", "1s", "--influxdb-url", influx.url, "--influxdb-database", db,
            "--influxdb-timeout", "1s", *extra]


@pytest.fixture(scope="module")
def agent(influx: Influxd, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    """An agent sampling every second, writing to `k8s`, running the test pods; every test container
    and the written emptyDir measured in /stats/summary and present in InfluxDB."""
    tmp = tmp_path_factory.mktemp("agent")
    (tmp / "config.yaml").write_text(CONFIG)
    args = agent_args(tmp, "--config", str(tmp / "config.yaml"), "--pod-manifest-path", str(tmp / "manifests"),
                      *sink_args(influx, DB))
    (tmp / "manifests").mkdir()
    node = Agent(args)
    try:
        write(tmp / "manifests", "alpha.yaml", ALPHA)
        write(tmp / "manifests", "beta.yaml", BETA)
        wait_for(lambda: running(node, "alpha") and running(node, "beta"), timeout=30, what="pods running")

        def measured() -> bool:
            doc = summary(node)
            seen = {(p["podRef"]["name"], c["name"]) for p in doc["pods"] for c in p["containers"]
                    if c.get("memory", {}).get("workingSetBytes") and c.get("cpu", {}).get("usageCoreNanoSeconds")}
            used = {v["name"]: v.get("usedBytes", 0) for p in doc["pods"] for v in p.get("volume", [])}
            return seen >= CONTAINERS and used.get("scratch", 0) >= BLOB

        wait_for(measured, timeout=30, interval=0.2, what="test containers and the emptyDir in /stats/summary")

        def stored() -> set[tuple[str, str]] | None:
            rows = influx.rows('SELECT last("memory_working_set_bytes") FROM "kubernetes_pod_container" '
                               "WHERE time > now() - 5s GROUP BY *", DB)
            got = {(r["pod_name"], r["container_name"]) for r in rows if r["last"]}
            volumes = influx.rows('SELECT last("used_bytes") FROM "kubernetes_pod_volume" '
                                  "WHERE time > now() - 5s GROUP BY *", DB)
            written = any(r["volume_name"] == "scratch" and r["last"] >= BLOB for r in volumes)
            return got if got >= CONTAINERS and written else None

        wait_for(stored, timeout=15, interval=0.2, what="every test container and the emptyDir in InfluxDB")
        READY[DB] = time.time_ns()
        yield node
    finally:
        node.close()


# -- helpers --------------------------------------------------------------------------------------

def summary(agent: Agent) -> dict[str, Any]:
    doc: dict[str, Any] = httpx.get(agent.url("read-only", "/stats/summary"), timeout=10).json()
    return doc


def sink_metrics(agent: Agent) -> dict[str, float]:
    """The kubeletapi_influxdb_* samples of the read-only /metrics, keyed `name{label="v",...}`."""
    text = httpx.get(agent.url("read-only", "/metrics"), timeout=5).text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith("kubeletapi_influxdb_") and not s.name.endswith("_created"):
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return out


def drained_metrics(agent: Agent) -> dict[str, float] | None:
    """The sink's metrics once nothing is buffered, else None."""
    metrics = sink_metrics(agent)
    return metrics if metrics.get(BUFFERED) == 0 else None


def lookup(doc: dict[str, Any], path: str) -> int:
    """A summary value by dotted path; a missing key reads as 0, as Telegraf decodes it."""
    value: Any = doc
    for key in path.split("."):
        value = value.get(key, {}) if isinstance(value, dict) else {}
    return value if isinstance(value, int) else 0


def seconds(wire: str) -> int:
    """A summary time (RFC 3339, second precision) as Unix seconds."""
    return int(dt.datetime.fromisoformat(wire.replace("Z", "+00:00")).timestamp())


def node_times(influx: Influxd, db: str, start_ns: int, end_ns: int) -> list[int]:
    """Timestamps (ns) of the kubernetes_node points in [start, end)."""
    rows = influx.rows(f'SELECT "memory_working_set_bytes" FROM "kubernetes_node" '
                       f"WHERE time >= {start_ns} AND time < {end_ns}", db)
    return [int(r["time"]) for r in rows]


def gaps(times: list[int]) -> list[float]:
    return [(b - a) / SECOND for a, b in itertools.pairwise(times)]


def show(influx: Influxd, q: str, db: str | None = DB) -> dict[str, list[list[Any]]]:
    """A SHOW statement's series by name -> values."""
    return {s["name"]: s.get("values", []) for s in influx.series(q, db)}


def last_rows(influx: Influxd, measurement: str, field: str, db: str = DB) -> list[dict[str, Any]]:
    """The newest value of `field` of every series of `measurement`, with the series' tags."""
    return influx.rows(f'SELECT last("{field}") FROM "{measurement}" GROUP BY *', db)


def mismatches(point: dict[str, Any], source: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    return {f: (point.get(f), lookup(source, path)) for f, path in fields.items()
            if point.get(f) != lookup(source, path)}


# -- tests ----------------------------------------------------------------------------------------

def test_measurements_and_tags_are_telegrafs(agent: Agent, influx: Influxd) -> None:
    doc = summary(agent)
    assert doc["node"]["nodeName"] == NODE
    measurements = {v[0] for v in show(influx, "SHOW MEASUREMENTS").get("measurements", [])}
    assert measurements == set(TAGS), measurements

    tag_keys = {name: {v[0] for v in values} for name, values in show(influx, "SHOW TAG KEYS").items()}
    assert tag_keys == TAGS, tag_keys

    # One series per test container, tagged exactly as Telegraf tags it; no other pod containers.
    rows = last_rows(influx, "kubernetes_pod_container", "memory_working_set_bytes")
    got = {(r["pod_name"], r["container_name"]): {k: r[k] for k in TAGS["kubernetes_pod_container"]} for r in rows}
    assert len(got) == len(rows), rows
    assert got == {(pod, name): {"pod_name": pod, "namespace": NAMESPACE, "container_name": name,
                                 "node_name": NODE, "image": "busybox", "version": "1.36"}
                   for pod, name in CONTAINERS}, rows

    # System containers: the summary's node.systemContainers, kubelet among them.
    want_system = {c["name"] for c in doc["node"].get("systemContainers", [])}
    assert "kubelet" in want_system, doc["node"].get("systemContainers")
    rows = last_rows(influx, "kubernetes_system_container", "memory_working_set_bytes")
    assert {r["container_name"] for r in rows} == want_system, rows
    assert all(r["node_name"] == NODE for r in rows) and len(rows) == len(want_system), rows

    # Volumes and pod networks: the summary's, tagged with their pod.
    want_volumes = {(p["podRef"]["name"], v["name"]) for p in doc["pods"] for v in p.get("volume", [])}
    assert ("beta-testnode", "scratch") in want_volumes, want_volumes
    rows = last_rows(influx, "kubernetes_pod_volume", "used_bytes")
    assert {(r["pod_name"], r["volume_name"]) for r in rows} == want_volumes, rows
    assert all(r["namespace"] == NAMESPACE and r["node_name"] == NODE for r in rows), rows
    want_networks = {p["podRef"]["name"] for p in doc["pods"] if "network" in p}
    rows = last_rows(influx, "kubernetes_pod_network", "rx_bytes")
    assert {r["pod_name"] for r in rows} == want_networks and want_networks, (want_networks, rows)
    assert all(r["namespace"] == NAMESPACE and r["node_name"] == NODE for r in rows), rows


def test_fields_are_integers_and_match_the_summary(agent: Agent, influx: Influxd) -> None:
    field_keys = show(influx, "SHOW FIELD KEYS")
    got = {name: dict(values) for name, values in field_keys.items()}
    assert got == {name: dict.fromkeys(fields, "integer") for name, fields in FIELDS.items()}, got

    # Non-zero where the summary has figures.
    node = last_rows(influx, "kubernetes_node", "cpu_usage_nanocores")
    assert len(node) == 1 and node[0]["node_name"] == NODE and node[0]["last"] > 0, node
    for field in ("memory_working_set_bytes", "fs_capacity_bytes"):
        assert all(r["last"] > 0 for r in last_rows(influx, "kubernetes_node", field)), field
    for field in ("memory_working_set_bytes", "cpu_usage_core_nanoseconds"):
        rows = last_rows(influx, "kubernetes_pod_container", field)
        assert {(r["pod_name"], r["container_name"]) for r in rows if r["last"] > 0} == CONTAINERS, (field, rows)
    volume = influx.rows('SELECT last("capacity_bytes") AS capacity, last("used_bytes") AS used '
                         "FROM \"kubernetes_pod_volume\" WHERE volume_name = 'scratch'", DB)
    assert len(volume) == 1 and volume[0]["capacity"] > 0 and volume[0]["used"] >= BLOB, volume

    # The same sample in both: the node point stamped with the summary's node CPU time (second
    # precision there) carries the summary's figures; so do the test containers' points.
    doc = summary(agent)
    node_doc = doc["node"]
    at = seconds(node_doc["cpu"]["time"])
    assert seconds(node_doc["memory"]["time"]) == at, node_doc

    def node_point() -> list[dict[str, Any]] | None:
        rows = influx.rows(f'SELECT * FROM "kubernetes_node" WHERE time >= {at * SECOND} '
                           f"AND time < {(at + 1) * SECOND}", DB)
        same = [r for r in rows if r["cpu_usage_core_nanoseconds"] == node_doc["cpu"]["usageCoreNanoSeconds"]]
        return same or None

    points = wait_for(node_point, timeout=5, interval=0.2, what=f"the node point of {node_doc['cpu']['time']}")
    assert len(points) == 1, points
    assert mismatches(points[0], node_doc, FIELDS["kubernetes_node"]) == {}, (points[0], node_doc)

    pods = {p["podRef"]["name"]: p for p in doc["pods"]}
    for pod_name, name in sorted(CONTAINERS):
        source = next(c for c in pods[pod_name]["containers"] if c["name"] == name)
        t = seconds(source["cpu"]["time"])
        where = (f"pod_name = '{pod_name}' AND container_name = '{name}' AND time >= {(t - 2) * SECOND} "
                 f"AND time < {(t + 3) * SECOND}")

        def container_point(where: str = where, source: dict[str, Any] = source) -> dict[str, Any] | None:
            rows = influx.rows(f'SELECT * FROM "kubernetes_pod_container" WHERE {where}', DB)
            same = [r for r in rows if r["cpu_usage_core_nanoseconds"] == source["cpu"]["usageCoreNanoSeconds"]
                    and r["memory_working_set_bytes"] == source["memory"]["workingSetBytes"]]
            return same[-1] if same else None

        point = wait_for(container_point, timeout=5, interval=0.2, what=f"the point of {pod_name}/{name}")
        assert mismatches(point, source, FIELDS["kubernetes_pod_container"]) == {}, (point, source)

    scratch = next(v for v in pods["beta-testnode"]["volume"] if v["name"] == "scratch")
    stored = last_rows(influx, "kubernetes_pod_volume", "used_bytes")
    assert [r["last"] for r in stored if r["volume_name"] == "scratch"] == [scratch["usedBytes"]], (stored, scratch)


def test_one_point_per_housekeeping_interval(agent: Agent, influx: Influxd) -> None:
    window = 6
    start = READY[DB]  # every series exists from here on
    end = start + window * SECOND
    time.sleep(max(0.0, (end + 2 * SECOND - time.time_ns()) / SECOND))  # every point of the window flushed
    times = node_times(influx, DB, start, end)
    assert abs(len(times) - window) <= 1, (len(times), gaps(times))
    # Every point of a cycle carries the cycle's time (Telegraf's gather time), and every series of
    # every measurement got a point in each of those cycles.
    stamps = {int(row[0]) for series in influx.series(f"SELECT * FROM /.*/ WHERE time >= {start} AND time < {end}", DB)
              for row in series["values"]}
    assert stamps == set(times), sorted(stamps - set(times))
    for measurement, fields in FIELDS.items():
        field = next(iter(fields))
        rows = influx.rows(f'SELECT count("{field}") FROM "{measurement}" WHERE time >= {start} '
                           f"AND time < {end} GROUP BY *", DB)
        assert rows and all(r["count"] == len(times) for r in rows), (measurement, len(times), rows)


@pytest.mark.timeout(120)
def test_outage_is_buffered_and_replayed(agent: Agent, influx: Influxd) -> None:
    per_cycle = sum(len(s["values"]) for s in influx.series("SHOW SERIES", DB))  # one point per series
    # The sink keeps up before the outage: its buffer empties after each cycle's write (read at one
    # instant it may hold the cycle just gathered and not yet written: CI saw 10 points once).
    def between_writes() -> dict[str, float] | None:
        metrics = sink_metrics(agent)
        return metrics if metrics.get(BUFFERED) == 0 else None

    before = wait_for(between_writes, timeout=10, interval=0.1, what="the sink's buffer empty between two writes")
    before_at = time.time_ns()
    assert before.get(WRITTEN, 0) > 0, before
    stopped_at = time.time_ns()
    influx.stop()
    observed: list[dict[str, float]] = []
    slow: list[tuple[str, float]] = []
    while time.time_ns() - stopped_at < 6 * SECOND:
        for listener, path in (("healthz", "/healthz"), ("read-only", "/stats/summary")):
            t0 = time.monotonic()
            response = httpx.get(agent.url(listener, path), timeout=5)
            elapsed = time.monotonic() - t0
            assert response.status_code == 200 and (path != "/healthz" or response.text == "ok"), (
                path, response.status_code, response.text)
            if elapsed >= 1:
                slow.append((path, elapsed))
        observed.append(sink_metrics(agent))
        time.sleep(0.4)
    assert not slow, f"requests slowed by the outage: {slow}"
    assert observed[-1][RETRIED] > before.get(RETRIED, 0), [m.get(RETRIED) for m in observed]
    buffered = [m[BUFFERED] for m in observed]
    assert buffered[-1] > 0 and buffered[-1] > buffered[0], buffered

    influx.start()
    influx.wait_ready()
    ready_at = time.time_ns()
    drained = wait_for(lambda: drained_metrics(agent), timeout=30, interval=0.25,
                       what="the buffer drained after influxd came back")
    drained_at = time.time_ns()
    # Every cycle of the outage arrived and nothing was dropped.
    times = node_times(influx, DB, stopped_at, ready_at)
    outage = (ready_at - stopped_at) / SECOND
    assert abs(len(times) - outage) <= 1.5, (outage, len(times), gaps(times))
    around = node_times(influx, DB, stopped_at - 3 * SECOND, ready_at + SECOND)
    assert max(gaps(around)) < 1.8, gaps(around)
    assert drained.get(DROPPED_FULL, 0) == 0, drained
    # The counter took in the buffered points, each once: one cycle's points per second since `before`.
    written = drained[WRITTEN] - before[WRITTEN]
    assert written >= max(buffered), (before, drained, buffered)
    assert abs(written / per_cycle - (drained_at - before_at) / SECOND) <= 1.5, (written, per_cycle, before, drained)


@pytest.mark.timeout(120)
def test_full_buffer_drops_the_oldest_points(influx: Influxd, tmp_path: Path) -> None:
    size, db = 20, "k8s_small"
    # The buffer must hold at least one batch (a flag check), so batches are small here too.
    node = Agent(agent_args(tmp_path, *sink_args(influx, db, "--influxdb-buffer-size", str(size),
                                                 "--influxdb-batch-size", "5")))
    try:
        def first_points() -> bool:
            return [db] in show(influx, "SHOW DATABASES", None).get("databases", []) and len(
                node_times(influx, db, 0, time.time_ns() + SECOND)) >= 2

        wait_for(first_points, timeout=15, interval=0.2, what=f"the second agent's first points in {db}")
        # Points per cycle: one per series (this agent runs no pods: node and system containers).
        per_cycle = sum(len(influx.series(f'SHOW SERIES FROM "{m}"', db)[0]["values"])
                        for m in ("kubernetes_node", "kubernetes_system_container"))
        stopped_at = time.time_ns()
        influx.stop()
        observed: list[dict[str, float]] = []

        def overflowed() -> bool:
            observed.append(sink_metrics(node))
            return observed[-1].get(DROPPED_FULL, 0) >= 2 * per_cycle

        wait_for(overflowed, timeout=30, interval=0.5, what="two cycles dropped from the full buffer")
        assert all(m[BUFFERED] <= size for m in observed), [m[BUFFERED] for m in observed]
        assert observed[-1][BUFFERED] > size - per_cycle, observed[-1]

        influx.start()
        influx.wait_ready()
        # The sink retries on its own backoff schedule, so the buffer may go on rolling over a
        # little after influxd is back: what arrives is the newest `size` points before the drain.
        drained = wait_for(lambda: drained_metrics(node), timeout=40, interval=0.25,
                           what="the buffer drained after influxd came back")
        drained_at = time.time_ns()
        times = node_times(influx, db, 0, drained_at)
        holes = [(a, b) for a, b in itertools.pairwise(times) if (b - a) / SECOND >= 1.8]
        assert len(holes) == 1, (per_cycle, gaps(times))
        hole_start, hole_end = holes[0]
        # The hole starts at the outage (the points before it were written) and spans the oldest
        # cycles of it (two or more dropped); after it, every cycle up to the drain arrived.
        assert stopped_at - 2.5 * SECOND < hole_start < stopped_at + 2 * SECOND, (stopped_at, holes)
        assert hole_end - hole_start >= 2.5 * SECOND, holes
        kept = [t for t in times if t >= hole_end]
        assert abs(len(kept) - size / per_cycle) <= 1.5, (size, per_cycle, len(kept), gaps(kept))
        assert drained[DROPPED_FULL] >= 2 * per_cycle and drained[BUFFERED] == 0, drained
    finally:
        node.close()


def dashboard_variables(influx: Influxd, path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Resolve the dashboard's query variables in order against the test's data, as Grafana does on
    load: each variable's options, and the value it goes into queries with (a multi-value or
    include-all variable stands for all its options, as "All" does; a single one for its first)."""
    options: dict[str, list[str]] = {}
    values: dict[str, str] = {}
    for variable in dashboards.variables_of_type(dashboards.load(path), "query"):
        query = dashboards.fill(dashboards.variable_query(variable), {**dashboards.INFLUX_BUILTINS, **values})
        found = sorted({str(row[-1]) for s in influx.series(query, DB) for row in s.get("values", [])})
        assert found, f"variable {variable['name']} has no options: {query}"
        options[variable["name"]] = found
        many = variable.get("multi") or variable.get("includeAll")
        values[variable["name"]] = dashboards.regex_value(found if many else found[:1], "influxql")
    return options, values


def test_dashboard_queries_return_series(agent: Agent, influx: Influxd) -> None:
    path = dashboards.DASHBOARDS / "kubeletapi-influxdb.json"
    options, values = dashboard_variables(influx, path)
    # The variables list exactly the test's node, namespace and pods.
    pods = {pod for pod, _ in CONTAINERS}
    assert options == {"node": [NODE], "namespace": [NAMESPACE], "pod": sorted(pods)}, options
    queries = dashboards.influx_queries(path, values)
    assert queries, f"no InfluxDB queries in {path}"
    # The rate panels take non_negative_derivative over GROUP BY time(10s): they have a value once
    # the node's points fall in two such groups (a loaded machine may not have got there yet).
    wait_for(lambda: len({t // (10 * SECOND) for t in node_times(influx, DB, 0, time.time_ns())}) >= 2,
             timeout=30, interval=0.5, what="the node's points in two 10 s groups")
    empty = [(panel, query) for panel, query in queries
             if not any(s.get("values") for s in influx.series(query, DB))]
    assert not empty, f"panel queries without data (variables {values}): {empty}"
