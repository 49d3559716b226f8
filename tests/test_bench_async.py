"""``benchmarks/bench_async.py`` on tiny settings: it prints the three timings with their
updates per second, and its plain heapq loop ends at the engine's virtual time with the engine's
mean staleness (the benchmark times the same work)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_async.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_async", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_run_prints_both_figures_for_the_same_updates(capsys):
    _bench().main(
        ["--clients", "40", "--concurrency", "8", "--buffer-size", "4", "--updates", "90"]
    )
    out = capsys.readouterr().out
    assert "N = 40, C = 8, M = 4: 22 aggregations, 88 client updates" in out
    for name in ("plain loop", "engine", "run"):
        row = re.search(rf"^{name}\s+\|\s+([\d.]+)\s+(\d+)\s+([\d.]+)x", out, re.MULTILINE)
        assert row is not None, out
        assert int(row[2]) > 0 and float(row[3]) > 0, out
    assert "same virtual end time and mean staleness: yes" in out, out
