"""MachineInfo: what cAdvisor reports about the machine, read once at start-up.

Feeds the machine_* families of /metrics/cadvisor (machine_cpu_cores, machine_cpu_physical_cores,
machine_cpu_sockets, machine_memory_bytes, machine_swap_bytes with labels boot_id, machine_id,
system_uuid), cadvisor_version_info (kernelVersion, osVersion), node capacity and the Summary's node
startTime (boot time). Sources follow cAdvisor's machine/machine.go and machine/info.go.

`etc_root` is `<root>/etc`; the two fallbacks cAdvisor reads outside /etc (/usr/lib/os-release and
/var/lib/dbus/machine-id) are looked up beside it under the same root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import Unavailable
from kubeletapi.procread import read_bytes, read_optional, read_str

# cAdvisor's cpuClockSpeedMHz: the first "cpu MHz" (x86), "CPU MHz" or "clock" (POWER) value.
_CLOCK_MHZ = re.compile(rb"(?m)^(?:cpu MHz|CPU MHz|clock)\s*:\s*([0-9]+\.[0-9]+)(?:MHz)?")
_PRETTY_NAME = re.compile(r"(?m)^PRETTY_NAME=(.*)$")


@dataclass(frozen=True)
class MachineInfo:
    num_cores: int  # logical CPUs (processor entries; cAdvisor: online CPUs of the topology)
    num_physical_cores: int  # distinct (physical id, core id) pairs
    num_sockets: int  # distinct physical ids
    cpu_frequency_khz: int  # cpuinfo_max_freq, else the first cpuinfo "cpu MHz" x 1000, else 0
    memory_capacity: int  # MemTotal, bytes
    swap_capacity: int  # SwapTotal, bytes
    machine_id: str  # /etc/machine-id (or /var/lib/dbus/machine-id); "" when absent
    system_uuid: str  # cAdvisor's GetSystemUUID: the first of system_uuid_files(); "" when none is readable
    boot_id: str  # /proc/sys/kernel/random/boot_id; "" when absent
    boot_time: int | None  # Unix seconds, /proc/stat btime
    kernel_version: str  # /proc/sys/kernel/osrelease (= uname -r); "" when absent
    os_version: str  # PRETTY_NAME of os-release; "Linux" without it (cAdvisor); "" when no file


@dataclass(frozen=True)
class CpuTopology:
    num_cores: int
    num_physical_cores: int
    num_sockets: int


def machine_info(
    proc_root: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    etc_root: Path = Path("/etc"),
) -> MachineInfo:
    """Read the machine's description; Unavailable only when /proc/meminfo cannot be read."""
    cpuinfo = read_optional(proc_root / "cpuinfo") or b""
    topo = cpu_topology(cpuinfo, sys_root)
    memory, swap = _capacities(proc_root)
    host = etc_root.parent
    return MachineInfo(
        num_cores=topo.num_cores,
        num_physical_cores=topo.num_physical_cores,
        num_sockets=topo.num_sockets,
        cpu_frequency_khz=cpu_frequency_khz(cpuinfo, sys_root),
        memory_capacity=memory,
        swap_capacity=swap,
        machine_id=_first_present(etc_root / "machine-id", host / "var/lib/dbus/machine-id"),
        system_uuid=_first_present(*system_uuid_files(proc_root, sys_root, etc_root)),
        boot_id=read_str(proc_root / "sys/kernel/random/boot_id"),
        boot_time=boot_time(proc_root),
        kernel_version=read_str(proc_root / "sys/kernel/osrelease"),
        os_version=os_version(etc_root),
    )


def cpu_topology(cpuinfo: bytes, sys_root: Path = Path("/sys")) -> CpuTopology:
    """Logical CPUs, physical cores and sockets from /proc/cpuinfo, falling back to sysfs.

    cAdvisor (GetPhysicalCores) counts distinct "core id" lines, and core ids repeat on every
    socket, so on a 2-socket x 2-core machine it reports 2 physical cores. We count distinct
    (physical id, core id) pairs (4), as cAdvisor's own sysfs fallback does since #2783.
    """
    processors = 0
    sockets: set[bytes] = set()
    cores: set[tuple[bytes, bytes]] = set()
    for block in cpuinfo.split(b"\n\n"):
        fields = _block_fields(block)
        if b"processor" not in fields:
            continue
        processors += 1
        socket = fields.get(b"physical id")
        if socket is not None:
            sockets.add(socket)
        core = fields.get(b"core id")
        if core is not None:
            cores.add((socket or b"0", core))
    num_cores = processors or _online_cpus(sys_root)
    if not sockets or not cores:
        sys_sockets, sys_cores = _sysfs_topology(sys_root)
        sockets = sockets or sys_sockets
        cores = cores or sys_cores
    # Last resort (no ids anywhere, e.g. a trimmed container view): one socket, no SMT.
    num_sockets = len(sockets) or (1 if num_cores else 0)
    return CpuTopology(num_cores, len(cores) or num_cores, num_sockets)


def cpu_frequency_khz(cpuinfo: bytes, sys_root: Path = Path("/sys")) -> int:
    """cAdvisor's GetClockSpeed: cpu0's cpuinfo_max_freq (kHz), else cpuinfo "cpu MHz" x 1000."""
    max_freq = read_optional(sys_root / "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if max_freq is not None and max_freq.strip().isdigit():
        return int(max_freq)
    match = _CLOCK_MHZ.search(cpuinfo)
    return int(float(match.group(1)) * 1000) if match else 0


def boot_time(proc_root: Path = Path("/proc")) -> int | None:
    """The `btime` line of /proc/stat: boot time in Unix seconds."""
    data = read_optional(proc_root / "stat")
    if data is None:
        return None
    at = data.find(b"\nbtime ")
    if at < 0:
        return None
    value = data[at + 7 :].split(b"\n", 1)[0]
    return int(value) if value.strip().isdigit() else None


def os_version(etc_root: Path = Path("/etc")) -> str:
    """cAdvisor's getOperatingSystem: PRETTY_NAME (quotes trimmed), "Linux" if the file has none.

    cAdvisor says "Unknown" when neither /etc/os-release nor /usr/lib/os-release exists; we say "".
    """
    data = read_optional(etc_root / "os-release")
    if data is None:
        data = read_optional(etc_root.parent / "usr/lib/os-release")
    if data is None:
        return ""
    match = _PRETTY_NAME.search(data.decode(errors="replace"))
    return match.group(1).strip().strip('"') if match else "Linux"


def _capacities(proc_root: Path) -> tuple[int, int]:
    try:
        data = read_bytes(proc_root / "meminfo")
    except OSError as exc:
        raise Unavailable(f"cannot read {proc_root / 'meminfo'}: {exc}") from exc
    found: dict[bytes, int] = {}
    for line in data.splitlines():
        key, _, rest = line.partition(b":")
        if key in (b"MemTotal", b"SwapTotal"):
            found[key] = int(rest.split()[0]) * 1024
    return found.get(b"MemTotal", 0), found.get(b"SwapTotal", 0)


def _block_fields(block: bytes) -> dict[bytes, bytes]:
    fields: dict[bytes, bytes] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(b":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _sysfs_topology(sys_root: Path) -> tuple[set[bytes], set[tuple[bytes, bytes]]]:
    """Distinct package ids and (package, core) pairs from /sys/devices/system/cpu/cpu*/topology."""
    sockets: set[bytes] = set()
    cores: set[tuple[bytes, bytes]] = set()
    for cpu in (sys_root / "devices/system/cpu").glob("cpu[0-9]*"):
        package = read_optional(cpu / "topology/physical_package_id")
        core = read_optional(cpu / "topology/core_id")
        if package is not None:
            sockets.add(package.strip())
        if core is not None:
            cores.add(((package or b"0").strip(), core.strip()))
    return sockets, cores


def _online_cpus(sys_root: Path) -> int:
    """Count the CPUs of /sys/devices/system/cpu/online ("0-3,6")."""
    text = read_str(sys_root / "devices/system/cpu/online")
    count = 0
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def system_uuid_files(proc_root: Path, sys_root: Path, etc_root: Path) -> tuple[Path, ...]:
    """Where cAdvisor's sysfs.GetSystemUUID looks, in order: the DMI product UUID (x86, root
    only), the device tree's system-id and vm,uuid (POWER), then /etc/machine-id (its s390x
    fallback, which it reads on every architecture: a VM without DMI, like this CI's, reports the
    machine ID)."""
    tree = proc_root / "device-tree"
    return (sys_root / "class/dmi/id/product_uuid", tree / "system-id", tree / "vm,uuid", etc_root / "machine-id")


def _first_present(*paths: Path) -> str:
    """The first readable file's text, stripped of whitespace and NULs (device-tree strings end in one)."""
    for path in paths:
        data = read_optional(path)
        if data is not None:
            return data.decode(errors="replace").strip().rstrip("\0").strip()
    return ""
