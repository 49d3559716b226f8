"""Event-log invariants and the per-round records derived from events."""

from __future__ import annotations

import numpy as np
import pytest

from channels import rate_bps
from wirelessfl.sim import run_scenario


@pytest.fixture
def result(make_scenario, tmp_path):
    return run_scenario(make_scenario(), tmp_path / "run")


def test_time_never_goes_back(result):
    times = result.events["time_s"].to_numpy()
    assert np.all(np.diff(times) >= 0)
    starts = result.rounds["t_start_s"].to_numpy()
    ends = result.rounds["t_end_s"].to_numpy()
    assert np.all(ends >= starts)
    np.testing.assert_array_equal(starts[1:], ends[:-1])  # next round opens at the aggregation


def test_every_scheduled_client_computes_then_uploads(result):
    ev = result.events
    for t, group in ev.groupby("round"):
        clients = group[group.client >= 0]
        for cid, cg in clients.groupby("client"):
            kinds = list(cg.kind)
            assert kinds == ["compute_start", "compute_end", "upload_start", "upload_end"], (t, cid)
        n_sched = int(result.rounds.loc[result.rounds["round"] == t, "n_scheduled"].iloc[0])
        assert clients.client.nunique() == n_sched
        last_upload = clients.loc[clients.kind == "upload_end", "time_s"].max()
        aggregate = group.loc[group.kind == "aggregate", "time_s"].iloc[0]
        assert aggregate >= last_upload
        assert group.kind.iloc[0] == "broadcast" and group.kind.iloc[-1] == "aggregate"


def test_delay_is_slowest_upload_and_equal_delay_shares_finish_together(result):
    cl = result.clients
    for t, group in cl.groupby("round"):
        row = result.rounds.loc[result.rounds["round"] == t].iloc[0]
        assert row.delay_s == pytest.approx(group.upload_s.max(), rel=1e-12)
        # eq. (31): shares ∝ 1/log2(1+SNR) and equal payloads => identical upload durations
        assert np.ptp(group.upload_s.to_numpy()) <= 1e-9 * group.upload_s.max()
        # independent recomputation of one client's upload time from its share and SNR
        first = group.iloc[0]
        snr = 10 ** (first.snr_db / 10)
        expected = first.bits / rate_bps(first.share, 1.0e6, snr)
        assert first.upload_s == pytest.approx(expected, rel=1e-9)
        assert group.share.sum() == pytest.approx(1.0, abs=1e-9)


def test_queue_recursion_matches_eq21(result):
    r = result.rounds
    d_th = result.config["controller"]["d_th_s"]
    expected_after = np.maximum(r.queue + r.delay_s - d_th, 0.0)
    np.testing.assert_allclose(r.queue_after, expected_after, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(r.queue.to_numpy()[1:], r.queue_after.to_numpy()[:-1])
    assert r.queue.iloc[0] == 0.0


def test_bits_up_is_value_bits_of_arrivals(result):
    r = result.rounds
    cl = result.clients
    per_round = cl[cl.status == "arrived"].groupby("round").bits.sum()
    np.testing.assert_allclose(r.set_index("round").bits_up, per_round)
    # v * round(O r (d + l)) per layer; layers (64, 64) and (64, 32)
    row = r.iloc[0]
    kept = sum(round(row.sparsification * row["rank"] * (d + l)) for d, l in [(64, 64), (64, 32)])
    assert per_round.iloc[0] == pytest.approx(row.n_arrived * 32 * kept)


def test_accuracy_only_on_evaluated_rounds(result):
    r = result.rounds
    evaluated = r.dropna(subset=["accuracy"])["round"].to_list()
    assert evaluated == [4, 9, 14, 19, 24, 29, 34, 39]


def test_surrogate_payload_is_the_soft_budget_per_client(make_scenario):
    """Network-only sizes: round(O_k r_k (d + l)) values per layer, index bits per layer,
    downloads of the dense rank-r_k LoRA, each client with its own rank and ratio."""
    from channels import index_overhead_bits
    from wirelessfl.learners.base import RoundPlan
    from wirelessfl.learners.surrogate import SurrogateLearner

    shapes = [[768, 768], [64, 32], [5, 3], [512, 1024]]
    sc = make_scenario(**{"learner.shape.layer_shapes": shapes, "payload.index_overhead": True})
    learner = SurrogateLearner.from_scenario(sc)
    rng = np.random.default_rng(0)
    clients = np.arange(8)
    ranks = rng.integers(1, 9, 8)
    ratios = np.concatenate([[0.0, 1.0, 0.5], rng.uniform(0, 1, 5)])
    reports = learner.local_round(RoundPlan(0, clients, ranks, ratios, 1.0, 8))
    for c, r, o in zip(clients, ranks, ratios, strict=True):
        n = [int(r) * (d + ell) for d, ell in shapes]
        k = [round(float(o) * x) for x in n]
        index = sum(int(index_overhead_bits(a, b)) for a, b in zip(k, n, strict=True))
        rep = reports[int(c)]
        assert (rep.n_values, rep.n_total, rep.index_bits) == (sum(k), sum(n), index)
        assert rep.bits_up == 32 * sum(k) + index and rep.bits_down == 32 * sum(n)
        assert (rep.rank, rep.ratio) == (r, o)

    dense = SurrogateLearner.from_scenario(make_scenario(**{"compression.sparsifier": "none"}))
    report = dense.local_round(RoundPlan(0, [3], 4, 0.25, 1.0, 1))[3]
    assert report.n_values == report.n_total and report.ratio == 1.0  # ILoRA sends it all
