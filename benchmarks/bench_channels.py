"""Throughput of the vectorised channel path vs a per-client, per-round Python loop.

Draws Rayleigh (and Gauss–Markov) SNRs for 10,000 clients × 1,000 rounds through
``Cell.snr_block``, then FDMA rates and upload delays on an equal 1/N share, and reports
client-rounds per second. The baseline computes the same quantities (per-client fading
stream, |h|²/σ², b·B·log2(1+SNR), bits/rate) with plain Python loops on a 200 × 200 subset;
its per-client-round time is scaled up. Prints figures only; asserts nothing about time.

Run: ``python benchmarks/bench_channels.py [--clients N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import numpy as np

from channels import (
    Cell,
    GaussMarkovRayleigh,
    RayleighFading,
    client_generators,
    rate_bps,
    upload_delay_s,
)

BANDWIDTH_HZ = 10e6
PAYLOAD_BITS = 9_437_184.0  # rank-8 LoRA on ViT-Base q,v at 32 bit/value
MEAN_SNR_DB = 10.0
SEED = 1


def vectorised(cell: Cell, n_rounds: int, rounds_per_block: int) -> tuple[float, float]:
    """Seconds for all blocks; returns (elapsed_s, checksum)."""
    n = cell.n_clients
    share = np.full(n, 1.0 / n)
    checksum = 0.0
    last = None
    t0 = time.perf_counter()
    for block in range(n_rounds // rounds_per_block):
        snr, last = cell.snr_block(block, rounds_per_block, initial=last)
        rate = rate_bps(share, BANDWIDTH_HZ, snr)
        delay = upload_delay_s(PAYLOAD_BITS, share, BANDWIDTH_HZ, snr)
        checksum += float(rate[-1, -1]) + float(delay[-1, -1])
    return time.perf_counter() - t0, checksum


def python_loop(cell: Cell, n_clients: int, n_rounds: int) -> tuple[float, np.ndarray]:
    """Seconds for the straightforward loop over clients and rounds (Rayleigh), and delays."""
    gain = cell.large_scale_power_gain
    sigma2 = cell.noise_power_w
    share = 1.0 / cell.n_clients
    inv_sqrt2 = 1.0 / math.sqrt(2.0)
    t0 = time.perf_counter()
    rates = [[0.0] * n_clients for _ in range(n_rounds)]
    delays = [[0.0] * n_clients for _ in range(n_rounds)]
    for k in range(n_clients):
        (g,) = client_generators(cell.seed, [k], stream="fading", block=0)
        for t in range(n_rounds):
            s = complex(g.standard_normal() * inv_sqrt2, g.standard_normal() * inv_sqrt2)
            snr = gain[k] * abs(s) ** 2 / sigma2
            rate = share * BANDWIDTH_HZ * math.log2(1.0 + snr)
            rates[t][k] = rate
            delays[t][k] = PAYLOAD_BITS / rate if rate > 0 else math.inf
    return time.perf_counter() - t0, np.array(delays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1_000)
    parser.add_argument("--loop-clients", type=int, default=200)
    parser.add_argument("--loop-rounds", type=int, default=200)
    args = parser.parse_args()

    n, r = args.clients, args.rounds
    print(
        f"bench_channels: {n} clients x {r} rounds, B = {BANDWIDTH_HZ:g} Hz, "
        f"bits = {PAYLOAD_BITS:g}, numpy {np.__version__}, {platform.processor() or 'cpu'}"
    )
    cell = Cell.from_mean_snr(mean_snr_db=MEAN_SNR_DB, n_clients=n, seed=SEED)

    loop_cr = args.loop_clients * args.loop_rounds
    loop_s, loop_delay = python_loop(cell, args.loop_clients, args.loop_rounds)
    loop_rate = loop_cr / loop_s
    print(
        f"python loop  ({args.loop_clients} clients x {args.loop_rounds} rounds, Rayleigh): "
        f"{loop_s:.3f} s, {loop_rate:,.0f} client-rounds/s "
        f"(scaled per client-round to {n} x {r}: {n * r / loop_rate:.1f} s)"
    )

    # Same numbers: the loop draws the same per-client streams in the same order.
    snr, _ = cell.snr_block(0, args.loop_rounds)
    vec_delay = upload_delay_s(PAYLOAD_BITS, np.full(n, 1.0 / n), BANDWIDTH_HZ, snr)
    diff = np.max(np.abs(vec_delay[:, : args.loop_clients] / loop_delay - 1.0))
    print(f"check: loop vs vectorised delays on the subset, max relative difference {diff:.1e}")

    cases = [
        ("rayleigh", RayleighFading(), r),
        ("rayleigh", RayleighFading(), 100),
        ("gauss_markov(0.9)", GaussMarkovRayleigh(0.9), r),
        ("gauss_markov(0.9)", GaussMarkovRayleigh(0.9), 100),
    ]
    for name, fading, per_block in cases:
        if r % per_block:
            continue
        vec_s, _ = vectorised(cell.with_fading(fading), r, per_block)
        vec_rate = n * r / vec_s
        print(
            f"vectorised   {name:<18} blocks of {per_block:>4} rounds: {vec_s:6.2f} s, "
            f"{vec_rate:,.0f} client-rounds/s, {vec_rate / loop_rate:,.0f}x the loop"
        )


if __name__ == "__main__":
    main()
