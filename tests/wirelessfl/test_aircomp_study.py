"""The AirComp reproductions (``wirelessfl reproduce aircomp-latency-*``): every grid point
valid, and a short network-only run whose summary agrees with n / B and with the run tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wirelessfl.results import load
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce


def test_the_reproductions_are_listed_and_pair_with_aircomp():
    names = [name for name in REPRODUCTIONS if name.startswith("aircomp-")]
    assert names == ["aircomp-latency-k", "aircomp-latency-snr", "aircomp-digits"]
    digits = REPRODUCTIONS["aircomp-digits"]
    assert digits.reference.value == {"channel.uplink": "fdma"} and digits.seeds >= 3
    for name in names[:2]:
        spec = REPRODUCTIONS[name]
        assert spec.seeds >= 5 and spec.reference.value == {"channel.uplink": "aircomp"}
        assert set(spec.sweeps) == {
            "aircomp",
            "fdma_dense",
            "fdma_dense_4bit",
            "fdma_soft",
            "fdma_topk",
            "fdma_topk_4bit",
        }


def test_latency_study_runs_and_agrees_with_the_tables(tmp_path):
    result = reproduce("aircomp-latency-k", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"]
    assert len(table) == 24 and table.finished.all()
    air = table[table.sweep == "aircomp"]
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        sent = run.clients[run.clients.status == "arrived"]
        if row["sweep"] == "aircomp":  # n / B: the dense values over 1 MHz, whatever K
            assert row["mean_delay_s"] == pytest.approx((sent.bits / 32 / 1.0e6).max())
            assert row["mean_aircomp_mse"] == pytest.approx(run.rounds.aircomp_mse.mean())
        else:
            assert math.isnan(row["mean_aircomp_mse"])
            assert row["mean_delay_s"] > air.mean_delay_s.max()
    assert air.mean_delay_s.nunique() == 1
    assert all(p.exists() and p.stat().st_size > 0 for p in result["figures"])


def test_compressed_fdma_uploads_take_their_share_of_the_dense_time(tmp_path):
    """FDMA's equal-delay shares make D^t proportional to the bits sent (same channel draws
    at the same K and seed): top-k and SOFT send ceil(O n_l) values of 32 bits per adapted
    module l, the quantised runs b bits per value plus one 32-bit scale per module."""
    result = reproduce("aircomp-latency-k", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"].set_index(["sweep", "n_scheduled"])
    modules, per_module = 24, 8 * (768 + 768)  # rank 8 on 24 modules of 768 x 768
    sparse = modules * math.ceil(0.1 * per_module)
    bits = {
        "fdma_dense": 32 * modules * per_module,
        "fdma_dense_4bit": 4 * modules * per_module + 32 * modules,
        "fdma_soft": 32 * sparse,
        "fdma_topk": 32 * sparse,
        "fdma_topk_4bit": 4 * sparse + 32 * modules,
    }
    for sweep, sent_bits in bits.items():
        run = load(result["folder"] / sweep / table.loc[(sweep, 5), "run"])
        assert (run.clients.bits == sent_bits).all(), sweep
        for k in (5, 10, 20, 50):
            ratio = (
                table.loc[(sweep, k), "mean_delay_s"] / table.loc[("fdma_dense", k), "mean_delay_s"]
            )
            assert ratio == pytest.approx(sent_bits / bits["fdma_dense"], rel=1e-9), (sweep, k)


def test_fdma_energy_floor_is_the_vanishing_power_limit(tmp_path):
    """mean_energy_floor_j against an independent evaluation of each round's energy at a tiny
    power factor a: client k spends a p_k D^t with D^t = sum_j bits_j / (B log2(1 + a SNR_j)),
    whose a = 1 value is the simulated upload time and energy."""
    result = reproduce("aircomp-latency-snr", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"]
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        energy_j = run.clients.transmit_energy_j.groupby(run.clients["round"]).mean()
        assert row["mean_client_transmit_energy_j"] == pytest.approx(energy_j.mean())
        if row["sweep"] == "aircomp":
            assert math.isnan(row["mean_energy_floor_j"])
            continue
        floors = []
        for _, sent in run.clients.groupby("round"):
            snr = 10.0 ** (sent.snr_db.to_numpy() / 10.0)
            power_w, bits = sent.tx_power_w.to_numpy(), sent.bits.to_numpy()

            def delay_s(a, snr=snr, bits=bits):
                return float(np.sum(bits * np.log(2.0) / (1.0e6 * np.log1p(a * snr))))

            assert delay_s(1.0) == pytest.approx(sent.upload_s.max(), rel=1e-9)
            assert sent.transmit_energy_j.to_numpy() == pytest.approx(power_w * delay_s(1.0))
            floors.append(float(np.mean(1e-9 * power_w * delay_s(1e-9))))
        assert row["mean_energy_floor_j"] == pytest.approx(np.mean(floors), rel=1e-6)
        assert row["mean_energy_floor_j"] < row["mean_client_transmit_energy_j"]
