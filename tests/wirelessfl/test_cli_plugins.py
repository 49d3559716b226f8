"""``--plugin`` and the scenario's ``plugins`` key: a controller, an algorithm and a channel model
defined in files outside the package reach ``run``, ``sweep`` (worker processes included),
``channels`` and ``scenario-keys``, are recorded in the run folder, and are imported again by
``run --resume``; a plug-in that cannot be imported is one line and exit status 2."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from wirelessfl.cli import main
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.plugins import listed_plugins, resolve_plugin

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "tests" / "plugin_greedy_controller.py"  # registers greedy_plugin
ALGORITHM = ROOT / "tests" / "plugin_half_rank.py"  # registers half_rank_personal

#: network-only, N = 10, K = 3, two 768 x 768 layers: at rank 4 and O = 1 the three uploads
#: take ~0.5 s on 1 MHz, so D_th = 0.3 s needs O < 1 and D_th = 0.6 s does not
NETWORK = {
    "name": "net",
    "seed": 2,
    "n_clients": 10,
    "n_scheduled": 3,
    "rounds": 4,
    "eval_every": 2,
    "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
    "devices": {"include_compute": False},
    "controller": {"name": "greedy_plugin", "rank": 4, "d_th_s": 0.3, "o_min": 0.05, "r_max": 16},
    "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[768, 768], [768, 768]]}},
}

#: a fading model of no fading at all (|s| = 1), as a module in the current folder
STEADY_FADING = '''
import numpy as np

from channels import FADING_MODELS


class Steady:
    """No fading: every coefficient is 1 (unit power)."""

    mean_power = 1.0

    def sample(self, rng, n_rounds, n_clients, *, initial=None):
        return np.ones((n_rounds, n_clients), dtype=complex)


FADING_MODELS.register("steady_plugin", Steady)
'''


def _cli(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m wirelessfl ARGS`` in ``cwd``, importing this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("RAY_ADDRESS", None)  # --executor ray: a local instance
    return subprocess.run(
        [sys.executable, "-m", "wirelessfl", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def _write_yaml(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _config(run: Path) -> dict:
    return yaml.safe_load((run / "config.yaml").read_text())


def _assert_greedy(rounds: pd.DataFrame, d_th_s: float, o_min: float = 0.05) -> None:
    """The greedy rule, by its definition: a ratio inside (o_min, 1) is the one whose delay is
    D_th (every client finishing together); a ratio of 1 means even O = 1 meets D_th."""
    for o, delay in zip(rounds["sparsification"], rounds["delay_s"], strict=True):
        if o_min < o < 1.0:
            assert delay == pytest.approx(d_th_s, rel=1e-3)
        else:
            assert o == 1.0 and delay < d_th_s


def test_run_with_a_plugin_algorithm_file_then_resume_finds_it(tmp_path):
    pytest.importorskip("torch")
    work = tmp_path / "work"
    work.mkdir()
    scenario = _write_yaml(
        tmp_path / "lora.yaml",
        {
            "name": "plug",
            "seed": 1,
            "n_clients": 8,
            "n_scheduled": 4,
            "rounds": 1,
            "eval_every": 1,
            "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 10.0},
            "devices": {"flops_per_s": 1.0e9},
            "algorithm": {"name": "half_rank_personal"},
            "strategy": {"min_rank": 1},
            "controller": {"name": "fixed", "rank": 4, "r_max": 16},
            "learner": {
                "kind": "lora",
                "model": "tiny_mlp",
                "dataset": "digits",
                "local_steps": 2,
                "batch_size": 16,
                "lr": 0.1,
            },
            "output": {"clients": True, "checkpoint_every": 1},
        },
    )
    relative = os.path.relpath(ALGORITHM, work)  # --plugin files are relative to the cwd
    _ok(_cli("run", scenario, "--plugin", relative, "--out", "out", "--quiet", cwd=work))
    out = work / "out"
    assert _config(out)["plugins"] == [str(ALGORITHM)]

    # resumed from elsewhere without --plugin: config.yaml names the file
    _ok(_cli("run", "--resume", out, "--set", "rounds=2", "--quiet", cwd=tmp_path))
    rounds = pd.read_csv(out / "rounds.csv")
    clients = pd.read_csv(out / "clients.csv")
    assert list(rounds["round"]) == [0, 1]
    # the plug-in's cost model: odd clients train at half the rank 4; its metric per round
    arrived = clients[clients.status == "arrived"]
    assert set(arrived.loc[arrived.client % 2 == 1, "rank"]) == {2}
    assert set(arrived.loc[arrived.client % 2 == 0, "rank"]) == {4}
    for t in range(2):
        mean_rank = arrived.loc[arrived["round"] == t, "rank"].mean()
        assert rounds.loc[t, "algo.mean_rank"] == pytest.approx(mean_rank)


def test_sweep_workers_import_the_plugin_and_resume_finds_it(tmp_path):
    plugin = tmp_path / "plugins" / "greedy.py"
    plugin.parent.mkdir()
    shutil.copy(CONTROLLER, plugin)
    _write_yaml(tmp_path / "net.yaml", NETWORK)
    sweep = (
        "sweep",
        "net.yaml",
        "--plugin",
        "plugins/greedy.py",
        "--grid",
        "controller.d_th_s=0.3,0.6",
        "--jobs",
        "2",  # two runs, two spawned worker processes
        "--out",
        "study",
        "--quiet",
    )
    _ok(_cli(*sweep, cwd=tmp_path))
    study = tmp_path / "study"
    assert yaml.safe_load((study / "study.json").read_text())["plugins"] == [str(plugin)]
    index = pd.read_csv(study / "index.csv")
    assert index["finished"].all() and len(index) == 2
    for d_th_s in (0.3, 0.6):
        run = study / f"controller.d_th_s={d_th_s},seed=2"
        assert _config(run)["plugins"] == [str(plugin)]
        _assert_greedy(pd.read_csv(run / "rounds.csv"), d_th_s)
    tight = pd.read_csv(study / "controller.d_th_s=0.3,seed=2" / "rounds.csv")
    assert (tight["sparsification"] < 1.0).all()  # the case the check above computes

    assert "2 skipped" in _ok(_cli(*sweep, cwd=tmp_path)).stdout

    run = study / "controller.d_th_s=0.3,seed=2"
    _ok(_cli("run", "--resume", run, "--set", "rounds=6", "--quiet", cwd=ROOT))
    rounds = pd.read_csv(run / "rounds.csv")
    assert len(rounds) == 6
    _assert_greedy(rounds, 0.3)

    plugin.rename(plugin.with_name("moved.py"))
    gone = _cli("run", "--resume", run, "--set", "rounds=7", "--quiet", cwd=ROOT)
    assert gone.returncode == 2
    assert gone.stderr.splitlines() == [
        f"wirelessfl: error: --resume {run}: config.yaml: plugins: {plugin}: no such file"
    ]


def test_scenario_plugins_key_resolves_files_beside_the_scenario(tmp_path):
    """``plugins`` in a scenario: a file relative to the scenario's folder, a module from the
    current folder; ``channels`` and ``run`` both import them."""
    shutil.copy(CONTROLLER, tmp_path / "greedy.py")
    work = tmp_path / "work"
    work.mkdir()
    (work / "steady_fading.py").write_text(STEADY_FADING)
    data = {
        **NETWORK,
        "plugins": ["../greedy.py", "steady_fading"],
        "channel": {**NETWORK["channel"], "fading": {"model": "steady_plugin"}},
    }
    scenario = _write_yaml(tmp_path / "scenarios" / "s.yaml", data)

    report = _ok(_cli("channels", scenario, "--max-rows", "2", cwd=work)).stdout.splitlines()
    header = report[1].split()
    row = dict(zip(header, report[2].split(), strict=True))
    # no fading: the rate is B log2(1 + 10) = 3.459 Mbit/s; no closed-form ergodic rate for a
    # model the report does not know (Rayleigh would give 2.907 Mbit/s)
    assert float(row["average_channel_rate_bps"]) == pytest.approx(1e6 * math.log2(11), rel=1e-3)
    assert row["ergodic_rate_bps"] == "nan"

    _ok(_cli("run", scenario, "--out", "out", "--quiet", cwd=work))
    assert _config(work / "out")["plugins"] == [str(tmp_path / "greedy.py"), "steady_fading"]
    _assert_greedy(pd.read_csv(work / "out" / "rounds.csv"), 0.3)


def test_ray_sweep_tasks_import_the_plugins(tmp_path):
    """``--executor ray``: each run is a Ray task on a local instance, which imports the
    ``--plugin`` file and the scenario's module plug-in from the driver's folder."""
    pytest.importorskip("ray")
    shutil.copy(CONTROLLER, tmp_path / "greedy.py")
    (tmp_path / "steady_fading.py").write_text(STEADY_FADING)
    data = {
        **NETWORK,
        "plugins": ["steady_fading"],
        "channel": {**NETWORK["channel"], "fading": {"model": "steady_plugin"}},
    }
    _write_yaml(tmp_path / "net.yaml", data)
    grid = ("--grid", "controller.d_th_s=0.3,0.6")
    argv = ("sweep", "net.yaml", "--plugin", "greedy.py", *grid, "--executor", "ray")
    _ok(_cli(*argv, "--out", "study", "--quiet", cwd=tmp_path))
    for d_th_s in (0.3, 0.6):
        run = tmp_path / "study" / f"controller.d_th_s={d_th_s},seed=2"
        assert _config(run)["plugins"] == ["steady_fading", str(tmp_path / "greedy.py")]
        _assert_greedy(pd.read_csv(run / "rounds.csv"), d_th_s)


def test_scenario_keys_lists_a_plugin_algorithms_settings(tmp_path):
    pytest.importorskip("torch")
    key = "strategy.half_rank_personal.min_rank"
    with_plugin = _ok(_cli("scenario-keys", "--plugin", ALGORITHM, cwd=tmp_path)).stdout
    assert key in with_plugin
    assert key not in _ok(_cli("scenario-keys", cwd=tmp_path)).stdout


RAISING = 'raise RuntimeError("the plug-in needs MY_SETTING")\n'
MISSING_LIBRARY = "import not_a_library_xyz\n"
EXITS = "import sys\n\nsys.exit(0)\n"
EXITS_WHY = "import sys\n\nsys.exit('needs MY_SETTING')\n"


def _scenario_with(tmp_path: Path, plugins: object) -> str:
    return str(_write_yaml(tmp_path / "s.yaml", {**NETWORK, "plugins": plugins}))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["run", "paper", "--plugin", "no_such_plugin_xyz"],
            "--plugin no_such_plugin_xyz: no module named 'no_such_plugin_xyz' (looked on "
            "sys.path and in the current folder {tmp}; a file is given as a path ending in .py)",
        ),
        (["sweep", "paper", "--plugin", "missing.py"], "--plugin {tmp}/missing.py: no such file"),
        (
            ["channels", "paper", "--plugin", "raising.py"],
            "--plugin {tmp}/raising.py: importing it raised RuntimeError: the plug-in needs "
            "MY_SETTING",
        ),
        (
            ["reproduce", "fig45", "--plugin", "needs_library.py"],
            "--plugin {tmp}/needs_library.py: importing it raised ModuleNotFoundError: No "
            "module named 'not_a_library_xyz'",
        ),
        (
            ["run", "paper", "--plugin", "exits.py"],
            "--plugin {tmp}/exits.py: the plug-in exited at import (SystemExit(0)); a plug-in "
            "registers names and must not exit",
        ),
        (
            ["sweep", "paper", "--plugin", "exits_why"],
            "--plugin exits_why: the plug-in exited at import (SystemExit('needs MY_SETTING')); "
            "a plug-in registers names and must not exit",
        ),
        (
            ["scenario-keys", "--plugin", "not a name"],
            "--plugin: 'not a name' is neither a module name (Python names joined by dots, e.g. "
            "my_plugins.greedy) nor a .py file",
        ),
        (
            ["run", "{tmp}/s.yaml", "--set", "plugins=[raising.py]"],
            "--set plugins: plug-ins are imported before --set and --grid apply; give them "
            "with --plugin MODULE_OR_FILE (added to the scenario's plugins)",
        ),
        (
            ["run", "--resume", "{tmp}/run", "--plugin", "harmless.py"],
            "--resume: give only the run folder (its config.yaml is used) and, to extend or "
            "shorten it, --set rounds=N; not --plugin (the run's config.yaml lists its plug-ins)",
        ),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_one_line(
    argv, expected, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # plug-ins add their folders
    (tmp_path / "raising.py").write_text(RAISING)
    (tmp_path / "needs_library.py").write_text(MISSING_LIBRARY)
    (tmp_path / "exits.py").write_text(EXITS)
    (tmp_path / "exits_why.py").write_text(EXITS_WHY)  # imported as a module, from the cwd
    (tmp_path / "harmless.py").write_text('"""Registers nothing."""\n')
    _scenario_with(tmp_path, [])
    code = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [f"wirelessfl: error: {expected.format(tmp=tmp_path)}"]


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        (["missing.py"], "plugins: {tmp}/missing.py: no such file"),
        (
            ["sub/../raising.py"],
            "plugins: {tmp}/raising.py: importing it raised RuntimeError: the plug-in needs "
            "MY_SETTING",
        ),
        (
            "raising.py",
            "plugins: expected a list of module names or .py files, e.g. [my_plugin.py], "
            "got 'raising.py'",
        ),
        ([""], "plugins: expected a module name or a .py file, got ''"),
    ],
)
def test_a_bad_plugins_key_is_one_line(plugins, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "raising.py").write_text(RAISING)
    scenario = _scenario_with(tmp_path, plugins)
    assert main(["run", scenario, "--quiet"]) == 2
    err = capsys.readouterr().err
    shown = f"scenario: {scenario}: {expected.format(tmp=tmp_path)}"
    assert err.splitlines() == [f"wirelessfl: error: {shown}"]


def test_resolve_plugin_files_from_the_base_folder_and_modules_as_named(tmp_path):
    base = tmp_path / "scenarios"
    assert resolve_plugin("greedy.py", base, "k") == str(base / "greedy.py")
    assert resolve_plugin("../lib/greedy.py", base, "k") == str(tmp_path / "lib" / "greedy.py")
    assert resolve_plugin("plug/ins", base, "k") == str(base / "plug" / "ins")  # a path: a file
    assert resolve_plugin("/abs/greedy.py", base, "k") == "/abs/greedy.py"
    assert resolve_plugin(" my_pkg.greedy ", base, "k") == "my_pkg.greedy"
    with pytest.raises(UserError, match=r"^k: '1abc' is neither a module name"):
        resolve_plugin("1abc", base, "k")
    data = {"plugins": ["a.py", "pkg.mod"]}
    assert listed_plugins(data, base, "s.yaml") == [str(base / "a.py"), "pkg.mod"]
    assert listed_plugins({}, base, "s.yaml") == []
    with pytest.raises(ConfigError, match=r"^s.yaml: plugins: expected a list"):
        listed_plugins({"plugins": {"a": 1}}, base, "s.yaml")
