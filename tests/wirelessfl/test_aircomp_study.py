"""The AirComp reproductions (``wirelessfl reproduce aircomp-latency-*``): every grid point
valid, and a short network-only run whose summary agrees with n / B and with the run tables."""

from __future__ import annotations

import math

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
        assert set(spec.sweeps) == {"aircomp", "fdma_dense", "fdma_topk"}


def test_latency_study_runs_and_agrees_with_the_tables(tmp_path):
    result = reproduce("aircomp-latency-k", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"]
    assert len(table) == 12 and table.finished.all()
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
