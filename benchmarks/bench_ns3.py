"""The ns-3 LTE uplink's wall time per round against FDMA's and NR's, measured in the same run.

Network-only runs of the same cell (N = 20 clients at 10-300 m, a fixed controller at rank 8,
a ViT-Base-sized query/value payload at O = 0.1, about 1.4 Mbit an upload) with K = 5 and 10
scheduled a round, R rounds each: ``fdma`` (the baseline), ``nr`` (fast fidelity, 10 MHz:
24 PRBs) and ``ns3_lte`` (25 RB, TCP). ns-3's import (10-25 s, once per process) is paid
before the timed runs and reported apart, as is the NR tables' first read. Prints figures only.

Run: ``python benchmarks/bench_ns3.py [--rounds R]``
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

from channels.ns3_loader import load_ns, ns3_version
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.sim.runner import run_scenario


def _data(uplink: str, k: int, rounds: int) -> dict:
    return {
        "name": f"bench-{uplink}-{k}",
        "seed": 1,
        "n_clients": 20,
        "n_scheduled": k,
        "rounds": rounds,
        "eval_every": rounds,
        "channel": {"bandwidth_hz": 10.0e6, "d_min_m": 10.0, "d_max_m": 300.0, "uplink": uplink},
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 8, "r_max": 8, "sparsification": 0.1},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[768, 768]] * 24}},
        "output": {"events": False},
    }


def _wall_s(uplink: str, k: int, rounds: int, where: Path) -> tuple[float, float]:
    """(wall [s], simulated time [s]) of one run."""
    t0 = time.perf_counter()
    result = run_scenario(scenario_from_dict(_data(uplink, k, rounds)), where / f"{uplink}-{k}",
                          progress=False)  # fmt: skip
    return time.perf_counter() - t0, float(result.rounds.t_end_s.iloc[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"bench_ns3: ns3 {ns3_version()}, {args.rounds} rounds, {platform.processor() or 'cpu'}")
    t0 = time.perf_counter()
    load_ns()
    print(f"ns-3 import: {time.perf_counter() - t0:.1f} s (once per process, not in the runs)")
    with tempfile.TemporaryDirectory() as tmp:
        _wall_s("nr", 5, 1, Path(tmp) / "warm")  # the NR tables' first read
        for k in (5, 10):
            walls = {u: _wall_s(u, k, args.rounds, Path(tmp)) for u in ("fdma", "nr", "ns3_lte")}
            base = walls["fdma"][0] / args.rounds
            for uplink, (wall, simulated) in walls.items():
                per_round = wall / args.rounds
                print(
                    f"K = {k:2d} {uplink:<8} {per_round * 1e3:10.1f} ms a round "
                    f"({per_round / base:,.0f}x fdma), {simulated:8.2f} s simulated"
                )


if __name__ == "__main__":
    main()
