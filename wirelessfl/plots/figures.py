"""Figures of runs and studies: each function takes loaded results and returns a ``Figure``.

Results are a ``RunResult``, a list of them, a ``StudyResult`` or a folder path. Runs whose
configs differ only in ``seed`` (and ``name``/``output``) form one group: curves show the group's
mean with its min–max across seeds shaded, and labels name the keys that differ between groups.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot state, no display
needed, nothing to close); save one with ``fig.savefig("x.png")``, or show it in a notebook
by leaving it as a cell's value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wirelessfl.errors import UserError
from wirelessfl.results import RunResult, load
from wirelessfl.study.summary import SUMMARY_COLUMNS, summarize
from wirelessfl.study.sweep import StudyResult, load_study

Results = RunResult | Sequence[RunResult] | StudyResult | str | Path

#: config keys that never separate groups
_IGNORED = ("seed", "name", "output")
#: frontier x aliases: outcome columns of ``summarize`` or config keys
_X_ALIASES = {
    "d_th": ("config", "controller.d_th_s"),
    "bits": ("summary", "total_bits_up"),
    "time": ("summary", "virtual_time_s"),
    "delay": ("summary", "mean_delay_s"),
}
_FRONTIER_FIXED = ("label", "x", "accuracy", "acc_min", "acc_max", "n")
_X_LABELS = {
    "controller.d_th_s": "delay threshold $D_{th}$ [s]",
    "total_bits_up": "total uplink [bits]",
    "virtual_time_s": "virtual time [s]",
    "mean_delay_s": "mean round delay $D^t$ [s]",
}


# -- inputs -------------------------------------------------------------------------------------
def as_runs(results: Results) -> list[RunResult]:
    """Loaded runs from a run, a list, a study or a run/study folder path."""
    if isinstance(results, RunResult):
        return [results]
    if isinstance(results, StudyResult):
        runs = results.runs()
    elif isinstance(results, str | Path):
        path = Path(results)
        runs = load_study(path).runs() if (path / "index.csv").exists() else [load(path)]
    else:
        runs = list(results)
    if not runs:
        raise UserError("plot: no runs to plot (the study has no run with a rounds.csv yet)")
    return runs


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def config_value(run: RunResult, key: str) -> Any:
    """A dotted key of a run's resolved config (``controller.d_th_s``); NaN if absent."""
    node: Any = run.config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return math.nan
        node = node[part]
    return node


@dataclass
class RunGroup:
    """Runs with the same config apart from the seed."""

    label: str
    params: dict[str, Any]
    runs: list[RunResult]


def group_runs(runs: Sequence[RunResult]) -> list[RunGroup]:
    """Group by config without seed/name/output; labels name the keys that differ."""
    keyed: dict[str, tuple[dict[str, Any], list[RunResult]]] = {}
    for run in runs:
        flat = {k: v for k, v in _flat(run.config).items() if k.split(".")[0] not in _IGNORED and k}
        key = json.dumps(flat, sort_keys=True, default=str)
        keyed.setdefault(key, (flat, []))[1].append(run)
    flats = [flat for flat, _ in keyed.values()]
    keys = sorted({k for f in flats for k in f})
    varying = [k for k in keys if len({json.dumps(f.get(k), default=str) for f in flats}) > 1]
    short = {k: k.rsplit(".", 1)[-1] for k in varying}
    if len(set(short.values())) < len(short):
        short = {k: k for k in varying}
    groups = []
    for flat, members in keyed.values():
        params = {k: flat.get(k) for k in varying}
        if params:
            label = ", ".join(f"{short[k]}={_fmt(v)}" for k, v in params.items())
        else:
            label = str(members[0].config.get("name") or Path(members[0].path).name)
        groups.append(RunGroup(label, params, members))
    return groups


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _distinguishing_labels(sets: Sequence[Sequence[RunResult]]) -> list[str]:
    """For sets of runs: the config keys constant within each set that differ between sets."""
    flats = [[_flat(run.config) for run in members] for members in sets]
    keys = sorted({k for fs in flats for f in fs for k in f if k.split(".")[0] not in _IGNORED})

    def const(fs: list[dict[str, Any]], key: str) -> str | None:
        vals = {json.dumps(f.get(key), default=str) for f in fs}
        return vals.pop() if len(vals) == 1 else None

    chosen = []
    for key in keys:
        per_set = [const(fs, key) for fs in flats]
        if None not in per_set and len(set(per_set)) > 1:
            chosen.append(key)
    labels = []
    for fs in flats:
        parts = [f"{k.rsplit('.', 1)[-1]}={_fmt(fs[0].get(k))}" for k in chosen]
        labels.append(", ".join(parts))
    return labels


def _seed(run: RunResult) -> Any:
    return run.meta.get("seed", run.config.get("seed", "?"))


def _new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Axes]:
    if ax is not None:
        fig = ax.figure
        assert isinstance(fig, Figure)
        return fig, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _label(group: RunGroup) -> str:
    n = len(group.runs)
    return f"{group.label} ({n} seeds)" if n > 1 else group.label


def _legend(ax: Axes) -> None:
    if len(ax.get_legend_handles_labels()[0]) > 1:
        ax.legend(fontsize="small")


# -- accuracy -----------------------------------------------------------------------------------
def accuracy_curve(group: RunGroup) -> pd.DataFrame:
    """Evaluated rounds of a group aggregated by round: ``round``, ``t_end_s`` (mean),
    ``accuracy`` (mean), ``acc_min``, ``acc_max``, ``n`` (runs evaluated at that round)."""
    frames = [
        run.rounds.loc[run.rounds["accuracy"].notna(), ["round", "t_end_s", "accuracy"]]
        for run in group.runs
    ]
    both = pd.concat(frames, ignore_index=True)
    curve = both.groupby("round", sort=True).agg(
        t_end_s=("t_end_s", "mean"),
        accuracy=("accuracy", "mean"),
        acc_min=("accuracy", "min"),
        acc_max=("accuracy", "max"),
        n=("accuracy", "size"),
    )
    return curve.reset_index()


def _accuracy(results: Results, x: str, ax: Axes | None) -> Figure:
    fig, ax = _new_axes(ax)
    for group in group_runs(as_runs(results)):
        curve = accuracy_curve(group)
        if curve.empty:
            continue
        xs = curve["round"] if x == "round" else curve["t_end_s"]
        (line,) = ax.plot(xs, curve["accuracy"], marker=".", label=_label(group))
        if len(group.runs) > 1:
            ax.fill_between(
                xs, curve["acc_min"], curve["acc_max"], color=line.get_color(), alpha=0.2
            )
    ax.set_xlabel("round $t$" if x == "round" else "cumulative virtual time [s]")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig


def accuracy_vs_round(results: Results, *, ax: Axes | None = None) -> Figure:
    """Test accuracy vs round. Reads ``rounds``: round, accuracy (evaluated rows only).
    One line per group (mean over seeds), min–max across seeds shaded."""
    return _accuracy(results, "round", ax)


def accuracy_vs_time(results: Results, *, ax: Axes | None = None) -> Figure:
    """Latency–accuracy curve: test accuracy vs cumulative virtual time. Reads ``rounds``:
    round, t_end_s, accuracy. Seeds are aligned by round: x is the mean ``t_end_s`` of the
    group's runs at that round, y the mean accuracy, min–max accuracy shaded."""
    return _accuracy(results, "time", ax)


# -- frontier -----------------------------------------------------------------------------------
def _x_source(x: str) -> tuple[str, str]:
    if x in _X_ALIASES:
        return _X_ALIASES[x]
    if x in SUMMARY_COLUMNS:
        return "summary", x
    return "config", x


def frontier_table(results: Results, *, x: str = "bits") -> pd.DataFrame:
    """One row per group: ``label``, ``x`` (mean over seeds), ``accuracy`` (mean final
    accuracy), ``acc_min``, ``acc_max``, ``n``, plus the group's varying parameters."""
    source, column = _x_source(x)
    rows = []
    for group in group_runs(as_runs(results)):
        xs, accs = [], []
        for run in group.runs:
            summary = summarize(run.rounds)
            value = config_value(run, column) if source == "config" else summary[column]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UserError(f"plot frontier: x={x!r} is not a number in {run.path}: {value!r}")
            if math.isnan(value):
                raise UserError(f"plot frontier: {run.path} has no config key {column!r}")
            xs.append(float(value))
            accs.append(summary["final_accuracy"])
        rows.append(
            {
                "label": group.label,
                "x": float(np.mean(xs)),
                "accuracy": float(np.mean(accs)),
                "acc_min": float(np.min(accs)),
                "acc_max": float(np.max(accs)),
                "n": len(group.runs),
                **group.params,
            }
        )
    return pd.DataFrame(rows)


def pareto_front(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Indices of the points not dominated by another one (lower x and higher y), by x."""
    order = np.lexsort((-ys, xs))
    keep, best = [], -np.inf
    for i in order:
        if ys[i] > best:
            keep.append(i)
            best = ys[i]
    return np.asarray(keep, dtype=int)


def frontier(
    results: Results, *, x: str = "bits", by: str | None = None, ax: Axes | None = None
) -> Figure:
    """Final accuracy vs ``x`` across a study: one point per group (mean over seeds, min–max
    error bar). ``x``: ``bits`` (sum of rounds.bits_up), ``time`` (last rounds.t_end_s),
    ``delay`` (mean rounds.delay_s), ``d_th`` (config controller.d_th_s) or any dotted config
    key; y: the last non-NaN rounds.accuracy. For a config ``x`` the points are joined in order
    of x, one line per combination of the other varying keys; for an outcome ``x`` they are
    drawn as markers with the Pareto front (less x, more accuracy) dashed. ``by`` (a varying
    config key) draws one joined line per value of it instead. ``ax.lines[0]`` holds the first
    series' points."""
    table = frontier_table(results, x=x)
    source, column = _x_source(x)
    params = [c for c in table.columns if c not in _FRONTIER_FIXED]
    if by is not None and by not in params:
        raise UserError(
            f"plot frontier: by={by!r} is not a key that varies between the runs "
            f"(varying: {', '.join(params) or 'none'})"
        )
    if by is not None:
        keys = [by]
    elif source == "config":
        keys = [k for k in params if k != column]
    else:
        keys = []
    short = {k: k.rsplit(".", 1)[-1] for k in keys}
    series = list(table.groupby(keys, sort=True)) if keys else [((), table)]
    joined = bool(keys) or source == "config"
    fig, ax = _new_axes(ax)
    for values, part in series:
        part = part.sort_values("x")
        values = values if isinstance(values, tuple) else (values,)
        label = ", ".join(f"{short[k]}={_fmt(v)}" for k, v in zip(keys, values, strict=True))
        (line,) = ax.plot(
            part["x"],
            part["accuracy"],
            marker="o",
            ls="-" if joined else "none",
            label=label or "final accuracy",
        )
        if (part["n"] > 1).any():
            yerr = np.vstack(
                [part["accuracy"] - part["acc_min"], part["acc_max"] - part["accuracy"]]
            )
            ax.errorbar(part["x"], part["accuracy"], yerr=yerr, fmt="none", color=line.get_color())
        if not joined:
            front = pareto_front(part["x"].to_numpy(), part["accuracy"].to_numpy())
            ax.plot(
                part["x"].to_numpy()[front],
                part["accuracy"].to_numpy()[front],
                ls="--",
                color="k",
                lw=1,
                label="Pareto front",
            )
            if 1 < len(part) <= 12:
                for _, row in part.iterrows():
                    ax.annotate(
                        row["label"],
                        (row["x"], row["accuracy"]),
                        xytext=(4, 4),
                        textcoords="offset points",
                        fontsize="x-small",
                        alpha=0.7,
                    )
    ax.set_xlabel(_X_LABELS.get(column, column))
    ax.set_ylabel("final test accuracy")
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig


# -- network dynamics ---------------------------------------------------------------------------
def _xs(run: RunResult, x: str) -> pd.Series:
    if x not in ("round", "time"):
        raise UserError(f"plot: x must be 'round' or 'time', got {x!r}")
    return run.rounds["round"] if x == "round" else run.rounds["t_end_s"]


def _xlabel(x: str) -> str:
    return "round $t$" if x == "round" else "virtual time [s]"


def _run_labels(runs: Sequence[RunResult]) -> list[str]:
    groups = group_runs(runs)
    by_id = {}
    for group in groups:
        for run in group.runs:
            name = group.label if len(groups) > 1 else ""
            seed = f"seed={_seed(run)}" if len(group.runs) > 1 or len(runs) > 1 else ""
            by_id[id(run)] = ", ".join(s for s in (name, seed) if s) or group.label
    return [by_id[id(run)] for run in runs]


def queue_delay(results: Results, *, x: str = "round") -> Figure:
    """Top: D^t (rounds.delay_s, thin), its running mean (thick) and D_th (config
    controller.d_th_s, dashed); bottom: the virtual queue Q^t (rounds.queue). One colour per
    run; x is rounds.round, or rounds.t_end_s with ``x="time"``. On the top axes each run adds
    two lines in that order (D^t, running mean); the bottom axes hold one Q^t line per run."""
    from matplotlib.lines import Line2D

    runs = as_runs(results)
    fig = Figure(figsize=(7.0, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    thresholds = set()
    for run, label in zip(runs, _run_labels(runs), strict=True):
        xs, delay = _xs(run, x), run.rounds["delay_s"]
        (line,) = top.plot(xs, delay, lw=0.7, alpha=0.6, label="_delay")
        running = delay.cumsum() / np.arange(1, len(delay) + 1)
        top.plot(xs, running, lw=1.8, color=line.get_color(), label="_running mean")
        bottom.plot(xs, run.rounds["queue"], color=line.get_color(), label=label or "$Q^t$")
        d_th = config_value(run, "controller.d_th_s")
        if isinstance(d_th, int | float) and math.isfinite(d_th):
            thresholds.add(float(d_th))
    styles = ["--", "-.", ":"]
    handles = [
        Line2D([], [], color="0.4", lw=0.7, label="$D^t$"),
        Line2D([], [], color="0.4", lw=1.8, label="running mean of $D^t$"),
    ]
    for i, d_th in enumerate(sorted(thresholds)):
        handles.append(
            top.axhline(d_th, color="k", ls=styles[i % 3], lw=1, label=f"$D_{{th}}$ = {d_th:.3g} s")
        )
    top.set_ylabel("round delay $D^t$ [s]")
    bottom.set_ylabel("virtual queue $Q^t$")
    bottom.set_xlabel(_xlabel(x))
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(handles=handles, fontsize="small")
    if len(runs) > 1:
        bottom.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def sparsification(results: Results, *, x: str = "round", ax: Axes | None = None) -> Figure:
    """O^t over rounds (rounds.sparsification vs rounds.round, or t_end_s with
    ``x="time"``), one line per run, with O_min (config controller.o_min) dashed."""
    runs = as_runs(results)
    fig, ax = _new_axes(ax)
    o_mins = set()
    for run, label in zip(runs, _run_labels(runs), strict=True):
        ax.plot(_xs(run, x), run.rounds["sparsification"], lw=0.9, label=label or "$O^t$")
        o_min = config_value(run, "controller.o_min")
        if isinstance(o_min, int | float) and math.isfinite(o_min):
            o_mins.add(float(o_min))
    for o_min in sorted(o_mins):
        ax.axhline(o_min, color="k", ls="--", lw=1, label=f"$O_{{min}}$ = {o_min:.3g}")
    ax.set_ylabel("sparsification ratio $O^t$")
    ax.set_xlabel(_xlabel(x))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig


def cov_norm(results: Results, *, x: str = "round", ax: Axes | None = None) -> Figure:
    """||Cov(θ_B, θ_A)||_F over rounds (rounds.cov_norm vs rounds.round or t_end_s), NaN rows
    left out, one line per run; log scale when every value is positive. Runs without the
    column's data (the surrogate learner writes NaN) get a note instead of a line."""
    runs = as_runs(results)
    fig, ax = _new_axes(ax)
    drawn, positive = 0, True
    for run, label in zip(runs, _run_labels(runs), strict=True):
        rows = run.rounds["cov_norm"].notna()
        if not rows.any():
            continue
        values = run.rounds.loc[rows, "cov_norm"]
        ax.plot(_xs(run, x)[rows], values, marker=".", lw=0.9, label=label or "Cov norm")
        positive = positive and bool((values > 0).all())
        drawn += 1
    if drawn == 0:
        ax.text(
            0.5, 0.5, "no Cov data (cov_norm is NaN in every round)",
            ha="center", va="center", transform=ax.transAxes,
        )  # fmt: skip
    elif positive:
        ax.set_yscale("log")
    ax.set_ylabel(r"$\|\mathrm{Cov}(\theta_B, \theta_A)\|_F$")
    ax.set_xlabel(_xlabel(x))
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig


# -- offline stage ------------------------------------------------------------------------------
def offline_bound(results: Results) -> Figure:
    """The offline stage: top, γ^0(r) for r = 1..r_max (meta controller.offline_bounds) with the
    chosen rank (meta controller.rank) marked; bottom, the offline O*(r) (controller.
    offline_sparsifications). Identical curves of several runs are drawn once."""
    runs = as_runs(results)
    members: dict[str, list[RunResult]] = {}
    for run in runs:
        ctrl = run.meta.get("controller") or {}
        if ctrl.get("offline_bounds"):
            key = json.dumps([ctrl.get("offline_bounds"), ctrl.get("rank")])
            members.setdefault(key, []).append(run)
    labels = _distinguishing_labels(list(members.values()))
    curves = {
        key: (label, runs_[0].meta["controller"])
        for (key, runs_), label in zip(members.items(), labels, strict=True)
    }
    if not curves:
        raise UserError(
            "plot offline: no run has an offline stage (meta.json controller.offline_bounds; "
            "the tsfa controller writes it)"
        )
    fig = Figure(figsize=(6.4, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for label, ctrl in curves.values():
        bounds = np.asarray(ctrl["offline_bounds"], dtype=float)
        ranks = np.arange(1, len(bounds) + 1)
        (line,) = top.plot(ranks, bounds, label=label if len(curves) > 1 else r"$\gamma^0(r)$")
        rank = ctrl.get("rank")
        if rank is not None and 1 <= int(rank) <= len(bounds):
            r = int(rank)
            top.plot([r], [bounds[r - 1]], "*", ms=12, color=line.get_color(), label=f"r* = {r}")
            top.axvline(r, color=line.get_color(), ls=":", lw=1)
        sparsifications = ctrl.get("offline_sparsifications")
        if sparsifications:
            bottom.plot(ranks, np.asarray(sparsifications, dtype=float), color=line.get_color())
            if rank is not None:
                bottom.axvline(int(rank), color=line.get_color(), ls=":", lw=1)
    top.set_yscale("log")
    top.set_ylabel(r"offline bound $\gamma^0(r)$")
    bottom.set_ylabel("offline $O^*(r)$")
    bottom.set_xlabel("LoRA rank $r$")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(fontsize="small")
    return fig


# -- bandwidth shares ---------------------------------------------------------------------------
def share_table(run: RunResult) -> pd.DataFrame:
    """clients.share pivoted to rounds (index) × clients (columns); NaN: not scheduled."""
    if run.clients is None or run.clients.empty:
        raise UserError(
            f"plot shares: {run.path} has no clients.csv (run with --set output.clients=true)"
        )
    table = run.clients.pivot_table(index="round", columns="client", values="share", aggfunc="sum")
    return table.reindex(run.rounds["round"]) if len(run.rounds) else table


def bandwidth_shares(results: Results, *, style: str = "heatmap", ax: Axes | None = None) -> Figure:
    """Per-client bandwidth shares b_k^t from the ``clients`` table (round, client, share).
    ``heatmap``: clients × rounds image (blank where a client is not scheduled); ``area``: the
    shares stacked per round, one band per client ever scheduled. Plots the first run given."""
    runs = as_runs(results)
    run = runs[0]
    table = share_table(run)
    fig, ax = _new_axes(ax, figsize=(7.0, 4.2))
    rounds = table.index.to_numpy()
    if style == "heatmap":
        data = table.to_numpy().T  # clients × rounds
        image = ax.imshow(
            np.ma.masked_invalid(data),
            aspect="auto",
            origin="lower",
            interpolation="nearest",
            extent=(rounds[0] - 0.5, rounds[-1] + 0.5, -0.5, data.shape[0] - 0.5),
            cmap="viridis",
        )
        clients = table.columns.to_numpy()
        step = max(1, len(clients) // 10)
        ax.set_yticks(np.arange(0, len(clients), step), [str(c) for c in clients[::step]])
        ax.set_ylabel("client")
        fig.colorbar(image, ax=ax, label="bandwidth share $b_k^t$")
    elif style == "area":
        filled = table.fillna(0.0)
        ax.stackplot(rounds, filled.to_numpy().T, linewidth=0, step="mid")
        ax.set_ylabel("bandwidth share $b_k^t$ (stacked)")
        ax.set_ylim(0, max(1.0, float(filled.sum(axis=1).max())) * 1.02)
    else:
        raise UserError(f"plot shares: style must be 'heatmap' or 'area', got {style!r}")
    ax.set_xlabel("round $t$")
    return fig


#: ``wirelessfl plot --kind`` name -> figure function
PLOTS = {
    "accuracy": accuracy_vs_round,
    "latency_accuracy": accuracy_vs_time,
    "frontier": frontier,
    "queue": queue_delay,
    "sparsification": sparsification,
    "offline": offline_bound,
    "cov": cov_norm,
    "shares": bandwidth_shares,
}
