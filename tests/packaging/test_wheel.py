"""The wheel is a working agent: built from a copy of the source tree, installed (not editable)
into a fresh virtual environment, it finds its shim source and builds the shim.

No network: the wheel is built with this environment's setuptools (no build isolation) and
installed with --no-deps; the fresh environment reaches the dependencies through a path entry
pointing at this environment's site-packages (a plain path, so the editable install's finder
there is not loaded and the repository's kubeletapi stays out of sight).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import kubeletapi

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SHIM_SOURCE = "kubeletapi/runtime/process/shim/shim.c"


def run(argv: list[str], cwd: Path, timeout: float = 120) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of the repository's package files, shim/bin included (if the checkout
    has built a shim), so the test also sees that built binaries stay out of the wheel."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "kubeletapi", src / "kubeletapi", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(out),
            str(src),
        ],
        cwd=src,
    )
    (built,) = out.glob("kubeletapi-*.whl")
    return built


def test_the_wheel_carries_the_shim_source_and_no_binaries(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert SHIM_SOURCE in names
    assert "kubeletapi/py.typed" in names
    assert not [n for n in names if "/shim/bin/" in n]
    # The web UI's built assets (make ui), shipped as package data.
    assert {f"kubeletapi/server/ui/{name}" for name in ("index.html", "ui.js", "ui.css")} <= set(names)
    assert wheel.name.startswith(f"kubeletapi-{kubeletapi.__version__}-")
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_an_installed_wheel_builds_its_shim_and_runs(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path).strip()
    )
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=tmp_path,
    )

    # -I: neither the working directory nor PYTHONPATH can put the repository's package first.
    where = run(
        [
            str(python),
            "-I",
            "-c",
            "import importlib.metadata as m, kubeletapi; print(kubeletapi.__file__); print(m.version('kubeletapi'))",
        ],
        cwd=tmp_path,
    ).split()
    assert Path(where[0]).is_relative_to(site)
    assert where[1] == kubeletapi.__version__
    assert (site / SHIM_SOURCE).is_file()

    shim = Path(run([str(python), "-I", "-m", "kubeletapi.runtime.process.shimbuild"], cwd=tmp_path).strip())
    assert shim.is_file() and shim.stat().st_mode & 0o111
    assert shim.is_relative_to(site / "kubeletapi/runtime/process/shim/bin")
    assert shim.name.startswith("kubeletapi-shim-")

    version = run([str(env_dir / "bin" / "kubeletapi"), "--version"], cwd=tmp_path)
    assert version.strip() == f"kubeletapi v{kubeletapi.__version__}"
