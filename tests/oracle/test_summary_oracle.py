"""/stats/summary (and its CPU-and-memory form), the kubelet's and kubeletapi's side by side.

Two comparisons of one answer from each node:
- the document's shape: every key at every level (node, node.systemContainers[name=...],
  pods[podRef.name=...], their containers[name=...], volume[name=...], network interfaces), which
  keys are absent or null (a pod with no running container, a container's rootfs and logs), the JSON
  type of every value, and every string that is not a time or UID (names, namespaces). Numbers
  are measurements: only their presence and type count here;
- the values that must agree within a tolerance, each with its reason (value_checks).

The kubelet's answer is read once it is steady: its CRI stats provider takes a container's figures
from cAdvisor only once cAdvisor has two samples of it (a rate: 10 s housekeeping), and from CRI
alone before (no pageFaults, no process_stats, zero-filled fields), so a pair a few seconds old can
show a young container either way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Comparer, Difference, dig
from tests.oracle.pair import Pair

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]

KEYED = {
    "node.systemContainers[]": "name",
    "node.network.interfaces[]": "name",
    "pods[]": "podRef.name",
    "pods[].containers[]": "name",
    "pods[].volume[]": "name",
    "pods[].network.interfaces[]": "name",
}
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
QUIET = ("sleeper", "scratch", "probed", "limits")  # pods whose container writes nothing to its log
CPU_LIMIT_CORES = 0.2  # the limits pod burns its whole 200m limit


def normalise(path: str, value: Any) -> Any:
    """Measurements, times and UIDs: only that they are there (and their type, which a number keeps)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return 0
    if isinstance(value, str) and (_TIME.match(value) or path.endswith("podRef.uid")):
        return "<normalised>"
    return value


def shape(what: str, real: Any, ours: Any) -> list[Difference]:
    return Comparer(what, KEYED, values=True, normalise=normalise).compare(real, ours)


def pod(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next((p for p in doc.get("pods") or [] if p["podRef"]["name"] == f"{name}-testnode"), {})


def container(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(iter(pod(doc, name).get("containers") or []), {})


Check = tuple[str, Callable[[dict[str, Any]], Any], Callable[[Any, Any], bool], str]


def _in_container(pod_name: str, dotted: str) -> Callable[[dict[str, Any]], Any]:
    return lambda d: dig(container(d, pod_name), dotted)


def _total(a: str, b: str) -> Callable[[dict[str, Any]], Any]:
    return lambda d: (dig(d, a) or 0) + (dig(d, b) or 0) if dig(d, a) is not None else None


def _within(factor: float) -> Callable[[Any, Any], bool]:
    return lambda r, o: r is not None and o is not None and max(r, o) <= factor * max(min(r, o), 1)


def _equal(r: Any, o: Any) -> bool:
    return r is not None and r == o


def _near_limit(r: Any, o: Any) -> bool:
    return all(v is not None and abs(v / 1e9 - CPU_LIMIT_CORES) <= 0.2 * CPU_LIMIT_CORES for v in (r, o))


VALUE_CHECKS: list[Check] = [
    # One machine: both read the same MemTotal (the node's limit behind availableBytes), the same
    # filesystem (both roots, both containerd states under the same /tmp), the same pid_max, SwapTotal.
    ("node.memory capacity", _total("node.memory.availableBytes", "node.memory.workingSetBytes"), _equal,
     "availableBytes + workingSetBytes: the machine's memory on both"),
    ("node.fs.capacityBytes", lambda d: dig(d, "node.fs.capacityBytes"), _equal, "one filesystem"),
    ("node.fs.inodes", lambda d: dig(d, "node.fs.inodes"), _equal, "one filesystem"),
    ("node.runtime.imageFs.capacityBytes", lambda d: dig(d, "node.runtime.imageFs.capacityBytes"), _equal,
     "both containerd states on one filesystem"),
    ("node.rlimit.maxpid", lambda d: dig(d, "node.rlimit.maxpid"), _equal, "one kernel"),
    ("node.swap capacity", _total("node.swap.swapAvailableBytes", "node.swap.swapUsageBytes"), _equal,
     "available + usage: the machine's swap"),
    # The limits pod: 64Mi is its memory limit (the container cgroup's, behind availableBytes), and
    # it spins on its 200m CPU limit: within 20 % of 0.2 cores, whoever measures.
    ("pods[limits].containers[main].memory limit", lambda d: _total("memory.availableBytes",
     "memory.workingSetBytes")(container(d, "limits")), lambda r, o: r == o == 64 << 20, "its 64Mi limit"),
    ("pods[limits].containers[main].cpu.usageNanoCores", _in_container("limits", "cpu.usageNanoCores"),
     _near_limit, "its 200m limit, burnt"),
    # Same image, same command: the working set of a busybox process is a few hundred KiB on both;
    # what it is charged for shared pages depends on who touched them first, hence a factor, not equality.
    *[(f"pods[{name}].containers[main].memory.workingSetBytes",
       _in_container(name, "memory.workingSetBytes"), _within(3.0), "factor 3")
      for name in (*QUIET, "logger")],
    # The emptyDir holds one small file on both (du of the same tree on the same filesystem).
    ("pods[scratch].volume[data].usedBytes", lambda d: next((v.get("usedBytes") for v in pod(d, "scratch").get(
        "volume") or [] if v.get("name") == "data"), None), _equal, "one file of 6 bytes"),
    # A container that writes nothing has one empty log file: 0 bytes, 1 inode (the kubelet counts
    # the files of the container's log directory, not the directory).
    *[(f"pods[{name}].containers[main].logs.{field}", _in_container(name, f"logs.{field}"), _equal, "an empty log")
      for name in QUIET for field in ("usedBytes", "inodesUsed")],
]


STEADY_TIMEOUT_S = 30.0


def steady(pair: Pair, path: str) -> dict[str, Any]:
    """The kubelet's summary once cAdvisor has figures (pageFaults) for every container it lists."""
    deadline = time.monotonic() + STEADY_TIMEOUT_S
    while True:
        doc: dict[str, Any] = pair.kubelet.json(path)
        containers = [c for p in doc.get("pods") or [] for c in p.get("containers") or []]
        if all("pageFaults" in (c.get("memory") or {}) for c in containers) or time.monotonic() > deadline:
            return doc
        time.sleep(1.0)


def value_checks(what: str, real: dict[str, Any], ours: dict[str, Any], checks: list[Check]) -> list[Difference]:
    out = []
    for path, pick, ok, reason in checks:
        a, b = pick(real), pick(ours)
        if not ok(a, b):
            out.append(Difference(what, path, "value", f"{a!r} != {b!r} ({reason})"))
    return out


def test_summary(pair: Pair, findings: Findings) -> None:
    real, ours = steady(pair, "/stats/summary"), pair.ours.json("/stats/summary")
    diffs = shape("/stats/summary", real, ours) + value_checks("/stats/summary", real, ours, VALUE_CHECKS)
    assert findings.check(diffs, "/stats/summary") == []


def test_summary_cpu_and_memory(pair: Pair, findings: Findings) -> None:
    """The form metrics-server <= 0.5 and /metrics/resource read."""
    what = "/stats/summary?only_cpu_and_memory=true"
    real, ours = steady(pair, what), pair.ours.json(what)
    checks = [c for c in VALUE_CHECKS if c[0].startswith(("node.memory", "pods[limits].containers[main].cpu"))]
    diffs = shape(what, real, ours) + value_checks(what, real, ours, checks)
    assert findings.check(diffs, what) == []
