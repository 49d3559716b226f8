"""A wheel of wirelessfl, installed into a fresh virtual environment outside the checkout,
runs a shipped scenario and a reproduction by name from a folder outside the checkout.

The wheel is built from a copy of the packages (so the checkout stays clean) without build
isolation (no download). The new environment sees the dependencies of this one through a
``.pth`` file but not its wirelessfl: the test checks that the import comes from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("channels", "optim", "wirelessfl", "pyproject.toml", "README.md", "LICENSE")


def _run(argv: list[str], cwd: Path) -> str:
    """``argv`` in ``cwd`` without PYTHONPATH (which could point the new environment at the
    checkout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stderr[-2000:]}"
    return done.stdout


def _wheel(tmp: Path) -> Path:
    src = tmp / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps"]
    _run([*pip_wheel, "--no-build-isolation", "--no-index", "-q", "-w", str(tmp)], tmp)
    return next(tmp.glob("wirelessfl-*.whl"))


def _environment(tmp: Path, wheel: Path) -> Path:
    """A fresh environment holding the wheel; the rest comes from this one's site-packages."""
    env = tmp / "env"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    purelib = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp
    )
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    ours |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    Path(purelib.strip(), "parent-environment.pth").write_text("\n".join(sorted(ours)) + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    _run([*install, "--no-index", "-q", str(wheel)], tmp)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    return _environment(tmp, _wheel(tmp))


def test_the_wheel_ships_every_scenario(installed):
    wheel = next(installed.parent.glob("wirelessfl-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        shipped = {n for n in z.namelist() if n.startswith("wirelessfl/scenarios/")}
    in_checkout = {
        "wirelessfl/" + p.relative_to(ROOT / "wirelessfl").as_posix()
        for p in (ROOT / "wirelessfl" / "scenarios").rglob("*.yaml")
    }
    assert shipped == in_checkout


def test_a_shipped_scenario_runs_by_name_outside_the_checkout(installed, tmp_path):
    cli = str(installed / "bin" / "wirelessfl")
    where = _run(
        [str(installed / "bin" / "python"), "-c", "import wirelessfl; print(wirelessfl.__file__)"],
        tmp_path,
    )
    assert Path(where.strip()).is_relative_to(installed)
    listed = _run([cli, "scenarios"], tmp_path)
    assert "paper/fig3ab_sparsifiers" in listed and "network_only" in listed
    _run([cli, "run", "network_only", "--set", "rounds=60", "--quiet", "--out", "r"], tmp_path)
    rounds = (tmp_path / "r" / "rounds.csv").read_text().splitlines()
    assert len(rounds) == 1 + 60
    dry = _run([cli, "run", "paper/offline_planner", "--dry-run"], tmp_path)
    assert "name: offline_planner" in dry and "#   rank: " in dry
    _run([cli, "reproduce", "dpp", "--set", "rounds=20", "--quiet", "--out", "repro"], tmp_path)
    assert (tmp_path / "repro" / "dpp" / "summary.csv").is_file()
