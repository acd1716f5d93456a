"""The eviction flags: the kubelet's names and map syntax, into evictionHard and friends; a malformed
one exits 1 naming the flag (argparse) or the field and flag (validation, the kubelet's words)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletapi.cli import configuration
from kubeletapi.config import HostFacts, build_config
from kubeletapi.errors import ConfigError
from kubeletapi.eviction.thresholds import DEFAULT_EVICTION_HARD
from kubeletapi.flags import parse

FIELD = "evictionHard (--eviction-hard, given on the command line): "


def wire(*args: str) -> dict[str, object]:
    _, flags = parse(list(args))
    return build_config(None, None, flags, has_kubeconfig=False, has_rbac_file=False).to_wire()


def test_flags_set_the_maps() -> None:
    got = wire("--eviction-hard", "memory.available<1Gi,nodefs.available<20%",
               "--eviction-soft", "memory.available<2Gi", "--eviction-soft-grace-period", "memory.available=1m30s",
               "--eviction-minimum-reclaim", "memory.available=0.5Gi", "--eviction-max-pod-grace-period", "30",
               "--eviction-pressure-transition-period", "30s")
    assert got["evictionHard"] == {"memory.available": "1Gi", "nodefs.available": "20%"}  # replaces the defaults
    assert got["evictionSoft"] == {"memory.available": "2Gi"}
    assert got["evictionSoftGracePeriod"] == {"memory.available": "1m30s"}
    assert got["evictionMinimumReclaim"] == {"memory.available": "0.5Gi"}
    assert got["evictionMaxPodGracePeriod"] == 30
    assert got["evictionPressureTransitionPeriod"] == "30s"


def test_defaults_and_merge(tmp_path: Path) -> None:
    assert wire()["evictionHard"] == DEFAULT_EVICTION_HARD
    config = tmp_path / "kubelet.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "mergeDefaultEvictionSettings: true\nevictionHard: {memory.available: 1Gi}\n")
    cfg, _ = configuration(["--config", str(config), "--root-dir", str(tmp_path)], HostFacts())
    assert cfg.eviction_hard == {**DEFAULT_EVICTION_HARD, "memory.available": "1Gi"}


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--eviction-hard", "memory.available=1Gi"], "argument --eviction-hard: ", id="hard-needs-<"),
    pytest.param(["--eviction-soft-grace-period", "memory.available<1m"], "argument --eviction-soft-grace-period: ",
                 id="grace-needs-="),
    pytest.param(["--eviction-max-pod-grace-period", "soon"], "argument --eviction-max-pod-grace-period: ",
                 id="max-grace-int"),
])
def test_malformed_flags_exit_1(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(args)
    assert exit_.value.code == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--eviction-hard", "memory.available<lots"], FIELD + "memory.available: "
                 "quantities must match the regular expression", id="quantity"),
    pytest.param(["--eviction-hard", "memory.free<1Gi"],
                 FIELD + "unsupported eviction signal memory.free", id="signal"),
    pytest.param(["--eviction-hard", "nodefs.available<120%"], FIELD + "eviction percentage "
                 "threshold nodefs.available must be <= 100%: 120%", id="percent"),
    pytest.param(["--eviction-soft", "memory.available<1Gi"], "grace period must be specified for the soft eviction "
                 "threshold memory.available", id="soft-without-grace"),
])
def test_malformed_thresholds_name_the_field_and_flag(args: list[str], message: str, tmp_path: Path) -> None:
    """A ConfigError is what cli.main turns into exit 1 with this message."""
    with pytest.raises(ConfigError) as err:
        configuration([*args, "--root-dir", str(tmp_path)], HostFacts())
    assert message in str(err.value)
