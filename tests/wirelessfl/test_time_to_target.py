"""Time-to-target: the first evaluated round at or above the target, by hand."""

from __future__ import annotations

import math

import pandas as pd

from wirelessfl.results.summary import time_to_target


def _rounds() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "round": [0, 1, 2, 3, 4],
            "t_end_s": [1.0, 2.5, 4.0, 6.0, 7.5],
            "bits_up": [10.0, 20.0, 30.0, 40.0, 50.0],
            "accuracy": [0.2, math.nan, 0.61, math.nan, 0.7],
        }
    )


def test_first_evaluated_round_reaching_the_target():
    got = time_to_target(_rounds(), 0.6)
    assert got == {"time_to_target_s": 4.0, "bits_to_target": 60.0}  # rounds 0..2


def test_target_equal_to_an_accuracy_counts_as_reached():
    assert time_to_target(_rounds(), 0.7) == {"time_to_target_s": 7.5, "bits_to_target": 150.0}


def test_unreached_target_and_empty_table_are_nan():
    for rounds in (_rounds(), None, _rounds().iloc[:0]):
        got = time_to_target(rounds, 0.9)
        assert math.isnan(got["time_to_target_s"]) and math.isnan(got["bits_to_target"])
