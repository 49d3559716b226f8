"""Ray executor scaling: seconds per round of one real-training scenario, here and on Ray actors.

Runs the scenario (default: ``default``, EfficientNet-Lite0 on MNIST-5k, K = 5 clients a round)
locally, then with ``learner.executor: ray`` at each ``--workers`` count on a local Ray
instance, then locally again (to show how much the machine drifted meanwhile). Checks that
every Ray run's ``rounds.csv`` and ``clients.csv`` equal the local run's (``wall_s`` aside) and
prints, per configuration, the mean ``wall_s`` per round (training, simulation and the Ray
round trip; the actors' start-up is reported apart), its ratio to the first local run and the
overhead per round over it. Asserts nothing about absolute time.

Every process computes with ``--threads`` torch threads (the actors take the driver's count, so
that the results are the same), so ``--workers`` actors need ``workers x threads`` CPUs.

    python benchmarks/bench_ray.py [--scenario default] [--rounds 8] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import torch

from wirelessfl.config import load_scenario
from wirelessfl.results import load
from wirelessfl.sim.runner import run_scenario


def timed_run(name: str, overrides: list[str], out: Path) -> tuple[float, float]:
    """(mean wall_s per round, seconds outside the rounds: build and actor start-up)."""
    t0 = time.perf_counter()
    result = run_scenario(load_scenario(name, overrides), out)
    total = time.perf_counter() - t0
    wall = result.rounds["wall_s"]
    return float(wall.mean()), total - float(wall.sum())


def same_tables(a: Path, b: Path) -> bool:
    """``rounds.csv`` (but ``wall_s``) and ``clients.csv`` of two runs are equal."""
    ra, rb = load(a), load(b)
    rounds = ra.rounds.drop(columns="wall_s").equals(rb.rounds.drop(columns="wall_s"))
    return rounds and ra.clients.equals(rb.clients)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="default", help="a real-training scenario")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    import ray

    torch.set_num_threads(args.threads)
    base = [f"rounds={args.rounds}", "output.clients=true", *args.set]
    cpus = os.cpu_count() or 1
    print(f"machine: {platform.machine()}, {cpus} CPUs, {platform.platform()}")
    print(f"python {platform.python_version()}, torch {torch.__version__}, ray {ray.__version__}")
    print(f"scenario {args.scenario}, {args.rounds} rounds, {args.threads} torch thread(s)")
    print(f"load average before: {os.getloadavg()}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    identical = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        local = folder / "local"
        per_round, setup = timed_run(args.scenario, base, local)
        rows.append(("local", per_round, setup))
        for n in args.workers:
            out = folder / f"ray{n}"
            remote = [*base, "learner.executor=ray", f"learner.ray_workers={n}"]
            per, start = timed_run(args.scenario, remote, out)
            same = same_tables(local, out)
            identical &= same
            rows.append((f"ray, {n} worker(s){'' if same else ' (tables DIFFER)'}", per, start))
        per, start = timed_run(args.scenario, base, folder / "local-again")
        rows.append(("local again", per, start))
    ray.shutdown()
    print(f"load average after: {os.getloadavg()}")
    baseline = rows[0][1]
    table = pd.DataFrame(
        [
            {
                "executor": label,
                "s/round": round(per, 3),
                "vs local": round(per / baseline, 2),
                "overhead s/round": round(per - baseline, 3),
                "outside rounds s": round(setup, 1),
            }
            for label, per, setup in rows
        ]
    )
    print(table.to_string(index=False))
    print(f"tables identical to the local run: {'yes' if identical else 'NO'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
