"""The published API against the served one: runs tests/e2e/test_published_api.py (schemathesis over
openapi/kubeletapi.json and openapi/kubeletapi-readonly.json against a live agent, as root) and
writes its figures to bench/results.md ("Reliability (issue 13): published API").

    python bench/api_bench.py
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from results_md import update_section

ROOT = Path(__file__).resolve().parents[1]
SECTION = "Reliability (issue 13): published API"
TEST = "tests/e2e/test_published_api.py"
COMMAND = f"pytest {TEST} -s -p no:cacheprovider"

# Before: schemathesis's CLI (same version, seed and examples per operation) over the document of
# 8d61738 against an agent of that commit; then what was found on the way to 0 failures, and each fix.
BEFORE = (
    "Before (8d61738: one document, applied to both ports; `st run openapi/kubeletapi.json --checks all "
    "--max-examples 60 --seed 13`, token on the secure port): secure port 26 unique failures in 821 cases over 29 "
    "operations (Allow header mismatch 7, schema-valid request rejected 8, undocumented Content-Type 4, undocumented "
    "status code 3, wrong response to an undeclared method 4); read-only port 55 unique failures in 145 cases (the "
    "debugging operations it does not serve: 404/405 undocumented, undeclared methods answered, rejected requests)."
)
FOUND = [
    ("`Allow: GET` on a 405 from /stats/summary, /exec, /attach, /portForward, which serve POST too "
     "(allow_header_conformance)",
     "server: the 405's Allow lists every method some route serves at the path (server/routing.py "
     "allowed_methods; test_405_allow_lists_every_method_of_the_path; 8 failures here without it)"),
    ("/healthz answered PUT, POST, DELETE ... with 200, undocumented (unsupported_method); TRACE got 405 with an "
     "Allow that lied",
     "server: /healthz (and the disabled paths) also answer TRACE, as Go's handler answers any method; "
     "document: every method /healthz serves is an operation"),
    ("/metrics* served `text/plain; version=0.0.4`, documented application/json (content_type_conformance)",
     "document: the Prometheus media type, gzip's Content-Encoding and Vary, Accept-Encoding"),
    ("404 of /containerLogs and /run, 400/422 of /containerLogs, 400/404/500 of /exec ... undocumented "
     "(status_code_conformance)",
     "document: every status each route answers, with its body's media type and an example"),
    ("/exec and /attach without input/output/error rejected with 400 while the document allowed it "
     "(positive_data_acceptance)",
     "document: the stream options as one required form-exploded object whose schema says 'at least one "
     "stream' (tty drops stderr); PodLogOptions likewise 'at most one of sinceSeconds and sinceTime'"),
    ("FastAPI's 422 HTTPValidationError (never sent); no query parameters; no security schemes",
     "document: removed; every query parameter with the kubelet's decoding; bearer token and mutual TLS on the "
     "secure port, none on the read-only one"),
    ("500 `Upgrade request required` from /exec, /attach, /portForward to a plain request, 500 from /run for a "
     "failing command (not_a_server_error)",
     "kept: the kubelet's answers by design, documented; the test accepts 500 on those four paths only"),
]


def main() -> None:
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", TEST, "-s", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    out = run.stdout
    rows = [line for line in out.splitlines() if re.match(r"^(secure|readonly) ", line)]
    summary = next(line for line in out.splitlines() if line.startswith("schemathesis "))
    result = next(line for line in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed)", line))
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    table = ["| listener | operation | cases | statuses |", "|---|---|---:|---|"]
    for line in rows:
        listener, rest = line.split(" ", 1)
        label, cases, statuses = re.match(r"^\s*(.+?)\s+(\d+)\s+(\{.*\})$", rest).groups()  # type: ignore[union-attr]
        table.append(f"| {listener} | `{label}` | {cases} | {statuses} |")
    section = (
        f"## {SECTION}, {dt.date.today()}\n\n"
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, load average {load} at the end "
        f"(shared). `{COMMAND}` (as root: the agent runs two pods) reproduces it; `python bench/api_bench.py` "
        f"writes this section. Every check of schemathesis, examples + coverage + fuzzing phases, seed 13, 60 fuzzed "
        f"cases per operation (the same cases on every run); ignored_auth's probes without and with a wrong token "
        f"come on top.\n\n"
        f"Result: {summary}; pytest: {result.strip()} (wall {wall:.0f} s, agent start "
        f"and pods included).\n\n" + "\n".join(table) + "\n\n" + BEFORE + "\n\nFound and fixed on the way:\n\n"
        "| finding (schemathesis check) | fix |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in FOUND)
    )
    update_section(SECTION, section)
    print(section)
    sys.exit(run.returncode)


if __name__ == "__main__":
    main()
