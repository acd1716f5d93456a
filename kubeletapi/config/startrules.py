"""What the kubelet refuses while starting, after validation: values it parses only then.

cmd/kubelet/app/server.go (kubeReserved, systemReserved, qosReserved, topologyManagerPolicyOptions,
LimitedSwap on cgroup v1), pkg/kubelet/kubelet.go NewMainKubelet (syncFrequency, the eviction
thresholds, the container log manager) and pkg/kubelet/eviction/helpers.go (ParseThresholdConfig).
The kubelet stops at the first of these; here every one is reported, map keys in sorted order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubeletapi.api.quantity import Quantity, QuantityError
from kubeletapi.config.durations import Duration
from kubeletapi.config.featuregates import FeatureGates
from kubeletapi.config.gosyntax import parse_float32, parse_int, to_float32
from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.problems import HostFacts, Problem, problem
from kubeletapi.gofmt import go_quote

SIGNALS = frozenset({
    "memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree",
    "pid.available",
})
RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")


def _signal(name: str, signal: str) -> Problem | None:
    return None if signal in SIGNALS else problem(name, f"unsupported eviction signal {signal}")


def _percentage(text: str) -> float:
    """The eviction manager's parsePercentage: ParseFloat(32) of the number before '%', over 100."""
    return to_float32(parse_float32(text.rstrip("%")) / 100)


def _threshold(name: str, signal: str, value: str) -> Problem | None:
    """parseThresholdStatement: a percentage in [0%, 100%] or a positive quantity."""
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        try:
            percentage = _percentage(value)
        except ValueError as exc:
            return problem(name, f"{signal}: {exc}")
        if percentage < 0:
            return problem(name, f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if percentage > 1:
            return problem(name, f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return None
    try:
        quantity = Quantity.parse(value)
    except QuantityError as exc:
        return problem(name, f"{signal}: {exc}")
    if quantity.sign() <= 0:
        return problem(name, f"eviction threshold {signal} must be positive: {quantity}")
    return None


def _min_reclaim(signal: str, value: str) -> Problem | None:
    name = "evictionMinimumReclaim"
    try:
        if value.endswith("%"):
            if _percentage(value) <= 0:
                return problem(name, f"eviction percentage minimum reclaim {signal} must be positive: {value}")
            return None
        if Quantity.parse(value).sign() < 0:
            return problem(name, f"negative eviction minimum reclaim specified for {signal}")
    except ValueError as exc:
        return problem(name, f"{signal}: {exc}")
    return None


def _grace_period(signal: str, value: str) -> Problem | None:
    name = "evictionSoftGracePeriod"
    try:
        period = Duration.parse(value)
    except ValueError as exc:
        return problem(name, f"{signal}: {exc}")
    if period.ns < 0:
        return problem(name, f"invalid eviction grace period specified: {value}, must be a positive value")
    return None


def eviction(cfg: KubeletConfiguration) -> Iterable[Problem | None]:
    """ParseThresholdConfig over evictionHard, evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim."""
    soft_signals: set[str] = set()
    for name, statements in (("evictionHard", cfg.eviction_hard or {}), ("evictionSoft", cfg.eviction_soft)):
        for signal, value in sorted(statements.items()):
            found = _signal(name, signal) or _threshold(name, signal, value)
            yield found
            if found is None and name == "evictionSoft" and value not in ("0%", "100%"):
                soft_signals.add(signal)
    for signal, value in sorted(cfg.eviction_soft_grace_period.items()):
        yield _signal("evictionSoftGracePeriod", signal) or _grace_period(signal, value)
    for signal, value in sorted(cfg.eviction_minimum_reclaim.items()):
        yield _signal("evictionMinimumReclaim", signal) or _min_reclaim(signal, value)
    for signal in sorted(soft_signals - set(cfg.eviction_soft_grace_period)):
        yield problem(("evictionSoft", "evictionSoftGracePeriod"),
                      f"grace period must be specified for the soft eviction threshold {signal}")


def _resource_list(name: str, flag: str, values: Mapping[str, str]) -> Iterable[Problem]:
    """server.go parseResourceList: cpu, memory, ephemeral-storage and pid, none negative."""
    for resource, value in sorted(values.items()):
        if resource not in RESERVABLE:
            yield problem(name, f"{flag} value failed to parse: cannot reserve {go_quote(resource)} resource")
            continue
        try:
            negative = Quantity.parse(value).sign() < 0
        except QuantityError as exc:
            yield problem(name, f"{flag} value failed to parse: failed to parse quantity {go_quote(value)} for "
                          f"{go_quote(resource)} resource: {exc}")
            continue
        if negative:
            yield problem(name, f"{flag} value failed to parse: resource quantity for {go_quote(resource)} cannot be "
                          f"negative: {value}")


def _qos_percentage(value: str) -> str | None:
    """cm's parsePercentage: an integer percentage between 0 and 100."""
    if not value.endswith("%"):
        return f"percentage expected, got '{value}'"
    try:
        percentage = parse_int(value.rstrip("%"))
    except ValueError:
        return f"invalid number in percentage '{value}'"
    return None if 0 <= percentage <= 100 else "percentage must be between 0 and 100"


def reserved(cfg: KubeletConfiguration) -> Iterable[Problem]:
    yield from _resource_list("kubeReserved", "--kube-reserved", cfg.kube_reserved)
    yield from _resource_list("systemReserved", "--system-reserved", cfg.system_reserved)
    for resource, value in sorted(cfg.qos_reserved.items()):
        flag = "--qos-reserved value failed to parse"
        if resource != "memory":
            yield problem("qosReserved", f"{flag}: cannot reserve {go_quote(resource)} resource")
        elif (error := _qos_percentage(value)) is not None:
            yield problem("qosReserved", f"{flag}: failed to parse percentage {go_quote(value)} for "
                          f"{go_quote(resource)} resource: {error}")


def container_logs(cfg: KubeletConfiguration) -> Iterable[Problem]:
    """NewContainerLogManager: containerLogMaxSize must be an int64 quantity (its containerLogMaxFiles
    check repeats validation's)."""
    text = cfg.container_log_max_size
    prefix = "failed to initialize container log manager: "
    try:
        size = Quantity.parse(text).as_int64()
    except QuantityError as exc:
        yield problem("containerLogMaxSize", f"{prefix}failed to parse container log max size {go_quote(text)}: {exc}")
        return
    if size is None:
        yield problem("containerLogMaxSize", f"{prefix}failed to parse container log max size {go_quote(text)}: "
                      "invalid max log size")


def start_problems(cfg: KubeletConfiguration, gates: FeatureGates, host: HostFacts) -> list[Problem]:
    """Everything the kubelet would refuse between validation and serving."""
    found: list[Problem | None] = list(reserved(cfg))
    options = cfg.topology_manager_policy_options
    if options and not gates.enabled("TopologyManagerPolicyOptions"):
        shown = " ".join(f"{k}:{v}" for k, v in sorted(options.items()))
        found.append(problem(("topologyManagerPolicyOptions", "featureGates"), f"topology manager policy options "
                             f'map[{shown}] require feature gates "TopologyManagerPolicyOptions" enabled'))
    if host.cgroup_v1 and gates.enabled("NodeSwap") and cfg.memory_swap.swap_behavior == "LimitedSwap":
        found.append(problem("memorySwap.swapBehavior", "swap feature is enabled and LimitedSwap but it is only "
                             "supported with cgroupv2"))
    if cfg.sync_frequency.ns <= 0:
        found.append(problem("syncFrequency", f"invalid sync frequency {cfg.sync_frequency.ns}"))
    found.extend(eviction(cfg))
    found.extend(container_logs(cfg))
    return [p for p in found if p is not None]
