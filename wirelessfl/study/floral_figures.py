"""FLoRAL reproduction figures and tables: Table 1's methods per task, the synthetic tasks'
test loss, and the number of adaptors C against virtual time.

A run's *method* is its algorithm with the settings that name it in the paper ("FLoRAL(1%)",
"Ensemble pi*", ...). Final values are the last evaluation of each run (personalised, weighted
by test size); tables give mean, sd and count over seeds. Importing this module imports
neither pandas nor matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import evaluations, save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["draw_adaptors", "draw_methods", "draw_synthetic", "final_table", "method_label"]

_NAMES = {"fedavg_full": "FedAvg", "floral_local": "Local Adaptor", "ensemble": "Ensemble"}


def method_label(run) -> str:
    """The paper's name of ``run``'s method: FedAvg, Local Adaptor, Ensemble [pi*],
    FLoRAL(rho) [pi*], with C when the run sets n_adaptors away from the task's clusters."""
    from wirelessfl.results.groups import config_value

    name = str(config_value(run, "algorithm.name"))
    oracle = " π*" if config_value(run, "strategy.router") == "oracle" else ""
    if name == "floral":
        rho = float(config_value(run, "strategy.rho"))
        return f"FLoRAL({rho * 100:g}%){oracle}"
    return _NAMES.get(name, name) + oracle


def _components(run) -> int:
    """C of ``run``: its adaptors (FLoRAL) or members (Ensemble), else 1."""
    from wirelessfl.results.groups import config_value

    for key in ("strategy.n_adaptors", "strategy.n_members"):
        value = config_value(run, key)
        if isinstance(value, int):
            return value
    return 1


def _evaluations(runs: list) -> pd.DataFrame:
    """Every evaluated round of every run: method, task, seed, round, time and metrics."""
    import pandas as pd

    from wirelessfl.results.groups import config_value

    frames = []
    for run in runs:
        reduced = config_value(run, "learner.dataset_options.reduced") is True
        routing = run.rounds.get("algo.routing_accuracy")
        frames.append(
            evaluations(run, "test_loss").assign(
                method=method_label(run),
                task=str(config_value(run, "learner.dataset")) + (" reduced" if reduced else ""),
                C=_components(run),
                seed=int(config_value(run, "seed")),
                routing=float("nan") if routing is None else float(routing.iloc[-1]),
            )
        )
    return pd.concat(frames, ignore_index=True)


def final_table(runs: list, metric: str) -> pd.DataFrame:
    """Mean, sd and count over seeds of ``metric`` at each run's last evaluation, one row per
    (task, method); the last routing accuracy alongside."""
    ev = _evaluations(runs)
    last = ev.sort_values("round").groupby(["task", "method", "seed"]).tail(1)
    table = last.groupby(["task", "method"]).agg(
        mean=(metric, "mean"),
        sd=(metric, "std"),
        seeds=(metric, "count"),
        routing=("routing", "mean"),
    )
    return table.reset_index()


def _curves(ev: pd.DataFrame, key: str, metric: str, x: str, title: str, path: Path, log: bool):
    from matplotlib.figure import Figure

    tasks = sorted(ev.task.unique())
    fig = Figure(figsize=(5.2 * len(tasks), 3.6))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, task in zip(axes, tasks, strict=True):
        part = ev[ev.task == task]
        for label, curve in part.groupby(key, sort=True):
            stats = curve.groupby("rounds_done").agg(
                x=(x, "mean"), mean=(metric, "mean"), lo=(metric, "min"), hi=(metric, "max")
            )
            (line,) = ax.plot(stats.x, stats["mean"], marker=".", label=str(label))
            ax.fill_between(stats.x, stats.lo, stats.hi, color=line.get_color(), alpha=0.15)
        ax.set_title(task)
        ax.set_xlabel("rounds completed" if x == "rounds_done" else "cumulative virtual time [s]")
        ax.set_ylabel(metric.replace("_", " "))
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title + " (mean over seeds, min–max shaded)")
    fig.tight_layout()
    return save_figure(fig, path)


def _write_table(table: pd.DataFrame, out: Path, stem: str) -> Path:
    path = out / f"{stem}.csv"
    table.to_csv(path, index=False)
    return path


def draw_methods(out: Path, runs: list) -> list[Path]:
    """Table 1 at offline scale: final accuracy per task and method; accuracy both ways."""
    ev = _evaluations(runs)
    paths = [_write_table(final_table(runs, "accuracy"), out, "floral_table1")]
    for x, stem in (("rounds_done", "floral_methods"), ("t_end_s", "floral_methods_time")):
        title = "FLoRAL and its baselines: personalised test accuracy"
        paths.append(_curves(ev, "method", "accuracy", x, title, out / f"{stem}.png", False))
    return paths


def draw_synthetic(out: Path, runs: list) -> list[Path]:
    """The synthetic tasks: final test loss per method (table) and test loss against the
    round and against virtual time."""
    ev = _evaluations(runs)
    title = "FLoRAL on the synthetic task: personalised test loss"
    paths = [_write_table(final_table(runs, "test_loss"), out, "floral_synthetic")]
    for x, stem in (("rounds_done", "floral_synthetic"), ("t_end_s", "floral_synthetic_time")):
        paths.append(_curves(ev, "method", "test_loss", x, title, out / f"{stem}.png", True))
    return paths


def draw_adaptors(out: Path, runs: list) -> list[Path]:
    """C adaptors against virtual time: latency–accuracy curves per C, and the table of
    final accuracy and uplink bits per round."""
    import pandas as pd

    ev = _evaluations(runs)
    bits = (
        pd.DataFrame(
            {
                "C": _components(r),
                "bits_up_per_client": float((r.rounds.bits_up / r.rounds.n_arrived).mean()),
            }
            for r in runs
        )
        .groupby("C")
        .mean()
    )
    table = (
        ev.sort_values("round")
        .groupby(["C", "seed"])
        .tail(1)
        .groupby("C")
        .agg(accuracy=("accuracy", "mean"), sd=("accuracy", "std"), seeds=("accuracy", "count"))
    )
    table = table.join(bits).reset_index()
    ev = ev.assign(C="C = " + ev.C.astype(str))
    title = "FLoRAL: number of adaptors C"
    return [
        _write_table(table, out, "floral_adaptors"),
        _curves(ev, "C", "accuracy", "t_end_s", title, out / "floral_adaptors_time.png", False),
        _curves(ev, "C", "accuracy", "rounds_done", title, out / "floral_adaptors.png", False),
    ]
