"""deploy/prometheus as shipped, run by a real Prometheus against a real agent with pods: the four
kubelet endpoints are scraped (job="kubelet", one metrics_path each, cAdvisor timestamps replaced by
scrape times, kube-prometheus' drops applied), promtool accepts the config and the rules, and every
recording rule and alert evaluates, finding the conditions the test pods create.
"""

from __future__ import annotations

import math
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ecosystem.conftest import DEPLOY, MEM_FILL_MIB, MEM_LIMIT_MIB, PromStack
from tests.ecosystem.prometheus import INSTALL_HINT, PROMTOOL, Prometheus
from tests.helpers import LOOPBACK

# The package fixture takes up to ~45 s to set up in the first test that uses it.
# The spinner must use up its CPU quota (the throttling rules): no neighbour may take the cores.
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.alone, pytest.mark.timeout(180)]

PATHS = ("/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes")
JOB = 'job="kubelet"'
CADVISOR = 'job="kubelet", metrics_path="/metrics/cadvisor"'
MIB = 1 << 20


def rule_files(config_dir: Path) -> list[Path]:
    return sorted((config_dir / "rules").glob("*.yml"))


def groups_of(config_dir: Path) -> list[dict[str, Any]]:
    """Every rule group of the rules files, as written."""
    return [group for path in rule_files(config_dir) for group in yaml.safe_load(path.read_text())["groups"]]


def rules_of(config_dir: Path) -> list[dict[str, Any]]:
    return [rule for group in groups_of(config_dir) for rule in group["rules"]]


def expr_of(config_dir: Path, alert: str) -> str:
    exprs = {str(rule["expr"]) for rule in rules_of(config_dir) if rule.get("alert") == alert}
    assert len(exprs) == 1, (alert, exprs)
    return exprs.pop()


def pairs(result: list[dict[str, Any]], *names: str) -> set[tuple[str, ...]]:
    return {tuple(s["metric"].get(n, "") for n in names) for s in result}


def by_container(result: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(s["metric"]["pod"], s["metric"]["container"]): float(s["value"][1]) for s in result}


def test_config_dir_holds_the_shipped_files_unchanged(prom_stack: PromStack) -> None:
    config_dir = prom_stack.config_dir
    assert (config_dir / "prometheus.yml").read_bytes() == (DEPLOY / "prometheus.yml").read_bytes()
    shipped = sorted((DEPLOY / "rules").glob("*.yml"))
    assert [p.name for p in rule_files(config_dir)] == [p.name for p in shipped] != []
    for path in shipped:
        assert (config_dir / "rules" / path.name).read_bytes() == path.read_bytes(), path.name
    # And Prometheus runs these files: the rules it loaded are the ones written, group by group.
    loaded = sorted((g["name"], r["name"]) for g in prom_stack.prometheus.api("rules")["groups"] for r in g["rules"])
    written = sorted((g["name"], r.get("record") or r["alert"]) for g in groups_of(config_dir) for r in g["rules"])
    assert loaded == written


def test_every_target_is_up_and_labelled_like_kube_prometheus(prom_stack: PromStack) -> None:
    prom, port = prom_stack.prometheus, prom_stack.agent.kubelet.port("secure")
    targets = prom.api("targets", state="active")["activeTargets"]
    assert sorted(t["scrapeUrl"] for t in targets) == sorted(f"https://{LOOPBACK}:{port}{p}" for p in PATHS)
    for t in targets:
        path = t["scrapeUrl"].removeprefix(f"https://{LOOPBACK}:{port}")
        assert (t["health"], t["lastError"]) == ("up", ""), t
        assert t["labels"] == {"job": "kubelet", "metrics_path": path, "node": prom_stack.node,
                               "instance": f"{LOOPBACK}:{port}"}, t
        # The shipped 30 s interval, overridden by the test's targets file only.
        assert (t["scrapeInterval"], t["scrapeTimeout"]) == ("1s", "1s"), t
    successes = prom.query(f"sum_over_time(up{{{JOB}}}[5m])")
    assert {s["metric"]["metrics_path"]: float(s["value"][1]) >= 2 for s in successes} == dict.fromkeys(PATHS, True)
    # Every stored series carries its endpoint's metrics_path, not only the targets.
    per_path = prom.query(f"count by (metrics_path) ({{{JOB}}})")
    assert pairs(per_path, "metrics_path") == {(p,) for p in PATHS}, per_path
    assert prom.query(f'count({{{JOB}, metrics_path=""}})') == []


def test_cadvisor_samples_get_scrape_times_and_kube_prometheus_drops(prom_stack: PromStack) -> None:
    prom = prom_stack.prometheus
    config = yaml.safe_load(prom.api("status/config")["yaml"])
    jobs = {c["job_name"]: c for c in config["scrape_configs"]}
    honor = {c["metrics_path"]: c["honor_timestamps"] for c in jobs.values()}
    assert honor == {"/metrics": True, "/metrics/cadvisor": False, "/metrics/resource": True,
                     "/metrics/probes": True}, honor

    # As stored: cAdvisor samples carry the scrape's time (that of `up`), while /metrics/resource
    # keeps the agent's own sample times, which precede the end of the scrape that delivered them.
    # Raw samples of the 20 s before a point a little in the past, so every scrape up to then is
    # committed; the scrapes up to now, since a sample the agent took while one scrape was under
    # way (a housekeeping cycle ending between its request and its answer) reaches Prometheus
    # with the next scrape, which may start after that point.
    now = time.time()
    at = str(now - 2)

    def samples(expr: str, until: str) -> list[list[float]]:
        return [[float(t) for t, _ in s["values"]]
                for s in prom.api("query", query=f"{expr}[20s]", time=until)["result"]]

    def scrapes(path: str) -> list[tuple[float, float]]:
        """(start, end) of each scrape of one endpoint: `up` and the duration are stamped at its start."""
        sel = f'{{{JOB}, metrics_path="{path}"}}'
        result = prom.api("query", query=f"scrape_duration_seconds{sel}[25s]", time=str(now))["result"]
        assert len(result) == 1, result
        return [(float(t), float(t) + float(took)) for t, took in result[0]["values"]]

    cadvisor = {t for series in samples(f'container_cpu_usage_seconds_total{{{CADVISOR}, container!=""}}', at)
                for t in series}
    resource = {t for series in samples(
        'container_cpu_usage_seconds_total{job="kubelet", metrics_path="/metrics/resource"}', at) for t in series}
    assert cadvisor and resource, (cadvisor, resource)
    cadvisor_scrapes = {start for start, _ in scrapes("/metrics/cadvisor")}
    assert cadvisor <= cadvisor_scrapes, (sorted(cadvisor - cadvisor_scrapes), sorted(cadvisor_scrapes))
    resource_scrapes = scrapes("/metrics/resource")
    # Had the scrape ignored the agent's times, every sample would carry a scrape's start.
    assert resource - {start for start, _ in resource_scrapes}, (sorted(resource), resource_scrapes)
    late = [t for t in resource if not any(t < end for _, end in resource_scrapes)]
    assert late == [], (late, resource_scrapes)

    # The agent exposes what kube-prometheus drops; Prometheus keeps none of it.
    with prom_stack.agent.client(token=prom_stack.agent.token()) as client:
        body = client.get(prom_stack.agent.url("secure", "/metrics/cadvisor")).text
    assert "\ncontainer_tasks_state{" in body and "\ncontainer_cpu_load_average_10s{" in body
    assert 'container_spec_memory_limit_bytes{container="",id="/"' in body
    assert prom.query(f'{{{CADVISOR}, __name__=~"container_tasks_state|container_cpu_load_average_10s"}}') == []
    assert prom.query(f'container_spec_memory_limit_bytes{{{CADVISOR}, pod=""}}') == []
    assert prom.query(f'container_spec_memory_limit_bytes{{{CADVISOR}, pod!=""}}') != []


@pytest.mark.skipif(PROMTOOL is None, reason=f"promtool not installed {INSTALL_HINT}")
def test_promtool_accepts_the_config_and_every_rules_file(prom_stack: PromStack) -> None:
    assert PROMTOOL is not None
    config_dir = prom_stack.config_dir
    files = rule_files(config_dir)
    proc = subprocess.run([PROMTOOL, "check", "config", str(config_dir / "prometheus.yml")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(files)} rule files found" in proc.stdout, proc.stdout
    for path in files:
        proc = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        count = sum(len(g["rules"]) for g in yaml.safe_load(path.read_text())["groups"])
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"SUCCESS: {count} rules found" in proc.stdout, proc.stdout


def test_every_rule_expression_evaluates_without_error(prom_stack: PromStack) -> None:
    prom = prom_stack.prometheus
    rules = rules_of(prom_stack.config_dir)
    assert len(rules) >= 20
    failures = {}
    for rule in rules:
        response = prom.http.get("/api/v1/query", params={"query": rule["expr"]})
        doc = response.json()
        if response.status_code != 200 or doc["status"] != "success" or doc.get("warnings") \
                or doc["data"]["resultType"] != "vector":
            failures[rule.get("record") or rule["alert"]] = doc
    assert not failures, failures


def test_prometheus_evaluated_every_group_without_error(prom_stack: PromStack) -> None:
    groups = prom_stack.prometheus.api("rules")["groups"]
    written = {g["name"] for g in groups_of(prom_stack.config_dir)}
    assert {g["name"] for g in groups} == written and len(written) == 4, written
    for group in groups:
        assert not group["lastEvaluation"].startswith("0001-"), group
        for rule in group["rules"]:
            assert (rule["health"], rule.get("lastError", "")) == ("ok", ""), (group["name"], rule)


def recorded(prom: Prometheus, name: str, stack: PromStack) -> list[dict[str, Any]]:
    return prom.query(f'{name}{{node="{stack.node}", namespace="{stack.namespace}"}}')


def test_container_rules_record_the_test_pods(prom_stack: PromStack) -> None:
    prom, stack = prom_stack.prometheus, prom_stack
    prefix = "node_namespace_pod_container:"
    web, store = (f"{name}-{stack.node}" for name in ("web", "store"))
    for name in ("container_cpu_usage_seconds_total:sum_rate5m", "container_cpu_usage_seconds_total:sum_irate",
                 "container_memory_working_set_bytes", "container_memory_rss", "container_memory_cache",
                 "container_memory_swap"):
        got = by_container(recorded(prom, prefix + name, stack))
        assert set(got) >= stack.steady, (name, got)
        assert all(math.isfinite(v) and v >= 0 for v in got.values()), (name, got)

    # The figures are the pods'. rate() over 5m divides by the whole window, which holds only
    # seconds of data yet, so the spinner's CPU is checked against the others, not as 0.2 cores.
    cpu = by_container(recorded(prom, prefix + "container_cpu_usage_seconds_total:sum_rate5m", stack))
    others = [v for key, v in cpu.items() if key in stack.steady and key != (web, "spin")]
    assert cpu[(web, "spin")] > 0 and all(cpu[(web, "spin")] > 10 * v for v in others), cpu
    working_set = by_container(recorded(prom, prefix + "container_memory_working_set_bytes", stack))
    assert MEM_FILL_MIB * MIB <= working_set[(store, "cache")] <= MEM_LIMIT_MIB * MIB, working_set
    cache = by_container(recorded(prom, prefix + "container_memory_cache", stack))
    assert cache[(store, "cache")] >= MEM_FILL_MIB * MIB, cache
    # A ratio of two rates over the same window: a real share already. At 0.2 of a CPU, the
    # spinner uses up its quota early in nearly every 100 ms period.
    throttled = by_container(recorded(prom, prefix + "container_cpu_cfs_throttled_periods_total:ratio_rate5m", stack))
    assert set(throttled) == {(web, "spin")}, throttled  # the only container with a CPU limit
    assert 0.5 < throttled[(web, "spin")] <= 1, throttled

    pod_cpu = recorded(prom, "node_namespace_pod:container_cpu_usage_seconds_total:sum_rate5m", stack)
    assert pairs(pod_cpu, "pod") == {(web,), (store,)}, pod_cpu
    pod_memory = {s["metric"]["pod"]: float(s["value"][1]) for s in recorded(
        prom, "node_namespace_pod:container_memory_working_set_bytes:sum", stack)}
    assert set(pod_memory) == {web, store} and pod_memory[store] >= working_set[(store, "cache")], pod_memory


def test_kubelet_rules_record_quantiles_for_the_node(prom_stack: PromStack) -> None:
    prom = prom_stack.prometheus
    for name in ("kubelet_pleg_relist_duration_seconds", "kubelet_pod_start_duration_seconds"):
        result = prom.query(f"node_quantile:{name}:histogram_quantile")
        assert pairs(result, "node", "quantile") == {(prom_stack.node, q) for q in ("0.5", "0.9", "0.99")}, result
        values = {s["metric"]["quantile"]: float(s["value"][1]) for s in result}
        # PLEG relists every second and the test pods started within the 5 m window: real figures.
        assert all(math.isfinite(v) and v > 0 for v in values.values()), (name, values)
        assert values["0.5"] <= values["0.9"] <= values["0.99"], (name, values)


def test_alert_expressions_find_the_conditions_the_pods_create(prom_stack: PromStack) -> None:
    prom, stack, config_dir = prom_stack.prometheus, prom_stack, prom_stack.config_dir
    web, store = (f"{name}-{stack.node}" for name in ("web", "store"))
    fields = ("node", "namespace", "pod", "container")
    throttling = prom.query(expr_of(config_dir, "CPUThrottlingHigh"))
    assert pairs(throttling, *fields) == {(stack.node, stack.namespace, web, "spin")}, throttling
    near_limit = prom.query(expr_of(config_dir, "KubeContainerMemoryNearLimit"))
    assert pairs(near_limit, *fields) == {(stack.node, stack.namespace, store, "cache")}, near_limit
    failing = prom.query(expr_of(config_dir, "KubeContainerProbeFailing"))
    assert (stack.node, stack.namespace, web, "gate", "Readiness") in pairs(failing, *fields, "probe_type"), failing
    # A healthy node: nothing down, a fresh certificate, stats collected, fast PLEG and pod syncs.
    for alert in ("KubeletDown", "KubeletTargetDown", "KubeletPlegDurationHigh", "KubeletPodStartUpLatencyHigh",
                  "KubeletStatsScrapeError"):
        assert prom.query(expr_of(config_dir, alert)) == [], alert
    ttl = prom.query('kubelet_certificate_manager_server_ttl_seconds{job="kubelet", metrics_path="/metrics"}')
    assert len(ttl) == 1 and float(ttl[0]["value"][1]) > 300 * 86400, ttl
    certificate = [r["expr"] for r in rules_of(config_dir) if r.get("alert") == "KubeletServerCertificateExpiration"]
    assert len(certificate) == 2 and all(prom.query(expr) == [] for expr in certificate), certificate


def test_kubelet_down_fires_on_an_absent_target(prom_stack: PromStack) -> None:
    """KubeletDown's absent() answers when no kubelet is up: evaluated over the stored data at a
    time before the first scrape it returns its one (label-less: absent() of a comparison) series,
    and nothing now."""
    prom = prom_stack.prometheus
    expr = expr_of(prom_stack.config_dir, "KubeletDown")
    first = min(float(v[0]) for s in prom.api("query", query=f'up{{{JOB}}}[10m]')["result"] for v in s["values"])
    before = prom.api("query", query=expr, time=str(first - 60))["result"]
    assert [(s["metric"], s["value"][1]) for s in before] == [({}, "1")], before
    assert prom.query(expr) == []

