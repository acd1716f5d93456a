"""/metrics/cadvisor text from hand-built Snapshots: labels, series, timestamps, values, order."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.cgroups.stats import CgroupSample, CgroupSpec, CpuStats, DiskIOStats, MemoryStats
from kubeletapi.metrics.cadvisor import DEFAULT_SETS, render_cadvisor
from kubeletapi.metrics.cadvisor_specs import CONTAINER_FAMILIES
from kubeletapi.stats.fs import FsStats
from kubeletapi.stats.inventory import ContainerRef, PodRef
from kubeletapi.stats.machine import MachineInfo
from kubeletapi.stats.netdev import InterfaceStats
from kubeletapi.stats.node import NodeMemory, Rlimit
from kubeletapi.stats.snapshot import (
    ContainerSnap,
    DiskIO,
    FsSample,
    NodeSnap,
    Observed,
    PodSnap,
    SampleSource,
    Snapshot,
    SystemContainer,
)

SNAP_NS = 1_700_000_100_987_654_321  # housekeeping time
BASE = {"container", "id", "image", "name", "namespace", "pod"}
UID = "6f1c2b9e-1111-2222-3333-444455556666"
POD_CG = f"/kubepods/burstable/pod{UID}"
CID = "c0ffee" * 10 + "abcd"
CTR_CG = f"{POD_CG}/{CID}"
GiB = 1 << 30

MACHINE = MachineInfo(
    num_cores=4, num_physical_cores=2, num_sockets=1, cpu_frequency_khz=2_500_000, memory_capacity=8 * GiB,
    swap_capacity=GiB, machine_id="m-id", system_uuid="s-uuid", boot_id="b-id", boot_time=1_690_000_000,
    kernel_version="6.1.0-18-amd64", os_version="Debian GNU/Linux 12 (bookworm)",
)

V2_FIELDS = {
    "events_high": 7, "file_dirty": 4096, "file_writeback": 0, "pgscan": 11, "pgsteal": 9,
    "workingset_refault_anon": 1, "workingset_refault_file": 2,
}


def sample(path: str, ts_ns: int, *, v2: bool = True, quota: int | None = None, usage_ns: int = 2_500_000_000,
           io: tuple[DiskIOStats, ...] = (), spec: CgroupSpec | None = None,
           created_ns: int = 1_690_000_123_900_000_000, memory: bool = True) -> CgroupSample:
    mem = MemoryStats(
        usage=300 * (1 << 20), working_set=200 * (1 << 20), max_usage=None, rss=150_000_000, cache=100_000_000,
        swap=None, mapped_file=1234, active_file=5000, inactive_file=100 * (1 << 20), kernel=4096,
        pgfault=1000, pgmajfault=10, failcnt=3, oom_events=1, container_pgfault=900, container_pgmajfault=9,
        **(V2_FIELDS if v2 else {}),
    )
    return CgroupSample(
        path=path, timestamp_ns=ts_ns, created_ns=created_ns,
        cpu=CpuStats(usage_ns=usage_ns, user_ns=1_500_000_000, system_ns=None, periods=40, throttled_periods=4,
                     throttled_ns=250_000_000),
        memory=mem if memory else None, pids=17, processes=5, io=io,
        spec=spec or CgroupSpec(cpu_shares=102, cpu_quota_us=quota, cpu_period_us=100_000, memory_limit=256 << 20,
                                memory_reservation=None, swap_limit=None, pids_limit=None),
    )


def ts_of(n: int) -> int:
    """A distinct sample time per cgroup (ns), so timestamps can be told apart."""
    return 1_700_000_000_000_000_000 + n * 1_000_000_000 + 123_456_789


FS_ROOT = FsStats("/dev/vda1", 253, 1, capacity=100 * GiB, available=50 * GiB, used=45 * GiB, inodes=6_000_000,
                  inodes_free=5_000_000, inodes_used=1_000_000)
FS_IMAGES = FsStats("/dev/vdb", 253, 16, capacity=200 * GiB, available=150 * GiB, used=40 * GiB, inodes=9,
                    inodes_free=8, inodes_used=1)


def node(root: Observed | None = None, **changes: object) -> NodeSnap:
    base = NodeSnap(
        name="node-a", boot_ns=0, machine=MACHINE, root=root,
        meminfo=NodeMemory(0, 0, None, 0, 0, 0, 0, 0, 0, 0, 0), load=None,
        interfaces=(InterfaceStats("eth0", 10, 20, 30, 40, 50, 60, 70, 80),
                    InterfaceStats("ens5", 1, 2, 3, 4, 5, 6, 7, 8)),
        default_interface="eth0", network_ns=SNAP_NS,
        rootfs=FsSample(FS_ROOT, SNAP_NS), imagefs=FsSample(FS_IMAGES, SNAP_NS), imagefs_used=None,
        logsfs=FsSample(FS_ROOT, SNAP_NS),  # same device as rootfs: one series
        disks=(
            DiskIO(253, 0, "vda", 100, 1, 800, 2500, 200, 2, 1600, 3500, 0, 4000, 6000),
            DiskIO(253, 1, "vda1", 90, 1, 700, 2000, 150, 2, 1200, 3000, 1, 3500, 5000),
            DiskIO(253, 16, "vdb", 5, 0, 40, 30, 6, 0, 48, 20, 0, 50, 50),
            DiskIO(7, 0, "loop0", 1, 0, 8, 1, 0, 0, 0, 0, 0, 1, 1),
        ),
        rlimit=Rlimit(None, None), rlimit_ns=SNAP_NS,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def build(*, container_name: str = "app", root_v2: bool = True, extra_pods: tuple[PodSnap, ...] = ()) -> Snapshot:
    root = sample("/", ts_of(0), v2=root_v2, io=(DiskIOStats(253, 0, 4096, 8192, 4, 8),))
    ctr_ref = ContainerRef(name=container_name, id=CID, image="registry.example/app:1.0", created_ns=0,
                           started_ns=0, running=True, cgroup=CTR_CG)
    ctr = ContainerSnap(ctr_ref, Observed(sample(CTR_CG, ts_of(5), quota=50_000, io=(
        DiskIOStats(253, 0, 1000, 2000, 3, 4), DiskIOStats(7, 0, 11, 0, 1, 0), DiskIOStats(7, 1, 22, 0, 2, 0),
    ))), None)
    pod_ref = PodRef(uid=UID, name="web-0", namespace="shop", created_ns=0, cgroup=POD_CG)
    pod = PodSnap(pod_ref, Observed(sample(POD_CG, ts_of(4))), (ctr,), (), 5)
    return Snapshot(
        generation=3, time_ns=SNAP_NS, node=node(root=Observed(root)),
        system=(
            SystemContainer("kubelet", Observed(sample("kubelet", ts_of(6)), source=SampleSource.PROCESS_TREE), 0),
            SystemContainer("runtime", Observed(sample("/system.slice/containerd.service", ts_of(7))), 0),
            SystemContainer("pods", Observed(sample("/kubepods", ts_of(8))), 0),
        ),
        cgroups=(Observed(root), Observed(sample("/kubepods", ts_of(1))),
                 Observed(sample("/kubepods/burstable", ts_of(2))), Observed(sample("/kubepods/besteffort", ts_of(3)))),
        pods=(pod, *extra_pods),
    )


def text(snap: Snapshot | None, sets: frozenset[str] = DEFAULT_SETS) -> str:
    return render_cadvisor(snap, version="kubeletapi-0.1.0", sets=sets).decode()


def parsed(body: str) -> list[tuple[str, dict[str, str], float, float | None]]:
    """(sample name as written, labels, value, timestamp in s) of every sample. prometheus_client's
    parser appends `_total` to counter samples that lack it (container_memory_failcnt): undone."""
    written = {line.split(" ")[2] for line in body.splitlines() if line.startswith("# TYPE ")}
    out = []
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            name = s.name
            if name not in written and name.endswith("_total") and name[: -len("_total")] in written:
                name = name[: -len("_total")]
            out.append((name, s.labels, s.value, None if s.timestamp is None else float(s.timestamp)))
    return out


Series = dict[tuple[str, tuple[tuple[str, str], ...]], tuple[float, float | None]]


def series(body: str) -> Series:
    """(sample name, sorted labels) -> (value, timestamp in s); fails on a duplicate series."""
    out: Series = {}
    for name, labels, value, timestamp in parsed(body):
        key = (name, tuple(sorted(labels.items())))
        assert key not in out, f"duplicate series {key}"
        out[key] = (value, timestamp)
    return out


def by_id(body: str, name: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for sample_name, labels, value, _ in parsed(body):
        if sample_name == name:
            found.setdefault(labels["id"], []).append((labels, value))
    return found


def one(body: str, name: str, cgroup: str, **extra: str) -> float:
    rows = [v for labels, v in by_id(body, name).get(cgroup, []) if all(labels[k] == x for k, x in extra.items())]
    assert len(rows) == 1, (name, cgroup, extra, rows)
    return rows[0]


def sample_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if line and not line.startswith("#")]


# --- which cgroups, and their labels ---------------------------------------------------------------


def test_exported_cgroups_are_the_cgroup_paths_once_each() -> None:
    body = text(build())
    ids = set(by_id(body, "container_memory_usage_bytes"))
    assert ids == {"/", "/kubepods", "/kubepods/burstable", "/kubepods/besteffort", POD_CG, CTR_CG,
                   "/system.slice/containerd.service"}
    assert 'id="kubelet"' not in body  # the process tree of the `kubelet` system container
    # `/kubepods` is both a cgroup and the `pods` system container: one series per family.
    assert len(by_id(body, "container_memory_usage_bytes")["/kubepods"]) == 1


def test_process_tree_pods_are_not_exported() -> None:
    ref = PodRef(uid="u2", name="proc-pod", namespace="default", created_ns=0)
    c_ref = ContainerRef(name="c", id="cid2", image="img", created_ns=0, started_ns=0, running=True, pid=42)
    tree = SampleSource.PROCESS_TREE
    proc_pod = PodSnap(ref, Observed(sample("pod:u2", ts_of(9)), source=tree),
                       (ContainerSnap(c_ref, Observed(sample("cid2", ts_of(10)), source=tree), None),), (), 1)
    body = text(build(extra_pods=(proc_pod,)))
    pods = {labels["pod"] for rows in by_id(body, "container_memory_usage_bytes").values() for labels, _ in rows}
    assert "proc-pod" not in pods
    assert "cid2" not in body


def test_label_set_is_the_same_on_every_container_family() -> None:
    body = text(build())
    extras = {f.name: set(f.extra_labels) for f in CONTAINER_FAMILIES}
    checked = set()
    for name, labels, _, _ in parsed(body):
        if not name.startswith("container_") or name == "container_scrape_error":
            continue
        assert set(labels) == BASE | extras[name], (name, labels)
        checked.add(name)
    assert len(checked) >= 60  # every family of the default sets with data was looked at


@pytest.mark.parametrize(("cgroup", "expected"), [
    ("/", {"container": "", "image": "", "name": "", "namespace": "", "pod": ""}),
    ("/kubepods/burstable", {"container": "", "image": "", "name": "", "namespace": "", "pod": ""}),
    ("/system.slice/containerd.service", {"container": "", "image": "", "name": "", "namespace": "", "pod": ""}),
    (POD_CG, {"container": "", "image": "", "name": "", "namespace": "shop", "pod": "web-0"}),
    (CTR_CG, {"container": "app", "image": "registry.example/app:1.0", "name": CID, "namespace": "shop",
              "pod": "web-0"}),
])
def test_label_semantics(cgroup: str, expected: dict[str, str]) -> None:
    [(labels, _)] = by_id(text(build()), "container_memory_rss")[cgroup]
    assert labels == {"id": cgroup, **expected}


def test_no_duplicate_series_even_with_unnamed_devices() -> None:
    # The container has two loop devices (device="" both) and the root has /dev/vda I/O as well as
    # filesystems: client_golang keeps the first of a repeated series, and so do we.
    body = text(build())
    series(body)  # asserts uniqueness
    reads = by_id(body, "container_fs_reads_total")
    assert sorted(labels["device"] for labels, _ in reads[CTR_CG]) == ["", "/dev/vda"]
    assert one(body, "container_fs_reads_total", CTR_CG, device="") == 1  # the first loop device's
    assert sorted(labels["device"] for labels, _ in reads["/"]) == ["/dev/vda", "/dev/vda1", "/dev/vdb"]


# --- timestamps ------------------------------------------------------------------------------------

UNSTAMPED = {"container_start_time_seconds", "container_spec_cpu_period", "container_spec_cpu_quota",
             "container_spec_cpu_shares", "container_spec_memory_limit_bytes",
             "container_spec_memory_swap_limit_bytes", "container_spec_memory_reservation_limit_bytes",
             "container_scrape_error", "cadvisor_version_info"}


def test_timestamps_per_family() -> None:
    snap = build()
    ts_ms = {"/": ts_of(0) // 10**6, "/kubepods": ts_of(1) // 10**6, "/kubepods/burstable": ts_of(2) // 10**6,
             "/kubepods/besteffort": ts_of(3) // 10**6, POD_CG: ts_of(4) // 10**6, CTR_CG: ts_of(5) // 10**6,
             "/system.slice/containerd.service": ts_of(7) // 10**6}
    seen_stamped = seen_unstamped = 0
    for line in sample_lines(text(snap)):
        name = line.split("{", 1)[0].split(" ", 1)[0]
        fields = line.rsplit("} ", 1)[-1].split(" ") if "{" in line else line.split(" ")[1:]
        if name in UNSTAMPED or name.startswith("machine_"):
            assert len(fields) == 1, line
            seen_unstamped += 1
            continue
        assert len(fields) == 2, line
        cgroup = re.search(r'[{,]id="([^"]*)"', line)
        assert cgroup is not None
        if name == "container_last_seen":
            assert int(fields[1]) == SNAP_NS // 10**6
            assert float(fields[0]) == SNAP_NS // 10**9
        else:
            assert int(fields[1]) == ts_ms[cgroup.group(1)], line
        seen_stamped += 1
    assert seen_stamped > 300
    assert seen_unstamped > 30


# --- metric sets -----------------------------------------------------------------------------------


def families(body: str) -> set[str]:
    return {line.split(" ")[2] for line in body.splitlines() if line.startswith("# TYPE ")}


def test_default_sets_and_gating() -> None:
    full = families(text(build()))
    assert {"container_cpu_load_d_average_10s", "container_tasks_state", "container_oom_events_total",
            "container_blkio_device_usage_total", "container_processes", "container_fs_usage_bytes",
            "container_network_receive_bytes_total", "machine_swap_bytes", "machine_nvm_capacity",
            "cadvisor_version_info", "container_scrape_error", "machine_scrape_error"} <= full
    assert {"container_file_descriptors", "container_sockets", "container_ulimits_soft",
            "container_health_state", "container_cpu_cfs_burst_periods_total"}.isdisjoint(full)

    cpu_only = families(text(build(), sets=frozenset({"cpu"})))
    assert not {f for f in cpu_only if f.startswith(("container_memory_", "container_fs_", "container_network_"))}
    assert {"container_tasks_state", "container_oom_events_total", "container_processes",
            "container_blkio_device_usage_total"}.isdisjoint(cpu_only)
    assert {"container_cpu_usage_seconds_total", "container_cpu_cfs_periods_total",
            # not gated by any set in cAdvisor:
            "container_last_seen", "container_start_time_seconds", "container_spec_memory_limit_bytes",
            "machine_cpu_cores", "cadvisor_version_info"} <= cpu_only


# --- values ----------------------------------------------------------------------------------------


def test_cpu_values() -> None:
    body = text(build())
    assert one(body, "container_cpu_usage_seconds_total", CTR_CG, cpu="total") == 2.5
    assert one(body, "container_cpu_user_seconds_total", CTR_CG) == 1.5
    assert one(body, "container_cpu_system_seconds_total", CTR_CG) == 0  # not read: cAdvisor's zero
    assert one(body, "container_cpu_load_average_10s", CTR_CG) == 0
    assert {labels["state"] for labels, _ in by_id(body, "container_tasks_state")[CTR_CG]} == {
        "sleeping", "running", "stopped", "uninterruptible", "iowaiting"}
    # CFS only where there is a quota (the container has 50ms per 100ms).
    assert one(body, "container_cpu_cfs_periods_total", CTR_CG) == 40
    assert one(body, "container_cpu_cfs_throttled_periods_total", CTR_CG) == 4
    assert one(body, "container_cpu_cfs_throttled_seconds_total", CTR_CG) == 0.25
    assert set(by_id(body, "container_cpu_cfs_periods_total")) == {CTR_CG}
    assert one(body, "container_spec_cpu_quota", CTR_CG) == 50_000
    assert POD_CG not in by_id(body, "container_spec_cpu_quota")
    assert one(body, "container_spec_cpu_period", POD_CG) == 100_000
    assert one(body, "container_spec_cpu_shares", POD_CG) == 102


def test_cpu_usage_series_needs_usage() -> None:
    snap = build()
    idle = replace(snap.cgroups[2], cur=sample("/kubepods/burstable", ts_of(2), usage_ns=0))
    body = text(replace(snap, cgroups=(snap.cgroups[0], snap.cgroups[1], idle, snap.cgroups[3])))
    assert "/kubepods/burstable" not in by_id(body, "container_cpu_usage_seconds_total")
    assert one(body, "container_cpu_user_seconds_total", "/kubepods/burstable") == 1.5


def test_memory_values() -> None:
    body = text(build())
    assert one(body, "container_memory_usage_bytes", CTR_CG) == 300 * (1 << 20)
    assert one(body, "container_memory_working_set_bytes", CTR_CG) == 200 * (1 << 20)
    assert one(body, "container_memory_swap", CTR_CG) == 0
    assert one(body, "container_memory_max_usage_bytes", CTR_CG) == 0
    assert one(body, "container_memory_total_inactive_file_bytes", CTR_CG) == 100 * (1 << 20)
    assert one(body, "container_memory_failcnt", CTR_CG) == 3
    assert one(body, "container_oom_events_total", CTR_CG) == 1
    failures = {(labels["failure_type"], labels["scope"]): v
                for labels, v in by_id(body, "container_memory_failures_total")[CTR_CG]}
    assert failures == {("pgfault", "container"): 900, ("pgmajfault", "container"): 9,
                        ("pgfault", "hierarchy"): 1000, ("pgmajfault", "hierarchy"): 10}
    # cgroup v2-only families: present with the fields, absent without them.
    assert one(body, "container_memory_events_high_total", CTR_CG) == 7
    assert one(body, "container_memory_events_max_total", CTR_CG) == 3
    assert one(body, "container_memory_pgscan_total", CTR_CG) == 11
    v1 = text(build(root_v2=False))
    assert "/" not in by_id(v1, "container_memory_pgscan_total")
    assert "/" not in by_id(v1, "container_memory_events_max_total")


def test_spec_memory_unlimited_and_roots() -> None:
    big = CgroupSpec(memory_limit=(1 << 62) + 4096, swap_limit=1 << 62, memory_reservation=64 << 20)
    snap = build()
    kube = replace(snap.cgroups[1], cur=sample("/kubepods", ts_of(1), spec=big))
    body = text(replace(snap, cgroups=(snap.cgroups[0], kube, *snap.cgroups[2:])))
    assert one(body, "container_spec_memory_limit_bytes", "/kubepods") == 0  # above 2^62: unlimited
    assert one(body, "container_spec_memory_swap_limit_bytes", "/kubepods") == 1 << 62
    assert one(body, "container_spec_memory_reservation_limit_bytes", "/kubepods") == 64 << 20
    assert one(body, "container_spec_memory_limit_bytes", CTR_CG) == 256 << 20
    assert one(body, "container_spec_memory_swap_limit_bytes", CTR_CG) == 0  # None: unlimited
    # The cgroup v2 root has no memory.max: no memory spec series; the v1 root has them (0).
    assert "/" not in by_id(body, "container_spec_memory_limit_bytes")
    assert one(text(build(root_v2=False)), "container_spec_memory_limit_bytes", "/") == 256 << 20
    # No memory stats at all: no memory spec series, memory families read 0.
    no_mem = replace(kube, cur=sample("/kubepods", ts_of(1), memory=False))
    body = text(replace(snap, cgroups=(snap.cgroups[0], no_mem, *snap.cgroups[2:])))
    assert "/kubepods" not in by_id(body, "container_spec_memory_limit_bytes")
    assert one(body, "container_memory_usage_bytes", "/kubepods") == 0


def test_start_time_and_last_seen() -> None:
    body = text(build())
    assert one(body, "container_start_time_seconds", CTR_CG) == 1_690_000_123
    assert one(body, "container_last_seen", CTR_CG) == SNAP_NS // 10**9


def test_process_values() -> None:
    snap = build()
    limited = replace(snap.cgroups[1], cur=sample("/kubepods", ts_of(1), spec=CgroupSpec(pids_limit=4096)))
    body = text(replace(snap, cgroups=(snap.cgroups[0], limited, *snap.cgroups[2:])))
    assert one(body, "container_processes", CTR_CG) == 5
    assert one(body, "container_threads", CTR_CG) == 17
    assert one(body, "container_threads_max", CTR_CG) == 0
    assert one(body, "container_threads_max", "/kubepods") == 4096


def test_filesystems_disks_and_network_on_the_root_only() -> None:
    body = text(build())
    usage = {labels["device"]: v for labels, v in by_id(body, "container_fs_usage_bytes")["/"]}
    assert usage == {"/dev/vda1": 45 * GiB, "/dev/vdb": 40 * GiB}
    assert set(by_id(body, "container_fs_usage_bytes")) == {"/"}
    assert one(body, "container_fs_limit_bytes", "/", device="/dev/vdb") == 200 * GiB
    assert one(body, "container_fs_inodes_free", "/", device="/dev/vda1") == 5_000_000
    assert one(body, "container_fs_inodes_total", "/", device="/dev/vda1") == 6_000_000
    # diskstats of the filesystem's own device (vda1, not the vda disk); ms / 1e9 as cAdvisor does.
    assert one(body, "container_fs_reads_total", "/", device="/dev/vda1") == 90
    assert one(body, "container_fs_sector_writes_total", "/", device="/dev/vda1") == 1200
    assert one(body, "container_fs_read_seconds_total", "/", device="/dev/vda1") == pytest.approx(2000 / 1e9)
    assert one(body, "container_fs_io_time_weighted_seconds_total", "/", device="/dev/vdb") == pytest.approx(50e-9)
    assert one(body, "container_fs_io_current", "/", device="/dev/vda1") == 1
    # The cgroup's own block I/O: bytes and ios per device, named from /proc/diskstats.
    assert one(body, "container_fs_reads_bytes_total", "/", device="/dev/vda") == 4096
    assert one(body, "container_fs_writes_total", CTR_CG, device="/dev/vda") == 4
    blkio = {(labels["device"], labels["major"], labels["minor"], labels["operation"]): v
             for labels, v in by_id(body, "container_blkio_device_usage_total")[CTR_CG]}
    assert blkio == {("/dev/vda", "253", "0", "Read"): 1000, ("/dev/vda", "253", "0", "Write"): 2000,
                     ("", "7", "0", "Read"): 11, ("", "7", "0", "Write"): 0,
                     ("", "7", "1", "Read"): 22, ("", "7", "1", "Write"): 0}
    rx = {labels["interface"]: v for labels, v in by_id(body, "container_network_receive_bytes_total")["/"]}
    assert rx == {"eth0": 10, "ens5": 1}
    assert one(body, "container_network_transmit_packets_dropped_total", "/", interface="eth0") == 80
    assert set(by_id(body, "container_network_receive_bytes_total")) == {"/"}


def test_machine_and_version_families() -> None:
    body = series(text(build()))
    ids = (("boot_id", "b-id"), ("machine_id", "m-id"), ("system_uuid", "s-uuid"))
    assert body[("machine_cpu_cores", ids)][0] == 4
    assert body[("machine_cpu_physical_cores", ids)][0] == 2
    assert body[("machine_memory_bytes", ids)][0] == 8 * GiB
    assert body[("machine_swap_bytes", ids)][0] == GiB
    assert body[("machine_nvm_capacity", (*ids[:2], ("mode", "memory_mode"), ids[2]))][0] == 0
    version = (("cadvisorRevision", ""), ("cadvisorVersion", "kubeletapi-0.1.0"), ("dockerVersion", ""),
               ("kernelVersion", "6.1.0-18-amd64"), ("osVersion", "Debian GNU/Linux 12 (bookworm)"))
    for key, expected in ((("cadvisor_version_info", version), 1), (("container_scrape_error", ()), 0),
                          (("machine_scrape_error", ()), 0)):
        value, timestamp = body[key]
        assert (value, timestamp) == (expected, None), key


def test_text_details() -> None:
    body = text(build())
    assert "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.\n" \
           "# TYPE container_cpu_usage_seconds_total counter\n" in body
    assert "# HELP container_last_seen Last time a container was seen by the exporter\n" in body
    line = next(x for x in body.splitlines() if x.startswith("container_memory_usage_bytes{") and CTR_CG in x)
    assert line == (f'container_memory_usage_bytes{{container="app",id="{CTR_CG}",image="registry.example/app:1.0",'
                    f'name="{CID}",namespace="shop",pod="web-0"}} 3.145728e+08 {ts_of(5) // 10**6}')


# --- order -----------------------------------------------------------------------------------------

LABEL = re.compile(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"')


def test_families_series_and_labels_are_sorted() -> None:
    body = text(build())
    names = [line.split(" ")[2] for line in body.splitlines() if line.startswith("# TYPE ")]
    assert names == sorted(names)
    assert len(names) == len(set(names))
    keys: dict[str, list[tuple[str, ...]]] = {}
    for line in sample_lines(body):
        name, _, rest = line.partition("{")
        if not rest:
            continue
        pairs = LABEL.findall(rest.rsplit("}", 1)[0])
        label_names = [k for k, _ in pairs]
        assert label_names == sorted(label_names), line
        keys.setdefault(name, []).append(tuple(v for _, v in pairs))
    for name, rows in keys.items():
        assert rows == sorted(rows), name
    # The extra label sorts among the base ones: cpu comes between container and id.
    assert any(line.startswith('container_cpu_usage_seconds_total{container="",cpu="total",id="/",')
               for line in body.splitlines())


def test_label_values_are_escaped() -> None:
    tricky = 'we"ird\\name\nx'
    body = text(build(container_name=tricky))
    assert 'container="we\\"ird\\\\name\\nx"' in body
    [(labels, _)] = by_id(body, "container_memory_rss")[CTR_CG]
    assert labels["container"] == tricky
    series(body)


# --- no snapshot yet -------------------------------------------------------------------------------


def test_no_snapshot() -> None:
    assert text(None) == (
        "# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise\n"
        "# TYPE container_scrape_error gauge\n"
        "container_scrape_error 1\n"
        "# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.\n"
        "# TYPE machine_scrape_error gauge\n"
        "machine_scrape_error 1\n"
    )


def test_node_root_from_proc_is_exported_without_cgroups() -> None:
    snap = build()
    root = Observed(sample("/", ts_of(0), v2=False))
    body = text(replace(snap, cgroups=(), system=(), pods=(), node=node(root=root)))
    assert set(by_id(body, "container_memory_usage_bytes")) == {"/"}
