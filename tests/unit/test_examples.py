"""The example manifests `make run` starts are valid pods."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletapi.cm.qos import qos_class
from kubeletapi.pods.manifest import decode_pod

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "manifests").glob("*.yaml"))


def test_the_four_examples_exist() -> None:
    assert [p.stem for p in EXAMPLES] == ["crasher", "limited", "ticker", "web"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_is_a_valid_pod(path: Path) -> None:
    pod = decode_pod(path.read_bytes(), str(path))
    assert all(c.command for c in pod.spec.containers)  # the process runtime needs a command
    if path.stem == "limited":
        assert qos_class(pod) == "Guaranteed"
