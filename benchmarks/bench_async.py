"""Buffered asynchronous rounds (FedBuff, ``server.mode: buffered``): client updates per second.

Network-only: the ``paper`` scenario (Rayleigh block fading, surrogate learner, no training,
the ``fixed`` controller: every update at rank r with ratio 1, as the plain loop sends it) with
N = 10,000 clients, C = 1,000 training at once, FedBuff's M = 10 updates per aggregation, device
speeds lognormal (``devices.kind: lognormal``, compute time included) and one evaluation, at the
end. Three timings of the same updates:

- ``run``: ``wirelessfl.sim.run_scenario`` into a temporary folder, what a user runs (set-up,
  SimPy's clock, ``rounds.csv``, checkpoints, loading the results; ``clients.csv`` and the event
  log are off, as in ``bench_sim.py``; pandas is imported before the clock starts);
- ``engine``: ``Simulator.run_round`` for each aggregation (the event-driven engine of
  ``wirelessfl/sim/async_engine.py`` under SimPy's clock), no disk;
- ``plain loop``: the baseline, a heapq loop written here doing the same arithmetic: dispatch
  random idle clients (the same draws), the processor-shared band with its attained-service heap,
  FedBuff's aggregation of every M arrivals with staleness weights s(tau) = (1 + tau)^(-1/2) on
  a small numpy vector. It reads the same channel rows and device speeds, so it ends at the same
  virtual time with the same staleness; the script checks that.

Every aggregation draws a new Rayleigh row for all N clients (the paper's block fading), a
cost shared by the three timings that grows with N / M, not with the engine; the script times
it in the plain loop and prints each ratio with and without it. Prints updates per second and
each timing's ratio to the plain loop; asserts nothing about time (the goal: the engine within
2x of the plain loop).

    python benchmarks/bench_async.py [--clients 10000] [--concurrency 1000] [--updates 50000]
    python benchmarks/bench_async.py --clients 1000 --concurrency 100 --updates 20000  # quick
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import math
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from channels.fdma import spectral_efficiency
from channels.streams import round_generator
from wirelessfl.config import load_scenario
from wirelessfl.learners import make_learner
from wirelessfl.learners.base import RoundPlan
from wirelessfl.sim import run_scenario
from wirelessfl.sim.simulator import Simulator

VECTOR_SIZE = 16  # the plain loop's model: a small numpy vector


def scenario_for(n_clients: int, concurrency: int, buffer_size: int, aggregations: int):
    """The paper's cell and surrogate learner, run as FedBuff (module docstring)."""
    return load_scenario(
        "paper",
        [
            f"n_clients={n_clients}",
            f"n_scheduled={concurrency}",
            f"rounds={aggregations}",
            f"eval_every={aggregations}",
            "output.events=false",
            "output.clients=false",
            "channel.block_rounds=1000",
            "devices.kind=lognormal",
            "devices.median_flops_per_s=1.0e12",
            "devices.sigma=1.0",
            "devices.include_compute=true",
            "controller.name=fixed",
            "server.mode=buffered",
            f"server.concurrency={concurrency}",
            f"server.buffer_size={buffer_size}",
        ],
    )


def time_run(sc) -> tuple[float, float, float]:
    """Seconds of ``run_scenario``; the last aggregation's virtual time and mean staleness."""
    folder = Path(tempfile.mkdtemp(prefix="bench_async_"))
    try:
        t0 = time.perf_counter()
        result = run_scenario(sc, folder / "run")
        wall_s = time.perf_counter() - t0
        rounds = result.rounds
        staleness = float((rounds["mean_staleness"] * rounds["n_arrived"]).sum())
        return wall_s, float(rounds["t_end_s"].iloc[-1]), staleness / rounds["n_arrived"].sum()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def time_engine(sc) -> tuple[float, float, float]:
    """Seconds of ``Simulator.run_round`` over the aggregations; end time, mean staleness."""
    sim = Simulator(sc, make_learner(sc))
    staleness = arrived = 0.0
    t0 = time.perf_counter()
    for t in range(sc.rounds):
        record = sim.run_round(t).record
        staleness += record["mean_staleness"] * record["n_arrived"]
        arrived += record["n_arrived"]
    return time.perf_counter() - t0, float(record["t_end_s"]), staleness / arrived


def time_plain_loop(sc) -> tuple[float, float, float, float]:
    """The same updates in a plain heapq loop (module docstring); seconds, end time, mean
    staleness, and the seconds of those spent drawing the channel's rows (the same draws as the
    engine's: one Rayleigh block per ``channel.block_rounds`` aggregations, N clients each)."""
    sim = Simulator(sc, make_learner(sc))  # the cell, device speeds and payload of the run
    n, c, m = sc.n_clients, sc.server.concurrency, sc.server.buffer_size
    lr, a = sc.server.server_lr, sc.server.staleness_a
    plan = RoundPlan(0, np.array([0]), sim.rank, 1.0, math.nan, c)
    report = sim.learner.dispatch(plan, keep_start=False)[0]
    bits, flops = report.bits_up, report.flops
    flops_per_s = [float(f) for f in sim.flops_per_s]
    bandwidth_hz = sc.channel.bandwidth_hz
    deltas = np.random.default_rng(0).standard_normal((n, VECTOR_SIZE))
    x = np.zeros(VECTOR_SIZE)

    t0 = time.perf_counter()
    now, service, version, j = 0.0, 0.0, 0, 0
    idle = list(range(n))
    computing: list[tuple[float, int]] = []  # (compute end [s], client)
    ends: list[tuple[float, int]] = []  # (attained service at its end F_k, client)
    started: dict[int, tuple[int, float]] = {}  # client -> (version, SNR)
    buffer: list[tuple[int, int]] = []  # (client, version)
    total_staleness = 0
    snr_row = None
    channel_s = 0.0
    while version < sc.rounds:
        if snr_row is None:  # a new aggregation's channel row
            t_channel = time.perf_counter()
            snr_row = sim.channel.observe(version, now)[0]
            channel_s += time.perf_counter() - t_channel
        for _ in range(min(c - len(started), len(idle))):  # refill the free slots
            rng = round_generator(sc.seed, stream="dispatch", round_index=j)
            client = idle.pop(int(rng.integers(len(idle))))
            j += 1
            started[client] = (version, float(snr_row[client]))
            heapq.heappush(computing, (now + flops / flops_per_s[client], client))
        upload_end = now + max(ends[0][0] - service, 0.0) * len(ends) if ends else math.inf
        compute_end = computing[0][0] if computing else math.inf
        next_s = min(upload_end, compute_end)
        if ends:
            service += (next_s - now) / len(ends)
        now = next_s
        if upload_end == next_s:  # an upload ends before one starts at the same time
            client = heapq.heappop(ends)[1]
            buffer.append((client, started.pop(client)[0]))
            if len(buffer) >= m:
                for k, v in buffer:
                    tau = version - v
                    total_staleness += tau
                    x += (lr * (tau + 1.0) ** (-a) / len(buffer)) * deltas[k]
                    bisect.insort(idle, k)
                buffer = []
                version += 1
                snr_row = None
        else:
            client = heapq.heappop(computing)[1]
            rate_bps = bandwidth_hz * float(spectral_efficiency(started[client][1]))
            need = bits / rate_bps if rate_bps > 0 else math.inf
            heapq.heappush(ends, (service + need, client))
    return time.perf_counter() - t0, now, total_staleness / (sc.rounds * m), channel_s


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000, help="N (default 10,000)")
    parser.add_argument("--concurrency", type=int, default=1_000, help="C (default 1,000)")
    parser.add_argument("--buffer-size", type=int, default=10, help="FedBuff's M (default 10)")
    parser.add_argument(
        "--updates", type=int, default=50_000, help="client updates (default 50,000)"
    )
    args = parser.parse_args(argv)
    aggregations = max(1, args.updates // args.buffer_size)
    updates = aggregations * args.buffer_size
    sc = scenario_for(args.clients, args.concurrency, args.buffer_size, aggregations)
    import pandas  # noqa: F401  (a one-off import that run_scenario's loading would time)

    print(
        f"bench_async: {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}, surrogate learner, CPU only"
    )
    print(
        f"N = {args.clients}, C = {args.concurrency}, M = {args.buffer_size}: "
        f"{aggregations} aggregations, {updates} client updates"
    )
    t_plain, end_plain, stale_plain, channel_s = time_plain_loop(sc)
    t_engine, end_engine, stale_engine = time_engine(sc)
    t_run, end_run, stale_run = time_run(sc)
    print(
        f"{'':10} | {'time s':>8} {'updates/s':>10} {'vs plain loop':>13} | "
        f"{'without the channel draws':>25}"
    )
    for name, wall_s in (("plain loop", t_plain), ("engine", t_engine), ("run", t_run)):
        rest_s = wall_s - channel_s
        print(
            f"{name:10} | {wall_s:8.3f} {updates / wall_s:10.0f} {wall_s / t_plain:12.2f}x | "
            f"{rest_s:8.3f} s {updates / rest_s:8.0f}/s {rest_s / (t_plain - channel_s):5.2f}x"
        )
    print(f"the channel draws (the same in all three, timed in the plain loop): {channel_s:.2f} s")
    same = all(
        math.isclose(end, end_plain, rel_tol=1e-9) and math.isclose(s, stale_plain, rel_tol=1e-9)
        for end, s in ((end_engine, stale_engine), (end_run, stale_run))
    )
    print(
        f"same virtual end time and mean staleness: {'yes' if same else 'NO'} "
        f"(plain loop {end_plain:.6g} s, {stale_plain:.4g}; engine {end_engine:.6g} s, "
        f"{stale_engine:.4g}; run {end_run:.6g} s, {stale_run:.4g})"
    )


if __name__ == "__main__":
    main()
