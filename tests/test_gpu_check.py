"""``benchmarks/gpu_check.sh``: valid bash, and its CPU dry run goes through every step and
prints the markdown block (the figures themselves need a GPU: docs/benchmarks.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.sh"


def test_the_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_unknown_argument_is_one_line():
    done = subprocess.run(["bash", str(SCRIPT), "--fast"], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr == "gpu_check.sh: unknown argument '--fast'; accepted: --dry-run\n"


@pytest.mark.slow
def test_the_cpu_dry_run_runs_every_step(tmp_path):
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_OUT": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    block = (tmp_path / "gpu_check.md").read_text()
    assert block.startswith("### GPU check, ") and "(CPU dry run: no figure)" in block
    for step in ("gpu_tests", "bench_trainer_bf16", "bench_trainer_fp32"):
        assert f"- {step}: ok, " in block, block
        assert (tmp_path / f"{step}.log").stat().st_size > 0
    assert "skipped" in block and "deselected" in block  # the gpu tests skip on a CPU
    assert "vit_random    1" in block  # the trainer table, K = 1
