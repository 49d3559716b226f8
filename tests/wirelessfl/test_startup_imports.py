"""Start-up: a network-only ``wirelessfl run`` imports nothing it does not use (cvxpy, numba,
scipy's special functions, torch, matplotlib, pandas: its summary is read with the csv module), yet
meta.json still records every package's version."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

HEAVY = ("cvxpy", "numba", "scipy.special", "scipy.stats", "torch", "matplotlib", "pandas")

PROGRAM = """
import json, sys
from wirelessfl.cli import main
code = main(["run", "paper", "--set", "rounds=1", "--quiet", "--out", sys.argv[1]])
print(json.dumps({"code": code, "loaded": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def test_a_network_only_run_imports_no_solver_or_training_stack(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(out), *HEAVY],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": []}
    versions = json.loads((out / "meta.json").read_text())["versions"]
    for package in ("numpy", "scipy", "cvxpy", "numba", "simpy"):
        assert versions[package] == metadata.version(package)
