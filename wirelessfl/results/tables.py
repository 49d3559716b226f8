"""Tidy DataFrames of runs and studies: what each figure of ``wirelessfl.plots`` draws.

Every function takes ``Results`` (a run, a study, a run or study folder path, or a list of any
of these) and returns one DataFrame; runs that differ only in seed form one group
(``groups.group_runs``). Each table's ``attrs["source"]`` names the runs it was built from
(``runs.source_name``: ``study cmp (8 runs)``), which the figures use as their title.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from wirelessfl.errors import UserError
from wirelessfl.results.groups import (
    RunGroup,
    config_value,
    distinguishing_labels,
    group_runs,
    run_labels,
)
from wirelessfl.results.runs import Results, as_runs, source_name
from wirelessfl.results.store import RunResult
from wirelessfl.results.summary import SUMMARY_COLUMNS, summarize_run

#: frontier x aliases: outcome columns of ``summarize`` or config keys
FRONTIER_ALIASES = {
    "d_th": ("config", "controller.d_th_s"),
    "bits": ("summary", "total_bits_up"),
    "time": ("summary", "virtual_time_s"),
    "delay": ("summary", "mean_delay_s"),
}
#: the columns of ``frontier_table`` before the groups' varying parameters
FRONTIER_COLUMNS = ("label", "x", "accuracy", "acc_min", "acc_max", "n")
_CURVE_COLUMNS = ["round", "rounds_done", "t_end_s", "accuracy", "acc_min", "acc_max", "n"]
_OFFLINE_COLUMNS = ["curve", "label", "r", "bound", "sparsification", "chosen_rank"]
#: ``DataFrame.attrs`` key naming the runs a table was built from (a figure's title)
SOURCE = "source"
#: the columns of ``band_table``
BAND_COLUMNS = ["group", "label", "runs", "seeds", "round", "t_end_s", "mean", "min", "max", "n"]
#: ``round`` of the evaluation before round 0 (``meta.json``'s ``initial_evaluation``)
INITIAL_ROUND = -1


# -- accuracy -----------------------------------------------------------------------------------
def evaluated_rounds(run: RunResult, metrics: Sequence[str] = ("accuracy",)) -> pd.DataFrame:
    """A run's evaluations: ``round`` (the round just trained), ``t_end_s`` and ``metrics``
    (``accuracy`` and/or ``test_loss``), on the rounds where ``metrics[0]`` was measured;
    first, when the run has one, the evaluation before round 0 (``round`` -1, ``t_end_s`` 0:
    ``meta.json``'s ``initial_evaluation``)."""
    required = metrics[0]
    rounds = run.rounds.loc[run.rounds[required].notna(), ["round", "t_end_s", *metrics]]
    initial = run.initial_evaluation or {}
    if math.isnan(initial.get(required, math.nan)):
        return rounds.reset_index(drop=True)
    first = pd.DataFrame(
        {
            "round": [INITIAL_ROUND],
            "t_end_s": [0.0],
            **{m: [initial.get(m, math.nan)] for m in metrics},
        }
    )
    return pd.concat([first, rounds], ignore_index=True)


def accuracy_curve(group: RunGroup) -> pd.DataFrame:
    """Evaluations of a group aggregated by round: ``round`` (-1: before round 0),
    ``rounds_done`` (``round`` + 1: rounds trained, 0 for the initial state), ``t_end_s``
    (mean; 0 for the initial state), ``accuracy`` (mean), ``acc_min``, ``acc_max``, ``n``
    (runs evaluated at that round). The first row is the initial state's where the runs
    evaluated it (``eval_initial``)."""
    both = pd.concat([evaluated_rounds(run) for run in group.runs], ignore_index=True)
    curve = both.groupby("round", sort=True).agg(
        t_end_s=("t_end_s", "mean"),
        accuracy=("accuracy", "mean"),
        acc_min=("accuracy", "min"),
        acc_max=("accuracy", "max"),
        n=("accuracy", "size"),
    )
    curve = curve.reset_index()
    curve.insert(1, "rounds_done", curve["round"] + 1)
    return curve


def accuracy_table(results: Results) -> pd.DataFrame:
    """Every group's ``accuracy_curve``, one row per group and evaluation.

    Args:
        results: runs, a study or a folder.

    Returns:
        ``group`` (0, 1, ... in order of the groups' first runs), ``label`` (the keys that
        differ between groups), ``runs`` (runs in the group), ``seeds`` (distinct seeds among
        them), then ``accuracy_curve``'s columns. A group with no evaluation has no rows.
    """
    runs = as_runs(results)
    frames = []
    for i, group in enumerate(group_runs(runs)):
        curve = accuracy_curve(group)
        if not curve.empty:
            frames.append(
                curve.assign(group=i, label=group.label, runs=len(group.runs), seeds=group.seeds)
            )
    columns = ["group", "label", "runs", "seeds", *_CURVE_COLUMNS]
    table = (
        pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)
    )
    return with_source(table, runs)


def with_source(table: pd.DataFrame, runs: list[RunResult]) -> pd.DataFrame:
    """``table`` with ``attrs["source"]`` naming ``runs`` (``runs.source_name``)."""
    table.attrs[SOURCE] = source_name(runs)
    return table


# -- energy -------------------------------------------------------------------------------------
ENERGY_COLUMNS = [
    "group",
    "label",
    "runs",
    "seeds",
    "energy_budget_j",
    "round",
    "t_end_s",
    "compute_energy_j",
    "transmit_energy_j",
    "energy_j",
    "energy_min",
    "energy_max",
    "average_energy_j",
    "cumulative_energy_j",
    "cumulative_min",
    "cumulative_max",
    "accuracy",
    "acc_min",
    "acc_max",
    "n",
]


def run_energy(run: RunResult) -> pd.DataFrame:
    """One run's energy per device by round (``wirelessfl.results.energy``), all in J.

    ``round``, ``t_end_s``, ``compute_energy_j`` and ``transmit_energy_j`` (the round's sums
    over the N = ``n_clients`` devices, divided by N), ``energy_j`` (their sum),
    ``average_energy_j`` (the mean of ``energy_j`` over rounds 0..t: what the budget bounds),
    ``cumulative_energy_j`` (the sum of ``energy_j`` over rounds 0..t) and ``accuracy`` (NaN
    where not evaluated). First, when the run has one, the evaluation before round 0
    (``round`` -1, ``t_end_s`` 0, ``cumulative_energy_j`` 0, the per-round energies NaN).
    """
    n_clients = int(run.config.get("n_clients") or 0)
    if n_clients < 1 or "compute_energy_j" not in run.rounds:
        raise UserError(
            f"plot energy: {run.path} records no energy (rounds.csv without compute_energy_j, "
            "or no n_clients in config.yaml)"
        )
    rounds = run.rounds
    frame = pd.DataFrame(
        {
            "round": rounds["round"],
            "t_end_s": rounds["t_end_s"],
            "compute_energy_j": rounds["compute_energy_j"] / n_clients,
            "transmit_energy_j": rounds["transmit_energy_j"] / n_clients,
        }
    )
    frame["energy_j"] = frame["compute_energy_j"] + frame["transmit_energy_j"]
    frame["cumulative_energy_j"] = frame["energy_j"].cumsum()
    frame["average_energy_j"] = frame["cumulative_energy_j"] / np.arange(1, len(frame) + 1)
    frame["accuracy"] = rounds["accuracy"]
    initial = run.initial_accuracy
    if not math.isnan(initial):
        first = {"round": INITIAL_ROUND, "t_end_s": 0.0, "cumulative_energy_j": 0.0}
        frame = pd.concat([pd.DataFrame([{**first, "accuracy": initial}]), frame])
    return frame.reset_index(drop=True)


def energy_table(results: Results) -> pd.DataFrame:
    """Every group's energy per device by round (:func:`run_energy`), seeds averaged.

    Args:
        results: runs, a study or a folder.

    Returns:
        ``ENERGY_COLUMNS``: ``group``, ``label``, ``runs``, ``seeds`` (as ``accuracy_table``),
        ``energy_budget_j`` (the group's ``controller.energy_budget_j``; NaN: none), then by
        ``round`` the means over the group's runs of ``t_end_s`` and :func:`run_energy`'s
        columns, with ``energy_min``/``energy_max`` and ``cumulative_min``/``cumulative_max``
        across runs, ``acc_min``/``acc_max``, and ``n`` (runs with that round).
    """
    from wirelessfl.results.energy import budget_of

    runs = as_runs(results)
    frames = []
    for i, group in enumerate(group_runs(runs)):
        both = pd.concat([run_energy(run) for run in group.runs], ignore_index=True)
        means = both.groupby("round", sort=True).mean()
        spread = both.groupby("round", sort=True).agg(
            energy_min=("energy_j", "min"),
            energy_max=("energy_j", "max"),
            cumulative_min=("cumulative_energy_j", "min"),
            cumulative_max=("cumulative_energy_j", "max"),
            acc_min=("accuracy", "min"),
            acc_max=("accuracy", "max"),
            n=("t_end_s", "size"),
        )
        curve = means.join(spread).reset_index()
        budgets = {budget_of(run.config) for run in group.runs}
        frames.append(
            curve.assign(
                group=i,
                label=group.label,
                runs=len(group.runs),
                seeds=group.seeds,
                energy_budget_j=budgets.pop() if len(budgets) == 1 else math.nan,
            )
        )
    table = (
        pd.concat(frames, ignore_index=True)[ENERGY_COLUMNS]
        if frames
        else pd.DataFrame(columns=ENERGY_COLUMNS)
    )
    return with_source(table, runs)


# -- per-round series ---------------------------------------------------------------------------
def rounds_table(
    results: Results, columns: Sequence[str], config_keys: Sequence[str] = ()
) -> pd.DataFrame:
    """Every run's ``rounds`` rows stacked, with the run's label and config values.

    Args:
        results: runs, a study or a folder.
        columns: ``rounds`` columns to keep (besides ``round`` and ``t_end_s``).
        config_keys: dotted config keys with scalar values, one column each.

    Returns:
        ``run`` (0, 1, ... in input order), ``label`` (``groups.run_labels``), ``group`` (the
        run's group, 0, 1, ... in order of the groups' first runs: ``groups.group_runs``),
        ``group_label`` (its label), ``seeds`` (distinct seeds in the group), ``round``,
        ``t_end_s``, ``columns``, then one column per config key (the run's value on each of
        its rows, NaN if absent). ``band_table`` turns it into the groups' mean and spread.
    """
    runs = as_runs(results)
    keep = list(dict.fromkeys(["round", "t_end_s", *columns]))
    group_of = {}
    for g, group in enumerate(group_runs(runs)):
        for run in group.runs:
            group_of[id(run)] = (g, group.label, group.seeds)
    frames = []
    for i, (run, label) in enumerate(zip(runs, run_labels(runs), strict=True)):
        frame = run.rounds[keep].assign(**{key: config_value(run, key) for key in config_keys})
        g, group_label, seeds = group_of[id(run)]
        heads = {"run": i, "label": label, "group": g, "group_label": group_label, "seeds": seeds}
        for position, (name, value) in enumerate(heads.items()):
            frame.insert(position, name, value)
        if not frame.empty:
            frames.append(frame)
    if not frames:
        columns = ["run", "label", "group", "group_label", "seeds", *keep, *config_keys]
        return with_source(pd.DataFrame(columns=columns), runs)
    return with_source(pd.concat(frames, ignore_index=True), runs)


def band_table(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """The groups' mean of a ``rounds_table`` column per round, with its spread across seeds.

    Runs of a group are aligned by ``round``; rows where ``column`` is NaN are left out.

    Args:
        table: a ``rounds_table`` (its ``group``, ``group_label``, ``seeds``, ``run``,
            ``round``, ``t_end_s`` and ``column``).
        column: the column to aggregate.

    Returns:
        ``BAND_COLUMNS``: ``group``, ``label`` (the group's), ``runs`` (runs in the group),
        ``seeds``, ``round``, ``t_end_s`` (mean over the runs), ``mean``, ``min``, ``max`` of
        ``column``, ``n`` (runs with a value at that round); by group, then round. ``attrs``
        are ``table``'s.
    """
    measured = table[table[column].notna()]
    runs = table.groupby("group")["run"].nunique()
    band = (
        measured.groupby(["group", "round"], sort=True)
        .agg(
            label=("group_label", "first"),
            seeds=("seeds", "first"),
            t_end_s=("t_end_s", "mean"),
            mean=(column, "mean"),
            min=(column, "min"),
            max=(column, "max"),
            n=(column, "size"),
        )
        .reset_index()
    )
    band["runs"] = band["group"].map(runs)
    band = (
        band[BAND_COLUMNS].astype({"runs": int})
        if len(band)
        else band.reindex(columns=BAND_COLUMNS)
    )
    band.attrs.update(table.attrs)
    return band


# -- frontier -----------------------------------------------------------------------------------
def frontier_x(x: str) -> tuple[str, str]:
    """Where a frontier ``x`` comes from: ``("summary", column)`` or ``("config", key)``."""
    if x in FRONTIER_ALIASES:
        return FRONTIER_ALIASES[x]
    if x in SUMMARY_COLUMNS:
        return "summary", x
    return "config", x


def frontier_table(results: Results, *, x: str = "bits") -> pd.DataFrame:
    """One row per group: ``label``, ``x`` (mean over seeds), ``accuracy`` (mean final
    accuracy), ``acc_min``, ``acc_max``, ``n``, plus the group's varying parameters.

    Args:
        results: runs, a study or a folder.
        x: ``bits``, ``time``, ``delay``, ``d_th``, a ``SUMMARY_COLUMNS`` name or a dotted
            config key (see ``frontier_x``).

    Returns:
        The table, groups in order of their first runs.
    """
    source, column = frontier_x(x)
    runs = as_runs(results)
    rows = []
    for group in group_runs(runs):
        xs, accs = [], []
        for run in group.runs:
            summary = summarize_run(run)
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
    return with_source(pd.DataFrame(rows), runs)


def pareto_front(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Indices of the points not dominated by another one (lower x and higher y), by x."""
    order = np.lexsort((-ys, xs))
    keep, best = [], -np.inf
    for i in order:
        if ys[i] > best:
            keep.append(i)
            best = ys[i]
    return np.asarray(keep, dtype=int)


# -- offline stage ------------------------------------------------------------------------------
def offline_table(results: Results) -> pd.DataFrame:
    """The offline stage (meta.json ``controller``) of every distinct curve, one row per rank.

    Runs with the same bounds and chosen rank count once; runs without an offline stage are
    left out (the table is empty when no run has one).

    Args:
        results: runs, a study or a folder.

    Returns:
        ``curve`` (0, 1, ...), ``label`` (the config keys that tell the curves apart),
        ``r`` (1..r_max), ``bound`` (γ^0(r), ``offline_bounds``), ``sparsification``
        (O*(r), ``offline_sparsifications``; NaN if not written) and ``chosen_rank``
        (``rank``; NaN if none).
    """
    runs = as_runs(results)
    members: dict[str, list[RunResult]] = {}
    for run in runs:
        ctrl = run.meta.get("controller") or {}
        if ctrl.get("offline_bounds"):
            key = json.dumps([ctrl.get("offline_bounds"), ctrl.get("rank")])
            members.setdefault(key, []).append(run)
    labels = distinguishing_labels(list(members.values()))
    frames = []
    for i, (alike, label) in enumerate(zip(members.values(), labels, strict=True)):
        ctrl = alike[0].meta["controller"]
        bounds = np.asarray(ctrl["offline_bounds"], dtype=float)
        sparsifications = ctrl.get("offline_sparsifications")
        rank = ctrl.get("rank")
        frame = pd.DataFrame(
            {
                "curve": i,
                "label": label,
                "r": np.arange(1, len(bounds) + 1),
                "bound": bounds,
                "sparsification": (
                    np.asarray(sparsifications, dtype=float) if sparsifications else math.nan
                ),
                "chosen_rank": math.nan if rank is None else int(rank),
            }
        )
        frames.append(frame)
    table = (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=_OFFLINE_COLUMNS)
    )
    return with_source(table, runs)


# -- bandwidth shares ---------------------------------------------------------------------------
def share_table(results: Results) -> pd.DataFrame:
    """clients.share of the first run pivoted to rounds (index) × clients (columns); NaN: not
    scheduled. Needs the run's ``clients.csv`` (``output.clients: true``). ``attrs["source"]``
    names that run."""
    run = as_runs(results)[0]
    if run.clients is None or run.clients.empty:
        raise UserError(
            f"plot shares: {run.path} has no clients.csv (run with --set output.clients=true)"
        )
    table = run.clients.pivot_table(index="round", columns="client", values="share", aggfunc="sum")
    table = table.reindex(run.rounds["round"]) if len(run.rounds) else table
    return with_source(table, [run])
