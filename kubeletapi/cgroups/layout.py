"""Where the cgroup hierarchies are mounted: cgroup v1 (one mount per controller set) or v2 (unified).

The layout is built from `/proc/self/mountinfo` text plus a `root` prefix, so tests point it at a
fixture tree (`tests/testdata/cgroups/v1`) and production at `/`. Detection follows what the kubelet
gets from runc: a node is v2 only when the unified hierarchy carries the controllers. A "hybrid"
node (v1 controllers plus a cgroup2 mount at /sys/fs/cgroup/unified that only tracks processes) is
v1; the unified mount is recorded but never written to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kubeletapi.errors import InvalidInput, KubeletError, NotSupported, Unavailable

# Controllers a cgroup v1 super-block option can name (/proc/cgroups); other options (rw,
# clone_children, release_agent=..., xattr, noprefix, cpuset_v2_mode) are mount flags.
V1_CONTROLLERS = frozenset(
    "cpuset cpu cpuacct blkio memory devices freezer net_cls perf_event net_prio hugetlb pids rdma misc debug".split()
)
NAMED_PREFIX = "name="
MOUNTINFO = PurePosixPath("/proc/self/mountinfo")

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Hierarchy:
    """One mounted hierarchy: v1 lists its co-mounted controllers (`name=systemd` for named ones)."""

    mount_point: Path
    controllers: frozenset[str] = field(default_factory=frozenset)

    @property
    def key(self) -> str:
        """A stable name for messages and maps: the controllers joined like the mount dir (cpu,cpuacct)."""
        return ",".join(sorted(self.controllers)) or "unified"


@dataclass(frozen=True)
class CgroupLayout:
    """The cgroup version of a node and where each hierarchy lives (paths already under `root`).

    For v1, `hierarchies` has one entry per distinct mount (a `cpu,cpuacct` co-mount is one
    hierarchy) and `unified` is the hybrid cgroup2 mount, if any. For v2, `hierarchies` is the one
    unified hierarchy and `unified` its mount point.
    """

    version: int
    hierarchies: tuple[Hierarchy, ...]
    unified: Path | None = None
    root: Path = Path("/")

    @classmethod
    def from_mountinfo(cls, text: str, root: Path | str = "/") -> CgroupLayout:
        """Parse mountinfo text; mount points are re-rooted under `root`."""
        root_path = Path(root)
        v1: dict[str, Hierarchy] = {}
        unified: list[Path] = []
        for fs_type, mount_point, super_options in _cgroup_mounts(text):
            where = root_path / mount_point.lstrip("/")
            if fs_type == "cgroup2":
                unified.append(where)
                continue
            controllers = _v1_controllers(super_options)
            key = ",".join(sorted(controllers))
            # Several mounts of one hierarchy (bind mounts): the kubelet keeps the shortest path.
            if controllers and (key not in v1 or len(str(where)) < len(str(v1[key].mount_point))):
                v1[key] = Hierarchy(where, controllers)
        unified_mount = min(unified, key=lambda p: len(str(p))) if unified else None
        if any(c in V1_CONTROLLERS for h in v1.values() for c in h.controllers):
            ordered = tuple(sorted(v1.values(), key=lambda h: str(h.mount_point)))
            return cls(1, ordered, unified_mount, root_path)
        if unified_mount is not None:
            return cls(2, (Hierarchy(unified_mount),), unified_mount, root_path)
        raise NotSupported("no cgroup v1 controller or cgroup2 mount found in mountinfo")

    @property
    def mount_points(self) -> tuple[Path, ...]:
        """Every hierarchy's mount point, the hybrid unified one included (runc creates a pod's
        cgroup parent there too, so whoever removes it looks there as well)."""
        points = [h.mount_point for h in self.hierarchies]
        if self.unified is not None and self.unified not in points:
            points.append(self.unified)
        return tuple(points)

    def hierarchy(self, controller: str) -> Hierarchy | None:
        """The hierarchy carrying `controller` (v1), or the unified hierarchy (v2)."""
        if self.version == 2:
            return self.hierarchies[0]
        for h in self.hierarchies:
            if controller in h.controllers:
                return h
        return None

    def mount_point(self, controller: str) -> Path | None:
        """Where `controller` is mounted, or None when it is not (v2: the unified mount)."""
        h = self.hierarchy(controller)
        return h.mount_point if h is not None else None

    @property
    def controllers(self) -> frozenset[str]:
        """v1: every mounted controller. v2: what the root's cgroup.controllers offers."""
        if self.version == 1:
            return frozenset(c for h in self.hierarchies for c in h.controllers)
        file = self.hierarchies[0].mount_point / "cgroup.controllers"
        try:
            return frozenset(file.read_text().split())
        except OSError as err:
            raise Unavailable(f"read {file}: {err.strerror or err}") from err


def detect(root: Path | str = "/", mountinfo: str | None = None) -> CgroupLayout:
    """The layout of this machine (or of the tree at `root`): mountinfo read from `root` unless given."""
    if mountinfo is None:
        file = Path(root) / str(MOUNTINFO).lstrip("/")
        try:
            mountinfo = file.read_text()
        except OSError as err:
            raise Unavailable(f"read {file}: {err.strerror or err}") from err
    return CgroupLayout.from_mountinfo(mountinfo, root)


def cgroup_version() -> int:
    """This machine's cgroup version (1 or 2); 0 when it cannot be read."""
    try:
        return detect().version
    except (OSError, KubeletError):
        return 0


def cgroup_parts(cgroup_path: str) -> tuple[str, ...]:
    """Validate a cgroup path (`/kubepods/burstable/pod<uid>/<id>`) and split it; `/` gives ()."""
    if not isinstance(cgroup_path, str) or "\0" in cgroup_path:
        raise InvalidInput(f"invalid cgroup path {cgroup_path!r}")
    parts = tuple(p for p in cgroup_path.split("/") if p)
    if any(p in {".", ".."} for p in parts):
        raise InvalidInput(f"cgroup path {cgroup_path!r} must not contain '.' or '..'")
    return parts


def cgroup_dir(mount_point: Path, cgroup_path: str) -> Path:
    """The directory of `cgroup_path` inside the hierarchy mounted at `mount_point`."""
    return mount_point.joinpath(*cgroup_parts(cgroup_path))


def _cgroup_mounts(text: str) -> Iterable[tuple[str, str, list[str]]]:
    """(fs type, mount point, super options) of each cgroup/cgroup2 line of mountinfo."""
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        try:
            sep = fields.index("-", 6)
            fs_type, super_options = fields[sep + 1], fields[sep + 3]
        except (ValueError, IndexError):
            raise InvalidInput(f"mountinfo line {number} is malformed: {line!r}") from None
        if fs_type in {"cgroup", "cgroup2"}:
            yield fs_type, _unescape(fields[4]), super_options.split(",")


def _v1_controllers(super_options: list[str]) -> frozenset[str]:
    return frozenset(o for o in super_options if o in V1_CONTROLLERS or o.startswith(NAMED_PREFIX))


def _unescape(field_text: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field_text)
