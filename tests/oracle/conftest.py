"""One pair of nodes (tests/oracle/pair.py) for every oracle test of the run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cri import containerd
from tests.oracle.allowed import Findings
from tests.oracle.pair import Pair, running_pair


@pytest.fixture(scope="package")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if not containerd.is_root():
        pytest.fail("the oracle runs the real kubelet and two private containerd instances: it needs root")
    with running_pair(tmp_path_factory.mktemp("oracle")) as running:
        yield running


@pytest.fixture(scope="package")
def findings() -> Findings:
    """Every check's differences, for the README list's staleness check at the end."""
    return Findings()
