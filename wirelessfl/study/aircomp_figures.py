"""The over-the-air aggregation study's figures, columns and tables (reproductions
``aircomp-*``, docs/results.md, "Over-the-air aggregation (Zhu et al.)").

One line per uplink (AirComp; FDMA dense, quantised, SOFT, top-k): the mean upload time per
round D^t (``mean_delay_s`` of ``summary.csv``) against a swept key, the mean over seeds
with the seeds' spread shaded.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wirelessfl.study.figures import save_figure, seed_band_figure

__all__ = [
    "accuracy_figures",
    "aircomp_columns",
    "draw_by_k",
    "draw_by_snr",
    "default_study_tables",
    "draw_default_study",
    "draw_latency",
    "fdma_energy_floor_j",
    "per_value_table",
    "snr_study_tables",
    "uplink_label",
]


def uplink_label(run: Any) -> str:
    """``AirComp``, or ``FDMA <algorithm>`` with the run's ratio O when it sparsifies (and
    ``index`` when its index bits are sent) and its b when it quantises:
    ``FDMA fedit_topk (O = 0.1, index, b = 4)``."""
    from wirelessfl.results.groups import config_value

    if config_value(run, "channel.uplink") == "aircomp":
        return "AirComp"
    ratio = float(run.rounds.sparsification.iloc[0])
    bits = config_value(run, "quantize.bits")
    index = ratio < 1.0 and bool(config_value(run, "payload.index_overhead"))
    settings = [f"O = {ratio:g}"] * (ratio < 1.0) + ["index"] * index
    settings += [f"b = {bits}"] * isinstance(bits, int)
    details = f" ({', '.join(settings)})" if settings else ""
    return f"FDMA {config_value(run, 'algorithm.name')}{details}"


def aircomp_columns(run: Any, target: float | None) -> dict[str, float]:
    """``summary.csv``'s AirComp columns of one run (``STUDY_AIRCOMP_COLUMNS`` of
    ``wirelessfl.results.columns``): the mean aggregation MSE and excluded clients per round
    (NaN for FDMA), the mean transmit energy of a scheduled client per round, and FDMA's
    energy floor (NaN for AirComp)."""
    rounds = run.rounds
    columns = {
        "mean_client_transmit_energy_j": float(
            (rounds.transmit_energy_j / rounds.n_scheduled).mean()
        ),
        "mean_energy_floor_j": math.nan,
    }
    if "aircomp_mse" in rounds:
        return {
            **columns,
            "mean_aircomp_mse": float(rounds.aircomp_mse.mean()),
            "mean_aircomp_excluded": float(rounds.aircomp_excluded.mean()),
        }
    return {
        **columns,
        "mean_energy_floor_j": fdma_energy_floor_j(run),
        "mean_aircomp_mse": math.nan,
        "mean_aircomp_excluded": math.nan,
    }


def fdma_energy_floor_j(run: Any) -> float:
    """The least transmit energy per arrived client and round [J] that lowering every FDMA
    client's power by one factor a reaches (a -> 0), mean over rounds; NaN unless the run
    uses the equal-delay shares under the band noise rule and wrote ``clients.csv``.

    With p_k -> a p_k every SNR_k scales by a, D^t = sum_j bits_j / (B log2(1 + a SNR_j))
    (eq. (31)'s shares) and client k spends a p_k D^t, which falls as a falls (a / log2(1 +
    a x) grows with a) towards p_k ln 2 / B * sum_j bits_j / SNR_j."""
    from wirelessfl.results.groups import config_value

    equal_delay = config_value(run, "controller.bandwidth") == "equal_delay"
    if not equal_delay or config_value(run, "channel.noise_bandwidth") != "band":
        return math.nan
    if run.clients is None or "tx_power_w" not in run.clients:
        return math.nan
    sent = run.clients[run.clients.status == "arrived"]
    if sent.empty:  # a run with no round yet (unfinished), or with no arrival
        return math.nan
    bandwidth_hz = float(config_value(run, "channel.bandwidth_hz"))
    snr = 10.0 ** (sent.snr_db / 10.0)
    per_round = (
        sent.assign(bits_per_snr=sent.bits / snr)
        .groupby("round")
        .apply(lambda q: q.tx_power_w.mean() * math.log(2) / bandwidth_hz * q.bits_per_snr.sum())
    )
    return float(per_round.mean())


def draw_latency(
    stem: str, x_key: str, xlabel: str, title: str
) -> Callable[[Path, list], list[Path]]:
    """A reproduction's drawing: the mean upload time per round D^t against ``x_key``, one
    line per uplink, mean over seeds with min-max shaded (``stem.png``, log scale)."""

    def draw(out: Path, runs: list) -> list[Path]:
        import pandas as pd

        from wirelessfl.results.groups import config_value

        points = pd.DataFrame(
            {
                "uplink": uplink_label(run),
                "x": float(config_value(run, x_key)),
                "delay_s": float(run.rounds.delay_s.mean()),
            }
            for run in runs
        )
        fig = seed_band_figure(
            points,
            line="uplink",
            value="delay_s",
            xlabel=xlabel,
            ylabel="mean upload time per round D^t [s]",
            title=title,
        )
        return [save_figure(fig, out / f"{stem}.png")]

    return draw


def draw_by_k(stem: str, task: str, n_clients: int) -> Callable[[Path, list], list[Path]]:
    """An AirComp study's drawing over K on a real task: the upload time per round against K
    (``<stem>_latency_vs_k.png``) and, at each K, accuracy against the round and against
    virtual time (``<stem>_k<K>.png``, ``<stem>_k<K>_time.png``, a symmetric-log time axis,
    linear below 10 ms); ``task`` names the model and data in the titles."""
    return _draw_over(
        stem,
        "n_scheduled",
        "k",
        f"scheduled clients K (of {n_clients})",
        f"Upload time per round against K, {task} (10 dB mean SNR)",
        lambda k: f"AirComp and FDMA, {task} (K = {k} of {n_clients})",
    )


def draw_by_snr(stem: str, task: str, k: int) -> Callable[[Path, list], list[Path]]:
    """An AirComp study's drawing over the mean SNR on a real task at ``k`` scheduled clients:
    the upload time per round against the SNR (``<stem>_latency_vs_snr.png``) and, at each
    SNR, accuracy against the round and against virtual time (``<stem>_snr<dB>.png``,
    ``<stem>_snr<dB>_time.png``)."""
    return _draw_over(
        stem,
        "channel.mean_snr_db",
        "snr",
        "mean SNR [dB]",
        f"Upload time per round against the mean SNR, {task} (K = {k})",
        lambda snr_db: f"AirComp and FDMA, {task} (K = {k}, mean SNR {snr_db} dB)",
    )


def _draw_over(
    stem: str,
    key: str,
    tag: str,
    xlabel: str,
    latency_title: str,
    accuracy_title: Callable[[str], str],
) -> Callable[[Path, list], list[Path]]:
    """The latency figure ``<stem>_latency_vs_<tag>.png`` against ``key`` and the accuracy
    figures ``<stem>_<tag><value>`` at each of its values (written with ``:g``, the form
    ``accuracy_title`` gets too)."""

    def draw(out: Path, runs: list) -> list[Path]:
        from wirelessfl.results.groups import config_value

        paths = draw_latency(f"{stem}_latency_vs_{tag}", key, xlabel, latency_title)(out, runs)
        for value in sorted({float(config_value(run, key)) for run in runs}):
            chosen = [run for run in runs if float(config_value(run, key)) == value]
            text = f"{value:g}"
            paths += accuracy_figures(out, chosen, f"{stem}_{tag}{text}", accuracy_title(text))
        return paths

    return draw


#: ``aircomp-default``'s drawing (``aircomp_default_latency_vs_k.png``, ``aircomp_default_k<K>``)
draw_default_study = draw_by_k("aircomp_default", "EfficientNet-Lite0 / MNIST-5k", 60)


def accuracy_figures(out: Path, runs: list, stem: str, title: str) -> list[Path]:
    """Accuracy against the round (``stem.png``) and against virtual time (``stem_time.png``,
    a symmetric-log time axis, linear below 10 ms: AirComp's rounds are milliseconds long)."""
    from wirelessfl.plots import accuracy_vs_round, accuracy_vs_time
    from wirelessfl.results.groups import group_runs
    from wirelessfl.results.tables import accuracy_table

    table = accuracy_table(runs)  # each group named as the latency figure names it
    names = {i: uplink_label(group.runs[0]) for i, group in enumerate(group_runs(runs))}
    table["label"] = table["group"].map(names)
    by_round = accuracy_vs_round(table, title=title)
    by_time = accuracy_vs_time(table, title=f"{title}, latency–accuracy")
    by_time.axes[0].set_xscale("symlog", linthresh=0.01)
    return [
        save_figure(by_round, out / f"{stem}.png"),
        save_figure(by_time, out / f"{stem}_time.png"),
    ]


def default_study_tables(table: Any) -> dict[str, Any]:
    """``aircomp-default``'s tables from ``summary.csv``: ``by_k`` (per sweep and K, over
    seeds: :func:`per_value_table`) and ``growth`` (per sweep and seed: D^t at the largest K
    over D^t at the smallest; sweeps run at one K only have no row)."""
    import pandas as pd

    rows = []
    for (sweep, seed), runs in table.groupby(["sweep", "seed"], sort=False):
        runs = runs.sort_values("n_scheduled")
        first, last = runs.iloc[0], runs.iloc[-1]
        if first.n_scheduled == last.n_scheduled:
            continue
        rows.append(
            {
                "sweep": sweep,
                "seed": seed,
                "k_small": int(first.n_scheduled),
                "k_large": int(last.n_scheduled),
                "delay_ratio": last.mean_delay_s / first.mean_delay_s,
            }
        )
    return {"by_k": per_value_table(table, "n_scheduled"), "growth": pd.DataFrame(rows)}


def snr_study_tables(table: Any) -> dict[str, Any]:
    """An SNR study's table from ``summary.csv``: ``by_snr`` (per sweep and mean SNR, over
    seeds: :func:`per_value_table`)."""
    return {"by_snr": per_value_table(table, "channel.mean_snr_db")}


def per_value_table(table: Any, key: str) -> Any:
    """Per sweep and value of ``key``, over seeds: the upload time per round, final accuracy,
    time to target, a client's transmit energy per round and AirComp's MSE, mean with min
    and max (``<column>_mean``, ``_min``, ``_max``), the seeds and the seeds that reached the
    target."""
    values = [
        "mean_delay_s",
        "final_accuracy",
        "time_to_target_s",
        "mean_client_transmit_energy_j",
        "mean_aircomp_mse",
    ]
    grouped = table.groupby(["sweep", key], sort=False)
    stats = grouped[values].agg(["mean", "min", "max"])
    stats.columns = [f"{value}_{stat}" for value, stat in stats.columns]
    stats["seeds"] = grouped.seed.count()
    stats["seeds_at_target"] = grouped.time_to_target_s.count()
    return stats.reset_index()
