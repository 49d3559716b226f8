"""``wirelessfl run --dry-run``, ``--resume DIR --set rounds=N``, ``wirelessfl scenarios``,
``reproduce --seeds`` in both forms, and every subcommand's help."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from wirelessfl import cli
from wirelessfl.config import load_scenario
from wirelessfl.config.shipped import SCENARIO_DIR, shipped_names

NETWORK_ONLY = ["network_only", "--quiet"]


def _rounds(folder) -> pd.DataFrame:
    return pd.read_csv(folder / "rounds.csv").drop(columns=["wall_s"])


def test_a_finished_run_extended_equals_an_uninterrupted_one(tmp_path, capsys):
    short, whole = tmp_path / "short", tmp_path / "whole"
    # 100 rounds: a multiple of eval_every (50), so the shorter run's last evaluation is one
    # the longer run makes too
    assert cli.main(["run", *NETWORK_ONLY, "--set", "rounds=100", "--out", str(short)]) == 0
    assert cli.main(["run", "--resume", str(short), "--set", "rounds=240", "--quiet"]) == 0
    assert cli.main(["run", *NETWORK_ONLY, "--set", "rounds=240", "--out", str(whole)]) == 0
    pd.testing.assert_frame_equal(_rounds(short), _rounds(whole))
    meta = json.loads((short / "meta.json").read_text())
    assert meta["finished"] and meta["rounds_changed"] == [{"from": 100, "to": 240}]
    assert load_scenario(short / "config.yaml").rounds == 240
    # the extended folder is a consistent run: resuming it again has nothing left to do
    assert cli.main(["run", "--resume", str(short), "--quiet"]) == 0
    assert len(_rounds(short)) == 240


def test_dry_run_prints_the_scenario_and_the_offline_rank_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", *NETWORK_ONLY, "--set", "controller.d_th_s=0.5", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    rank = int(text.split("#   rank: ")[1].split()[0])
    assert "rank_source: offline stage (Algorithm 2)" in text
    # the printed scenario is the resolved one, and runs as a scenario file
    (tmp_path / "printed.yaml").write_text(text)
    printed = load_scenario(tmp_path / "printed.yaml")
    assert printed == load_scenario("network_only", ["controller.d_th_s=0.5"])
    assert cli.main(["run", str(tmp_path / "printed.yaml"), "--set", "rounds=3", "--quiet"]) == 0
    runs = list((tmp_path / "runs").iterdir())
    assert json.loads((runs[0] / "meta.json").read_text())["controller"]["rank"] == rank
    # a looser delay budget lets the offline stage choose a larger rank
    assert cli.main(["run", *NETWORK_ONLY, "--set", "controller.d_th_s=8", "--dry-run"]) == 0
    assert int(capsys.readouterr().out.split("#   rank: ")[1].split()[0]) > rank


def test_scenarios_lists_every_shipped_name_with_its_description(capsys):
    assert cli.main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = shipped_names()
    assert [line.split()[0] for line in lines] == names
    assert {"default", "paper", "network_only", "paper/fig3ab_sparsifiers"} <= set(names)
    assert len(names) == len(list(SCENARIO_DIR.rglob("*.yaml")))
    network = next(line for line in lines if line.startswith("network_only "))
    assert network.split(None, 1)[1] == (
        "A network-only study: a geometric cell (10-500 m annulus, path-loss exponent ..."
    )


@pytest.mark.parametrize(("given", "seeds"), [("3", 3), ("0,4,7", [0, 4, 7])])
def test_reproduce_takes_seeds_as_sweep_does(given, seeds, monkeypatch, tmp_path, capsys):
    seen = {}

    def fake(figure, **kwargs):
        seen.update(kwargs)
        return {
            "summary": pd.DataFrame({"sweep": [], "run": []}),
            "figures": [],
            "claim": "",
            "paired": None,
            "paired_problem": None,
            "tables": {},
        }

    monkeypatch.setattr("wirelessfl.study.reproduce.reproduce", fake)
    assert cli.main(["reproduce", "dpp", "--seeds", given, "--out", str(tmp_path)]) == 0
    assert seen["seeds"] == seeds


@pytest.mark.parametrize(
    "command", sorted(cli.build_parser()._subparsers._group_actions[0].choices)
)
def test_every_subcommand_help_has_a_description_examples_and_exit_status(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    usage, description = out.split("\n\n")[:2]
    assert usage.startswith(f"usage: wirelessfl {command}")
    assert not description.startswith(("positional arguments", "options"))
    assert f"\nexamples:\n  wirelessfl {command}" in out
    assert "\nexit status:\n  0    success" in out and "\n  130  interrupted" in out
