"""Node readers: exact values from fixture trees (tests/testdata/node), then live checks here.

Fixture trees: `full` (2 sockets x 2 cores x 2 threads, default route on eth1, no eth0), `eth0`
(eth0 present, default route on eth1), `sparse` (arm64-like: topology only in sysfs, no
MemAvailable, os-release and machine-id only at their fallback paths) and `proctree` (one container
tree under pid 100, an unrelated pid 200, a vanished pid and a torn stat).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from kubeletapi.errors import InvalidInput, NotFound, Unavailable
from kubeletapi.stats.fs import Mount, MountTable, device_for, parse_mountinfo
from kubeletapi.stats.machine import cpu_frequency_khz
from kubeletapi.stats.netdev import CADVISOR_IGNORED_PREFIXES
from kubeletapi.stats.node import (
    CpuUsage,
    InterfaceStats,
    LoadAvg,
    MachineInfo,
    ProcessTable,
    ProcessTreeStats,
    Rlimit,
    cpu_usage,
    default_interface,
    fs_stats,
    load_average,
    machine_info,
    node_memory,
    process_tree_stats,
    read_interfaces,
    rlimit,
    summary_interface,
)

DATA = Path(__file__).parent.parent / "testdata" / "node"
FULL, ETH0, SPARSE, PROCTREE = DATA / "full", DATA / "eth0", DATA / "sparse", DATA / "proctree"
KiB = 1024
SEC = 1_000_000_000


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# --- machine info ---------------------------------------------------------------------------


def test_machine_info_full() -> None:
    assert machine_info(FULL / "proc", FULL / "sys", FULL / "etc") == MachineInfo(
        num_cores=8,
        num_physical_cores=4,  # cAdvisor's cpuinfo path would say 2: it counts distinct "core id" lines
        num_sockets=2,
        cpu_frequency_khz=3_700_000,  # cpuinfo_max_freq wins over "cpu MHz: 2100.000"
        memory_capacity=16_303_580 * KiB,
        swap_capacity=2_097_148 * KiB,
        machine_id="5f1c9d2e8b7a4e6f9c3d2b1a0e9f8d7c",
        system_uuid="4c4c4544-0042-3510-8052-b4c04f4e3332",
        boot_id="0b2c1e8a-5d1f-4c57-9a43-7e5a3f1d2c4b",
        boot_time=1_700_000_000,
        kernel_version="6.1.0-18-amd64",
        os_version="Debian GNU/Linux 12 (bookworm)",
    )


def test_machine_info_sparse_uses_sysfs_and_fallback_files() -> None:
    info = machine_info(SPARSE / "proc", SPARSE / "sys", SPARSE / "etc")
    assert (info.num_cores, info.num_physical_cores, info.num_sockets) == (4, 4, 1)
    assert info.cpu_frequency_khz == 0  # no cpufreq, no "cpu MHz" (cAdvisor: 0 on arm64)
    assert info.machine_id == "a1b2c3d4e5f60718293a4b5c6d7e8f90"  # /var/lib/dbus/machine-id
    assert info.os_version == "Linux"  # /usr/lib/os-release without PRETTY_NAME
    assert (info.system_uuid, info.boot_id, info.kernel_version, info.boot_time) == ("", "", "", None)


def test_machine_info_missing_optional_files(tmp_path: Path) -> None:
    root = write_tree(tmp_path, {"proc/meminfo": "MemTotal: 2048 kB\n"})
    info = machine_info(root / "proc", root / "sys", root / "etc")
    assert info == MachineInfo(0, 0, 0, 0, 2 * 1024 * KiB, 0, "", "", "", None, "", "")


def test_machine_info_needs_meminfo(tmp_path: Path) -> None:
    with pytest.raises(Unavailable):
        machine_info(tmp_path / "proc", tmp_path / "sys", tmp_path / "etc")


@pytest.mark.parametrize(
    ("cpuinfo", "max_freq", "khz"),
    [
        pytest.param(b"cpu MHz\t\t: 2599.998\n", None, 2_599_998, id="x86-cpu-mhz"),
        pytest.param(b"clock\t\t: 3425.000000MHz\n", None, 3_425_000, id="power-clock"),
        pytest.param(b"cpu MHz\t\t: 2599\n", None, 0, id="integer-mhz-does-not-match-like-cadvisor"),
        pytest.param(b"cpu MHz\t\t: 2599.998\n", "2800000\n", 2_800_000, id="sysfs-max-freq-first"),
        pytest.param(b"BogoMIPS\t: 108.00\n", None, 0, id="none"),
    ],
)
def test_cpu_frequency(tmp_path: Path, cpuinfo: bytes, max_freq: str | None, khz: int) -> None:
    if max_freq is not None:
        write_tree(tmp_path, {"devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq": max_freq})
    assert cpu_frequency_khz(cpuinfo, tmp_path) == khz


# --- memory, cpu, load, rlimit ----------------------------------------------------------------


def test_node_memory_full() -> None:
    mem = node_memory(FULL / "proc")
    assert (mem.total, mem.free, mem.available) == (16_303_580 * KiB, 9_876_544 * KiB, 13_245_000 * KiB)
    assert (mem.buffers, mem.cached, mem.swap_cached) == (204_800 * KiB, 3_145_728 * KiB, 1024 * KiB)
    assert mem.anon == 1_500_000 * KiB
    assert (mem.active_file, mem.inactive_file) == (2_000_000 * KiB, 1_300_000 * KiB)
    assert mem.usage == (1_500_000 + 204_800 + 3_145_728 + 1024) * KiB
    assert mem.working_set == (4_851_552 - 1_300_000) * KiB
    assert (mem.swap_total, mem.swap_free, mem.swap_used) == (2_097_148 * KiB, 2_000_000 * KiB, 97_148 * KiB)


def test_node_memory_without_memavailable() -> None:
    mem = node_memory(SPARSE / "proc")
    assert mem.available is None
    assert mem.working_set == (700_000 + 10_000 + 500_000 - 200_000) * KiB


@pytest.mark.parametrize(
    ("meminfo", "working_set"),
    [
        pytest.param("Inactive(file): 999999 kB\n", 0, id="floored-at-zero"),
        pytest.param("Inactive(file): 0 kB\n", 400 * KiB, id="no-inactive-file"),
    ],
)
def test_working_set_bounds(tmp_path: Path, meminfo: str, working_set: int) -> None:
    base = "MemTotal: 1000 kB\nMemFree: 1 kB\nBuffers: 100 kB\nCached: 100 kB\nSwapCached: 0 kB\n"
    base += "AnonPages: 200 kB\nActive(file): 0 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n"
    root = write_tree(tmp_path, {"meminfo": base + meminfo})
    assert node_memory(root).working_set == working_set


def test_node_memory_errors(tmp_path: Path) -> None:
    with pytest.raises(Unavailable):
        node_memory(tmp_path)
    write_tree(tmp_path, {"meminfo": "MemTotal: 1000 kB\nMemFree: 1 kB\n"})
    with pytest.raises(InvalidInput, match="AnonPages"):
        node_memory(tmp_path)


def test_cpu_usage_full() -> None:
    user, system, steal = (123_456 + 789) * SEC // 100, (45_678 + 0 + 2_345) * SEC // 100, 67 * SEC // 100
    assert cpu_usage(FULL / "proc", clk_tck=100) == CpuUsage(
        usage_ns=user + system + steal,
        user_ns=user,
        system_ns=system,
        steal_ns=steal,
        idle_ns=9_876_543 * SEC // 100,
        iowait_ns=1_234 * SEC // 100,
    )


@pytest.mark.parametrize(
    ("stat", "usage_ns"),
    [
        pytest.param("cpu  10 0 5 100 0\n", 15 * SEC // 100, id="old-kernel-five-columns"),
        pytest.param("cpu  10 2 5 100 1 1 1 3 4 0\n", (10 + 2 + 5 + 1 + 1 + 3) * SEC // 100, id="guest-not-added"),
    ],
)
def test_cpu_usage_columns(tmp_path: Path, stat: str, usage_ns: int) -> None:
    assert cpu_usage(write_tree(tmp_path, {"stat": stat}), clk_tck=100).usage_ns == usage_ns


def test_cpu_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(Unavailable):
        cpu_usage(tmp_path)
    with pytest.raises(InvalidInput):
        cpu_usage(write_tree(tmp_path, {"stat": "intr 1 2 3\n"}))


def test_load_average() -> None:
    assert load_average(FULL / "proc") == LoadAvg(0.52, 0.58, 0.59, 3, 1342)


PID_MAX, THREADS_MAX = "sys/kernel/pid_max", "sys/kernel/threads-max"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({}, Rlimit(None, None), id="nothing-readable"),
        pytest.param({PID_MAX: "32768\n"}, Rlimit(32768, None), id="pid-max-only"),
        pytest.param({PID_MAX: "32768\n", THREADS_MAX: "192730\n"}, Rlimit(32768, None), id="pid-max-lower"),
        pytest.param({THREADS_MAX: "127532\n", "loadavg": "0 0 0 1/87 9\n"}, Rlimit(127532, 87), id="threads-max-only"),
        pytest.param({PID_MAX: "x\n", "loadavg": "0 0 0 garbage 9\n"}, Rlimit(None, None), id="unparsable"),
    ],
)
def test_rlimit_table(tmp_path: Path, files: dict[str, str], expected: Rlimit) -> None:
    assert rlimit(write_tree(tmp_path, files)) == expected


def test_rlimit_full() -> None:
    # min(pid_max 4194304, threads-max 127532); curproc = tasks after the slash of /proc/loadavg
    assert rlimit(FULL / "proc") == Rlimit(maxpid=127_532, curproc=1342)


# --- network ------------------------------------------------------------------------------------


def test_read_interfaces_full_skips_cadvisor_ignored_prefixes() -> None:
    assert read_interfaces(FULL / "proc") == [
        InterfaceStats("eth1", 987_654_321, 654_321, 1, 2, 123_456_789, 234_567, 3, 4),
        InterfaceStats("cni0", 55_555, 555, 5, 6, 66_666, 666, 7, 8),
        InterfaceStats("eth2", 1000, 10, 0, 0, 2000, 20, 0, 0),
    ]


def test_read_interfaces_other_netns_and_prefixes(tmp_path: Path) -> None:
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "net").symlink_to(FULL / "proc" / "net")
    names = [i.name for i in read_interfaces(tmp_path, pid=4242, ignored_prefixes=("lo",))]
    assert names == ["eth1", "veth1a2b3c4", "docker0", "nerdctl0", "cni0", "eth2"]


def test_read_interfaces_errors(tmp_path: Path) -> None:
    with pytest.raises(Unavailable):
        read_interfaces(tmp_path)
    write_tree(tmp_path, {"net/dev": "h1\nh2\n  eth0: 1 2 3\n"})
    with pytest.raises(InvalidInput, match="malformed"):
        read_interfaces(tmp_path)


@pytest.mark.parametrize(
    ("root", "route_default", "flattened"),
    [
        pytest.param(FULL, "eth1", "eth1", id="no-eth0-default-route-eth1"),
        pytest.param(ETH0, "eth1", "eth0", id="eth0-present-wins"),
    ],
)
def test_default_and_summary_interface(root: Path, route_default: str, flattened: str) -> None:
    assert default_interface(root / "proc") == route_default
    names = [i.name for i in read_interfaces(root / "proc")]
    assert summary_interface(names, default_interface(root / "proc")) == flattened


@pytest.mark.parametrize(
    ("names", "route_default", "flattened"),
    [
        pytest.param(["ens5", "cni0"], "eth9", "ens5", id="route-iface-not-listed-first-wins"),
        pytest.param(["cni0", "ens5"], None, "cni0", id="no-default-route"),
        pytest.param([], None, "", id="no-interfaces"),
    ],
)
def test_summary_interface_fallbacks(names: list[str], route_default: str | None, flattened: str) -> None:
    assert summary_interface(names, route_default) == flattened


@pytest.mark.parametrize(
    ("route", "iface"),
    [
        pytest.param("eth0\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", None, id="no-default"),
        pytest.param("eth0\t00000000\t0101A8C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n", None, id="default-not-up"),
        pytest.param("eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t000000FF\t0\t0\t0\n", None, id="mask-not-zero"),
        pytest.param("", None, id="empty-table"),
    ],
)
def test_default_interface_rejects(tmp_path: Path, route: str, iface: str | None) -> None:
    header = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
    root = write_tree(tmp_path, {"net/route": header + route})
    assert default_interface(root) == iface


def test_default_interface_missing_route(tmp_path: Path) -> None:
    assert default_interface(tmp_path) is None


# --- filesystems --------------------------------------------------------------------------------

MOUNTS = parse_mountinfo((FULL / "proc/self/mountinfo").read_bytes())


def test_parse_mountinfo() -> None:
    assert MOUNTS[1] == Mount(254, 0, "/", "ext4", "/dev/vda")
    assert MOUNTS[5] == Mount(8, 33, "/mnt/with space", "ext4", "/dev/sdc1")
    assert len(MOUNTS) == 7


@pytest.mark.parametrize(
    ("major", "minor", "path", "device"),
    [
        pytest.param(254, 0, "/var/lib/kubelet/pods", "/dev/vda", id="bind-mount-of-root-device"),
        pytest.param(8, 17, "/var/lib/containerd/io.containerd.content.v1", "/dev/sdb1", id="imagefs"),
        pytest.param(0, 45, "/var/lib/kubelet/pods/0f1e/volumes/kubernetes.io~empty-dir/cache", "tmpfs", id="tmpfs"),
        pytest.param(0, 52, "/elsewhere", "overlay", id="no-prefix-match-takes-any-mount-of-device"),
        pytest.param(8, 33, "/mnt/with space/a", "/dev/sdc1", id="escaped-mount-point"),
        pytest.param(9, 9, "/x", "", id="unknown-device"),
    ],
)
def test_device_for(major: int, minor: int, path: str, device: str) -> None:
    assert device_for(major, minor, path, MOUNTS) == device


def test_mount_table_rereads_mountinfo_only_for_unknown_devices(tmp_path: Path) -> None:
    mountinfo = tmp_path / "self" / "mountinfo"
    mountinfo.parent.mkdir()
    mountinfo.write_bytes((FULL / "proc/self/mountinfo").read_bytes())
    table = MountTable(tmp_path)
    assert table.device(8, 17, "/var/lib/containerd") == "/dev/sdb1"
    mountinfo.write_text(
        "41 27 8:17 / /var/lib/containerd rw - xfs /dev/sdz9 rw\n50 27 8:49 / /data rw - xfs /dev/sdd1 rw\n"
    )
    assert table.device(8, 17, "/var/lib/containerd") == "/dev/sdb1"  # cached
    assert table.device(8, 49, "/data") == "/dev/sdd1"  # a miss reads the new table


def test_fs_stats_missing_path(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        fs_stats(tmp_path / "nope")


# --- process trees ------------------------------------------------------------------------------

TREE = ProcessTable.read(PROCTREE / "proc", clk_tck=100, page_size=4096)


def ticks_tree(user: int, system: int, rss_pages: int, count: int, threads: int) -> ProcessTreeStats:
    u, s = user * SEC // 100, system * SEC // 100
    return ProcessTreeStats(u + s, u, s, rss_pages * 4096, count, threads)


def test_process_table_skips_vanished_torn_and_non_pids() -> None:
    assert sorted(TREE.entries) == [100, 101, 102, 103, 104, 200]
    assert TREE.entries[104].ppid == 103  # comm "my (odd) proc" parsed after the last ')'
    assert TREE.entries[102].state == "Z"


@pytest.mark.parametrize(
    ("roots", "expected"),
    [
        # 100 + 101 (with 300/200 ticks of reaped children) + zombie 102 + 103 + 104
        pytest.param([100], ticks_tree(10 + 20 + 300 + 1000 + 7, 5 + 10 + 200 + 500 + 3, 5350, 5, 9), id="container"),
        pytest.param([103], ticks_tree(1007, 503, 5050, 2, 6), id="subtree"),
        pytest.param([101, 103], ticks_tree(1327, 713, 5250, 3, 7), id="overlapping-roots-count-once"),
        pytest.param([104, 200], ticks_tree(7 + 99999, 3 + 88888, 50 + 9999, 2, 5), id="two-roots"),
        pytest.param([105], ticks_tree(0, 0, 0, 0, 0), id="vanished-root"),
        pytest.param([], ticks_tree(0, 0, 0, 0, 0), id="no-roots"),
    ],
)
def test_process_tree_stats_table(roots: list[int], expected: ProcessTreeStats) -> None:
    assert TREE.tree_stats(roots) == expected
    assert process_tree_stats(roots, table=TREE) == expected


# --- live checks on this machine ----------------------------------------------------------------


def test_live_machine_info() -> None:
    info = machine_info()
    assert info.num_cores == psutil.cpu_count(logical=True)
    assert info.memory_capacity == psutil.virtual_memory().total
    assert info.boot_time == int(psutil.boot_time())
    assert info.kernel_version == os.uname().release
    assert info.num_sockets >= 1 and info.num_physical_cores >= 1


def test_live_node_memory_agrees_with_psutil() -> None:
    mem, vm = node_memory(), psutil.virtual_memory()
    assert mem.total == vm.total
    assert mem.available is not None
    assert abs(mem.available - vm.available) <= 0.03 * vm.total
    assert 0 < mem.working_set <= mem.total


def test_live_working_set_matches_root_memory_cgroup_v1() -> None:
    root = Path("/sys/fs/cgroup/memory")
    if not (root / "memory.usage_in_bytes").exists():
        pytest.skip("no cgroup v1 root memory cgroup on this machine")
    # Three files read one after another: allow a few tries for memory that moved in between.
    for _ in range(5):
        stat = dict(line.split() for line in (root / "memory.stat").read_text().splitlines())
        usage = int((root / "memory.usage_in_bytes").read_text())
        working_set = usage - int(stat["total_inactive_file"])
        mem = node_memory()
        if abs(mem.usage - usage) <= 0.03 * usage and abs(mem.working_set - working_set) <= 0.05 * working_set:
            break
    assert abs(mem.usage - usage) <= 0.03 * usage
    assert abs(mem.working_set - working_set) <= 0.05 * working_set


def test_live_cpu_usage_agrees_with_psutil() -> None:
    ours, theirs = cpu_usage(), psutil.cpu_times()
    assert abs(ours.user_ns - (theirs.user + theirs.nice) * SEC) <= 2 * SEC
    assert abs(ours.system_ns - (theirs.system + theirs.irq + theirs.softirq) * SEC) <= 2 * SEC


def test_live_interfaces_match_psutil() -> None:
    ours = {i.name for i in read_interfaces()}
    theirs = {n for n in psutil.net_io_counters(pernic=True) if not n.lower().startswith(CADVISOR_IGNORED_PREFIXES)}
    assert ours == theirs


def test_live_fs_stats_of_root_agrees_with_disk_usage() -> None:
    ours, theirs = fs_stats("/", mounts=MountTable()), shutil.disk_usage("/")
    assert ours.capacity == theirs.total
    assert abs(ours.used - theirs.used) <= 0.01 * theirs.total
    assert abs(ours.available - theirs.free) <= 0.01 * theirs.total
    assert ours.inodes_used == ours.inodes - ours.inodes_free
    visible_root = [p for p in psutil.disk_partitions(all=True) if p.mountpoint == "/"][-1]  # the top mount
    assert ours.device == visible_root.device


def test_live_rlimit() -> None:
    limits = rlimit()
    assert limits.maxpid is not None and limits.maxpid > 0
    assert limits.curproc is not None and 0 < limits.curproc <= limits.maxpid


def test_live_process_tree_of_a_shell_with_two_sleeping_children() -> None:
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & sleep 300 & wait"])
    children: list[int] = []
    try:
        deadline = time.monotonic() + 10
        while len(children) < 2 and time.monotonic() < deadline:
            children = [c.pid for c in psutil.Process(shell.pid).children(recursive=True)]
            time.sleep(0.02)
        stats = process_tree_stats([shell.pid])
        assert (stats.process_count, stats.threads) == (3, 3)
        assert stats.rss > 0
        assert stats.cpu_ns == stats.user_ns + stats.system_ns >= 0
        assert ProcessTable.read().descendants([shell.pid]) == {shell.pid, *children}
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shell.kill()
        shell.wait(timeout=10)


def test_system_uuid_falls_back_as_cadvisor_does(tmp_path: Path) -> None:
    """No DMI (a VM like the CI's): the device tree's system-id (NUL-terminated), else /etc/machine-id."""
    root = write_tree(tmp_path, {"proc/meminfo": "MemTotal: 2048 kB\n", "etc/machine-id": "3d1219c7\n"})
    assert machine_info(root / "proc", root / "sys", root / "etc").system_uuid == "3d1219c7"
    (root / "proc/device-tree").mkdir()
    (root / "proc/device-tree/system-id").write_bytes(b"IBM,0123\x00")
    assert machine_info(root / "proc", root / "sys", root / "etc").system_uuid == "IBM,0123"
