"""/healthz and its verbose form, the kubelet's and kubeletapi's, side by side."""

from __future__ import annotations

import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Difference
from tests.oracle.pair import Pair

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]


def checks(text: str) -> dict[str, str]:
    """`[+]name ok` lines by name, any other line under "" (the verdict or a plain body)."""
    out = {}
    for line in text.splitlines():
        if line.startswith(("[+]", "[-]")):
            name, _, state = line[3:].partition(" ")
            out[name] = line[:3] + state
        elif line:
            out[""] = line
    return out


@pytest.mark.parametrize("listener", ["healthz", "secure", "read-only"])
@pytest.mark.parametrize("path", ["/healthz", "/healthz?verbose", "/healthz/ping", "/healthz/log",
                                  "/healthz/syncloop", "/healthz/nonesuch"])
def test_healthz(pair: Pair, findings: Findings, listener: str, path: str) -> None:
    """Every listener: the checks listed, their states, the status code and content type."""
    diffs: list[Difference] = []
    real, ours = pair.kubelet.get(path, listener), pair.ours.get(path, listener)
    path = f"{listener}:{path}"
    if (real.status_code, real.headers.get("content-type")) != (ours.status_code, ours.headers.get("content-type")):
        diffs.append(Difference(path, "status", "value", f"{real.status_code} != {ours.status_code}"))
    real_checks, our_checks = checks(real.text), checks(ours.text)
    for name in sorted(set(real_checks) | set(our_checks)):
        if name not in our_checks:
            diffs.append(Difference(path, f"check {name}", "missing"))
        elif name not in real_checks:
            diffs.append(Difference(path, f"check {name}", "extra"))
        elif real_checks[name] != our_checks[name]:
            diffs.append(Difference(path, f"check {name}", "value", f"{real_checks[name]!r} != {our_checks[name]!r}"))
    assert findings.check(diffs, path) == []
