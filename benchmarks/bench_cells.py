"""A network of cells against as many single-cell simulators: edge rounds per second.

Network-only (the ``network_only`` scenario: a geometric cell, TSFA, the surrogate learner,
compute included), C = 19 cells (``cells.n_rings: 2``) of 100 clients each with K = 10
scheduled per cell, reuse 1 and interference on, flat hierarchy (the cloud averages every
round). The baseline: 19 independent single-cell simulators of 100 clients and K = 10 (the
same scenario without ``cells``, on an annulus out to the hexagon's circumradius), run one
after another for the same rounds, in the same process. Both time the round loop only
(``run_round``), and the set-up separately. Prints network rounds per second, the baseline's
(19 cells' rounds count as one network round) and their ratio; asserts nothing about time
(the goal, issue "Many cells": the network within 3x of the baseline).

    python benchmarks/bench_cells.py [--rings 2] [--clients-per-cell 100] [--rounds 200]
"""

from __future__ import annotations

import argparse
import platform
import time

from channels.hexgrid import SQRT3, n_sites
from wirelessfl.config import load_scenario
from wirelessfl.learners import make_learner
from wirelessfl.sim.network import NetworkSimulator
from wirelessfl.sim.simulator import Simulator

ISD_M = 500.0


def _settings(clients: int, rounds: int) -> list[str]:
    return [
        f"n_clients={clients}",
        "n_scheduled=10",
        f"rounds={rounds}",
        f"eval_every={rounds}",
        "output.events=false",
    ]


def network_rate(rings: int, per_cell: int, rounds: int) -> tuple[float, float]:
    """(set-up s, rounds per second) of the network."""
    cells = n_sites(rings)
    t0 = time.perf_counter()
    sets = _settings(cells * per_cell, rounds) + [f"cells.n_rings={rings}", f"cells.isd_m={ISD_M}"]
    sim = NetworkSimulator(load_scenario("network_only", sets))
    t1 = time.perf_counter()
    for t in range(rounds):
        sim.run_round(t)
    return t1 - t0, rounds / (time.perf_counter() - t1)


def baseline_rate(cells: int, per_cell: int, rounds: int) -> tuple[float, float]:
    """(set-up s, network-equivalent rounds per second) of ``cells`` single cells in turn."""
    sets = _settings(per_cell, rounds) + [f"channel.d_max_m={ISD_M / SQRT3}"]
    setup_s, loop_s = 0.0, 0.0
    for c in range(cells):
        t0 = time.perf_counter()
        scenario = load_scenario("network_only", [*sets, f"seed={c}"])
        sim = Simulator(scenario, make_learner(scenario))
        t1 = time.perf_counter()
        for t in range(rounds):
            sim.run_round(t)
        setup_s += t1 - t0
        loop_s += time.perf_counter() - t1
    return setup_s, rounds / loop_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rings", type=int, default=2)
    parser.add_argument("--clients-per-cell", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    cells = n_sites(args.rings)
    print(f"machine: {platform.platform()}, {platform.processor() or 'cpu'}")
    print(f"{cells} cells x {args.clients_per_cell} clients, K = 10 a cell, {args.rounds} rounds")
    net_setup, net_rate = network_rate(args.rings, args.clients_per_cell, args.rounds)
    base_setup, base_rate = baseline_rate(cells, args.clients_per_cell, args.rounds)
    print(f"network:  {net_rate:8.1f} rounds/s  (set-up {net_setup:.2f} s)")
    print(
        f"baseline: {base_rate:8.1f} rounds/s  ({cells} single cells in turn; set-up "
        f"{base_setup:.2f} s)"
    )
    print(f"ratio baseline / network: {base_rate / net_rate:.2f}x (goal: within 3x)")


if __name__ == "__main__":
    main()
