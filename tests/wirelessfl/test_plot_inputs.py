"""Every figure takes every kind of results (a run, a path, a list, a study, its table) and
refuses anything else in one line; `wirelessfl plot A B` draws the union of the folders' runs;
figures show seeds as a band, label only the settings that vary and apply, put units on their
axes, their legend off the data and a title naming what they show."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from wirelessfl import plots
from wirelessfl.errors import UserError
from wirelessfl.plots.command import figure_of_folders
from wirelessfl.results import (
    accuracy_table,
    frontier_table,
    offline_table,
    rounds_table,
    share_table,
)
from wirelessfl.study import load_study, run_sweep

SMALL = ["rounds=12", "n_clients=10", "n_scheduled=4", "eval_every=3", "output.clients=true"]


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """Two studies of the network-only paper scenario, 2 seeds each: ``a`` compares tsfa with
    the fixed controller at O = 0.3; ``b`` holds the fixed controller at O = 1."""
    root = tmp_path_factory.mktemp("plot-inputs")
    run_sweep(
        "paper",
        grid={"controller.name": ["tsfa", "fixed"]},
        seeds=2,
        out_dir=root / "a",
        overrides=[*SMALL, "controller.sparsification=0.3"],
    )
    run_sweep(
        "paper",
        grid={"controller.sparsification": [1.0]},
        seeds=2,
        out_dir=root / "b",
        overrides=[*SMALL, "controller.name=fixed"],
    )
    return load_study(root / "a"), load_study(root / "b")


def _study(studies):
    return studies[0]


# -- every figure, every kind of input ----------------------------------------------------------
#: figure -> the table it draws, built from loaded runs
FIGURES = {
    "accuracy_vs_round": accuracy_table,
    "accuracy_vs_time": accuracy_table,
    "frontier": lambda runs: frontier_table(runs, x="bits"),
    "queue_delay": lambda runs: rounds_table(runs, ["delay_s", "queue"], ["controller.d_th_s"]),
    "sparsification": lambda runs: rounds_table(runs, ["sparsification"], ["controller.o_min"]),
    "offline_bound": offline_table,
    "cov_norm": lambda runs: rounds_table(runs, ["cov_norm"]),
    "bandwidth_shares": share_table,
}


def _inputs(study):
    """Each accepted kind of input, with the loaded runs it stands for."""
    runs = study.runs()
    return {
        "run": (runs[0], runs[:1]),
        "str path": (str(runs[0].path), runs[:1]),
        "Path of a study": (Path(study.path), runs),
        "study": (study, runs),
        # a list mixing a path, a loaded run and a study: the study's runs once each
        "list": ([str(runs[1].path), runs[0], study], [runs[1], runs[0], *runs[2:]]),
        "tuple of Paths": (tuple(Path(r.path) for r in runs[:2]), runs[:2]),
    }


def _drawn(fig) -> list:
    """What a figure draws: per axes, each line's label and data, each image and band."""
    out = []
    for ax in fig.axes:
        for line in ax.lines:
            out.append((line.get_label(), np.asarray(line.get_xdata(), dtype=float).tolist()))
            out.append(np.asarray(line.get_ydata(), dtype=float).tolist())
        out.extend(np.asarray(im.get_array().filled(np.nan)).tolist() for im in ax.images)
        out.append(sum(isinstance(c, PolyCollection) for c in ax.collections))
    return out


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            assert x[0] == y[0]
            np.testing.assert_allclose(x[1], y[1], rtol=1e-12)
        elif isinstance(x, list):
            np.testing.assert_allclose(np.asarray(x, float), np.asarray(y, float), rtol=1e-12)
        else:
            assert x == y


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_takes_every_kind_of_results(studies, name):
    study = _study(studies)
    figure = getattr(plots, name)
    for kind, (given, runs) in _inputs(study).items():
        expected = _drawn(figure(runs))
        _same(_drawn(figure(given)), expected)
        assert expected, kind
    runs = study.runs()
    table = FIGURES[name](runs)
    _same(_drawn(figure(table)), _drawn(figure(runs)))


@pytest.mark.parametrize("name", list(FIGURES))
@pytest.mark.parametrize(
    ("given", "shown"),
    [(3, "int 3"), ({"run": "x"}, "dict"), (None, "NoneType"), ([Path("."), 2.5], "float 2.5")],
)
def test_anything_else_is_one_line_naming_what_was_given(name, given, shown):
    with pytest.raises(TypeError) as err:
        getattr(plots, name)(given)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{name}: ")
    assert shown in text and "a run or study folder (str or Path)" in text


def test_a_missing_folder_and_a_table_lacking_a_column_are_one_line(studies, tmp_path):
    with pytest.raises(UserError, match=r"^sparsification: .*missing does not exist"):
        plots.sparsification(tmp_path / "missing")
    table = accuracy_table(_study(studies))
    with pytest.raises(UserError, match=r"^queue_delay: the table given has no column 'run'"):
        plots.queue_delay(table)


def test_dir_lists_the_figures_without_importing_matplotlib():
    names = dir(plots)
    for name in [*FIGURES, "PLOTS", "add_plot_command"]:
        assert name in names
    code = (
        "import sys, wirelessfl.plots as p; names = dir(p); "
        "assert 'queue_delay' in names, names; "
        "assert 'matplotlib' not in sys.modules and 'pandas' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- what the figures show ----------------------------------------------------------------------
def test_legends_name_only_the_settings_that_vary_and_apply(studies):
    """tsfa chooses O^t itself: its runs at O = 0.3 carry no ratio in their label, the fixed
    controller's do; every group averages two seeds."""
    a, b = studies
    ax = plots.accuracy_vs_round([a, b]).axes[0]
    assert [line.get_label() for line in ax.lines] == [
        "name=tsfa (2 seeds)",
        "name=fixed, sparsification=0.3 (2 seeds)",
        "name=fixed, sparsification=1 (2 seeds)",
    ]
    ax = plots.accuracy_vs_round(a).axes[0]  # within one study the ratio does not vary
    assert [line.get_label() for line in ax.lines] == [
        "name=tsfa (2 seeds)",
        "name=fixed (2 seeds)",
    ]


def _bands(ax) -> list[PolyCollection]:
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def test_every_per_round_figure_draws_the_seeds_as_a_band(studies):
    """Each group's curve is the mean over its two seeds, its min–max shaded (hand-computed
    from the runs' rounds.csv)."""
    study = _study(studies)
    runs = study.runs()
    tsfa = [r for r in runs if r.config["controller"]["name"] == "tsfa"]
    o = np.asarray([r.rounds["sparsification"].to_numpy(float) for r in tsfa])
    ax = plots.sparsification(study).axes[0]
    assert len(_bands(ax)) == 2
    np.testing.assert_allclose(ax.lines[0].get_ydata(), o.mean(axis=0), rtol=1e-12)
    band = _bands(ax)[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(o.min()) and band.max() == pytest.approx(o.max())
    top, bottom = plots.queue_delay(study).axes
    assert len(_bands(top)) == 2 and len(_bands(bottom)) == 2
    q = np.asarray([r.rounds["queue"].to_numpy(float) for r in tsfa])
    np.testing.assert_allclose(bottom.lines[0].get_ydata(), q.mean(axis=0), rtol=1e-12)
    for ax in (plots.accuracy_vs_round(study).axes[0], plots.accuracy_vs_time(study).axes[0]):
        assert len(_bands(ax)) == 2
    # Cov: NaN rows left out, each round the mean of the seeds that measured it
    covs = []
    for i, run in enumerate(tsfa):  # seed i: NaN at round i, else (t + 1) (i + 1)
        rounds = run.rounds.copy()
        rounds["cov_norm"] = [np.nan if t == i else (t + 1.0) * (i + 1) for t in rounds["round"]]
        covs.append(dataclasses.replace(run, rounds=rounds))
    ax = plots.cov_norm(covs).axes[0]
    (line,) = ax.lines
    n = len(tsfa[0].rounds)
    expected = [2.0, 2.0, *(1.5 * (t + 1) for t in range(2, n))]  # rounds 0, 1: one seed each
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-12)
    assert line.get_label() == "paper (2 seeds)" and len(_bands(ax)) == 1  # one group: its name


def test_axes_carry_units_and_legends_sit_off_the_data(studies):
    study = _study(studies)
    run = study.runs()[0]
    counts = {"round $t$", "rounds completed", "LoRA rank $r$", "client"}
    figures = [plots.PLOTS[k](run if k == "shares" else study) for k in plots.PLOTS]
    figures += [plots.queue_delay(study, x="time"), plots.frontier(study, x="controller.d_th_s")]
    for fig in figures:
        fig.draw_without_rendering()
        for ax in fig.axes:
            for label in (ax.get_xlabel(), ax.get_ylabel()):
                if label:  # shared x axes label the bottom one only
                    assert label in counts or "[" in label or "(" in label, label
            legend = ax.get_legend()
            if legend is not None:
                assert legend.get_window_extent().x0 >= ax.get_window_extent().x1
    top, bottom = plots.queue_delay(study).axes
    assert bottom.get_ylabel() == "virtual queue $Q^t$ [s]"
    assert top.get_ylabel() == "round delay $D^t$ [s]"
    assert plots.frontier(study, x="d_th").axes[0].get_xlabel().endswith("[s]")
    assert plots.frontier(study, x="bits").axes[0].get_xlabel() == "total uplink [bits]"


def test_the_title_names_the_study_or_the_run(studies):
    a, b = studies
    run = a.runs()[0]
    assert plots.sparsification(a).axes[0].get_title("left") == "study a (4 runs)"
    assert plots.accuracy_vs_round([a, b]).axes[0].get_title("left") == "studies a, b (6 runs)"
    assert plots.cov_norm(run).axes[0].get_title("left") == f"run {run.path.name} of study a"
    top = plots.queue_delay(a.path).axes[0]
    assert top.get_title("left") == "study a (4 runs)"
    table = accuracy_table(b)  # a table carries its source
    assert plots.accuracy_vs_time(table).axes[0].get_title("left") == "study b (2 runs)"
    assert plots.accuracy_vs_time(table, title="").axes[0].get_title("left") == ""
    assert plots.frontier(a, title="Fig. 1").axes[0].get_title("left") == "Fig. 1"
    fig = plots.sparsification(a)
    plots.sparsification(b, ax=fig.axes[0])  # given axes keep their title
    assert fig.axes[0].get_title("left") == "study a (4 runs)"


# -- command line -------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wirelessfl")
    plots.add_plot_command(parser.add_subparsers())
    args = parser.parse_args(["plot", *argv])
    return args.func(args)


def test_plot_of_two_folders_draws_the_union_of_their_runs(studies, tmp_path, capsys):
    a, b = studies
    out = tmp_path / "both.png"
    assert _cli([str(a.path), str(b.path), "--kind", "sparsification", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "wrote" in capsys.readouterr().out
    ax = figure_of_folders([a.path, b.path], "sparsification").axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "name=tsfa (2 seeds)",
        "name=fixed, sparsification=0.3 (2 seeds)",
        "name=fixed, sparsification=1 (2 seeds)",
        "$O_{min}$ = 0.05",
    ]
    assert len(_bands(ax)) == 3
    # a run folder of a study given with the study counts once
    one = a.runs()[0].path
    top, bottom = figure_of_folders([a.path, one, b.path], "queue").axes
    assert len(bottom.lines) == 3 and top.get_title("left") == "studies a, b (6 runs)"
    points = figure_of_folders([a.path, b.path], "frontier", x="d_th").axes[0]
    assert [line.get_label() for line in points.lines] == [  # one line per group, tsfa's
        "name=fixed, sparsification=0.3",  # without the ratio it does not read
        "name=fixed, sparsification=1",
        "name=tsfa",
    ]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--kind", "accuracy"], "several folders|--out"),
        (["--kind", "shares", "-o", "s.png"], "one run folder"),
    ],
)
def test_plot_of_two_folders_refuses_in_one_line(studies, argv, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = studies
    with pytest.raises(UserError, match=match):
        _cli([str(a.path), str(b.path), *argv])
