"""The published API is the served API: schemathesis over both documents against a live agent.

One agent (module scope, in this process, on 127.0.0.1) runs two pods named as the documents'
examples (node `node`): `ticker-node` (container `tick`, running, metadata.uid the documents'
example UID) for /run, /exec, /attach and /portForward, and `crasher-node` (container `crash`,
exiting at once and restarted with back-off) for /containerLogs, so a generated `follow` ends with
the container instead of streaming forever. Schemathesis generates cases from
openapi/kubeletapi.json (secure port, bearer token of the generated tokens.csv) and
openapi/kubeletapi-readonly.json (read-only port): the examples, coverage and fuzzing phases, every
check (not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance, negative_data_rejection,
positive_data_acceptance, missing_required_header, unsupported_method, allow_header_conformance,
ignored_auth ...), seeded.

What schemathesis cannot speak: the WebSocket upgrade of /exec, /attach and /portForward (the
documents describe it, but declare no upgrade headers to generate); their plain answers (400, 404,
the kubelet's 500 `Upgrade request required`) are generated and checked. The kubelet answers 500 by
design there and on /run (a failing command), so not_a_server_error accepts 500 on those paths only.

`pytest tests/e2e/test_published_api.py -s` prints the figures (operations, cases, statuses).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from tests.helpers import Agent, agent_args
from tests.podtools import container, manifest, pods, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OPENAPI = Path(__file__).resolve().parents[2] / "openapi"
SEED = 13
# Fuzzing-phase cases per operation; the examples and coverage phases add theirs (a few to a few
# dozen per operation). With 60: 3,802 cases over 97 operations in about a minute on 2 cores
# (bench/results.md); the environment variable only changes the size of the run.
MAX_EXAMPLES = int(os.environ.get("KUBELETAPI_SCHEMATHESIS_EXAMPLES", "60"))
EXAMPLE_UID = "7e5a0a1c-8d6f-4a52-9c0e-2f1b3d4c5e6f"  # the documents' example pod UID
STREAMING = r"^/(exec|attach|portForward|run)/"

CONFIG = schemathesis.Config.from_dict({
    "seed": SEED,
    "request-timeout": 10,
    "cache": {"enabled": False},
    # The bearer token is sent by the test, never generated (generated tokens would all be 401s).
    "generation": {"max-examples": MAX_EXAMPLES, "database": "none", "with-security-parameters": False},
    "checks": {"enabled": True},
    "operations": [{
        # The kubelet's own 500s: `Upgrade request required` for a plain request, a failing /run.
        "include-path-regex": STREAMING,
        "checks": {"not_a_server_error": {"expected-statuses": ["2xx", "3xx", "4xx", "500"]}},
    }],
})
SECURE = schemathesis.openapi.from_path(OPENAPI / "kubeletapi.json", config=CONFIG)
READ_ONLY = schemathesis.openapi.from_path(OPENAPI / "kubeletapi-readonly.json", config=CONFIG)


@dataclass
class Target:
    agent: Agent
    token: str
    sessions: dict[str, requests.Session]
    tally: Counter[tuple[str, str, int]] = field(default_factory=Counter)  # (listener, operation, status)


def _pods_ready(agent: Agent) -> bool:
    found = pods(agent)
    ticker, crasher = found.get("ticker-node"), found.get("crasher-node")
    if ticker is None or crasher is None:
        return False
    running = any("running" in s["state"] for s in ticker["status"].get("containerStatuses", []))
    crashed = any(s.get("restartCount", 0) or "terminated" in s["state"]
                  for s in crasher["status"].get("containerStatuses", []))
    return running and crashed


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    tmp = tmp_path_factory.mktemp("published")
    manifests = tmp / "manifests"
    write(manifests, "ticker.yaml", manifest(
        "ticker", container("tick", ["sh", "-c", "echo started; exec sleep 3600"])
    ).replace("  name: ticker\n", f"  name: ticker\n  uid: {EXAMPLE_UID}\n"))
    write(manifests, "crasher.yaml", manifest(
        "crasher", container("crash", ["sh", "-c", "echo starting; echo failing >&2; exit 3"])))
    agent = Agent(agent_args(tmp, "--pod-manifest-path", str(manifests), "--hostname-override", "node"))
    sessions = {"secure": requests.Session(), "readonly": requests.Session()}
    try:
        wait_for(lambda: _pods_ready(agent), timeout=60, what="ticker running, crasher exited once")
        found = Target(agent, agent.token(), sessions)
        started = time.monotonic()
        yield found
        _report(found, time.monotonic() - started)
    finally:
        # The clients' pooled connections close first: the agent then stops with none open (a TLS
        # connection left open waits for the peer's close_notify past the listener's shutdown).
        for session in sessions.values():
            session.close()
        agent.close()


def _report(found: Target, elapsed: float) -> None:
    """The figures: per operation, the cases and their statuses; then the totals."""
    per_operation: dict[tuple[str, str], Counter[int]] = {}
    for (listener, label, code), count in found.tally.items():
        per_operation.setdefault((listener, label), Counter())[code] += count
    for (listener, label), codes in sorted(per_operation.items()):
        print(f"{listener:8} {label:58} {sum(codes.values()):5}  {dict(sorted(codes.items()))}")
    statuses = Counter[int]()
    for codes in per_operation.values():
        statuses.update(codes)
    listeners = Counter(listener for listener, _ in per_operation)
    print(f"schemathesis {schemathesis.__version__}: {len(per_operation)} operations ({dict(listeners)}), "
          f"{statuses.total()} cases in {elapsed:.1f} s, statuses {dict(sorted(statuses.items()))}, "
          f"seed {SEED}, max_examples {MAX_EXAMPLES}")


@schemathesis.pytest.parametrize(secure=SECURE, readonly=READ_ONLY)
@settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_published_api(case: schemathesis.Case, target: Target) -> None:
    listener = "secure" if "security" in case.operation.schema.raw_schema else "readonly"
    headers = {"Authorization": f"Bearer {target.token}"} if listener == "secure" else None
    base = target.agent.url("secure" if listener == "secure" else "read-only", "")
    response = case.call_and_validate(base_url=base, session=target.sessions[listener], headers=headers,
                                      verify=str(target.agent.certs / "ca.crt"))
    target.tally[(listener, case.operation.label, response.status_code)] += 1
