"""Columns, trend table and figures of the energy reproductions (``wirelessfl reproduce
energy-min-*``; Yang et al., "Energy Efficient Federated Learning Over Wireless Communication
Networks", arXiv:1911.02417).

:func:`energy_columns` reads a run's energy per round from ``rounds.csv``; :func:`trend_table`
tests, per scheme, whether the energy moves one way between neighbouring values of a swept key
(the completion-time limit T, the scheduled devices K), seed by seed; :func:`draw_energy` draws
the energy per round against that key, one line per scheme. Importing this module imports
neither pandas nor matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import save_figure, seed_band_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SCHEME_KEY", "draw_energy", "energy_columns", "trend_table"]

#: the config key that names an energy scheme (the method of these reproductions)
SCHEME_KEY = "controller.energy_scheme"


def energy_columns(run, target_accuracy: float | None = None) -> dict[str, float]:
    """``STUDY_ENERGY_COLUMNS`` (``wirelessfl.results.columns``) of one loaded run: its mean
    energy per round [J] (all scheduled devices, compute + transmit, and each part) and the
    rounds whose limit T was below the least achievable round time (``solver_fallback``)."""
    rounds = run.rounds
    compute_j = rounds["compute_energy_j"].astype(float)
    transmit_j = rounds["transmit_energy_j"].astype(float)
    return {
        "round_energy_j": float((compute_j + transmit_j).mean()),
        "round_compute_energy_j": float(compute_j.mean()),
        "round_transmit_energy_j": float(transmit_j.mean()),
        "fallback_rounds": float((rounds["solver_fallback"] > 0).sum()),
    }


def trend_table(table: pd.DataFrame, x_key: str, metric: str = "round_energy_j") -> pd.DataFrame:
    """Per scheme and pair of neighbouring ``x_key`` values x_i < x_{i+1}: the per-seed
    differences ``metric``(x_{i+1}) - ``metric``(x_i) of the same scheme and seed, their 95 %
    t-interval and verdict (:func:`wirelessfl.study.paired.verdict`: "below" means the metric
    falls as x grows). Columns ``scheme``, ``x_key``, ``x_from``, ``x_to``, the verdict's, and
    ``diffs`` (in seed order). ``table``: one row per run with ``SCHEME_KEY``, ``x_key``,
    ``seed`` and ``metric``."""
    import pandas as pd

    from wirelessfl.study.paired import verdict

    rows = []
    finished = table[table["finished"].astype(bool)] if "finished" in table else table
    for scheme, part in finished.groupby(SCHEME_KEY, sort=False):
        wide = part.pivot_table(index="seed", columns=x_key, values=metric, aggfunc="first")
        xs = sorted(wide.columns)
        for lo, hi in zip(xs, xs[1:], strict=False):
            diffs = (wide[hi] - wide[lo]).dropna()
            rows.append(
                {
                    "scheme": scheme,
                    "x_key": x_key,
                    "x_from": lo,
                    "x_to": hi,
                    **verdict(diffs.tolist()),
                    "diffs": tuple(float(d) for d in diffs),
                }
            )
    return pd.DataFrame(rows)


def _energy_points(runs: list, x_key: str) -> pd.DataFrame:
    """One row per run: ``scheme``, ``x`` and ``round_energy_j``."""
    import pandas as pd

    from wirelessfl.results.groups import config_value

    return pd.DataFrame(
        {
            "scheme": str(config_value(run, SCHEME_KEY)),
            "x": float(config_value(run, x_key)),
            "round_energy_j": energy_columns(run)["round_energy_j"],
        }
        for run in runs
    )


def draw_energy(
    stem: str, x_key: str, xlabel: str, title: str
) -> Callable[[Path, list], list[Path]]:
    """A reproduction's drawing: the energy per round of all scheduled devices against
    ``x_key``, one line per scheme, mean over seeds with min–max shaded (``stem.png``, energy
    on a log scale)."""

    def draw(out: Path, runs: list) -> list[Path]:
        fig = seed_band_figure(
            _energy_points(runs, x_key),
            line="scheme",
            value="round_energy_j",
            xlabel=xlabel,
            ylabel="energy per round, all scheduled devices [J]",
            title=title,
        )
        return [save_figure(fig, out / f"{stem}.png")]

    return draw
