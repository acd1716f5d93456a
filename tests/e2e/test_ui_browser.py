"""The web UI in a real browser (issue 19): playwright-core drives Debian's Chromium (both installed
by the Makefile: `make deb`, `make ui`) through tests/e2e/ui_browser.mjs, in ONE browser session,
against a running agent with a pod printing a line a second and a crash-looping pod.

Checked: the charts have points and ink on their canvas; the pods table's CPU and memory equal
/stats/summary's and its restarts /pods' in the same housekeeping cycle; the crash-looper shows its
restarts; filtering and sorting (by keyboard) work; the pod page's logs tail, follow (new lines
arrive) and search; the crash-looper's events (BackOff); a container that has not run says "no
samples yet"; the pages work under /api/v1/nodes/<node>/proxy/ui/ (views, logs, links); an unknown
pod is a 404 page; the read-only port shows no logs; accessibility
basics: every input labelled, text contrast >= 4.5:1, Tab reaches the filter and a link opens by
Enter. Screenshots of each page: <pytest's tmp_path>/screenshots/*.png (printed by the test).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Agent
from tests.podtools import container, manifest, running, wait_for, write

pytestmark = [pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[2]
UI = REPO / "ui"
SCRIPT = Path(__file__).with_name("ui_browser.mjs")
CHROMIUM = "/usr/bin/chromium"
TICKS = "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.5; done"
RUNNER = manifest("runner", container("main", ["sh", "-c", TICKS], """
    resources:
      requests: {cpu: 50m, memory: 16Mi}
      limits: {memory: 64Mi}
"""))
CRASHER = manifest("crasher", container("crash", ["sh", "-c", "echo boom; exit 3"]))
WAITER = manifest("waiter", container("main", ["sh", "-c", "sleep 3600"]),
                  init=container("wait", ["sh", "-c", "sleep 3600"]))


def browse(agent: Agent, out: Path) -> dict[str, Any]:
    node = shutil.which("node")
    assert node, "node is not installed: make deb (Debian's nodejs) or a machine with Node.js"
    assert (UI / "node_modules" / "playwright-core").is_dir(), "playwright-core is not installed: make ui"
    assert Path(CHROMIUM).exists(), "Debian's chromium is not installed: make deb (as root)"
    args = {"secure": agent.url().rstrip("/"), "readOnly": agent.url("read-only").rstrip("/"), "token": agent.token(),
            "chromium": CHROMIUM, "out": str(out), "ui": str(UI), "runner": "runner-testnode",
            "crasher": "crasher-testnode", "waiter": "waiter-testnode", "node": "testnode"}
    result = subprocess.run([node, str(SCRIPT), json.dumps(args)], capture_output=True, text=True, timeout=90,
                            check=False)
    assert result.returncode == 0, f"the browser script failed:\n{result.stderr}"
    observed: dict[str, Any] = json.loads(result.stdout)
    return observed


def _by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["podRef"]["name"]: p for p in summary["pods"]}


def test_the_ui_in_a_browser(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent("--housekeeping-interval", "1s", "--file-check-frequency", "1s", manifests=True)
    write(tmp_path / "manifests", "runner.yaml", RUNNER)
    write(tmp_path / "manifests", "crasher.yaml", CRASHER)
    write(tmp_path / "manifests", "waiter.yaml", WAITER)
    wait_for(lambda: running(agent, "runner"), what="runner running")
    out = tmp_path / "screenshots"
    out.mkdir()
    seen = browse(agent, out)
    print(f"screenshots: {out}")
    assert seen["errors"] == []

    # Charts: every chart of both pages has points and drew them.
    for chart, drawn in {**seen["nodeCharts"], **seen["podCharts"]}.items():
        assert drawn["samples"] >= 2 and drawn["points"] >= 1 and drawn["inked"] > 0, (chart, drawn)

    # The table against /stats/summary and /pods of the same cycle.
    same = seen["sameCycle"]
    rows = {r["pod"]: r for r in same["rows"]}
    runner = _by_name(same["summary"])["runner-testnode"]
    row = rows["default/runner-testnode"]
    assert float(row["cpu"]) == runner["cpu"]["usageNanoCores"] / 1e9
    assert int(row["memory"]) == runner["memory"]["workingSetBytes"]
    for pod in same["pods"]["items"]:
        restarts = sum(s["restartCount"] for s in pod["status"].get("containerStatuses", []))
        assert rows[f"default/{pod['metadata']['name']}"]["restarts"] == restarts
    assert rows["default/crasher-testnode"]["restarts"] >= 1
    assert rows["default/crasher-testnode"]["cpu"] == ""  # not in the summary: no running container

    # Filter, sort by keyboard, a link by keyboard.
    assert seen["filtered"] == ["default/crasher-testnode"] and seen["unfiltered"] == 3  # runner, crasher, waiter
    assert seen["sortedByRestartsDesc"][0][0] == "default/crasher-testnode" and seen["sortAttr"] == "descending"
    assert seen["firstTab"] == "Skip to content" and seen["filterReachedByTab"]

    # Logs: tail, follow brings new lines, search marks them.
    assert seen["tailLines"] and all(line.startswith("tick ") for line in seen["tailLines"])
    before, after = seen["followed"]["before"], seen["followed"]["after"]
    assert len(after) > len(before) and after[-1] not in before
    assert seen["search"]["shown"] == [seen["search"]["needle"]] and seen["search"]["marks"] == 1

    # The crash-looper's page, with its container's logs selected; the 404 page; the read-only port.
    assert int(seen["crasher"]["restartsCard"]) >= 1 and seen["crasher"]["selected"] == "crash"
    # Its events: [type, reason, object, message, count, first seen, last seen], the last seen first.
    events = {row[1]: row for row in seen["crasher"]["events"]}
    assert events["BackOff"][:3] == ["Warning", "BackOff", "crash"]
    assert events["BackOff"][3].startswith("Back-off restarting failed container crash in pod crasher-testnode_")
    assert int(events["Started"][4]) >= 2

    # No sample yet: the waiting container's charts say so, and are no charts.
    empty = {key: (text, canvases) for key, text, canvases in seen["waiter"]["empty"]}
    assert empty["container-main-cpu"] == empty["container-main-memory"] == ("no samples yet", 0)
    assert "container-main-cpu" not in seen["waiter"]["charts"]

    # Under the API server's node proxy path: the views refresh, the logs come, links stay below it.
    proxied = seen["proxied"]
    assert proxied["back"].endswith("/api/v1/nodes/testnode/proxy/ui/") and proxied["logs"][:1] == ["boom"]
    assert proxied["events"] >= 2 and proxied["node"]["rows"] == 3
    assert proxied["node"]["url"].endswith("/api/v1/nodes/testnode/proxy/ui/")
    assert seen["notFound"]["status"] == 404
    assert 'pod "nope" in namespace "default" does not exist on this node' in seen["notFound"]["text"]
    assert "secure port only" in seen["readOnly"]["logsText"] and seen["readOnly"]["logInputs"] == 0

    # Accessibility basics on both pages.
    for page in ("a11y", "podA11y"):
        assert seen[page] == {"unlabelled": [], "contrast": []}, page
    assert sorted(Path(p).name for p in seen["screenshots"]) == sorted(
        ["node.png", "node-filtered.png", "pod-runner.png", "pod-crasher.png", "pod-waiter.png", "not-found.png",
         "read-only-pod.png"])
