"""cgroup v1 and v2 CPU units: cpu.shares and cpu.weight, and the conversion between them.

The kubelet's linear KEP-2254 mapping ([2, 262144] shares → [1, 10000] weight) is what it writes
to pod and QoS cgroups; runc >= 1.3 (opencontainers/cgroups) uses a curve for container cgroups.
"""

from __future__ import annotations

import math

MIN_SHARES = 2
MAX_SHARES = 262144
MIN_WEIGHT = 1
MAX_WEIGHT = 10000


def cpu_shares_to_weight(shares: int) -> int:
    """cgroup v2 cpu.weight for cpu.shares, the kubelet's linear KEP-2254 formula ([2, 262144] → [1, 10000])."""
    if shares <= MIN_SHARES:
        return MIN_WEIGHT
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    return 1 + ((shares - 2) * 9999) // 262142


def cpu_shares_to_weight_runc(shares: int) -> int:
    """The formula of runc >= 1.3 / opencontainers/cgroups (1024 shares → weight 100, not 39).

    The kubelet still uses the linear one for pod and QoS cgroups; runtimes built on newer runc use
    this one for container cgroups (kubernetes issue 131216).
    """
    if shares <= MIN_SHARES:
        return MIN_WEIGHT
    if shares >= MAX_SHARES:
        return MAX_WEIGHT
    log = math.log2(shares)
    exponent = (log * log + 125 * log) / 612.0 - 7.0 / 34.0
    return math.ceil(math.pow(10, exponent))
