"""Start-up of the command line: wall seconds of ``wirelessfl run paper --set rounds=1`` (a
network-only run of one round, so nearly all of it is interpreter start, imports and writing
the folder) against ``python -c "import numpy"`` in the same run, best of ``--repeats``.

Also lists the slowest top-level imports of the run (``python -X importtime``), to show what
start-up still pays for. Prints figures only; asserts nothing about time. Goal: under 0.7 s on
the 2-core development machine.

Run: ``python benchmarks/bench_startup.py [--repeats 7]``
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN = ["-m", "wirelessfl", "run", "paper", "--set", "rounds=1", "--quiet", "--out"]


def best_wall_s(command: list[str], repeats: int) -> float:
    """Fastest of ``repeats`` runs of ``command`` (seconds of wall time)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def slowest_imports(folder: Path, n: int) -> list[tuple[str, float]]:
    """The ``n`` slowest imports of one run, with their cumulative seconds, outermost first."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *RUN, str(folder / "importtime")],
        check=True,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match.group(2)) <= 4:
            rows.append((match.group(3), int(match.group(1)) / 1e6))
    return sorted(rows, key=lambda row: -row[1])[:n]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="best of this many runs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        counter = iter(range(10**6))
        numpy_s = best_wall_s([sys.executable, "-c", "import numpy"], args.repeats)
        run_s = min(
            best_wall_s([sys.executable, *RUN, str(folder / f"run{next(counter)}")], 1)
            for _ in range(args.repeats)
        )
        imports = slowest_imports(folder, 8)
    print(f"# {platform.machine()}, Python {platform.python_version()}, best of {args.repeats}")
    print("| command | wall [s] | ratio to import numpy |")
    print("| --- | --- | --- |")
    print(f"| python -c 'import numpy' | {numpy_s:.3f} | 1.00 |")
    print(f"| wirelessfl run paper --set rounds=1 | {run_s:.3f} | {run_s / numpy_s:.2f} |")
    print("\nslowest imports of the run (cumulative s, nesting depth <= 4):")
    for name, seconds in imports:
        print(f"  {seconds:6.3f}  {name}")


if __name__ == "__main__":
    main()
