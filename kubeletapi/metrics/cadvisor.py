"""/metrics/cadvisor: the kubelet's cAdvisor Prometheus text, rendered from the stats Snapshot.

Modelled on cAdvisor v0.52 (vendored by kubelet 1.33 and 1.34; 1.32's v0.51 has the same
families in the kubelet's sets, v0.52 adding only the pressure set) as the kubelet registers it:
the container collector with the kubelet's label function and metric sets
(cadvisor_specs.DEFAULT_SETS), plus the machine collector. The family table is in
cadvisor_specs.py; this module picks the exported cgroups, labels them and writes the text.

Exported cgroups: snap.cgroups (the root, the kubepods root and its QoS children), the node root
(snap.node.root) when no cgroup sample of "/" exists, the system containers, and every pod and
running container whose stats are a cgroup's (SampleSource.CGROUP; process trees and runtime
reports have no cgroup to name and are left out). A path is exported once; a pod's or
container's labels win over an unlabeled duplicate. Labels on every container_* series are
exactly container, id, image, name, namespace and pod (the kubelet's containerPrometheusLabelsFunc):
id is the cgroup path; a container's cgroup has container = its name, name = its ID and image =
its image; pod and namespace are set on a pod's cgroup and its containers' (the kubelet maps pod
cgroups to pods by path); everything else is "". Families are sorted by name, series by their
label values in label-name order, labels printed by name (what client_golang's gatherer does).

Timestamps: every stats-derived series carries its cgroup sample's time in ms; the spec
families and container_start_time_seconds carry none; container_last_seen carries the
housekeeping time (value in s, timestamp in ms; cAdvisor uses "now" for both, but this text is
cached per housekeeping generation, so the housekeeping time is the time it stands for).

`snap is None` (no housekeeping cycle yet): container_scrape_error 1 and machine_scrape_error 1,
nothing else. cAdvisor writes the same errors when it cannot list containers or read machine
info; cadvisor_version_info is left out because its kernel and OS versions come from the
snapshot's machine info (cAdvisor leaves it out too when version info cannot be read).

Values where the Snapshot's data differs from cAdvisor's, and deliberate differences:
- A field the sample lacks (None) is exported as 0, cAdvisor's zero value, except the cgroup v2
  memory families (container_memory_events_*_total, _file_dirty_bytes, _file_writeback_bytes,
  _pgscan_total, _pgsteal_total, _workingset_refault_*_total), emitted only when the sample has
  the field. Those families are newer than the cAdvisor the kubelet vendors (they came in 2026);
  the kubelet 1.32-1.34 does not emit them at all.
- container_cpu_usage_seconds_total has cpu="total" only (no percpu), and only when usage > 0.
- The CFS families need a CPU quota (cAdvisor's Spec.Cpu.Quota != 0).
- Spec families: cAdvisor's HasCpu is taken as "the sample has CPU stats" and HasMemory as "the
  sample has memory stats", except the cgroup v2 root, which has no memory.max (HasMemory false
  in cAdvisor; a v2 sample is recognised by its v2-only memory fields). Unlimited (None) and
  values above 2^62 are 0. The reservation is what the reader reads (v2: memory.low; cAdvisor
  reads memory.min there).
- container_start_time_seconds is the cgroup's creation (ctime) in whole seconds (0 if unknown).
- container_cpu_load_average_10s, container_cpu_load_d_average_10s (present since cAdvisor
  v0.50) and the five container_tasks_state rows are 0: the kubelet runs no load reader.
- container_threads is pids.current, container_threads_max pids.max (0 when unlimited).
- container_file_descriptors and container_sockets are not exported: cAdvisor counts
  /proc/<pid>/fd of every process of every cgroup, which housekeeping does not scan, and a 0
  would read as "no open files". container_ulimits_soft is not exported either (cAdvisor has
  rows only for cgroups with a root pid, from /proc/<pid>/limits, not read here).
- container_health_state is not exported: it reports a Docker health check (the kubelet's
  runtimes have none), and its presence in the v0.51/v0.52 the kubelet vendors is unverified.
- container_oom_events_total is the cgroup's oom_kill counter (cAdvisor counts OOM kills it
  parses from the kernel log per container).
- Block I/O (container_fs_{reads,writes}{,_bytes}_total and container_blkio_device_usage_total)
  has Read and Write only (cgroup v1 also has Sync/Async/Discard/Total operation rows in
  cAdvisor). The device label is /dev/<name> of the major:minor in /proc/diskstats, "" for loop,
  ram and sr devices and unknown ones (cAdvisor's DiskMap has no such devices).
- The root's filesystems are the distinct devices among the agent's root, the runtime's and the
  pod logs' filesystems (cAdvisor lists every mounted filesystem, tmpfs included, and names
  tmpfs by mount point). Their /proc/diskstats counters come from the entry whose /dev/<name>
  is the device (else the same major:minor) among sd*, vd*, xvd* and dm-* names (cAdvisor's
  partitionRegex); other devices report 0. The *_seconds_total figures are diskstats
  milliseconds divided by 1e9, exactly as cAdvisor exports them (its unit slip is reproduced).
- Network series exist on the root only (the host's interfaces): pod network namespaces are not
  read by housekeeping.
- container_pressure_* (KubeletPSI) come from the cgroup v2 *.pressure files; 0 on cgroup v1, as
  cAdvisor writes its zero value there. The app (custom metrics) set has no data: nothing.
- machine_dimm_count / machine_dimm_capacity_bytes are absent, as in cAdvisor on a machine
  without EDAC memory-controller info in sysfs; the NVM families are 0 (no libipmctl).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from kubeletapi.cgroups.stats import MemoryStats
from kubeletapi.gofmt import go_float
from kubeletapi.metrics.cadvisor_specs import (
    CONTAINER_FAMILIES,
    DEFAULT_SETS,
    FS_DISKSTATS_NAME,
    IGNORED_DISK_PREFIXES,
    MACHINE_FAMILIES,
    MACHINE_LABELS,
    MACHINE_SCRAPE_ERROR_HELP,
    SCRAPE_ERROR_HELP,
    VERSION_INFO_HELP,
    ContainerFamily,
    FsRow,
    MachineFamily,
    Target,
)
from kubeletapi.metrics.exposition import escape
from kubeletapi.stats.machine import MachineInfo
from kubeletapi.stats.snapshot import NS_PER_S, DiskIO, FsSample, Observed, SampleSource, Snapshot

__all__ = ["DEFAULT_SETS", "render_cadvisor"]

BASE_LABELS = ("container", "id", "image", "name", "namespace", "pod")  # sorted by name
NS_PER_MS = 1_000_000

Block = tuple[str, str]  # (family name, its text)


def render_cadvisor(snap: Snapshot | None, *, version: str, sets: frozenset[str] = DEFAULT_SETS) -> bytes:
    """The /metrics/cadvisor body for one Snapshot (see the module docstring)."""
    if snap is None:
        blocks = [
            _plain("container_scrape_error", SCRAPE_ERROR_HELP, 1),
            _plain("machine_scrape_error", MACHINE_SCRAPE_ERROR_HELP, 1),
        ]
    else:
        machine = snap.node.machine
        blocks = [
            _version_info(machine, version),
            _plain("container_scrape_error", SCRAPE_ERROR_HELP, 0),
            _plain("machine_scrape_error", MACHINE_SCRAPE_ERROR_HELP, 0),
        ]
        targets = _targets(snap)
        snapshot_ts = f" {snap.time_ns // NS_PER_MS}\n"
        fmt = _Formatter()
        for family in _FAMILIES:
            if family.metric_set is None or family.metric_set in sets:
                text = _render_family(family, targets, snapshot_ts, fmt)
                if text:
                    blocks.append((family.name, text))
        blocks.extend(_machine_block(family, machine) for family in MACHINE_FAMILIES)
    blocks.sort()
    return "".join(text for _, text in blocks).encode("utf-8", "replace")


# --- which cgroups, and their labels -------------------------------------------------------------


def _targets(snap: Snapshot) -> list[Target]:
    node = snap.node
    last_seen = snap.time_ns // int(NS_PER_S)
    disk_names = {
        (d.major, d.minor): "/dev/" + d.name for d in node.disks if not d.name.startswith(IGNORED_DISK_PREFIXES)
    }
    seen: set[str] = set()
    out: list[Target] = []

    def add(obs: Observed, container: str, name: str, image: str, pod: str, namespace: str) -> None:
        sample = obs.cur
        path = sample.path
        if obs.source is not SampleSource.CGROUP or path in seen:
            return
        seen.add(path)
        key = (container, path, image, name, namespace, pod)
        frags = tuple(f'{label}="{escape(value)}"' for label, value in zip(BASE_LABELS, key, strict=True))
        io = tuple((disk_names.get((s.major, s.minor), ""), s) for s in sample.io)
        root = path == "/"
        memory = sample.memory
        v2_root = root and memory is not None and _is_v2(memory)
        out.append(Target(
            sample, key, frags, has_memory=memory is not None and not v2_root, io=io,
            fs=_root_filesystems(snap) if root else (), interfaces=node.interfaces if root else (),
            last_seen=last_seen,
        ))

    for pod in snap.pods:
        ref = pod.ref
        for c in pod.containers:
            if c.stats is not None:
                add(c.stats, c.ref.name, c.ref.id, c.ref.image, ref.name, ref.namespace)
        if pod.stats is not None:
            add(pod.stats, "", "", "", ref.name, ref.namespace)
    for obs in snap.cgroups:
        add(obs, "", "", "", "", "")
    if node.root is not None:
        add(node.root, "", "", "", "", "")
    for system in snap.system:
        add(system.stats, "", "", "", "", "")
    out.sort(key=lambda t: t.key)
    return out


def _is_v2(m: MemoryStats) -> bool:
    """Only cgroup v2 readers fill these (None on v1)."""
    return any(
        v is not None
        for v in (m.events_high, m.file_dirty, m.file_writeback, m.pgscan, m.pgsteal,
                  m.workingset_refault_anon, m.workingset_refault_file)
    )


def _root_filesystems(snap: Snapshot) -> tuple[FsRow, ...]:
    node = snap.node
    samples: list[FsSample | None] = [node.rootfs, node.imagefs, node.logsfs]
    disks = [d for d in node.disks if FS_DISKSTATS_NAME.match(d.name)]
    rows: dict[str, FsRow] = {}
    for sample in samples:
        if sample is None or sample.stats.device in rows:
            continue
        stats = sample.stats
        rows[stats.device] = FsRow(stats.device, stats, _fs_disk(stats.device, stats.major, stats.minor, disks))
    return tuple(rows.values())


def _fs_disk(device: str, major: int, minor: int, disks: list[DiskIO]) -> DiskIO | None:
    for disk in disks:
        if "/dev/" + disk.name == device:
            return disk
    for disk in disks:
        if (disk.major, disk.minor) == (major, minor):
            return disk
    return None


# --- text ----------------------------------------------------------------------------------------


def _header(name: str, help_text: str, kind: str) -> str:
    help_text = help_text.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def _plain(name: str, help_text: str, value: float) -> Block:
    return name, f"{_header(name, help_text, 'gauge')}{name} {go_float(value)}\n"


def _version_info(machine: MachineInfo, version: str) -> Block:
    name = "cadvisor_version_info"
    labels = {
        "cadvisorRevision": "", "cadvisorVersion": version, "dockerVersion": "",
        "kernelVersion": machine.kernel_version, "osVersion": machine.os_version,
    }
    text = ",".join(f'{k}="{escape(v)}"' for k, v in sorted(labels.items()))
    return name, f"{_header(name, VERSION_INFO_HELP, 'gauge')}{name}{{{text}}} 1\n"


class _Formatter:
    """go_float with a per-render memo: counts and zeros repeat across thousands of series."""

    __slots__ = ("memo",)

    def __init__(self) -> None:
        self.memo: dict[float, str] = {}

    def __call__(self, value: float) -> str:
        # Equal values print alike (no -0.0 is ever produced here, the one exception to that).
        text = self.memo.get(value)
        if text is None:
            text = self.memo[value] = go_float(value)
        return text


def _render_family(family: ContainerFamily, targets: list[Target], snapshot_ts: str, fmt: _Formatter) -> str:
    head = family.name + "{"
    lines: list[str]
    memo = fmt.memo
    if family.value is not None:
        value = family.value
        # Targets are sorted by their base labels, which are all a single-series family has.
        if family.stamp == "sample":
            lines = [
                f"{head}{t.base}}} {memo.get(v) or fmt(v)}{t.ts}" for t in targets if (v := value(t)) is not None
            ]
        else:
            end = snapshot_ts if family.stamp == "snapshot" else "\n"
            lines = [
                f"{head}{t.base}}} {memo.get(v) or fmt(v)}{end}" for t in targets if (v := value(t)) is not None
            ]
    else:
        lines = _rows_lines(family, targets, head, snapshot_ts, fmt)
    if not lines:
        return ""
    return _header(family.name, family.help, family.type) + "".join(lines)


def _rows_lines(family: ContainerFamily, targets: list[Target], head: str, snapshot_ts: str,
                fmt: _Formatter) -> list[str]:
    assert family.rows is not None
    rows_of, names, memo = family.rows, family.extra_labels, fmt.memo
    pick = _picker(names)
    frag_cache: dict[tuple[str, ...], tuple[str, ...]] = {}
    keyed: list[tuple[tuple[str, ...], str]] = []
    for t in targets:
        rows = rows_of(t)
        if not rows:
            continue
        end = t.ts if family.stamp == "sample" else snapshot_ts if family.stamp == "snapshot" else "\n"
        base_key, base_frags = t.key, t.frags
        for extra, value in rows:
            frags = frag_cache.get(extra)
            if frags is None:
                frags = frag_cache[extra] = tuple(f'{n}="{escape(v)}"' for n, v in zip(names, extra, strict=True))
            labels = ",".join(pick(base_frags + frags))
            keyed.append((pick(base_key + extra), f"{head}{labels}}} {memo.get(value) or fmt(value)}{end}"))
    keyed.sort(key=itemgetter(0))
    return [line for _, line in keyed]


_PICKERS: dict[tuple[str, ...], Callable[[tuple[str, ...]], tuple[str, ...]]] = {}


def _picker(extra: tuple[str, ...]) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    """From (base labels..., extra labels...) values, the values in label-name order."""
    found = _PICKERS.get(extra)
    if found is None:
        names = BASE_LABELS + extra
        order = sorted(range(len(names)), key=names.__getitem__)
        found = _PICKERS[extra] = itemgetter(*order)
    return found


def _machine_block(family: MachineFamily, machine: MachineInfo) -> Block:
    base = dict(zip(MACHINE_LABELS, (machine.boot_id, machine.machine_id, machine.system_uuid), strict=True))
    keyed: list[tuple[tuple[str, ...], str]] = []
    for extra, value in family.rows(machine):
        labels = sorted({**base, **dict(zip(family.extra_labels, extra, strict=True))}.items())
        text = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
        keyed.append((tuple(v for _, v in labels), f"{family.name}{{{text}}} {go_float(value)}\n"))
    keyed.sort(key=lambda row: row[0])
    return family.name, _header(family.name, family.help, "gauge") + "".join(line for _, line in keyed)


_FAMILIES: tuple[ContainerFamily, ...] = tuple(sorted(CONTAINER_FAMILIES, key=lambda f: f.name))
