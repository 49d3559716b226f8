"""Network-only simulation speed: rounds per second, and what SimPy's event machinery costs.

For (N, K) = (100, 10), (10,000, 100) and (10,000, 1,000), with the exact per-slot solver and
the surrogate learner:

- ``simulator``: ``Simulator.run_round`` (the SimPy clock, the complete event log, records),
  no disk; each client's timeline is computed in numpy and SimPy waits only for the event that
  decides the round (the last arrival or the deadline);
- ``run``: a whole run into a results folder (checkpoints and CSV tables included);
- ``plain loop``: the same numbers (selection, controller decision, upload times, D^t, queue)
  computed in a plain Python loop without SimPy or an event log — the baseline whose ratio shows
  what the event machinery costs.

Prints figures and ratios; asserts nothing about absolute time. Goals: 1,000 paper-setting rounds
(N = 100, K = 10) in well under a second of wall time; K = 1,000 of N = 10,000 at <= 2x the
plain loop. ``tests/wirelessfl/test_event_floor.py`` checks that the tables equal those of
one SimPy process per client.

    python benchmarks/bench_sim.py [--rounds 1000] [--quick]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from channels import rate_bps
from channels.streams import round_generator
from optim import select_clients
from wirelessfl.config import load_scenario
from wirelessfl.learners import make_learner
from wirelessfl.learners.base import RoundPlan
from wirelessfl.sim.runner import Run
from wirelessfl.sim.simulator import Simulator


def scenario_for(n: int, k: int, rounds: int, events: bool, extra: list[str] | None = None):
    return load_scenario(
        "paper",
        [
            f"n_clients={n}",
            f"n_scheduled={k}",
            f"rounds={rounds}",
            f"output.events={str(events).lower()}",
            "output.clients=false",
            "channel.block_rounds=1000",
            *(extra or []),
        ],
    )


#: The large-K row again with the wireless models on: 3GPP UMi path loss, random-waypoint
#: pedestrians, Markov availability (unavailable clients can be scheduled), energy accounting.
WIRELESS = [
    "channel.mean_snr_db=null",
    "channel.d_max_m=300",
    "channel.path_loss.model=3gpp_umi",
    "mobility.model=random_waypoint",
    "availability.model=markov",
    "controller.d_th_s=30",  # the UMi cell's edge is slower than the paper's 10 dB clients
]


def time_simulator(sc, rounds: int) -> float:
    sim = Simulator(sc, make_learner(sc))
    t0 = time.perf_counter()
    for t in range(rounds):
        sim.run_round(t)
    return time.perf_counter() - t0


def time_run(sc) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench_sim_"))
    try:
        run = Run(sc, folder / "run")
        t0 = time.perf_counter()
        run.execute()
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def time_plain_loop(sc, rounds: int) -> float:
    """The same per-round numbers without SimPy, events or records."""
    sim = Simulator(sc, make_learner(sc))  # reuse the cell, controller and learner set-up
    ctrl, learner, bw = sim.controller, sim.learner, sc.channel.bandwidth_hz
    t0 = time.perf_counter()
    for t in range(rounds):
        snr_all, _ = sim.channel.observe(t, 0.0)
        rng = round_generator(sc.seed, stream="selection", round_index=t)
        chosen = select_clients(rng, n_clients=sc.n_clients, n_scheduled=sc.n_scheduled)
        snr = snr_all[chosen]
        decision = ctrl.decide(snr, np.zeros(len(chosen)))
        plan = RoundPlan(t, chosen, ctrl.rank, decision.sparsification, decision.bound, len(chosen))
        report = learner.local_round(plan)[int(chosen[0])]
        uploads = report.bits_up / rate_bps(decision.shares, bw, snr)
        delay = float(uploads.max())
        learner.aggregate(t, chosen)
        ctrl.observe(delay)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="fewer rounds for large N")
    args = parser.parse_args()
    print(
        f"bench_sim: {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, exact solver, surrogate learner, CPU only"
    )
    print(
        f"{'N':>6} {'K':>5} {'rounds':>6} | {'simulator r/s':>13} {'+events r/s':>11} "
        f"{'run r/s':>9} {'plain loop r/s':>14} | {'sim/plain cost':>14}"
    )
    for n, k in ((100, 10), (10_000, 100), (10_000, 1_000)):
        rounds = args.rounds if n == 100 else max(50, args.rounds // (10 if args.quick else 5))
        sc = scenario_for(n, k, rounds, events=False)
        sc_ev = scenario_for(n, k, rounds, events=True)
        t_plain = time_plain_loop(sc, rounds)
        t_sim = time_simulator(sc, rounds)
        t_sim_ev = time_run(sc_ev)
        t_run = time_run(sc)
        print(
            f"{n:6d} {k:5d} {rounds:6d} | {rounds / t_sim:13.0f} {rounds / t_sim_ev:11.0f} "
            f"{rounds / t_run:9.0f} {rounds / t_plain:14.0f} | {t_sim / t_plain:13.2f}x"
        )
        if n == 10_000 and k == 1_000:
            t_wireless = time_simulator(scenario_for(n, k, rounds, False, WIRELESS), rounds)
            print(
                f"{'':12} with UMi, mobility, availability, energy: {rounds / t_wireless:.0f} "
                f"simulator r/s, {t_wireless / t_plain:.2f}x the plain loop (which has none)"
            )
        if n == 100:
            print(
                f"       1,000 paper-setting rounds: {1000 * t_run / rounds:.3f} s as a whole run "
                f"(tables + checkpoints), {1000 * t_sim / rounds:.3f} s in the simulator alone"
            )


if __name__ == "__main__":
    main()
