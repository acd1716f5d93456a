"""Every Prometheus panel query of the Grafana dashboards, run against the real Prometheus of the
ecosystem stack (conftest.prom_stack: deploy/prometheus as shipped, scraping a real agent with
pods): each returns at least one series.

Variables are resolved as Grafana resolves them when a dashboard opens: each `label_values()`
variable query goes to Prometheus' label values API (with the variables before it filled), a
multi-value variable stands for all its options ("All"), the node variable for its first (only)
option. Grafana's interval variables become fixed durations, and each query runs as an instant
query (Grafana's range queries evaluate the same expression at every step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.ecosystem import dashboards as d

if TYPE_CHECKING:
    from tests.ecosystem.conftest import PromStack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# $__rate_interval is at least four scrape intervals; a minute covers the fixture's 1 s scrapes
# and the pods' start. $__range is the dashboards' default hour cut to the stack's lifetime.
BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}

PROM_TARGETS = [t for name in d.PROMETHEUS_DASHBOARDS for t in d.targets(d.DASHBOARDS / name)]

Resolved = dict[str, tuple[dict[str, list[str]], dict[str, str]]]


@pytest.fixture(scope="module")
def resolved(prom_stack: PromStack) -> Resolved:
    """dashboard name -> (variable options, values going into the queries)."""
    prom = prom_stack.prometheus

    def label_values(selector: str | None, label: str) -> list[str]:
        params = {"match[]": selector} if selector else {}
        values: list[str] = prom.api(f"label/{label}/values", **params)
        return values

    return {t: d.prometheus_variables(d.load(d.DASHBOARDS / f"{t}.json"), label_values, BUILTINS)
            for t in (name.removesuffix(".json") for name in d.PROMETHEUS_DASHBOARDS)}


def run(prom_stack: PromStack, resolved: Resolved, target: d.Target) -> tuple[str, list[dict[str, Any]]]:
    expr = d.fill(target.text, resolved[target.dashboard][1])
    return expr, prom_stack.prometheus.query(expr)


def test_variables_offer_the_test_node_and_pods(prom_stack: PromStack, resolved: Resolved) -> None:
    pods_options, _ = resolved["kubeletapi-pods"]
    for options, _ in resolved.values():
        assert options["node"] == [prom_stack.node], options
    assert prom_stack.namespace in pods_options["namespace"], pods_options
    assert set(prom_stack.pods) <= set(pods_options["pod"]), pods_options
    assert {name for _, name in prom_stack.steady} <= set(pods_options["container"]), pods_options


@pytest.mark.parametrize("target", [pytest.param(t, id=t.id) for t in PROM_TARGETS])
def test_panel_query_returns_series(prom_stack: PromStack, resolved: Resolved, target: d.Target) -> None:
    expr, result = run(prom_stack, resolved, target)
    assert result, f"{target.id}: no series for\n{expr}"


def panel_target(dashboard: str, title: str, ref_id: str = "A") -> d.Target:
    [target] = [t for t in PROM_TARGETS if (t.dashboard, t.title, t.ref_id) == (dashboard, title, ref_id)]
    return target


def by_container(result: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    return {(s["metric"]["pod"], s["metric"]["container"]): float(s["value"][1]) for s in result}


def test_restarts_panel_counts_the_restarts(prom_stack: PromStack, resolved: Resolved) -> None:
    """The restart count is derived (kubeletapi has no restart counter per container): the
    crash-looping container shows restarts, none of the others does."""
    expr, result = run(prom_stack, resolved, panel_target("kubeletapi-pods", "Container restarts"))
    restarts = by_container(result)
    flaky = (f"store-{prom_stack.node}", "flaky")
    assert restarts.get(flaky, 0) >= 1, (expr, restarts)
    assert {key: restarts.get(key) for key in prom_stack.steady} == dict.fromkeys(prom_stack.steady, 0), (
        expr, restarts)


def test_throttling_and_probe_panels_show_the_test_containers(prom_stack: PromStack, resolved: Resolved) -> None:
    """The CPU-limited spinner is throttled; the gate container's readiness probe fails."""
    spin = (f"web-{prom_stack.node}", "spin")
    expr, result = run(prom_stack, resolved, panel_target("kubeletapi-pods", "CPU throttling"))
    assert by_container(result).get(spin, 0) > 0, (expr, result)
    expr, result = run(prom_stack, resolved, panel_target("kubeletapi-kubelet", "Probe results per container"))
    failed = {(s["metric"]["pod"], s["metric"]["container"], s["metric"]["probe_type"]): float(s["value"][1])
              for s in result if s["metric"]["result"] == "failed"}
    assert failed.get((f"web-{prom_stack.node}", "gate", "Readiness"), 0) > 0, (expr, result)
