"""With ``faults.deadline_s``, D^t (``delay_s``) counts the uploads the deadline cut, up to it.

D^t is the longest upload time, an upload cut at the deadline counting from its start to the
deadline (``wirelessfl.sim.events.round_timing``, docs/simulator.md step 8); the virtual queue
takes that D^t (eq. 21). The expected values here are recomputed from ``events.csv`` alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scenario_helpers import small_scenario

from wirelessfl.sim import run_scenario

D_TH = 0.5  # small_scenario's controller.d_th_s
#: lognormal device speeds (compute ~1 s, like the uploads): with TSFA's equal-delay shares
#: some clients are cut while computing, some while uploading
COMPUTE = {
    "devices.include_compute": True,
    "devices.kind": "lognormal",
    "devices.median_flops_per_s": 1.0e13,
    "devices.sigma": 1.0,
}


def _by_hand(events: pd.DataFrame) -> pd.DataFrame:
    """Per round, from the events: the arrivals' longest upload, the cut uploads' longest span
    to the deadline (the straggler event's time), and the number cut before uploading."""
    rows = []
    for t, g in events.groupby("round"):
        up = g[g.kind == "upload_start"]
        start = dict(zip(up.client, up.time_s, strict=True))
        ends = g[g.kind == "upload_end"]
        cut = g[g.kind == "straggler"]
        arrived = [time - start[c] for c, time in zip(ends.client, ends.time_s, strict=True)]
        uploading = [
            time - start[c] for c, time in zip(cut.client, cut.time_s, strict=True) if c in start
        ]
        rows.append(
            {
                "round": t,
                "arrived_max": max(arrived, default=0.0),
                "cut_max": max(uploading, default=0.0),
                "n_cut_uploading": len(uploading),
                "n_cut_before": len(cut) - len(uploading),
                "t_cut": cut.time_s.max() if len(cut) else math.nan,
                "t0": g.time_s[g.kind == "broadcast"].iloc[0],
            }
        )
    return pd.DataFrame(rows).set_index("round")


def _check_queue(r: pd.DataFrame) -> None:
    """queue_after = max(Q^t + D^t - D_th, 0) with the recorded D^t, and it is the next Q."""
    want = np.maximum(r.queue + r.delay_s - D_TH, 0.0)
    np.testing.assert_allclose(r.queue_after, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.queue.iloc[1:], r.queue_after.iloc[:-1], rtol=0, atol=0)


def test_a_cut_round_lasts_and_reports_the_deadline(tmp_path):
    # no compute, instant downlink (the paper): every upload starts at the broadcast, and with
    # equal-delay shares (eq. 31) they all end together, so a cut round has no arrival at all
    # (D^t was 0 there before: the queue fell in the rounds whose channel was worst)
    deadline = 0.6  # above D_TH, so every cut round grows the queue by deadline - D_th
    res = run_scenario(small_scenario(**{"faults.deadline_s": deadline}), tmp_path / "cut")
    r = res.rounds.set_index("round")
    hand = _by_hand(res.events)
    late = r.n_stragglers > 0
    assert late.sum() >= 3 and (~late).sum() >= 3
    # every cut client was uploading (nothing else takes time), cut at t0 + deadline
    assert (hand.n_cut_before == 0).all()
    np.testing.assert_allclose(hand.t_cut[late], hand.t0[late] + deadline, rtol=1e-12)
    # D^t = deadline = completion_s where anyone was cut; the arrivals alone said less
    np.testing.assert_allclose(r.delay_s[late], deadline, rtol=1e-12)
    np.testing.assert_allclose(r.completion_s[late], deadline, rtol=1e-12)
    assert (hand.arrived_max[late] < deadline).all()
    np.testing.assert_allclose(
        r.queue_after[late], r.queue[late] + deadline - D_TH, rtol=1e-12, atol=1e-12
    )
    # rounds nobody was cut in are the paper's D^t: the longest arrived upload
    np.testing.assert_allclose(r.delay_s[~late], hand.arrived_max[~late], rtol=1e-12)
    _check_queue(res.rounds)


def test_delay_is_the_longest_upload_span_to_the_deadline(tmp_path):
    free = run_scenario(small_scenario(**COMPUTE), tmp_path / "free").rounds
    deadline = float(np.median(free.completion_s))
    res = run_scenario(small_scenario(**COMPUTE, **{"faults.deadline_s": deadline}), tmp_path / "d")
    r = res.rounds.set_index("round")
    hand = _by_hand(res.events)
    assert (hand.n_cut_uploading > 0).sum() >= 3  # cut while uploading
    assert (hand.n_cut_before > 0).sum() >= 3  # cut while still computing
    want = np.maximum(hand.arrived_max, hand.cut_max)
    np.testing.assert_allclose(r.delay_s, want, rtol=1e-12, atol=1e-12)
    # a cut upload counts to the deadline, so D^t exceeds the arrivals' where it ran longer
    # than any arrival (or nobody arrived); a client cut while computing adds no upload time
    longer = hand.cut_max > hand.arrived_max
    assert longer.sum() >= 1
    assert (r.delay_s[longer] > hand.arrived_max[longer]).all()
    computing_only = (hand.n_cut_before > 0) & (hand.n_cut_uploading == 0)
    assert computing_only.sum() >= 1
    np.testing.assert_allclose(r.delay_s[computing_only], hand.arrived_max[computing_only])
    assert (r.delay_s <= r.completion_s * (1 + 1e-12)).all()
    assert (r.queue > 0).sum() >= 3
    _check_queue(res.rounds)


def test_a_run_without_a_deadline_is_unchanged(tmp_path):
    res = run_scenario(small_scenario(rounds=10), tmp_path / "free")
    r = res.rounds.set_index("round")
    hand = _by_hand(res.events)
    assert (r.n_stragglers == 0).all()
    np.testing.assert_allclose(r.delay_s, hand.arrived_max, rtol=1e-12)
    _check_queue(res.rounds)
