"""Logs of gone pods are kept for the retention, then removed; live pods' logs never are."""

from __future__ import annotations

from pathlib import Path

from kubeletapi.clock import FakeClock
from kubeletapi.pods.loggc import LogGC


def test_retention(tmp_path: Path) -> None:
    clock = FakeClock()
    live = tmp_path / "default_web-n_uid1"
    gone = tmp_path / "default_old-n_uid2"
    for d in (live, gone):
        (d / "c").mkdir(parents=True)
        (d / "c" / "0.log").write_text("x\n")
    (tmp_path / "stray-file").write_text("not a pod dir")
    gc = LogGC(tmp_path, clock, retention_s=60)
    assert gc.collect({"uid1"}) == []
    clock.advance(59)
    assert gc.collect({"uid1"}) == []
    clock.advance(1)
    assert gc.collect({"uid1"}) == [gone]
    assert live.exists() and not gone.exists() and (tmp_path / "stray-file").exists()


def test_a_pod_that_comes_back_restarts_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    (tmp_path / "default_p-n_u").mkdir()
    gc = LogGC(tmp_path, clock, retention_s=60)
    gc.collect(set())
    clock.advance(50)
    gc.collect({"u"})  # back (re-added manifest with the same content)
    clock.advance(50)
    assert gc.collect(set()) == []
    assert (tmp_path / "default_p-n_u").exists()
