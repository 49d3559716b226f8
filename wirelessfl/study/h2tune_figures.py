"""Tables and figures of the H2Tune reproductions (``wirelessfl reproduce h2tune-*``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.study.figures import evaluations, save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["draw_ablation", "draw_comparison", "method_label"]

_NAMES = {"h2tune": "H2Tune", "h2tune_local": "LOCAL", "fllm": "FLLM", "h2tune_hetlora": "HetLoRA"}


def method_label(run) -> str:
    """The paper's name of ``run``'s method."""
    from wirelessfl.results.groups import config_value

    name = str(config_value(run, "algorithm.name"))
    return _NAMES.get(name, name)


def devices_label(run) -> str:
    """Which clients are slow: from ``devices.per_client_flops_per_s`` (first vs last client,
    the scenarios list the large models first), else the devices' kind."""
    from wirelessfl.results.groups import config_value

    speeds = config_value(run, "devices.per_client_flops_per_s")
    if isinstance(speeds, list) and speeds:
        if speeds[0] < speeds[-1]:
            return "large models slow"
        if speeds[0] > speeds[-1]:
            return "large models fast"
        return "equal devices"
    return str(config_value(run, "devices.kind"))


def _evaluations(runs: list) -> pd.DataFrame:
    import pandas as pd

    from wirelessfl.results.groups import config_value

    frames = []
    for run in runs:
        rounds = run.rounds
        frames.append(
            evaluations(run).assign(
                method=method_label(run),
                devices=devices_label(run),
                global_rank=config_value(run, "strategy.global_rank"),
                density=config_value(run, "strategy.density"),
                seed=int(config_value(run, "seed")),
                bits_up_per_client=float(rounds.bits_up.sum() / rounds.n_arrived.sum()),
            )
        )
    return pd.concat(frames, ignore_index=True)


def _table(ev: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean, sd and count over seeds of the last evaluation's accuracy, the run's virtual
    time and the uplink bits per client per round, one row per ``keys``."""
    last = ev.sort_values("round").groupby([*keys, "seed"], dropna=False).tail(1)
    table = last.groupby(keys, dropna=False).agg(
        mean=("accuracy", "mean"),
        sd=("accuracy", "std"),
        seeds=("accuracy", "count"),
        time_s=("t_end_s", "mean"),
        bits_up_per_client=("bits_up_per_client", "mean"),
    )
    return table.reset_index()


def _curves(ev: pd.DataFrame, panels: str, key: str, x: str, title: str, path: Path) -> Path:
    from matplotlib.figure import Figure

    names = sorted(ev[panels].unique())
    fig = Figure(figsize=(5.2 * len(names), 3.6))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names, strict=True):
        for label, curve in ev[ev[panels] == name].groupby(key, sort=True):
            stats = curve.groupby("rounds_done").agg(
                x=(x, "mean"),
                mean=("accuracy", "mean"),
                lo=("accuracy", "min"),
                hi=("accuracy", "max"),
            )
            (line,) = ax.plot(stats.x, stats["mean"], marker=".", label=str(label))
            ax.fill_between(stats.x, stats.lo, stats.hi, color=line.get_color(), alpha=0.15)
        ax.set_title(str(name))
        ax.set_xlabel("rounds completed" if x == "rounds_done" else "cumulative virtual time [s]")
        ax.set_ylabel("mean client accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title + " (mean over seeds, min–max shaded)")
    fig.tight_layout()
    return save_figure(fig, path)


def draw_comparison(out: Path, runs: list) -> list[Path]:
    """H2Tune against LOCAL, FLLM and HetLoRA: the final accuracy table per device profile
    and method, accuracy against round and against virtual time."""
    ev = _evaluations(runs)
    path = out / "h2tune_methods.csv"
    _table(ev, ["devices", "method"]).to_csv(path, index=False)
    title = "H2Tune and its baselines: personalised accuracy"
    return [
        path,
        _curves(ev, "devices", "method", "rounds_done", title, out / "h2tune_methods.png"),
        _curves(ev, "devices", "method", "t_end_s", title, out / "h2tune_methods_time.png"),
    ]


def draw_ablation(out: Path, runs: list) -> list[Path]:
    """Tables 4 and 7 at offline scale: H2Tune's final accuracy per global rank and density."""
    ev = _evaluations(runs)
    ev["setting"] = [
        f"r_g={r}" + ("" if d is None or d != d else f", beta={d:g}")
        for r, d in zip(ev.global_rank, ev.density, strict=True)
    ]
    path = out / "h2tune_ablation.csv"
    _table(ev, ["global_rank", "density"]).to_csv(path, index=False)
    ev["panel"] = "H2Tune"
    title = "H2Tune: global rank and density"
    return [
        path,
        _curves(ev, "panel", "setting", "rounds_done", title, out / "h2tune_ablation.png"),
        _curves(ev, "panel", "setting", "t_end_s", title, out / "h2tune_ablation_time.png"),
    ]
