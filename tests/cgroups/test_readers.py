"""Stat readers on the v1 and v2 fixture trees and cgroups that vanish mid-read (live: test_readers_live).

The fixture trees hold a root, a burstable pod and one of its containers (systemd-driver names, so
the writer tests can keep creating /kubepods from scratch). Their values are chosen so each field
is easy to check: usage = rss + cache + kernel, working set = usage - inactive_file exactly, the
pod's own (non-total) v1 counters are 0 while its totals include the container. The v1 root keeps
the writer fixture's zero usage, which makes it the working-set floor case.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kubeletapi.cgroups import (
    CgroupSample,
    CgroupSpec,
    CpuStats,
    DiskIOStats,
    MemoryStats,
    OsReaderFs,
    V1Reader,
    V2Reader,
    cpu_shares_to_weight,
    cpu_weight_to_shares,
    detect,
    new_reader,
)
from kubeletapi.cgroups.read_v2 import parse_psi
from kubeletapi.cgroups.stats import PSI, PSIData
from kubeletapi.errors import InvalidInput, Unavailable
from tests.cgroups import CGROUP_MOUNTS, TESTDATA, copy_tree

Mi = 1024 * 1024
POD = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b2f4a1e_3c9d_4f7a_9e2b_1a5c8d7e0f31.slice"
CTR = f"{POD}/cri-containerd-4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19.scope"
V1_DIRS = ("cpu,cpuacct", "memory", "pids", "blkio")  # the fixture hierarchies that hold the pod
CTR_IO = (DiskIOStats(8, 0, Mi, 2 * Mi, 64, 128), DiskIOStats(253, 0, 4096, 8192, 1, 2))
POD_IO = (DiskIOStats(8, 0, Mi + 4096, 2 * Mi + 4096, 65, 129), DiskIOStats(253, 0, 4096, 8192, 1, 2))
ROOT_IO = (DiskIOStats(8, 0, 50 * Mi, 100 * Mi, 1000, 2000),)
CTR_CPU = CpuStats(5_000_000_000, 3_000_000_000, 2_000_000_000, 1000, 50, 2_500_000_000)
POD_CPU = CpuStats(5_200_000_000, 3_100_000_000, 2_100_000_000, 1200, 60, 3_000_000_000)
V2_CTR_ONLY: dict[str, int | None] = {
    "events_high": 2, "file_dirty": 4096, "file_writeback": 0, "pgscan": 2048, "pgsteal": 1024,
    "workingset_refault_anon": 3, "workingset_refault_file": 12,
}

EXPECTED = {
    (1, "/"): CgroupSample(
        "/", 0, CpuStats(0, 0, 0, 0, 0, 0),
        MemoryStats(usage=0, working_set=0, max_usage=2048 * Mi, rss=512 * Mi, cache=1024 * Mi, swap=0,
                    mapped_file=200 * Mi, active_file=256 * Mi, inactive_file=768 * Mi, kernel=100 * Mi,
                    pgfault=25_000_000, pgmajfault=4000, failcnt=0, oom_events=0,
                    container_pgfault=6_250_000, container_pgmajfault=1000),
        pids=None, processes=0, io=ROOT_IO, spec=CgroupSpec(1024, None, 100000, None, None, None, None)),
    (1, POD): CgroupSample(
        POD, 0, POD_CPU,
        MemoryStats(usage=105 * Mi, working_set=84 * Mi, max_usage=134 * Mi, rss=60 * Mi, cache=41 * Mi, swap=0,
                    mapped_file=9 * Mi, active_file=20 * Mi, inactive_file=21 * Mi, kernel=4 * Mi,
                    pgfault=95000, pgmajfault=125, failcnt=0, oom_events=1, container_pgfault=0,
                    container_pgmajfault=0),
        pids=4, processes=0, io=POD_IO, spec=CgroupSpec(614, 100000, 100000, 512 * Mi, 128 * Mi, None, 1024)),
    (1, CTR): CgroupSample(
        CTR, 0, CTR_CPU,
        MemoryStats(usage=100 * Mi, working_set=80 * Mi, max_usage=128 * Mi, rss=56 * Mi, cache=40 * Mi, swap=0,
                    mapped_file=8 * Mi, active_file=20 * Mi, inactive_file=20 * Mi, kernel=4 * Mi,
                    pgfault=90000, pgmajfault=120, failcnt=7, oom_events=1, container_pgfault=90000,
                    container_pgmajfault=120),
        pids=3, processes=2, io=CTR_IO, spec=CgroupSpec(512, 50000, 100000, 256 * Mi, None, 256 * Mi, None)),
    # The v2 root has no memory.current/swap.current: usage = anon + file, swap from proc/meminfo.
    (2, "/"): CgroupSample(
        "/", 0, CpuStats(0, 0, 0, None, None, None),
        MemoryStats(usage=1536 * Mi, working_set=768 * Mi, max_usage=None, rss=512 * Mi, cache=1024 * Mi,
                    swap=Mi, mapped_file=200 * Mi, active_file=256 * Mi, inactive_file=768 * Mi,
                    kernel=128 * Mi, pgfault=25_000_000, pgmajfault=4000, failcnt=None, oom_events=None,
                    container_pgfault=25_000_000, container_pgmajfault=4000, events_high=None, file_dirty=Mi,
                    file_writeback=0, pgscan=100000, pgsteal=90000, workingset_refault_anon=0,
                    workingset_refault_file=0),
        pids=None, processes=0, io=ROOT_IO, spec=CgroupSpec()),
    (2, POD): CgroupSample(
        POD, 0, POD_CPU,
        MemoryStats(usage=105 * Mi, working_set=84 * Mi, max_usage=134 * Mi, rss=60 * Mi, cache=41 * Mi,
                    swap=Mi, mapped_file=9 * Mi, active_file=20 * Mi, inactive_file=21 * Mi, kernel=4 * Mi,
                    pgfault=95000, pgmajfault=125, failcnt=7, oom_events=1, container_pgfault=95000,
                    container_pgmajfault=125,
                    **{**V2_CTR_ONLY, "pgscan": 2560, "pgsteal": 1280, "workingset_refault_file": 13}),
        # weight 24 (written for 614 shares) reads back as 604: the linear mapping loses precision.
        pids=4, processes=0, io=POD_IO, spec=CgroupSpec(604, 100000, 100000, 512 * Mi, 128 * Mi, None, 1024)),
    (2, CTR): CgroupSample(
        CTR, 0, CTR_CPU,
        MemoryStats(usage=100 * Mi, working_set=80 * Mi, max_usage=128 * Mi, rss=56 * Mi, cache=40 * Mi,
                    swap=Mi, mapped_file=8 * Mi, active_file=20 * Mi, inactive_file=20 * Mi, kernel=4 * Mi,
                    pgfault=90000, pgmajfault=120, failcnt=7, oom_events=1, container_pgfault=90000,
                    container_pgmajfault=120, **V2_CTR_ONLY),
        pids=3, processes=2, io=CTR_IO, spec=CgroupSpec(500, 50000, 100000, 256 * Mi, 0, 64 * Mi, None)),
}


def cgroup_dirs(root: Path, version: int, path: str) -> list[Path]:
    """The cgroup's directories in a fixture tree (v1: every hierarchy that holds the pod)."""
    base = root / CGROUP_MOUNTS
    rel = path.lstrip("/")
    return [base / h / rel for h in V1_DIRS] if version == 1 else [base / rel]


def find(root: Path, version: int, path: str, name: str) -> Path:
    matches = [d / name for d in cgroup_dirs(root, version, path) if (d / name).exists()]
    assert len(matches) == 1, f"{name} of {path}: {matches}"
    return matches[0]


@pytest.mark.parametrize(("version", "path"), [pytest.param(v, p, id=f"v{v}-{name}")
                                               for v in (1, 2) for name, p in (("root", "/"), ("pod", POD),
                                                                               ("container", CTR))])
def test_fixture_samples_every_field(version: int, path: str) -> None:
    sample = new_reader(detect(TESTDATA / f"v{version}")).sample(path, 1_700_000_000_000_000_000)
    assert sample is not None
    assert dataclasses.replace(sample, timestamp_ns=0, created_ns=0) == EXPECTED[version, path]
    assert sample.timestamp_ns == 1_700_000_000_000_000_000
    # Dated by the cpu directory (v1) or the unified one (v2).
    assert sample.created_ns == os.stat(cgroup_dirs(TESTDATA / f"v{version}", version, path)[0]).st_ctime_ns


@pytest.mark.parametrize(
    ("version", "path", "expected"),
    [
        pytest.param(1, "/", ["/kubepods.slice"], id="v1-root"),
        pytest.param(2, "/", ["/kubepods.slice"], id="v2-root"),
        pytest.param(1, POD, [CTR], id="v1-pod"),
        pytest.param(2, "/kubepods.slice/", ["/kubepods.slice/kubepods-burstable.slice"], id="v2-trailing-slash"),
        pytest.param(2, CTR, [], id="v2-leaf"),
        pytest.param(1, "/kubepods.slice/gone", [], id="v1-missing"),
        pytest.param(2, "/kubepods.slice/gone", [], id="v2-missing"),
    ],
)
def test_children(version: int, path: str, expected: list[str]) -> None:
    assert new_reader(detect(TESTDATA / f"v{version}")).children(path) == expected


def test_walk_reaches_every_fixture_cgroup() -> None:
    reader = new_reader(detect(TESTDATA / "v1"))
    seen, todo = [], ["/"]
    while todo:
        seen.append(todo.pop())
        todo.extend(reader.children(seen[-1]))
    assert seen == ["/", "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice", POD, CTR]


def test_new_reader_picks_the_version_and_checks_paths() -> None:
    v1, v2 = detect(TESTDATA / "v1"), detect(TESTDATA / "v2")
    assert isinstance(new_reader(v1), V1Reader)
    assert isinstance(new_reader(v2), V2Reader)
    with pytest.raises(InvalidInput):
        V1Reader(v2)
    with pytest.raises(InvalidInput):
        V2Reader(v1)
    with pytest.raises(InvalidInput):
        new_reader(v1).sample("/kubepods.slice/../etc", 0)


@pytest.mark.parametrize(
    ("weight", "shares"),
    [
        pytest.param(1, 2, id="min"),
        pytest.param(10000, 262144, id="max"),
        pytest.param(39, 998, id="1024-shares-written"),
        pytest.param(20, 500, id="512-shares-written"),
        pytest.param(100, 2597, id="systemd-default"),
        pytest.param(0, 2, id="below-range-clamped"),
        pytest.param(20000, 262144, id="above-range-clamped"),
    ],
)
def test_cpu_weight_to_shares(weight: int, shares: int) -> None:
    assert cpu_weight_to_shares(weight) == shares


def test_cpu_weight_round_trip_stays_within_one_weight_step() -> None:
    step = 262142 // 9999 + 1  # shares per weight unit, rounded up
    for shares in range(2, 262145, 97):
        assert 0 <= shares - cpu_weight_to_shares(cpu_shares_to_weight(shares)) <= step


Edit = Callable[[Path], None]


def rewrite(version: int, path: str, name: str, text: str) -> Edit:
    def apply(root: Path) -> None:
        find(root, version, path, name).write_text(text)
    return apply


def delete(version: int, path: str, *names: str) -> Edit:
    def apply(root: Path) -> None:
        for name in names:
            find(root, version, path, name).unlink()
    return apply


def drop_lines(version: int, path: str, name: str, keep: Callable[[str], bool]) -> Edit:
    def apply(root: Path) -> None:
        file = find(root, version, path, name)
        file.write_text("".join(line for line in file.read_text().splitlines(True) if keep(line)))
    return apply


def get(dotted: str) -> Callable[[CgroupSample], object]:
    def extract(sample: CgroupSample) -> object:
        value: object = sample
        for part in dotted.split("."):
            value = getattr(value, part)
        return value
    return extract


@pytest.mark.parametrize(
    ("version", "path", "edit", "field", "expected"),
    [
        # Unlimited spellings read as None; 2^62 is the first unlimited value, as in cAdvisor.
        pytest.param(1, CTR, rewrite(1, CTR, "memory.limit_in_bytes", "9223372036854771712\n"),
                     "spec.memory_limit", None, id="v1-limit-page-counter-max"),
        pytest.param(1, CTR, rewrite(1, CTR, "memory.limit_in_bytes", f"{1 << 62}\n"),
                     "spec.memory_limit", None, id="v1-limit-2^62"),
        pytest.param(1, CTR, rewrite(1, CTR, "memory.limit_in_bytes", f"{(1 << 62) - 4096}\n"),
                     "spec.memory_limit", (1 << 62) - 4096, id="v1-limit-just-below-2^62"),
        pytest.param(1, CTR, rewrite(1, CTR, "cpu.cfs_quota_us", "-1\n"), "spec.cpu_quota_us", None,
                     id="v1-quota-minus-one"),
        pytest.param(1, POD, rewrite(1, POD, "pids.max", "max\n"), "spec.pids_limit", None, id="v1-pids-max"),
        pytest.param(2, CTR, rewrite(2, CTR, "memory.max", "max\n"), "spec.memory_limit", None, id="v2-memory-max"),
        pytest.param(2, CTR, rewrite(2, CTR, "memory.swap.max", "max\n"), "spec.swap_limit", None, id="v2-swap-max"),
        pytest.param(2, CTR, rewrite(2, CTR, "cpu.max", "max 100000\n"), "spec.cpu_quota_us", None,
                     id="v2-cpu-max-quota"),
        pytest.param(2, CTR, rewrite(2, CTR, "cpu.max", "max 100000\n"), "spec.cpu_period_us", 100000,
                     id="v2-cpu-max-period"),
        # The working set is floored at 0 when inactive_file exceeds usage, and is usage without it.
        pytest.param(1, CTR, rewrite(1, CTR, "memory.usage_in_bytes", f"{10 * Mi}\n"), "memory.working_set", 0,
                     id="v1-working-set-floor"),
        pytest.param(1, CTR, rewrite(1, CTR, "memory.usage_in_bytes", f"{20 * Mi}\n"), "memory.working_set", 0,
                     id="v1-working-set-equal"),
        pytest.param(2, CTR, rewrite(2, CTR, "memory.current", f"{Mi}\n"), "memory.working_set", 0,
                     id="v2-working-set-floor"),
        pytest.param(2, CTR, drop_lines(2, CTR, "memory.stat", lambda line: not line.startswith("inactive_file")),
                     "memory.working_set", 100 * Mi, id="v2-no-inactive-file"),
        # Fallbacks: older kernels and non-hierarchical v1 memory.stat.
        pytest.param(1, CTR, delete(1, CTR, "cpuacct.usage_user", "cpuacct.usage_sys"), "cpu", CTR_CPU,
                     id="v1-cpuacct-stat-ticks"),
        pytest.param(1, CTR, delete(1, CTR, "blkio.throttle.io_service_bytes_recursive",
                                    "blkio.throttle.io_serviced_recursive"), "io", CTR_IO,
                     id="v1-blkio-non-recursive"),
        pytest.param(1, POD, drop_lines(1, POD, "memory.stat", lambda line: not line.startswith("total_")),
                     "memory.cache", Mi, id="v1-no-total-keys"),
        pytest.param(1, POD, drop_lines(1, POD, "memory.stat", lambda line: not line.startswith("total_")),
                     "memory.working_set", 104 * Mi, id="v1-no-total-keys-working-set"),
        pytest.param(2, CTR, drop_lines(2, CTR, "memory.stat", lambda line: not line.startswith("kernel ")),
                     "memory.kernel", 4 * Mi, id="v2-kernel-from-parts"),
        pytest.param(2, CTR, rewrite(2, CTR, "cpu.stat", "usage_usec 7\nuser_usec 4\nsystem_usec 3\n"), "cpu",
                     CpuStats(7000, 4000, 3000), id="v2-cpu-controller-off"),
        # Missing optional files leave their fields None.
        pytest.param(1, CTR, delete(1, CTR, "memory.kmem.usage_in_bytes"), "memory.kernel", None, id="v1-no-kmem"),
        pytest.param(1, CTR, delete(1, CTR, "memory.memsw.limit_in_bytes"), "spec.swap_limit", None,
                     id="v1-no-swap-accounting"),
        pytest.param(1, CTR, delete(1, CTR, "memory.oom_control"), "memory.oom_events", None, id="v1-no-oom-control"),
        pytest.param(1, CTR, drop_lines(1, CTR, "memory.stat", lambda line: "swap" not in line), "memory.swap", None,
                     id="v1-no-swap-keys"),
        pytest.param(1, CTR, delete(1, CTR, "pids.current"), "pids", None, id="v1-no-pids"),
        pytest.param(1, CTR, delete(1, CTR, "cpuacct.usage"), "cpu", None, id="v1-no-cpuacct"),
        pytest.param(1, CTR, delete(1, CTR, "memory.usage_in_bytes"), "memory", None, id="v1-no-memory"),
        pytest.param(2, CTR, delete(2, CTR, "memory.peak"), "memory.max_usage", None, id="v2-no-peak"),
        pytest.param(2, CTR, delete(2, CTR, "memory.swap.current"), "memory.swap", None, id="v2-no-swap"),
        pytest.param(2, CTR, delete(2, CTR, "memory.events"), "memory.failcnt", None, id="v2-no-events"),
        pytest.param(2, CTR, delete(2, CTR, "io.stat"), "io", (), id="v2-no-io"),
        pytest.param(2, CTR, delete(2, CTR, "cpu.stat"), "cpu", None, id="v2-no-cpu"),
        pytest.param(2, CTR, delete(2, CTR, "memory.current"), "memory", None, id="v2-no-memory"),
        pytest.param(2, CTR, delete(2, CTR, "cpu.weight", "cpu.max"), "spec",
                     CgroupSpec(None, None, None, 256 * Mi, 0, 64 * Mi, None), id="v2-no-cpu-spec"),
        pytest.param(2, "/", delete(2, "/", "memory.stat"), "memory", None, id="v2-root-no-memory-stat"),
        pytest.param(1, CTR, rewrite(1, CTR, "memory.failcnt", "garbage\n"), "memory.failcnt", None,
                     id="v1-unparsable"),
    ],
)
def test_edited_fixture(tmp_path: Path, version: int, path: str, edit: Edit, field: str, expected: object) -> None:
    root = copy_tree(version, tmp_path)
    edit(root)
    sample = new_reader(detect(root)).sample(path, 0)
    assert sample is not None
    assert get(field)(sample) == expected


class VanishingFs(OsReaderFs):
    """Removes the cgroup (in every hierarchy) right after the `after`-th file read."""

    def __init__(self, dirs: list[Path], after: int) -> None:
        self.dirs, self.after, self.reads = dirs, after, 0

    def read(self, file: str) -> bytes:
        if self.reads == self.after:
            for directory in self.dirs:
                shutil.rmtree(directory)
        self.reads += 1
        return super().read(file)


@pytest.mark.parametrize("version", [pytest.param(1, id="v1"), pytest.param(2, id="v2")])
def test_cgroup_removed_at_any_point_of_a_sample_gives_none(tmp_path: Path, version: int) -> None:
    counter = VanishingFs([], after=-1)
    assert new_reader(detect(TESTDATA / f"v{version}"), counter).sample(CTR, 0) is not None
    total = counter.reads
    for after in range(total + 1):
        root = copy_tree(version, tmp_path / str(after))
        fs = VanishingFs(cgroup_dirs(root, version, CTR), after)
        sample = new_reader(detect(root), fs).sample(CTR, 0)
        if after < total:
            assert sample is None, f"removed after {after} of {total} reads"
        else:  # removed once everything was read: the sample is whole
            assert sample is not None
            assert dataclasses.replace(sample, created_ns=0) == EXPECTED[version, CTR]


@pytest.mark.parametrize("version", [pytest.param(1, id="v1"), pytest.param(2, id="v2")])
def test_cgroup_removed_between_listing_and_reading(tmp_path: Path, version: int) -> None:
    root = copy_tree(version, tmp_path)
    reader = new_reader(detect(root))
    [child] = reader.children(POD)
    for directory in cgroup_dirs(root, version, child):
        shutil.rmtree(directory)
    assert reader.sample(child, 0) is None
    assert reader.children(child) == []


class FailingFs:
    """Every operation fails with one errno, like a cgroup whose directory is gone (or unreadable)."""

    def __init__(self, code: int) -> None:
        self.code = code

    def _fail(self, path: str) -> OSError:
        return OSError(self.code, os.strerror(self.code), path)

    def read(self, file: str) -> bytes:
        raise self._fail(file)

    def ctime_ns(self, path: str) -> int:
        raise self._fail(path)

    def subdirs(self, directory: str) -> list[str]:
        raise self._fail(directory)


class RemovedAfterOpenFs(OsReaderFs):
    """Reads fail with ENODEV (the cgroup was removed under an open file); the directory is gone too."""

    def __init__(self) -> None:
        self.dated = False

    def read(self, file: str) -> bytes:
        raise OSError(errno.ENODEV, os.strerror(errno.ENODEV), file)

    def ctime_ns(self, path: str) -> int:
        if self.dated:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        self.dated = True
        return 1


@pytest.mark.parametrize("version", [pytest.param(1, id="v1"), pytest.param(2, id="v2")])
def test_fake_vanished_filesystem(version: int) -> None:
    layout = detect(TESTDATA / f"v{version}")
    assert new_reader(layout, FailingFs(errno.ENOENT)).sample(CTR, 0) is None
    assert new_reader(layout, FailingFs(errno.ENOENT)).children(POD) == []
    assert new_reader(layout, RemovedAfterOpenFs()).sample(CTR, 0) is None
    with pytest.raises(Unavailable, match=r"stat .*Permission denied"):
        new_reader(layout, FailingFs(errno.EACCES)).sample(CTR, 0)


def test_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    class DeniedFs(OsReaderFs):
        def read(self, file: str) -> bytes:
            if file.endswith("/memory.stat"):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), file)
            return super().read(file)

    with pytest.raises(Unavailable, match=r"read .*/memory\.stat: \[Errno 13\]"):
        new_reader(detect(TESTDATA / "v2"), DeniedFs()).sample(CTR, 0)


def test_pressure_files_parse_as_the_kernel_writes_them() -> None:
    text = b"some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=789\n"
    assert parse_psi(text) == PSI(some=PSIData(123456, 1.5, 0.25, 0.0), full=PSIData(789))
    assert parse_psi(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n") == PSI(some=PSIData(5))  # no full line
    assert parse_psi(None) is None
