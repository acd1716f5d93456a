"""The CRI tests' images, built from local files with umoci: no registry is ever asked.

- localhost/busybox:latest: the static busybox of Debian's busybox-static, one symlink per applet
  in /bin, an /etc/passwd with root; PATH=/bin:/sbin, command /bin/sh.
- localhost/pause:3.9: pause.c beside this file, compiled with `gcc -static`; entrypoint /pause.

Each image is an OCI layout tarred for `ctr images import`; the layout's tag ("latest", "3.9")
is the tag the import gives it. The tars are cached in a build directory under a name that hashes
every input (busybox binary, pause.c, this builder's recipe), so a repeated run only checks that
they exist. `python -m tests.cri.images [DIR]` builds them and prints their paths.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BUSYBOX_BINARY = Path("/bin/busybox")
PAUSE_SOURCE = Path(__file__).resolve().parent / "pause.c"
DEFAULT_BUILD_DIR = Path(__file__).resolve().parents[2] / "build" / "cri-images"
RECIPE_VERSION = "1"  # bump when the recipe below changes what an image holds


@dataclass(frozen=True)
class ImageTar:
    name: str  # e.g. localhost/busybox (ctr's --base-name)
    tag: str
    path: Path

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"


def _run(*argv: str, cwd: Path | None = None) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:12]


def _layout(work: Path, tag: str, populate: Callable[[Path], None], config: list[str]) -> Path:
    """An OCI layout in work/oci with one image `tag`: a rootfs filled by populate(rootfs)."""
    layout, bundle = work / "oci", work / "bundle"
    image = f"{layout}:{tag}"
    _run("umoci", "init", "--layout", str(layout))
    _run("umoci", "new", "--image", image)
    _run("umoci", "unpack", "--rootless", "--image", image, str(bundle))
    populate(bundle / "rootfs")
    _run("umoci", "repack", "--image", image, str(bundle))
    _run("umoci", "config", "--image", image, *config)
    _run("umoci", "gc", "--layout", str(layout))
    return layout


def _tar(layout: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    _run("tar", "-C", str(layout), "-cf", str(tmp), ".")
    os.replace(tmp, target)  # a concurrent builder never sees half a tar


def _busybox_rootfs(rootfs: Path) -> None:
    bin_dir = rootfs / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for d in ("sbin", "etc", "tmp", "root", "proc", "sys", "dev"):
        (rootfs / d).mkdir(exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    shutil.copy2(BUSYBOX_BINARY, bin_dir / "busybox")
    for applet in _run(str(BUSYBOX_BINARY), "--list").split():
        link = bin_dir / applet
        if applet != "busybox" and not link.exists():
            link.symlink_to("busybox")
    (rootfs / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (rootfs / "etc" / "group").write_text("root:x:0:\n")


def _pause_rootfs(binary: Path) -> Callable[[Path], None]:
    def populate(rootfs: Path) -> None:
        shutil.copy2(binary, rootfs / "pause")
    return populate


def build_busybox(build_dir: Path) -> ImageTar:
    key = _digest(BUSYBOX_BINARY.read_bytes(), RECIPE_VERSION.encode())
    target = build_dir / f"busybox-{key}.tar"
    if not target.exists():
        with tempfile.TemporaryDirectory(dir=build_dir) as tmp:
            layout = _layout(Path(tmp), "latest", _busybox_rootfs,
                             ["--config.env", "PATH=/bin:/sbin", "--config.cmd", "/bin/sh"])
            _tar(layout, target)
    return ImageTar("localhost/busybox", "latest", target)


def build_pause(build_dir: Path) -> ImageTar:
    key = _digest(PAUSE_SOURCE.read_bytes(), RECIPE_VERSION.encode())
    target = build_dir / f"pause-{key}.tar"
    if not target.exists():
        with tempfile.TemporaryDirectory(dir=build_dir) as tmp:
            binary = Path(tmp) / "pause"
            _run(os.environ.get("CC") or "gcc", "-static", "-O2", "-Wall", "-Wextra", "-o", str(binary),
                 str(PAUSE_SOURCE))
            layout = _layout(Path(tmp) / "image", "3.9", _pause_rootfs(binary),
                             ["--config.entrypoint", "/pause"])
            _tar(layout, target)
    return ImageTar("localhost/pause", "3.9", target)


def build_marked(build_dir: Path, name: str, tag: str) -> ImageTar:
    """A busybox with a file /marker naming it: an image of its own (its own ID), which removing
    leaves localhost/busybox alone (image GC tests)."""
    key = _digest(BUSYBOX_BINARY.read_bytes(), RECIPE_VERSION.encode(), f"{name}:{tag}".encode())
    target = build_dir / f"marked-{key}.tar"
    if not target.exists():
        def populate(rootfs: Path) -> None:
            _busybox_rootfs(rootfs)
            (rootfs / "marker").write_text(f"{name}:{tag}\n")
        with tempfile.TemporaryDirectory(dir=build_dir) as tmp:
            layout = _layout(Path(tmp), tag, populate, ["--config.env", "PATH=/bin:/sbin", "--config.cmd", "/bin/sh"])
            _tar(layout, target)
    return ImageTar(name, tag, target)


def missing_tools() -> list[str]:
    """What the build needs and this machine lacks."""
    missing = [tool for tool in ("umoci", "tar", os.environ.get("CC") or "gcc") if shutil.which(tool) is None]
    if not BUSYBOX_BINARY.exists():
        missing.append(f"{BUSYBOX_BINARY} (busybox-static)")
    return missing


def build_all(build_dir: Path = DEFAULT_BUILD_DIR) -> list[ImageTar]:
    build_dir.mkdir(parents=True, exist_ok=True)
    return [build_busybox(build_dir), build_pause(build_dir)]


def main() -> int:
    build_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_BUILD_DIR
    for image in build_all(build_dir):
        print(image.ref, image.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
