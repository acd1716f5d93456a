"""Last in the package (file order): every README entry for what this run compared still shows."""

from __future__ import annotations

import pytest

from tests.oracle.allowed import Findings

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]


def test_every_listed_difference_is_still_seen(findings: Findings) -> None:
    assert findings.scopes, "no oracle check ran before this one"
    assert findings.stale() == []
