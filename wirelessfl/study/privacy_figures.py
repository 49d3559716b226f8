"""The privacy reproductions' columns, tables and figures (``wirelessfl reproduce dp-*``,
docs/results.md "Differential privacy").

``dp-ffa`` (digits) and ``dp-minilm`` (MiniLM / Rotten Tomatoes): final accuracy against the
epsilon each run reached, per algorithm, the per-seed accuracy drop of each DP run from the
same algorithm's run without DP, and FFA-LoRA's accuracy minus FedIT's at each noise level;
FFA-LoRA's claim (Sun et al., arXiv:2403.12313, Table 1) is that its drop is smaller than
FedIT's (LoRA's) at the same noise, and its accuracy above. ``dp-sparsifiers``: accuracy
against virtual time of the sparsifiers at one noise level
(:func:`~wirelessfl.study.figures.accuracy_both_ways`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import accuracy_both_ways, save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["draw_dp_ffa", "drop_table", "privacy_columns"]

ALGORITHM = "algorithm.name"
DP_SGD = "privacy.dp_sgd"
SIGMA = "privacy.sample_noise_multiplier"
#: the FFA-LoRA claim's two algorithms: (the one claimed to degrade less, the other)
FFA_PAIR = ("ffa_lora", "fedit")


def privacy_columns(run, target_accuracy: float | None = None) -> dict[str, float]:
    """``STUDY_PRIVACY_COLUMNS`` (``wirelessfl.results.columns``) of one loaded run: the last
    round's DP-SGD and client-level epsilon (inf: that mechanism is off)."""
    rounds = run.rounds
    out = {}
    for column, name in (
        ("dp_sgd_epsilon", "final_dp_sgd_epsilon"),
        ("dp_epsilon", "final_dp_epsilon"),
    ):
        values = rounds[column].dropna() if column in rounds else []
        out[name] = float(values.iloc[-1]) if len(values) else math.inf
    return out


def _noise(row) -> float:
    """sigma of a summary row: 0 without DP-SGD."""
    return float(row[SIGMA]) if bool(row[DP_SGD]) and row.get(SIGMA) == row.get(SIGMA) else 0.0


def drop_table(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``dp_drops``: per algorithm and noise multiplier sigma, the per-seed drop of final
    accuracy from the same algorithm's no-DP run (positive: DP lowered it) with its verdict;
    ``ffa_vs_fedit``: per sigma, the per-seed difference FedIT's drop - FFA-LoRA's drop
    ("above": FFA-LoRA degrades less, the claim); ``ffa_above_fedit``: per sigma (0 too),
    FFA-LoRA's final accuracy - FedIT's ("above": FFA-LoRA ends higher). Verdicts by
    :func:`wirelessfl.study.paired.verdict`; ``diffs`` in seed order."""
    import pandas as pd

    from wirelessfl.study.paired import verdict

    finished = table[table["finished"].astype(bool)] if "finished" in table else table
    rows = finished.assign(sigma=[_noise(r) for _, r in finished.iterrows()])
    drops, eps = {}, {}
    for (name, sigma), part in rows.groupby([ALGORITHM, "sigma"], sort=True):
        if sigma == 0.0:
            continue
        base = rows[(rows[ALGORITHM] == name) & (rows.sigma == 0.0)].set_index("seed")
        acc = part.set_index("seed")["final_accuracy"]
        drops[name, sigma] = (base["final_accuracy"] - acc).dropna()
        eps[name, sigma] = float(part["final_dp_sgd_epsilon"].mean())
    drop_rows = [
        {
            "algorithm": name,
            "sigma": sigma,
            "mean_epsilon": eps[name, sigma],
            **verdict(d.tolist()),
            "diffs": tuple(float(x) for x in d),
        }
        for (name, sigma), d in drops.items()
    ]
    better, other = FFA_PAIR
    pair_rows = []
    for sigma in sorted({s for _, s in drops}):
        if (better, sigma) in drops and (other, sigma) in drops:
            d = (drops[other, sigma] - drops[better, sigma]).dropna()
            pair_rows.append(
                {
                    "sigma": sigma,
                    "epsilon_fedit": eps[other, sigma],
                    "epsilon_ffa_lora": eps[better, sigma],
                    **verdict(d.tolist()),
                    "diffs": tuple(float(x) for x in d),
                }
            )
    return {
        "dp_drops": pd.DataFrame(drop_rows),
        "ffa_vs_fedit": pd.DataFrame(pair_rows),
        "ffa_above_fedit": _level_table(rows),
    }


def _level_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per sigma (0: no DP), the per-seed final accuracy of FFA-LoRA - FedIT ("above":
    FFA-LoRA ends higher) with its verdict; ``diffs`` in seed order."""
    import pandas as pd

    from wirelessfl.study.paired import verdict

    better, other = FFA_PAIR
    out = []
    for sigma, part in rows.groupby("sigma", sort=True):
        acc = {
            name: part[part[ALGORITHM] == name].set_index("seed")["final_accuracy"]
            for name in FFA_PAIR
        }
        d = (acc[better] - acc[other]).dropna()
        if d.empty:
            continue
        out.append(
            {
                "sigma": sigma,
                "mean_epsilon": float(part["final_dp_sgd_epsilon"].mean()),
                **verdict(d.tolist()),
                "diffs": tuple(float(x) for x in d),
            }
        )
    return pd.DataFrame(out)


def draw_dp_ffa(out: Path, runs: list, stem: str = "dp") -> list[Path]:
    """Final accuracy against the epsilon reached (log x; the runs without DP at the right,
    "no DP"), per algorithm: mean over seeds, min-max bars (``<stem>_accuracy_vs_epsilon.png``);
    then accuracy against rounds and virtual time (``<stem>_accuracy*.png``)."""
    import numpy as np
    import pandas as pd
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    points = pd.DataFrame(
        {
            "algorithm": str(config_value(r, ALGORITHM)),
            "epsilon": privacy_columns(r)["final_dp_sgd_epsilon"],
            "sigma": float(config_value(r, SIGMA)) if config_value(r, DP_SGD) else 0.0,
            "accuracy": float(r.rounds.accuracy.dropna().iloc[-1]),
        }
        for r in runs
        if r.rounds.accuracy.notna().any()
    )
    finite = points.epsilon[np.isfinite(points.epsilon)]
    no_dp_x = float(finite.max()) * 3 if len(finite) else 1.0
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.subplots()
    ticks = {no_dp_x}
    for name, part in points.groupby("algorithm", sort=True):
        stats = part.groupby("sigma").agg(
            eps=("epsilon", "mean"),
            acc=("accuracy", "mean"),
            lo=("accuracy", "min"),
            hi=("accuracy", "max"),
        )
        x = np.where(np.isfinite(stats.eps), stats.eps, no_dp_x)
        ticks.update(round(float(v), 1) for v in x)
        order = np.argsort(x)
        ax.errorbar(
            x[order],
            stats.acc.to_numpy()[order],
            yerr=[
                (stats.acc - stats.lo).to_numpy()[order],
                (stats.hi - stats.acc).to_numpy()[order],
            ],
            marker="o",
            capsize=3,
            label=name,
        )
    ax.set_xscale("log")
    ticks = sorted(ticks)
    ax.set_xticks(ticks, [f"{t:g}" if t < no_dp_x else "no DP" for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("epsilon reached (DP-SGD, largest over devices)")
    ax.set_ylabel("final test accuracy")
    ax.set_title("Accuracy against epsilon (mean over seeds, min-max)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return [
        save_figure(fig, out / f"{stem}_accuracy_vs_epsilon.png"),
        *accuracy_both_ways(out, runs, f"{stem}_accuracy", "DP-SGD: FedIT and FFA-LoRA"),
    ]
