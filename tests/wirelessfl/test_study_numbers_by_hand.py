"""The study numbers against hand arithmetic: ``summarize`` (index.csv's summary columns), the
frontier table, the Pareto front and a real sweep's index.

Every expected value is written out below from small hand-made tables (or, for the sweep, from
the run folders' rounds.csv read with the csv module and summed in plain Python), never taken
from ``summarize`` itself.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.config.loader import scenario_yaml
from wirelessfl.results import load
from wirelessfl.results.summary import summarize, time_to_target
from wirelessfl.results.tables import frontier_table, pareto_front
from wirelessfl.study import load_study, run_sweep
from wirelessfl.study.folder import folder_summary

NAN = math.nan
COLUMNS = ["round", "t_end_s", "delay_s", "sparsification", "bits_up", "queue_after", "rank"]


def _rounds(rows: list[tuple]) -> pd.DataFrame:
    """A rounds table from (delay_s, sparsification, bits_up, queue_after, rank, accuracy)
    rows; ``t_end_s`` is the running sum of the delays."""
    frame = pd.DataFrame(
        rows,
        columns=["delay_s", "sparsification", "bits_up", "queue_after", "rank", "accuracy"],
    )
    frame.insert(0, "round", range(len(rows)))
    frame.insert(1, "t_end_s", frame["delay_s"].cumsum())
    return frame


#: Four rounds; accuracy evaluated at rounds 1 and 2 only (the last row has none).
FOUR = _rounds(
    [
        (0.5, 1.0, 1000, 0.25, 8, NAN),
        (1.0, 0.5, 2000, 0.0, 8, 0.5),
        (1.5, 0.25, 4000, 0.75, 4, 0.625),
        (5.0, 0.25, 8000, 1.5, 2, NAN),
    ]
)


def test_summarize_by_hand():
    got = summarize(FOUR)
    assert got["rounds_done"] == 4
    assert got["final_accuracy"] == 0.625  # the last evaluated round (2), not the last row
    assert got["mean_delay_s"] == pytest.approx((0.5 + 1.0 + 1.5 + 5.0) / 4)  # 2.0
    assert got["mean_sparsification"] == pytest.approx((1.0 + 0.5 + 0.25 + 0.25) / 4)  # 0.5
    assert got["total_bits_up"] == 15000  # 1000 + 2000 + 4000 + 8000
    assert got["virtual_time_s"] == pytest.approx(8.0)  # t_end_s of the last round
    assert got["final_queue"] == 1.5
    assert got["rank"] == 2


def test_summarize_of_nothing_and_of_a_run_never_evaluated():
    empty = summarize(None)
    assert empty["rounds_done"] == 0
    assert all(math.isnan(v) for k, v in empty.items() if k != "rounds_done")
    one = summarize(_rounds([(2.0, 0.5, 100, 0.0, 4, NAN)]))
    assert math.isnan(one["final_accuracy"])
    assert (one["mean_delay_s"], one["total_bits_up"], one["virtual_time_s"]) == (2.0, 100, 2.0)


def test_time_to_target_by_hand():
    reached = time_to_target(FOUR, 0.55)  # first reached at round 2 (0.625), t_end 3.0 s
    assert reached == {"time_to_target_s": 3.0, "bits_to_target": 7000.0}
    first = time_to_target(FOUR, 0.5)  # round 1 (0.5 >= 0.5), t_end 1.5 s
    assert first == {"time_to_target_s": 1.5, "bits_to_target": 3000.0}
    assert all(math.isnan(v) for v in time_to_target(FOUR, 0.7).values())


# -- frontier -----------------------------------------------------------------------------------
def _run_folder(root: Path, v: float, seed: int, rows: list[tuple]) -> Path:
    """A run folder written by hand: the config of a real scenario, meta.json, rounds.csv."""
    folder = root / f"V={v},seed={seed}"
    folder.mkdir(parents=True)
    scenario = small_scenario(seed=seed, **{"controller.V": v})
    (folder / "config.yaml").write_text(scenario_yaml(scenario))
    (folder / "meta.json").write_text(json.dumps({"seed": seed, "finished": True}))
    _rounds(rows).to_csv(folder / "rounds.csv", index=False)
    return folder


@pytest.fixture
def two_by_two(tmp_path) -> list[Path]:
    """V = 1e-4 and 1e-2, seeds 0 and 1; three rounds each."""
    return [
        # V=1e-4, seed 0: bits 7000, time 3.0 s, mean delay 1.0 s, final accuracy 0.5
        _run_folder(
            tmp_path,
            1e-4,
            0,
            [(0.5, 1.0, 1000, 0, 8, NAN), (1.0, 1.0, 2000, 0, 8, 0.25), (1.5, 1, 4000, 0, 8, 0.5)],
        ),
        # V=1e-4, seed 1: bits 5000, time 6.0 s, mean delay 2.0 s, final accuracy 0.75
        _run_folder(
            tmp_path,
            1e-4,
            1,
            [(1.0, 1.0, 1000, 0, 8, 0.75), (2.0, 1.0, 1000, 0, 8, NAN), (3.0, 1, 3000, 0, 8, NAN)],
        ),
        # V=1e-2, seed 0: bits 3000, time 1.5 s, mean delay 0.5 s, final accuracy 0.375
        _run_folder(
            tmp_path,
            1e-2,
            0,
            [(0.5, 0.5, 1000, 0, 8, NAN), (0.5, 0.5, 1000, 0, 8, NAN), (0.5, 1, 1000, 0, 8, 0.375)],
        ),
        # V=1e-2, seed 1: bits 1000, time 4.5 s, mean delay 1.5 s, final accuracy 0.125
        _run_folder(
            tmp_path,
            1e-2,
            1,
            [(1.5, 0.5, 500, 0, 8, 0.125), (1.5, 0.5, 250, 0, 8, NAN), (1.5, 0.5, 250, 0, 8, NAN)],
        ),
    ]


@pytest.mark.parametrize(
    ("x", "small_v_x", "large_v_x"),
    [
        ("bits", (7000 + 5000) / 2, (3000 + 1000) / 2),
        ("time", (3.0 + 6.0) / 2, (1.5 + 4.5) / 2),
        ("delay", (1.0 + 2.0) / 2, (0.5 + 1.5) / 2),
        ("d_th", 0.5, 0.5),  # the config's controller.d_th_s
        ("rounds_done", 3, 3),
    ],
)
def test_frontier_table_by_hand(two_by_two, x, small_v_x, large_v_x):
    table = frontier_table([load(p) for p in two_by_two], x=x)
    assert list(table["label"]) == ["V=0.0001", "V=0.01"]
    assert list(table["controller.V"]) == [1e-4, 1e-2]
    assert list(table["x"]) == pytest.approx([small_v_x, large_v_x])
    assert list(table["accuracy"]) == pytest.approx([(0.5 + 0.75) / 2, (0.375 + 0.125) / 2])
    assert list(table["acc_min"]) == [0.5, 0.125]
    assert list(table["acc_max"]) == [0.75, 0.375]
    assert list(table["n"]) == [2, 2]


def test_folder_summary_reads_the_folder_by_hand(two_by_two):
    got = folder_summary(two_by_two[1])
    assert (got["rounds_done"], got["total_bits_up"], got["final_accuracy"]) == (3, 5000, 0.75)
    assert got["mean_delay_s"] == pytest.approx(2.0) and got["virtual_time_s"] == 6.0


@pytest.mark.parametrize(
    ("xs", "ys", "front"),
    [
        ([1, 2, 3, 4], [0.5, 0.4, 0.8, 0.8], [0, 2]),  # 1 below 0, 3 only ties 2 at more cost
        ([4, 3, 2, 1], [0.9, 0.7, 0.8, 0.1], [3, 2, 0]),  # ordered by x
        ([1, 1, 2], [0.3, 0.6, 0.6], [1]),  # same x: the higher y; same y: the lower x
    ],
)
def test_pareto_front_by_hand(xs, ys, front):
    assert pareto_front(np.asarray(xs, float), np.asarray(ys, float)).tolist() == front


# -- a real sweep's index -----------------------------------------------------------------------
def _by_hand(rounds_csv: Path) -> dict[str, float]:
    with rounds_csv.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    delays = [float(r["delay_s"]) for r in rows]
    ratios = [float(r["sparsification"]) for r in rows]
    accuracies = [float(r["accuracy"]) for r in rows if r["accuracy"] not in ("", "nan")]
    return {
        "rounds_done": len(rows),
        "final_accuracy": accuracies[-1],
        "mean_delay_s": sum(delays) / len(delays),
        "mean_sparsification": sum(ratios) / len(ratios),
        "total_bits_up": sum(float(r["bits_up"]) for r in rows),
        "virtual_time_s": float(rows[-1]["t_end_s"]),
        "final_queue": float(rows[-1]["queue_after"]),
        "rank": int(rows[-1]["rank"]),
    }


def test_sweep_index_matches_the_run_folders_by_hand(tmp_path):
    overrides = ["rounds=12", "eval_every=5", "n_clients=20", "n_scheduled=5"]
    run_sweep(
        "network_only", grid={"controller.V": [1e-4, 1e-2]}, out_dir=tmp_path, overrides=overrides
    )
    index = load_study(tmp_path).index
    assert len(index) == 2
    for _, row in index.iterrows():
        expected = _by_hand(tmp_path / row["run"] / "rounds.csv")
        assert expected["rounds_done"] == 12 and expected["mean_delay_s"] > 0
        for key, value in expected.items():
            assert row[key] == pytest.approx(value, rel=1e-12), (row["run"], key)
