"""Reading the Grafana dashboards in deploy/grafana/dashboards the way Grafana does: panels (also
inside rows and collapsed rows), their targets and data sources, template variables, and the
substitution of variables into queries.

Grafana's variable syntax in a query: `$name`, `${name}`, `${name:format}` and `[[name]]`; built-in
variables start with `__` ($__rate_interval, $__interval, $__range, $timeFilter for InfluxDB).
A multi-value variable becomes a regular expression: one value is the value regex-escaped, several
(or "All" with no custom all-value) are `(v1|v2|...)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
GRAFANA = REPO / "deploy" / "grafana"
DASHBOARDS = GRAFANA / "dashboards"
DATASOURCES_YML = GRAFANA / "provisioning" / "datasources" / "datasources.yml"
PROVIDERS_YML = GRAFANA / "provisioning" / "dashboards" / "dashboards.yml"

PROMETHEUS_DASHBOARDS = ("kubeletapi-node.json", "kubeletapi-pods.json", "kubeletapi-kubelet.json")
INFLUXDB_DASHBOARDS = ("kubeletapi-influxdb.json",)

# Grafana's own annotation source, the one data source reference that is not a provisioned one.
GRAFANA_BUILTIN_DS = {"type": "grafana", "uid": "-- Grafana --"}

# `$name`, `${name}`, `${name:format}`, `[[name]]` (names are word characters).
VARIABLE_RE = re.compile(r"\$\{(?P<braced>\w+)(?::(?P<fmt>[\w-]+))?\}|\[\[(?P<bracket>\w+)\]\]|\$(?P<plain>\w+)")

# How long a Grafana range stands for in a test's instant queries.
INFLUX_BUILTINS = {"timeFilter": "time > now() - 5m", "__interval": "10s"}


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


def load(path: Path | str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    return doc


def datasources() -> list[dict[str, Any]]:
    """The provisioned data sources (datasources.yml)."""
    doc = yaml.safe_load(DATASOURCES_YML.read_text())
    items: list[dict[str, Any]] = doc["datasources"]
    return items


def walk_panels(dashboard: Mapping[str, Any], rows: bool = False) -> Iterator[dict[str, Any]]:
    """Every panel in display order: top-level ones and those kept inside (collapsed) rows.
    Row panels themselves only with `rows`."""
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            if rows:
                yield panel
            yield from panel.get("panels", [])
        else:
            yield panel


@dataclass(frozen=True)
class Target:
    """One query of one panel."""

    dashboard: str  # the dashboard's file name without .json
    panel: dict[str, Any]
    target: dict[str, Any]

    @property
    def ref_id(self) -> str:
        return str(self.target.get("refId", ""))

    @property
    def title(self) -> str:
        return str(self.panel.get("title", ""))

    @property
    def id(self) -> str:
        """`<dashboard>/<panel title>/<refId>`, for test ids and messages."""
        return f"{self.dashboard}/{self.title}/{self.ref_id}"

    @property
    def datasource(self) -> dict[str, Any]:
        """The target's data source reference, else its panel's (what Grafana falls back to)."""
        ds = self.target.get("datasource") or self.panel.get("datasource") or {}
        return dict(ds)

    @property
    def text(self) -> str:
        """The query: `expr` (Prometheus) or `query` (InfluxQL raw query)."""
        if self.datasource.get("type") == "influxdb":
            return str(self.target.get("query", ""))
        return str(self.target.get("expr", ""))


def targets(path: Path | str) -> list[Target]:
    dashboard = load(path)
    name = Path(path).stem
    return [Target(name, panel, target) for panel in walk_panels(dashboard) for target in panel.get("targets", [])]


def template_variables(dashboard: Mapping[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = dashboard.get("templating", {}).get("list", [])
    return items


def variable_query(variable: Mapping[str, Any]) -> str:
    """A query variable's query: a string, or (newer Grafana) an object with a `query` key."""
    query = variable.get("query", "")
    if isinstance(query, Mapping):
        return str(query.get("query", ""))
    return str(query)


def used_variables(text: str) -> set[str]:
    """Names of the variables a query refers to (built-ins included)."""
    return {m["braced"] or m["bracket"] or m["plain"] for m in VARIABLE_RE.finditer(text)}


def fill(text: str, values: Mapping[str, str]) -> str:
    """`text` with every variable replaced by its value; an unknown variable raises KeyError.
    Values go in as given (already formatted, e.g. by `regex_value`)."""

    def replace(match: re.Match[str]) -> str:
        name = match["braced"] or match["bracket"] or match["plain"]
        return values[name]

    return VARIABLE_RE.sub(replace, text)


def regex_value(values: list[str], language: str = "prometheus") -> str:
    """How Grafana writes a multi-value variable into a regex: one value escaped, several as an
    alternation of escaped values. In PromQL the regex sits in a string literal, so the escaping
    backslash is itself escaped (`\\\\.` in the query text); an InfluxQL /regex/ takes one backslash
    and escapes `/` too."""
    prefix = "\\\\" if language == "prometheus" else "\\"
    special = r"[\\^$.|?*+()\[\]{}]" if language == "prometheus" else r"[\\^$.|?*+()\[\]{}/]"
    escaped = [re.sub(special, lambda m: prefix + m.group(0), v) for v in values]
    if len(escaped) == 1:
        return escaped[0]
    return "(" + "|".join(escaped) + ")"


LABEL_VALUES_RE = re.compile(r"^\s*label_values\(\s*(?:(?P<selector>.+?)\s*,\s*)?(?P<label>\w+)\s*\)\s*$", re.S)


def label_values_query(query: str) -> tuple[str | None, str]:
    """(series selector or None, label) of a Prometheus `label_values(...)` variable query."""
    match = LABEL_VALUES_RE.match(query)
    if match is None:
        raise ValueError(f"not a label_values() query: {query!r}")
    return match["selector"], match["label"]


def influx_queries(dashboard_path: Path | str, variables: dict[str, str]) -> list[tuple[str, str]]:
    """(`<panel title>/<refId>`, InfluxQL) of every InfluxDB target of a dashboard, ready to run:
    $timeFilter is `time > now() - 5m`, $__interval 10s, and the dashboard's variables take the
    values given, as they go into the query: e.g. `regex_value(["a", "b"], "influxdb")` for a
    multi-value variable used as /^$pod$/ (`influx_variables` resolves them all that way)."""
    out = []
    for target in targets(dashboard_path):
        if target.datasource.get("type") != "influxdb":
            continue
        out.append((f"{target.title}/{target.ref_id}", fill(target.text, {**INFLUX_BUILTINS, **variables})))
    return out


def influx_variables(dashboard_path: Path | str, show_tag_values: Callable[[str], list[str]]
                     ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Resolve an InfluxDB dashboard's variables (`SHOW TAG VALUES ...` queries) in order, as
    `resolve_variables` does: `show_tag_values(query)` runs a filled variable query and returns
    the tag values. The second result is ready for `influx_queries`."""
    return resolve_variables(load(dashboard_path), show_tag_values, INFLUX_BUILTINS, "influxdb")


def variables_of_type(dashboard: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [v for v in template_variables(dashboard) if v.get("type") == kind]


def resolve_variables(dashboard: Mapping[str, Any], answer: Callable[[str], list[str]],
                      builtins: Mapping[str, str], language: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Resolve a dashboard's query variables in order, as Grafana does on load.

    `answer(query)` returns the options of a variable query (with the earlier variables and
    `builtins` filled). Returns every variable's options and the value each goes into queries
    with: a multi-value or include-all variable stands for all its options (Grafana's "All" with
    no custom all-value: the escaped alternation), a single-value one for its first option. A
    variable without options raises AssertionError.
    """
    options: dict[str, list[str]] = {}
    values: dict[str, str] = dict(builtins)
    for variable in variables_of_type(dashboard, "query"):
        name = variable["name"]
        found = sorted(answer(fill(variable_query(variable), values)))
        assert found, f"variable ${name}: {variable_query(variable)} has no values"
        options[name] = found
        multi = variable.get("multi") or variable.get("includeAll")
        values[name] = regex_value(found, language) if multi else found[0]
    return options, values


def prometheus_variables(dashboard: Mapping[str, Any], label_values: Callable[[str | None, str], list[str]],
                         builtins: Mapping[str, str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """`resolve_variables` for `label_values([selector,] label)` variable queries:
    `label_values(selector, label)` asks Prometheus (its label values API)."""
    return resolve_variables(dashboard, lambda query: label_values(*label_values_query(query)), builtins, "prometheus")
