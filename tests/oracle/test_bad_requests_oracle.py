"""Bad requests, the same to both nodes (the secure port with the admin certificate unless the case
is about authentication): the status code, the Content-Type and the body must agree. The real
kubelet's answers are the reference (pkg/kubelet/server/server.go and go-restful's)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Difference
from tests.oracle.pair import Pair, Side

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]

LOGS = "/containerLogs/oracle/logger-testnode/main"
SLEEPER = "oracle/sleeper-testnode"


def summary_kind(body: bytes) -> str:
    """Whether a summary is the full one or only CPU and memory (its node has no fs then)."""
    return "full" if "fs" in json.loads(body)["node"] else "cpu-and-memory"


def top_keys(body: bytes) -> str:
    return ",".join(sorted(json.loads(body)))


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    method: str = "GET"
    cert: bool = True
    body: Callable[[bytes], str] | None = None  # what of a 200 body is compared; None: all of it
    media_type_only: bool = False  # the Content-Type's parameters are another check's (metrics)


CASES = [
    Case("logs-unknown-pod", "/containerLogs/oracle/nope/main"),
    Case("logs-unknown-container", f"/containerLogs/{SLEEPER}/nope"),
    Case("logs-no-container-segment", f"/containerLogs/{SLEEPER}"),
    Case("logs-tailLines-negative", f"{LOGS}?tailLines=-1"),
    Case("logs-tailLines-abc", f"{LOGS}?tailLines=abc"),
    Case("logs-limitBytes-0", f"{LOGS}?limitBytes=0"),
    Case("logs-sinceSeconds-abc", f"{LOGS}?sinceSeconds=abc"),
    Case("logs-sinceSeconds-0", f"{LOGS}?sinceSeconds=0"),
    Case("logs-sinceTime-bad", f"{LOGS}?sinceTime=bad"),
    Case("logs-since-both", f"{LOGS}?sinceSeconds=1&sinceTime=2020-01-01T00:00:00Z"),
    Case("logs-chunked-follow-maybe", f"{LOGS}?follow=maybe&limitBytes=5"),
    Case("logs-chunked-timestamps-x-is-on", f"{LOGS}?timestamps=x&limitBytes=2"),
    Case("logs-chunked-previous-yes-is-on", f"{LOGS}?previous=yes"),
    Case("logs-chunked-previous-none", f"/containerLogs/{SLEEPER}/main?previous=true"),
    Case("logs-stream-needs-gate", f"{LOGS}?stream=Stderr"),
    Case("logs-post", LOGS, "POST"),
    Case("exec-unknown-pod", "/exec/oracle/nope/main?command=ls&output=1"),
    Case("exec-unknown-container", f"/exec/{SLEEPER}/nope?command=ls&output=1"),
    Case("exec-no-upgrade", f"/exec/{SLEEPER}/main?command=ls&output=1"),
    Case("exec-no-command", f"/exec/{SLEEPER}/main?output=1"),
    Case("exec-no-streams", f"/exec/{SLEEPER}/main?command=ls"),
    Case("attach-unknown-pod", "/attach/oracle/nope/main?output=1"),
    Case("attach-no-upgrade", f"/attach/{SLEEPER}/main?output=1"),
    Case("portforward-unknown-pod", "/portForward/oracle/nope?port=80"),
    Case("portforward-other-uid", f"/portForward/{SLEEPER}/0123?port=80"),
    Case("portforward-no-upgrade", f"/portForward/{SLEEPER}?port=80"),
    Case("run-unknown-pod", "/run/oracle/nope/main?cmd=ls", "POST"),
    Case("run-unknown-container", f"/run/{SLEEPER}/nope?cmd=ls", "POST"),
    Case("run-no-running-container", "/run/oracle/crasher-testnode/main?cmd=ls", "POST"),
    Case("run-exits-non-zero", f"/run/{SLEEPER}/main?cmd=false", "POST"),
    Case("run-command-not-found", f"/run/{SLEEPER}/main?cmd=nonesuch", "POST"),
    Case("run-other-uid", f"/run/{SLEEPER}/0123/main?cmd=true", "POST"),
    Case("run-get", f"/run/{SLEEPER}/main?cmd=true"),
    Case("pods-post", "/pods", "POST"),
    Case("pods-head", "/pods", "HEAD"),
    Case("pods-slash", "/pods/", body=top_keys),
    Case("runningpods-post", "/runningpods/", "POST"),
    Case("runningpods-no-slash", "/runningpods"),
    Case("summary-delete", "/stats/summary", "DELETE"),
    Case("summary-only-maybe-is-off", "/stats/summary?only_cpu_and_memory=maybe", body=summary_kind),
    Case("stats-unknown", "/stats/nonesuch"),
    Case("stats-no-slash", "/stats"),
    Case("metrics-put", "/metrics", "PUT", body=lambda b: "", media_type_only=True),
    Case("metrics-unknown", "/metrics/nonesuch"),
    Case("unknown-path", "/nonesuch"),
    Case("configz-query", "/configz?x=1", body=top_keys),
    Case("configz-post", "/configz", "POST", body=top_keys),
    Case("pprof-index", "/debug/pprof/"),
    Case("logs-unknown-file", "/logs/nonesuch"),
    Case("logs-no-slash", "/logs?bad"),
    Case("no-cert-pods", "/pods", cert=False),
    Case("no-cert-unknown-path", "/nonesuch", cert=False),
    Case("no-cert-stats-unknown", "/stats/nonesuch", cert=False),
]


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str | None
    location: str | None
    body: str


def ask(side: Side, case: Case) -> Answer:
    with side.client(cert=case.cert) as client:
        response = client.request(case.method, side.url("secure", case.path))
    body = response.content
    text = case.body(body) if case.body is not None and response.status_code == 200 else body.decode(errors="replace")
    content_type = response.headers.get("content-type")
    if case.media_type_only and content_type is not None:
        content_type = content_type.split(";")[0]
    return Answer(response.status_code, content_type, response.headers.get("location"), text)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_request(pair: Pair, findings: Findings, case: Case) -> None:
    real, ours = ask(pair.kubelet, case), ask(pair.ours, case)
    what = f"bad:{case.id}"
    diffs = [Difference(what, field, "value", f"{getattr(real, field)!r} != {getattr(ours, field)!r}")
             for field in ("status", "content_type", "location", "body")
             if getattr(real, field) != getattr(ours, field)]
    assert findings.check(diffs, what) == []


def test_there_are_at_least_twenty_cases() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 20


def test_a_streamed_answer_is_cut() -> None:
    """A case that follows a log sets limitBytes: no case waits on a stream."""
    assert all("follow" not in c.path or "limitBytes" in c.path for c in CASES)
