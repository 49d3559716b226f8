"""Parameter sweeps: one run folder per grid point and seed, skipped when done, resumed when not.

A study folder::

    STUDY/study.json   scenario, fixed overrides, grid and seeds of the last sweep into it
    STUDY/index.csv    one row per run of that sweep (``index_columns``), rewritten atomically
                       after every run that completes
    STUDY/<run>/       a run folder (``wirelessfl.results``) named from its parameters, grid keys
                       sorted, seed last: ``controller.V=0.0001,controller.d_th_s=2.0,seed=0``

Running the same sweep again skips the runs whose ``meta.json`` says ``finished``, resumes the
others from their last checkpoint and starts the missing ones, so a killed sweep continues where
it stopped. A run folder whose ``config.yaml`` disagrees with what the sweep asks for (the base
scenario or a ``--set`` changed) is refused rather than silently reused.

Heavy imports (pandas, the simulator) happen inside the functions, so registering the ``sweep``
subcommand costs the CLI nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelessfl.errors import SimulationError, UserError
from wirelessfl.study.summary import SUMMARY_COLUMNS, summarize

if TYPE_CHECKING:
    import pandas as pd

    from wirelessfl.config.scenario import Scenario
    from wirelessfl.results.store import RunResult

INDEX_FILE = "index.csv"
STUDY_FILE = "study.json"
_NAME_OK = re.compile(r"[^A-Za-z0-9._+=,\-]")
_MAX_NAME = 150


# -- grid values --------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    return value


def normalize_grid(grid: dict[str, Any]) -> dict[str, list]:
    """Each key's values as a list of plain Python values (a scalar is one value; numpy arrays
    and other iterables become lists)."""
    out: dict[str, list] = {}
    for key, vals in grid.items():
        vals = _plain(vals)
        if isinstance(vals, str | bytes | dict) or not isinstance(vals, Iterable):
            vals = [vals]
        out[str(key)] = [_plain(v) for v in vals]
    return out


def format_value(value: Any) -> str:
    """A grid value as ``--set`` text that parses back to the same value (``1e-05``, ``true``)."""
    value = _plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def parse_value(text: str) -> Any:
    """One value parsed exactly like a ``--set key=VALUE`` value (numbers, booleans, strings)."""
    import yaml

    from wirelessfl.config.loader import apply_overrides

    try:
        return apply_overrides({}, [f"value={text}"])["value"]
    except yaml.YAMLError:
        raise UserError(f"--grid: cannot parse the value {text!r}") from None


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quotes: ``1,[2,3],x`` -> ``1``, ``[2,3]``, ``x``."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_grid(items: Iterable[str]) -> dict[str, list]:
    """``["controller.V=1e-4,1e-3", ...]`` -> ``{"controller.V": [0.0001, 0.001], ...}``."""
    grid: dict[str, list] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            raise UserError(f"--grid: expected KEY=V1,V2,..., got {item!r}")
        if key in grid:
            raise UserError(f"--grid {key}: given twice (list every value in one --grid)")
        texts = _split_top_level(raw)
        if any(not t for t in texts):
            raise UserError(f"--grid {key}: empty value in {raw!r}")
        grid[key] = [parse_value(t) for t in texts]
    return grid


def run_name(params: dict[str, Any], seed: int) -> str:
    """The run folder name: ``key=value`` for the sorted grid keys, then ``seed=N``.

    Characters unsafe in a file name become ``_`` and such names (and very long ones) get a
    short hash of the exact parameters, so different parameters never share a folder."""
    raw = ",".join([*(f"{k}={format_value(params[k])}" for k in sorted(params)), f"seed={seed}"])
    name = _NAME_OK.sub("_", raw)
    if name != raw or len(name) > _MAX_NAME:
        digest = hashlib.sha1(raw.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}~{digest}"
    return name


# -- planning -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its folder name, grid values, seed and ``--set`` overrides."""

    name: str
    params: dict[str, Any]
    seed: int
    overrides: tuple[str, ...]


def plan_sweep(
    grid: dict[str, Any], seeds: Sequence[int], overrides: Sequence[str] = ()
) -> list[SweepPoint]:
    """Every grid point × seed, in grid order with the seed innermost."""
    grid = normalize_grid(grid)
    keys = list(grid)
    if "seed" in keys:
        raise UserError("--grid seed: give the seeds with --seeds instead")
    for key in keys:
        if not grid[key]:
            raise UserError(f"--grid {key}: no values")
    values = [grid[key] for key in keys]
    points, seen = [], set()
    for combo in itertools.product(*values):
        params = dict(zip(keys, combo, strict=True))
        for seed in seeds:
            name = run_name(params, seed)
            if name in seen:
                raise UserError(
                    f"--grid: two runs would share the folder {name!r} (repeated value)"
                )
            seen.add(name)
            sets = [*overrides, *(f"{k}={format_value(v)}" for k, v in params.items())]
            points.append(SweepPoint(name, params, int(seed), (*sets, f"seed={int(seed)}")))
    return points


def _seed_list(seeds: int | Sequence[int], base: int) -> list[int]:
    seeds = _plain(seeds)
    if isinstance(seeds, int):
        if seeds < 1:
            raise UserError(f"--seeds: expected at least 1, got {seeds}")
        return [base + i for i in range(seeds)]
    out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out) or len(set(out)) != len(out):
        raise UserError(f"--seeds: expected distinct seeds >= 0, got {list(seeds)}")
    return out


# -- results ------------------------------------------------------------------------------------
@dataclass
class StudyResult:
    """A study folder: ``index`` (one row per run, see ``index.csv``) and the sweep's spec."""

    path: Path
    index: pd.DataFrame
    grid: dict[str, list] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=list)
    scenario: str | None = None
    overrides: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def run_paths(self, *, finished_only: bool = False) -> list[Path]:
        """Run folders in index order (those holding a ``rounds.csv``)."""
        rows = self.index
        if finished_only:
            rows = rows[rows["finished"].astype(bool)]
        paths = [self.path / str(name) for name in rows["run"]]
        return [p for p in paths if (p / "rounds.csv").exists()]

    def runs(self, *, finished_only: bool = False) -> list[RunResult]:
        """The runs loaded with ``wirelessfl.results.load``, in index order."""
        from wirelessfl.results import load

        return [load(p) for p in self.run_paths(finished_only=finished_only)]


def load_study(path: str | Path) -> StudyResult:
    """Load a study folder written by ``run_sweep`` / ``wirelessfl sweep``."""
    import pandas as pd

    path = Path(path)
    if not (path / INDEX_FILE).exists():
        raise UserError(f"study: {path} is not a study folder (no {INDEX_FILE})")
    index = pd.read_csv(path / INDEX_FILE)
    spec = json.loads((path / STUDY_FILE).read_text()) if (path / STUDY_FILE).exists() else {}
    failed = {
        str(row["run"]): str(row["error"])
        for _, row in index.iterrows()
        if row.get("status") == "failed"
    }
    return StudyResult(
        path,
        index,
        grid=spec.get("grid", {}),
        seeds=spec.get("seeds", []),
        scenario=spec.get("scenario"),
        overrides=spec.get("overrides", []),
        failed=failed,
    )


def index_columns(grid_keys: Iterable[str]) -> list[str]:
    """Columns of ``index.csv``: run, the grid keys, seed, finished, status, summary, error.

    ``status`` is what the last sweep did: ``skipped`` (already finished), ``started``,
    ``resumed``, ``failed`` (``error`` holds the message) or ``pending`` (not reached yet)."""
    return ["run", *grid_keys, "seed", "finished", "status", *SUMMARY_COLUMNS, "error"]


# -- one run ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Task:
    scenario_path: str
    overrides: tuple[str, ...]
    folder: str
    resume: bool


def _execute(task: _Task) -> dict[str, Any]:
    """Start or resume one run (module level so a spawned worker can import it)."""
    from wirelessfl.config import load_scenario
    from wirelessfl.sim.runner import resume_run, run_scenario

    try:
        if task.resume:
            result = resume_run(task.folder)
        else:
            result = run_scenario(
                load_scenario(task.scenario_path, list(task.overrides)), task.folder
            )
    except SimulationError as err:
        return {"error": str(err) or type(err).__name__, "finished": False}
    return {"error": None, "finished": result.finished, "summary": summarize(result.rounds)}


def _read_meta(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return {}


def _folder_summary(folder: Path) -> dict[str, float]:
    import pandas as pd

    try:
        rounds = pd.read_csv(folder / "rounds.csv")
        return summarize(rounds)
    except (OSError, ValueError, KeyError, IndexError):
        return summarize(None)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: data}


def _check_same_scenario(folder: Path, scenario: Scenario) -> None:
    """Refuse to reuse a run folder written for a different scenario."""
    import yaml

    from wirelessfl.config.loader import read_mapping
    from wirelessfl.config.schema import to_dict

    want = _flatten(yaml.safe_load(yaml.safe_dump(to_dict(scenario), sort_keys=False)))
    have = _flatten(read_mapping(folder / "config.yaml"))
    for key in want.keys() & have.keys():
        if want[key] != have[key]:
            raise UserError(
                f"sweep: {folder} already holds a run with {key}={have[key]!r}, but this sweep "
                f"asks for {want[key]!r}; choose another --out for a changed scenario"
            )


# -- the sweep ----------------------------------------------------------------------------------
def run_sweep(
    scenario: str | Path,
    *,
    grid: dict[str, list],
    seeds: int | list[int] = 1,
    out_dir: Path,
    jobs: int = 1,
    progress: bool = False,
    overrides: Sequence[str] | None = None,
) -> StudyResult:
    """Run ``scenario`` for every grid point × seed into ``out_dir/<run name>/``.

    ``grid`` maps dotted scenario keys to value lists; ``seeds`` is a count (the scenario's seed
    and the next ones) or an explicit list; ``overrides`` are ``key=value`` strings applied to
    every run (they do not appear in folder names). Finished runs are skipped, unfinished ones
    resumed, missing ones started; ``jobs > 1`` runs them in spawned worker processes (a script
    calling this needs the usual ``if __name__ == "__main__":`` guard). A run that stops with a
    ``SimulationError`` is recorded in ``index.csv`` and ``StudyResult.failed`` and the others go
    on; running the sweep again resumes it from its last checkpoint."""
    from wirelessfl.config import load_scenario, resolve_scenario_path

    if jobs < 1:
        raise UserError(f"--jobs: expected at least 1, got {jobs}")
    out = Path(out_dir)
    scenario_path = resolve_scenario_path(scenario).resolve()
    fixed = list(overrides or [])
    base_seed = load_scenario(scenario_path, fixed).seed
    seed_list = _seed_list(seeds, base_seed)
    points = plan_sweep(grid, seed_list, fixed)
    # validate every point before running anything (a bad key or value fails in a second)
    scenarios = {p.name: load_scenario(scenario_path, list(p.overrides)) for p in points}

    out.mkdir(parents=True, exist_ok=True)
    from wirelessfl.results.store import atomic_write_text

    spec = {
        "scenario": str(scenario),
        "scenario_path": str(scenario_path),
        "overrides": fixed,
        "grid": normalize_grid(grid),
        "seeds": seed_list,
    }
    atomic_write_text(out / STUDY_FILE, json.dumps(spec, indent=2, default=str) + "\n")

    rows: dict[str, dict[str, Any]] = {}
    tasks: list[tuple[SweepPoint, _Task]] = []
    for p in points:
        folder = out / p.name
        row: dict[str, Any] = {"run": p.name, "seed": p.seed, "error": ""}
        for key, value in p.params.items():
            row[key] = format_value(value) if isinstance(value, list | tuple | dict) else value
        if (folder / "config.yaml").exists():
            _check_same_scenario(folder, scenarios[p.name])
            finished = bool(_read_meta(folder).get("finished", False))
            row.update(finished=finished, status="skipped" if finished else "pending")
            row.update(_folder_summary(folder))
            if not finished:
                tasks.append((p, _Task(str(scenario_path), p.overrides, str(folder), True)))
        else:
            if folder.exists():  # killed before config.yaml was written: nothing to resume
                import shutil

                shutil.rmtree(folder)
            row.update(finished=False, status="pending", **summarize(None))
            tasks.append((p, _Task(str(scenario_path), p.overrides, str(folder), False)))
        rows[p.name] = row

    columns = index_columns(grid)

    def write_index() -> None:
        import pandas as pd

        table = pd.DataFrame([rows[p.name] for p in points], columns=columns)
        atomic_write_text(out / INDEX_FILE, table.to_csv(index=False))

    failed: dict[str, str] = {}

    def record(point: SweepPoint, task: _Task, outcome: dict[str, Any]) -> None:
        row = rows[point.name]
        if outcome["error"] is not None:
            failed[point.name] = outcome["error"]
            row.update(finished=False, status="failed", error=outcome["error"])
            row.update(_folder_summary(Path(task.folder)))
        else:
            row.update(finished=outcome["finished"], status="resumed" if task.resume else "started")
            row.update(outcome["summary"])
        write_index()

    write_index()
    bar = None
    if progress:
        from tqdm import tqdm

        n_skip = len(points) - len(tasks)
        n_resume = sum(t.resume for _, t in tasks)
        print(
            f"sweep: {len(points)} runs in {out} ({n_skip} finished, {n_resume} to resume, "
            f"{len(tasks) - n_resume} to start)",
            file=sys.stderr,
        )
        bar = tqdm(total=len(tasks), unit="run", dynamic_ncols=True, file=sys.stderr)
    try:
        if jobs == 1 or len(tasks) <= 1:
            for point, task in tasks:
                if bar is not None:
                    bar.set_postfix_str(point.name, refresh=True)
                record(point, task, _execute(task))
                if bar is not None:
                    bar.update(1)
        else:
            _run_parallel(tasks, jobs, record, bar)
    finally:
        if bar is not None:
            bar.close()
    study = load_study(out)
    study.failed = failed
    return study


def _share_cores(workers: int) -> None:
    """Worker start-up: each of ``workers`` processes gets its share of the CPU cores.

    Without this every worker starts one math thread per core and they oversubscribe the
    machine (seen as 10-30x slower training on 2 cores). Set before torch is imported.
    """
    import os

    threads = str(max(1, (os.cpu_count() or 1) // workers))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, threads)


def _run_parallel(tasks: list[tuple[SweepPoint, _Task]], jobs: int, record: Any, bar: Any) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = min(jobs, len(tasks))
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_share_cores,
        initargs=(workers,),
    )
    try:
        futures = {pool.submit(_execute, task): (point, task) for point, task in tasks}
        for future in as_completed(futures):
            point, task = futures[future]
            record(point, task, future.result())
            if bar is not None:
                bar.set_postfix_str(point.name, refresh=False)
                bar.update(1)
    except BaseException:
        # interrupted (or a worker crashed): stop the workers now rather than waiting for their
        # runs to end; a run killed at any instant resumes from its last checkpoint
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# -- command line -------------------------------------------------------------------------------
def _parse_seeds(text: str) -> int | list[int]:
    try:
        if "," in text:
            return [int(s) for s in text.split(",")]
        return int(text)
    except ValueError:
        raise UserError(f"--seeds: expected a count N or a list like 0,1,5, got {text!r}") from None


def _study_summary(study: StudyResult) -> str:
    index = study.index
    counts = index["status"].value_counts()
    what = ", ".join(f"{int(n)} {status}" for status, n in counts.items())
    show = ["run", "finished", "final_accuracy", "mean_delay_s", "mean_sparsification"]
    table = index[show].assign(total_MB_up=index["total_bits_up"] / 8e6)
    lines = [
        f"study      {study.path}   ({len(index)} runs: {what})",
        table.to_string(index=False, float_format=lambda x: f"{x:.4g}"),
        f"index      {study.path / INDEX_FILE}",
        f"load with  wirelessfl.study.load_study({str(study.path)!r})",
    ]
    return "\n".join(lines)


def _cmd_sweep(args: argparse.Namespace) -> int:
    grid = parse_grid(args.grid or [])
    seeds = _parse_seeds(args.seeds)
    out = Path(args.out) if args.out else Path("runs") / f"sweep-{Path(args.scenario).stem}"
    try:
        study = run_sweep(
            args.scenario,
            grid=grid,
            seeds=seeds,
            out_dir=out,
            jobs=args.jobs,
            progress=not args.quiet,
            overrides=args.set or [],
        )
    except KeyboardInterrupt:
        print(
            "wirelessfl: sweep interrupted; run the same command again to resume it",
            file=sys.stderr,
        )
        return 130
    print(_study_summary(study))
    if study.failed:
        name, message = next(iter(study.failed.items()))
        raise SimulationError(
            f"{len(study.failed)} of {len(study.index)} runs stopped (first: {name}: {message}); "
            "the same command resumes them"
        )
    return 0


def add_sweep_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``wirelessfl sweep`` on an ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "sweep",
        help="run a scenario over a grid of keys and seeds into a study folder",
        description="Run SCENARIO for every combination of --grid values and every seed, one run "
        "folder each, plus an index.csv. Running the same command again skips finished runs and "
        "resumes killed ones.",
    )
    p.add_argument("scenario", help="scenario file or shipped name")
    p.add_argument(
        "--grid",
        action="append",
        metavar="KEY=V1,V2,...",
        help="a key and its values, parsed like --set values (repeat for more keys)",
    )
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a key in every run"
    )
    p.add_argument(
        "--seeds",
        default="1",
        metavar="N|S1,S2,...",
        help="number of seeds (the scenario's seed and the next ones) or a list (default: 1)",
    )
    p.add_argument("--jobs", type=int, default=1, metavar="J", help="runs in parallel (default 1)")
    p.add_argument("--out", help="study folder (default: runs/sweep-<scenario>)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=_cmd_sweep)
    return p
