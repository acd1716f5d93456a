"""cpu.shares and cpu.weight, and the cpu.max text the v2 writer writes."""

from __future__ import annotations

import pytest

from kubeletapi.cgroups import cpu_max_text, cpu_shares_to_weight, cpu_shares_to_weight_runc


@pytest.mark.parametrize(
    ("shares", "linear", "runc"),
    [
        pytest.param(2, 1, 1, id="min"),
        pytest.param(1, 1, 1, id="below-min"),
        pytest.param(1024, 39, 100, id="default-shares"),
        pytest.param(102, 4, 17, id="100m"),
        pytest.param(262143, 9999, 10000, id="just-below-max"),
        pytest.param(262144, 10000, 10000, id="max"),
    ],
)
def test_shares_to_weight(shares: int, linear: int, runc: int) -> None:
    assert cpu_shares_to_weight(shares) == linear
    assert cpu_shares_to_weight_runc(shares) == runc


@pytest.mark.parametrize(
    ("quota", "period", "text"),
    [
        pytest.param(50000, 100000, "50000 100000", id="limited"),
        pytest.param(-1, 100000, "max 100000", id="unlimited"),
        pytest.param(None, 100000, "max 100000", id="quota-unset"),
        pytest.param(0, 100000, "max 100000", id="quota-zero-like-runc"),
        pytest.param(25000, None, "25000", id="period-unset"),
    ],
)
def test_cpu_max_text(quota: int | None, period: int | None, text: str) -> None:
    assert cpu_max_text(quota, period) == text
