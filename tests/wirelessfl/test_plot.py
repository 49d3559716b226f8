"""Every figure renders from real runs and plots exactly the table data it names."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from wirelessfl import plots
from wirelessfl.errors import UserError
from wirelessfl.plots.command import KINDS
from wirelessfl.results import (
    accuracy_table,
    as_runs,
    final_accuracy,
    frontier_table,
    load,
    pareto_front,
    rounds_table,
)
from wirelessfl.study import load_study, run_sweep

SMALL = ["rounds=30", "n_clients=20", "n_scheduled=5", "eval_every=5", "output.clients=true"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Two values of V × two seeds of the network-only paper scenario (30 rounds)."""
    out = tmp_path_factory.mktemp("plots") / "study"
    run_sweep("paper", grid={"controller.V": [1e-4, 1e-2]}, seeds=2, out_dir=out, overrides=SMALL)
    return load_study(out)


@pytest.fixture(scope="module")
def run(study):
    return study.runs()[0]


def _close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12)


def _evaluated(run) -> pd.DataFrame:
    """The run's evaluations: the initial state's (``round`` -1 at t = 0: eval_every 5 turns
    ``eval_initial`` on), then the rounds with an accuracy."""
    first = pd.DataFrame(
        {"round": [-1], "t_end_s": [0.0], "accuracy": [run.meta["initial_evaluation"]["accuracy"]]}
    )
    rounds = run.rounds[run.rounds["accuracy"].notna()][["round", "t_end_s", "accuracy"]]
    return pd.concat([first, rounds], ignore_index=True)


# -- accuracy -----------------------------------------------------------------------------------
def test_accuracy_vs_round_of_one_run(run):
    fig = plots.accuracy_vs_round(run)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    (line,) = ax.lines
    _close(line.get_xdata(), _evaluated(run)["round"] + 1)  # rounds completed, 0 first
    _close(line.get_ydata(), _evaluated(run)["accuracy"])
    assert not ax.collections  # one seed: no spread
    assert ax.get_xlabel() == "rounds completed"


def test_accuracy_curves_average_the_seeds(study):
    runs = study.runs()
    fig = plots.accuracy_vs_round(study)
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and len(ax.collections) == 2  # two V values, shaded spread each
    assert ax.lines[0].get_label() == "V=0.0001 (2 seeds)"
    a, b = (_evaluated(r).set_index("round")["accuracy"] for r in runs[:2])
    _close(ax.lines[0].get_ydata(), (a + b) / 2)
    spread = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert spread.min() == pytest.approx(np.minimum(a, b).min())
    assert spread.max() == pytest.approx(np.maximum(a, b).max())

    fig = plots.accuracy_vs_time(runs)
    line = fig.axes[0].lines[1]
    t0, t1 = (_evaluated(r).set_index("round")["t_end_s"] for r in runs[2:])
    _close(line.get_xdata(), (t0 + t1) / 2)
    assert fig.axes[0].get_xlabel() == "cumulative virtual time [s]"


# -- frontier -----------------------------------------------------------------------------------
def test_frontier_matches_the_study_index(study):
    index = study.index
    per_v = index.groupby("controller.V")[["total_bits_up", "final_accuracy"]].mean()
    per_v = per_v.sort_values("total_bits_up")
    ax = plots.frontier(study, x="bits").axes[0]
    points = ax.lines[0]
    _close(points.get_xdata(), per_v["total_bits_up"])
    _close(points.get_ydata(), per_v["final_accuracy"])
    assert points.get_linestyle() == "None" and ax.lines[1].get_label() == "Pareto front"

    ax = plots.frontier(study, x="controller.V").axes[0]
    _close(ax.lines[0].get_xdata(), [1e-4, 1e-2])
    _close(ax.lines[0].get_ydata(), index.groupby("controller.V")["final_accuracy"].mean())


def test_frontier_of_d_th_draws_one_line_per_other_key(study):
    runs = study.runs()
    ax = plots.frontier(runs, x="d_th").axes[0]
    assert [line.get_label() for line in ax.lines] == ["V=0.0001", "V=0.01"]
    _close(ax.lines[0].get_xdata(), [runs[0].config["controller"]["d_th_s"]])
    _close(ax.lines[0].get_ydata(), [np.mean([final_accuracy(r.rounds) for r in runs[:2]])])
    with pytest.raises(UserError, match="varies"):
        plots.frontier(runs, by="controller.d_th_s")
    with pytest.raises(UserError, match="no config key"):
        plots.frontier(runs, x="controller.nokey")


def test_pareto_front():
    xs, ys = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.4, 0.7, 0.6])
    assert list(pareto_front(xs, ys)) == [0, 2]


# -- network dynamics ---------------------------------------------------------------------------
def test_queue_and_delay_against_d_th(run):
    top, bottom = plots.queue_delay(run).axes
    delay = run.rounds["delay_s"]
    _close(top.lines[0].get_xdata(), run.rounds["round"])
    _close(top.lines[0].get_ydata(), delay)
    _close(top.lines[1].get_ydata(), delay.expanding().mean())
    _close(top.lines[2].get_ydata(), [run.config["controller"]["d_th_s"]] * 2)
    _close(bottom.lines[0].get_ydata(), run.rounds["queue"])
    top, _ = plots.queue_delay(run, x="time").axes
    _close(top.lines[0].get_xdata(), run.rounds["t_end_s"])


def test_queue_of_a_study_averages_the_seeds_with_a_band(study):
    """One colour per value of V: the mean over its two seeds, their min–max shaded."""
    runs = study.runs()
    top, bottom = plots.queue_delay(study).axes
    assert len(bottom.lines) == 2 and len(top.lines) == 2 * 2 + 1  # one D_th for all
    assert bottom.lines[1].get_label() == "V=0.01 (2 seeds)"
    q0, q1 = (np.asarray(r.rounds["queue"], dtype=float) for r in runs[2:])
    _close(bottom.lines[1].get_ydata(), (q0 + q1) / 2)
    band = bottom.collections[1].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(np.minimum(q0, q1).min())
    assert band.max() == pytest.approx(np.maximum(q0, q1).max())
    d0, d1 = (np.asarray(r.rounds["delay_s"], dtype=float) for r in runs[:2])
    steps = np.arange(1, len(d0) + 1)
    _close(top.lines[0].get_ydata(), (d0 + d1) / 2)  # D^t of V=0.0001, mean of the seeds
    running = (np.cumsum(d0) / steps + np.cumsum(d1) / steps) / 2
    _close(top.lines[1].get_ydata(), running)  # the mean of each seed's running mean
    assert len(top.collections) == 2  # the running means' bands


def test_sparsification(run):
    ax = plots.sparsification(run).axes[0]
    _close(ax.lines[0].get_ydata(), run.rounds["sparsification"])
    _close(ax.lines[1].get_ydata(), [run.config["controller"]["o_min"]] * 2)
    with pytest.raises(UserError, match="round"):
        plots.sparsification(run, x="wall")


def test_offline_curve_marks_the_chosen_rank(run, study):
    ctrl = run.meta["controller"]
    top, bottom = plots.offline_bound(run).axes
    bounds = ctrl["offline_bounds"]
    _close(top.lines[0].get_xdata(), np.arange(1, len(bounds) + 1))
    _close(top.lines[0].get_ydata(), bounds)
    rank = ctrl["rank"]
    _close(top.lines[1].get_xdata(), [rank])
    _close(top.lines[1].get_ydata(), [bounds[rank - 1]])
    _close(bottom.lines[0].get_ydata(), ctrl["offline_sparsifications"])
    top, _ = plots.offline_bound(study).axes  # the offline stage does not depend on V or seed
    assert len([ln for ln in top.lines if ln.get_label().startswith("r* =")]) == 1
    no_offline = dataclasses.replace(run, meta={**run.meta, "controller": {"rank": 4}})
    with pytest.raises(UserError, match="offline"):
        plots.offline_bound(no_offline)


def test_cov_norm(run):
    ax = plots.cov_norm(run).axes[0]  # the surrogate learner measures no Cov: a note, no line
    assert not ax.lines and "no Cov data" in ax.texts[0].get_text()
    rounds = run.rounds.copy()
    rounds["cov_norm"] = [math.nan if t % 3 else 1.0 / (t + 1) for t in rounds["round"]]
    ax = plots.cov_norm(dataclasses.replace(run, rounds=rounds)).axes[0]
    measured = rounds.dropna(subset=["cov_norm"])
    _close(ax.lines[0].get_xdata(), measured["round"])
    _close(ax.lines[0].get_ydata(), measured["cov_norm"])
    assert ax.get_yscale() == "log"


def test_bandwidth_shares(run):
    clients = run.clients
    pivot = clients.pivot(index="round", columns="client", values="share")
    fig = plots.bandwidth_shares(run)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (pivot.shape[1], len(run.rounds))
    np.testing.assert_array_equal(image.mask, pivot.isna().to_numpy().T)
    _close(image.filled(np.nan)[~image.mask], pivot.to_numpy().T[~image.mask])
    ax = plots.bandwidth_shares(run, style="area").axes[0]
    assert len(ax.collections) == clients["client"].nunique()
    top = ax.collections[-1].get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(clients.groupby("round")["share"].sum().max())
    with pytest.raises(UserError, match="output.clients"):
        plots.bandwidth_shares(dataclasses.replace(run, clients=None))


def test_results_may_be_paths(study, run):
    assert len(as_runs(study.path)) == 4
    assert as_runs(run.path)[0].path == run.path
    with pytest.raises(UserError):
        as_runs([])


def test_figures_draw_the_tables_they_are_given(study):
    runs = study.runs()
    a = plots.accuracy_vs_round(accuracy_table(study)).axes[0]
    b = plots.accuracy_vs_round(runs).axes[0]
    assert [ln.get_label() for ln in a.lines] == [ln.get_label() for ln in b.lines]
    for la, lb in zip(a.lines, b.lines, strict=True):
        _close(la.get_ydata(), lb.get_ydata())
    table = frontier_table(study, x="controller.V")
    _close(plots.frontier(table, x="controller.V").axes[0].lines[0].get_ydata(), table["accuracy"])
    table = rounds_table(study, ["sparsification"], ["controller.o_min"])
    assert list(table["run"].unique()) == [0, 1, 2, 3]
    ax = plots.sparsification(table).axes[0]
    o2, o3 = (np.asarray(r.rounds["sparsification"], dtype=float) for r in runs[2:])
    _close(ax.lines[1].get_ydata(), (o2 + o3) / 2)  # V=0.01: the mean of its two seeds
    assert ax.lines[1].get_label() == "V=0.01 (2 seeds)"
    assert len(ax.collections) == 2  # each group's min–max band


def test_every_kind_has_a_figure():
    assert tuple(plots.PLOTS) == KINDS


# -- command line -------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wirelessfl")
    plots.add_plot_command(parser.add_subparsers())
    args = parser.parse_args(["plot", *argv])
    return args.func(args)


def test_cli_writes_png_and_pdf(study, run, tmp_path, capsys):
    assert _cli([str(study.path), "--kind", "frontier", "-o", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _cli([str(run.path), "--kind", "shares", "-o", str(tmp_path / "s.pdf")]) == 0
    assert (tmp_path / "s.pdf").read_bytes()[:5] == b"%PDF-"
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--kind", "shares"], "run folder"),
        (["-o", "x.jpg"], "must end in"),
        (["--kind", "offline", "--x", "time"], "--x"),
        (["--kind", "queue", "--by", "controller.V"], "--by"),
    ],
)
def test_cli_user_mistakes(study, argv, match):
    with pytest.raises(UserError, match=match):
        _cli([str(study.path), *argv])


def test_cli_needs_a_folder(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        _cli([str(tmp_path / "missing")])
    with pytest.raises(UserError, match="not a run folder"):
        _cli([str(tmp_path)])


def test_loaded_run_and_path_give_the_same_figure_data(run):
    a = plots.accuracy_vs_round(run).axes[0].lines[0].get_ydata()
    b = plots.accuracy_vs_round(Path(run.path)).axes[0].lines[0].get_ydata()
    c = plots.accuracy_vs_round(load(run.path)).axes[0].lines[0].get_ydata()
    _close(a, b)
    _close(a, c)
