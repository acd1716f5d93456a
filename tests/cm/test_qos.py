"""QoS classes, following ComputePodQOS."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.cm.qos import qos_class

P = pytest.param
BOTH = {"cpu": "500m", "memory": "64Mi"}


def pod(
    *resources: dict[str, Any], init: list[dict[str, Any]] | None = None, pod_level: dict[str, Any] | None = None
) -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)],
        "initContainers": [{"name": f"i{i}", "image": "x", "resources": r} for i, r in enumerate(init or [])],
    }
    if pod_level is not None:
        spec["resources"] = pod_level
    return Pod.model_validate({"spec": spec})


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        P(pod({}), "BestEffort", id="no-resources"),
        P(pod({"limits": {"cpu": "0", "memory": "0"}}), "BestEffort", id="zero-quantities"),
        P(
            pod({"limits": {"ephemeral-storage": "1Gi", "example.com/gpu": "1"}}),
            "BestEffort",
            id="other-resources-ignored",
        ),
        P(pod({"requests": BOTH}), "Burstable", id="requests-only"),
        P(pod({"limits": BOTH}), "Guaranteed", id="limits-only-requests-default-to-limits"),
        P(pod({"limits": BOTH, "requests": BOTH}), "Guaranteed", id="equal"),
        P(pod({"limits": BOTH, "requests": {"cpu": "250m"}}), "Burstable", id="request-below-limit"),
        P(pod({"limits": {"cpu": "1"}}), "Burstable", id="cpu-limit-only"),
        P(pod({"limits": BOTH}, {"limits": BOTH}), "Guaranteed", id="two-guaranteed"),
        P(pod({"limits": BOTH}, {}), "Burstable", id="one-best-effort-container"),
        P(pod({"limits": BOTH}, init=[{"limits": BOTH}]), "Guaranteed", id="init-guaranteed"),
        P(pod({"limits": BOTH}, init=[{"requests": {"cpu": "1"}}]), "Burstable", id="init-burstable"),
        P(
            pod({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}),
            "Guaranteed",
            id="same-value",
        ),
        P(pod({}, pod_level={"limits": BOTH}), "Guaranteed", id="pod-level-guaranteed"),
        P(pod({"limits": BOTH}, pod_level={"requests": {"cpu": "1"}}), "Burstable", id="pod-level-decides"),
    ],
)
def test_qos_class(subject: Pod, expected: str) -> None:
    assert qos_class(subject) == expected
