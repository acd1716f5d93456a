"""/configz, the kubelet's and kubeletapi's: every key path of kubeletconfig and the JSON type of
its value; the values too where both nodes use the default (not a key the oracle's kubelet
configuration or kubeletapi's test flags set: ports, paths, the cgroup root, the runtime endpoint,
the kubelet's eviction and image GC thresholds, ...)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Comparer, type_name
from tests.oracle.pair import Pair

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]

# Set on kubeletapi's side by the test agent's flags (tests/helpers.agent_args) or the kubelet's
# command line (--v): values that differ on purpose.
SET_BY_FLAGS = frozenset({"staticPodPath", "podLogsDir", "cgroupRoot", "containerRuntimeEndpoint", "port",
                          "readOnlyPort", "healthzPort", "tlsCertFile", "tlsPrivateKeyFile",
                          "authentication.x509.clientCAFile", "logging.verbosity"})


# Maps the oracle's kubelet configuration sets whole: their keys are that configuration's.
MAPS_SET_ON_PURPOSE = ("evictionHard",)


def paths(doc: Any, prefix: str = "") -> set[str]:
    """Every key path of a nested object (a map's own keys included)."""
    out: set[str] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            path = f"{prefix}.{key}" if prefix else key
            out |= {path} | paths(value, path)
    return out


def set_on_purpose(pair: Pair) -> frozenset[str]:
    config = {k: v for k, v in pair.real.config().items() if k not in ("apiVersion", "kind")}
    return SET_BY_FLAGS | paths(config)


def test_configz(pair: Pair, findings: Findings) -> None:
    real, ours = pair.kubelet.json("/configz"), pair.ours.json("/configz")
    purposeful = set_on_purpose(pair)

    def normalise(path: str, value: Any) -> Any:
        """A value set on purpose on either side is compared by type only; so is a whole map set on
        purpose (its keys are the configuration's, e.g. evictionHard's signals)."""
        key = path.removeprefix("kubeletconfig.")
        if any(key == p or key.startswith(p + ".") for p in purposeful) and not isinstance(value, (dict, list)):
            return f"<{type_name(value)}>"
        return value

    diffs = Comparer("/configz", {}, normalise=normalise).compare(real, ours)
    kept = [d for d in diffs if not (d.kind in ("missing", "extra")
                                     and any(d.path.startswith(f"kubeletconfig.{m}.") for m in MAPS_SET_ON_PURPOSE))]
    assert findings.check(kept, "/configz") == []
