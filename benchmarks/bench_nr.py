"""The NR uplink's cost per round against FDMA's Shannon uploads, measured in the same run.

One round: K = 10 training clients, P = 2 Mbit each, on a 20 MHz carrier at 30 kHz (51 PRBs),
equal shares, SNRs drawn once from Rayleigh fading around 10 dB. Times, after a warm-up (the
first round reads Sionna's BLER tables and builds the links of each PRB count: reported
apart):

- FDMA: ``channels.upload_delay_s`` on the shares (the baseline);
- NR ``fidelity: fast`` (ILLA: on block fading O(T) draws per upload, on ``fading: iid``
  whole HARQ cycles in chunks);
- NR ``fidelity: slot`` with ILLA and with OLLA, block and ``fading: iid``: every slot of every
  upload, also per slot-client (one client's slot);
- frequency-selective links (``coherence_bandwidth_hz`` 1 MHz: 17 subbands of 3 PRBs, EESM)
  in both fidelities, and the ``pf`` PRB policy (slot only) on the flat and the selective
  carrier;

then a whole network-only run of 200 rounds with each uplink. Prints figures only.

Run: ``python benchmarks/bench_nr.py [--rounds R] [--repeats N]``
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from channels import make_fading, upload_delay_s
from channels.nr_bler import sionna_version
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.sim.runner import run_scenario
from wirelessfl.uplinks.nr import NrUplink
from wirelessfl.uplinks.nr_settings import NrSettings

B_HZ = 20.0e6
K = 10
BITS = 2.0e6
MEAN_SNR_DB = 10.0


def _median_s(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _nr_round(settings: NrSettings, shares, snr, bits, repeats: int) -> tuple[float, float, float]:
    """(first round [s], median round [s], slots per round) of one NR configuration."""
    uplink = NrUplink(settings, B_HZ, seed=1, fading=make_fading("rayleigh"))  # iid, subbands
    uplink.start(K)
    counter = iter(range(10**9))

    def one_round() -> np.ndarray:
        uplink.prepare_uploads(next(counter), np.arange(K))
        return uplink.upload_s(shares, snr, bits, bits / 32)

    t0 = time.perf_counter()
    one_round()
    first_s = time.perf_counter() - t0
    slots = float(np.sum(one_round()) / uplink.slot_s)
    return first_s, _median_s(one_round, repeats), slots


def _run_s(uplink: str, rounds: int, where: Path) -> float:
    data = {
        "name": f"bench-{uplink}",
        "seed": 1,
        "n_clients": 100,
        "n_scheduled": K,
        "rounds": rounds,
        "eval_every": rounds,
        "channel": {"bandwidth_hz": B_HZ, "mean_snr_db": MEAN_SNR_DB, "uplink": uplink},
        "controller": {"name": "osfa", "rank": 8, "r_max": 8, "d_th_s": 0.5, "V": 1.0e-3},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[768, 768]] * 4}},
    }
    t0 = time.perf_counter()
    run_scenario(scenario_from_dict(data), where / uplink, progress=False)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(
        f"bench_nr: K = {K}, P = {BITS:g} bit, B = {B_HZ:g} Hz, mean SNR {MEAN_SNR_DB} dB, "
        f"sionna-no-rt {sionna_version()}, numpy {np.__version__}, "
        f"{platform.processor() or 'cpu'}"
    )
    rng = np.random.default_rng(5)
    snr = 10 ** (MEAN_SNR_DB / 10) * rng.exponential(size=K)
    shares, bits = np.full(K, 1.0 / K), np.full(K, BITS)
    fdma_s = _median_s(lambda: upload_delay_s(bits, shares, B_HZ, snr), args.repeats * 10)
    print(f"FDMA (Shannon) round: {fdma_s * 1e6:9.1f} us (baseline)")
    cases = [
        ("fast, illa", NrSettings(fidelity="fast")),
        ("fast, illa, iid", NrSettings(fidelity="fast", fading="iid")),
        ("slot, illa", NrSettings(fidelity="slot")),
        ("slot, olla", NrSettings(fidelity="slot", link_adaptation="olla")),
        ("slot, illa, iid", NrSettings(fidelity="slot", fading="iid")),
        ("fast, selective", NrSettings(fidelity="fast", coherence_bandwidth_hz=1.0e6)),
        ("slot, selective", NrSettings(fidelity="slot", coherence_bandwidth_hz=1.0e6)),
        ("slot, pf", NrSettings(fidelity="slot", prb_policy="pf")),
        (
            "slot, pf, selective",
            NrSettings(fidelity="slot", prb_policy="pf", coherence_bandwidth_hz=1.0e6),
        ),
    ]
    for name, settings in cases:
        first_s, round_s, slots = _nr_round(settings, shares, snr, bits, args.repeats)
        print(
            f"NR {name:<20} round: {round_s * 1e3:9.3f} ms ({round_s / fdma_s:,.0f}x FDMA), "
            f"{slots:,.0f} slot-clients, {round_s / slots * 1e6:.2f} us per slot-client; "
            f"first round {first_s:.2f} s"
        )
    with tempfile.TemporaryDirectory() as tmp:
        fdma_run = _run_s("fdma", args.rounds, Path(tmp))
        nr_run = _run_s("nr", args.rounds, Path(tmp))
    print(
        f"network-only run, {args.rounds} rounds, osfa: fdma {fdma_run:.2f} s, "
        f"nr (fast) {nr_run:.2f} s ({nr_run / fdma_run:.2f}x)"
    )


if __name__ == "__main__":
    main()
