"""``wirelessfl reproduce FIGURE [--full]``: the paper's section V figures as named sweeps.

Each reproduction is a scenario under ``scenarios/paper/`` plus one or more grids; results go
to one study folder per sweep under ``OUT/FIGURE/``, figures and a ``summary.csv`` next to them.
The default scale finishes on a 2-core CPU in minutes per run (each scenario file states its
scale); ``--full`` switches to the paper's N = 100, K = 10 and more rounds. Finished runs are
skipped and unfinished ones resumed, as for any sweep. What each figure shows against the
paper's claim is discussed in ``docs/results.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, folder_problem, int_in_range, path_text
from wirelessfl.study.sweep import MAX_JOBS, MAX_SEEDS, MIN_JOBS

FULL_TRAINING = ["n_clients=100", "n_scheduled=10", "rounds=200", "eval_every=10"]


@dataclass(frozen=True)
class Reproduction:
    """A figure: its scenario, its sweeps (name -> grid) and how to draw it."""

    scenario: str  # path under scenarios/
    sweeps: dict[str, dict[str, list]]
    claim: str
    full: list[str] = field(default_factory=lambda: list(FULL_TRAINING))
    full_sweeps: dict[str, dict[str, list]] | None = None
    draw: Callable[[Path, list], list[Path]] | None = None


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return path


def _draw_fig3ab(out: Path, runs: list) -> list[Path]:
    from wirelessfl.plots import accuracy_vs_round
    from wirelessfl.results.groups import config_value

    paths = []
    for panel, rank in (("a", 4), ("b", 8)):
        chosen = [r for r in runs if config_value(r, "controller.rank") == rank]
        if chosen:
            fig = accuracy_vs_round(chosen)
            fig.axes[0].set_title(f"Fig. 3({panel}): sparsifiers at r = {rank}, O = 0.5")
            paths.append(_save(fig, out / f"fig3{panel}_rank{rank}.png"))
    return paths


def _draw_fig3c(out: Path, runs: list) -> list[Path]:
    from wirelessfl.plots import accuracy_vs_round

    fig = accuracy_vs_round(runs)
    fig.axes[0].set_title("Fig. 3(c): TSFA vs OSFA")
    return [_save(fig, out / "fig3c.png")]


def _draw_fig45(out: Path, runs: list) -> list[Path]:
    from wirelessfl.plots import accuracy_vs_round, cov_norm

    fig4 = cov_norm(runs)
    fig4.axes[0].set_title("Fig. 4: ||Cov(theta_B, theta_A)||_F vs shards")
    fig5 = accuracy_vs_round(runs)
    fig5.axes[0].set_title("Fig. 5: accuracy vs shards")
    return [_save(fig4, out / "fig4_cov.png"), _save(fig5, out / "fig5_accuracy.png")]


def _draw_dpp(out: Path, runs: list) -> list[Path]:
    from matplotlib.figure import Figure

    from wirelessfl.results.groups import config_value

    rows = sorted(
        (
            float(config_value(r, "controller.V")),
            float(r.rounds.delay_s.mean()),
            float(r.rounds.bound.mean()),
        )
        for r in runs
    )
    v, delay, bound = zip(*rows, strict=True)
    fig = Figure(figsize=(8, 3.2))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.semilogx(v, delay, "o-")
    ax1.axhline(float(config_value(runs[0], "controller.d_th_s")), color="k", ls=":", label="D_th")
    ax1.set_xlabel("V")
    ax1.set_ylabel("time-average D^t [s]")
    ax1.legend()
    ax2.loglog(v, bound, "o-")
    ax2.set_xlabel("V")
    ax2.set_ylabel("time-average bound gamma^t")
    fig.suptitle("Drift-plus-penalty: O(1/V) bound, O(V) delay")
    fig.tight_layout()
    return [_save(fig, out / "dpp_tradeoff.png")]


REPRODUCTIONS: dict[str, Reproduction] = {
    "fig3ab": Reproduction(
        scenario="paper/fig3ab_sparsifiers.yaml",
        sweeps={
            "sparsifiers": {
                "strategy.sparsifier": ["soft", "topk", "random", "structured", "none"],
                "controller.rank": [4, 8],
            }
        },
        claim="SOFT keeps higher accuracy than TLoRA, SLoRA and RLoRA at O = 0.5; ILoRA bounds it",
        draw=_draw_fig3ab,
    ),
    "fig3c": Reproduction(
        scenario="paper/fig3c_tsfa_osfa.yaml",
        sweeps={
            "tsfa": {"controller.name": ["tsfa"]},
            "osfa": {"controller.name": ["osfa"], "controller.rank": [1, 2, 4, 16, 32, 64]},
        },
        claim="TSFA's offline rank beats OSFA with too small (1, 2, 4) or too large (16-64) ranks",
        draw=_draw_fig3c,
    ),
    "fig45": Reproduction(
        scenario="paper/fig45_shards.yaml",
        sweeps={"shards": {"learner.partition_options.n_shards": [20, 40, 100, 200]}},
        full_sweeps={"shards": {"learner.partition_options.n_shards": [100, 200, 500, 1000]}},
        claim="more shards (closer to IID) give a smaller Cov norm and a higher accuracy",
        draw=_draw_fig45,
    ),
    "dpp": Reproduction(
        scenario="paper/drift_plus_penalty.yaml",
        sweeps={"V": {"controller.V": [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]}},
        full=["rounds=20000"],
        claim="larger V lowers the time-average bound and raises the time-average delay to D_th",
        draw=_draw_dpp,
    ),
}


def reproduce(
    figure: str,
    *,
    out_dir: str | Path,
    full: bool = False,
    jobs: int = 1,
    progress: bool = False,
    overrides: list[str] | None = None,
    seeds: int = 1,
) -> dict[str, Any]:
    """Run (or finish) one reproduction; returns its studies, summary table and figure paths."""
    import pandas as pd

    from wirelessfl.config.loader import SCENARIO_DIR
    from wirelessfl.results.runs import as_runs
    from wirelessfl.study.sweep import run_sweep

    if figure not in REPRODUCTIONS:
        raise UserError(
            f"reproduce: unknown figure {figure!r} (accepted: {', '.join(REPRODUCTIONS)}, all)"
        )
    spec = REPRODUCTIONS[figure]
    from wirelessfl.study.folder import make_folder

    out = Path(out_dir) / (f"{figure}-full" if full else figure)
    problem = folder_problem(out)
    if problem:
        raise UserError(f"--out: {problem}")
    make_folder(out, "--out")
    sweeps = (spec.full_sweeps or spec.sweeps) if full else spec.sweeps
    runs, studies = [], {}
    for name, grid in sweeps.items():
        study = run_sweep(
            SCENARIO_DIR / spec.scenario,
            grid=grid,
            seeds=seeds,
            out_dir=out / name,
            jobs=jobs,
            progress=progress,
            overrides=[*(spec.full if full else []), *(overrides or [])] or None,
        )
        studies[name] = study
        runs.extend(as_runs(study))
    table = pd.concat(
        [s.index.assign(sweep=name) for name, s in studies.items()], ignore_index=True
    )
    table.to_csv(out / "summary.csv", index=False)
    figures = spec.draw(out, runs) if spec.draw else []
    return {"folder": out, "summary": table, "figures": figures, "claim": spec.claim}


def _cmd_reproduce(args: argparse.Namespace) -> int:
    figures = list(REPRODUCTIONS) if args.figure == "all" else [args.figure]
    for figure in figures:
        result = reproduce(
            figure,
            out_dir=args.out,
            full=args.full,
            jobs=args.jobs,
            progress=not args.quiet,
            seeds=args.seeds,
            overrides=args.set,
        )
        cols = [
            c
            for c in result["summary"].columns
            if c in ("run", "final_accuracy", "mean_delay_s", "mean_sparsification", "rank")
        ]
        print(f"{figure}: {result['claim']}")
        print(result["summary"][["sweep", *cols]].to_string(index=False))
        for path in result["figures"]:
            print(f"figure     {path}")
    return 0


def add_reproduce_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl reproduce``."""
    p = subparsers.add_parser("reproduce", help="re-run a figure of the paper's section V")
    p.add_argument("figure", choices=[*REPRODUCTIONS, "all"])
    p.add_argument("--full", action="store_true", help="the paper's N = 100, K = 10 scale")
    p.add_argument(
        "--out", type=path_text, default="runs/reproduce", help="parent folder of the studies"
    )
    p.add_argument(
        "--jobs",
        type=int_in_range(MIN_JOBS, MAX_JOBS),
        default=1,
        help=f"runs in parallel, {MIN_JOBS} to {MAX_JOBS} (default 1)",
    )
    p.add_argument(
        "--seeds",
        type=int_in_range(1, MAX_SEEDS),
        default=1,
        help=f"seeds per grid point (mean and spread), 1 to {MAX_SEEDS} (default 1)",
    )
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override for every run")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_reproduce)
    return p
