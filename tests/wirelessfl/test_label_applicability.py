"""Groups and labels leave out the settings that do not apply to a run: the controller's ratio
under a compression stage that sends everything (dense ILoRA among sparsifiers), the
compression keys of no stage, another algorithm's ``strategy.<name>`` table. The config-level
rule agrees with the compression stage the algorithms resolve, and labels stay unique."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.algorithms.compression import resolve_compression
from wirelessfl.algorithms.spec import cost_model_class
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import applies, to_dict
from wirelessfl.registries import ALGORITHMS
from wirelessfl.results import accuracy_table
from wirelessfl.results.groups import group_runs, run_labels
from wirelessfl.results.store import RunResult
from wirelessfl.sim import run_scenario

SPARSIFIERS = ["soft", "topk", "random", "structured", "none"]


def _run(seed: int = 0, **overrides) -> RunResult:
    """A run of small_scenario's resolved config (no rounds are simulated)."""
    config = to_dict(small_scenario(seed=seed, **{"controller.name": "fixed", **overrides}))
    rounds = pd.DataFrame({"round": [0], "t_end_s": [1.0], "accuracy": [0.5]})
    name = ",".join(f"{k}={v}" for k, v in overrides.items()) + f",seed={seed}"
    return RunResult(Path(name), rounds, config, {"seed": seed})


def _grid(seeds=(0,)) -> list[RunResult]:
    """compression.sparsifier x controller.sparsification, as ``--grid`` writes it."""
    return [
        _run(seed, **{"compression.sparsifier": s, "controller.sparsification": o})
        for s in SPARSIFIERS
        for o in (0.5, 0.1)
        for seed in seeds
    ]


# -- the rule -------------------------------------------------------------------------------------
def _config(**overrides) -> dict:
    return to_dict(small_scenario(**{"controller.name": "fixed", **overrides}))


def test_applies_reads_the_keys_own_rules_and_the_running_algorithms_table():
    dense = _config(**{"compression.sparsifier": "none"})
    topk = _config(**{"compression.sparsifier": "topk"})
    fixed = _config(**{"compression.sparsifier": "topk", "compression.ratio": 0.3})
    soft = _config()  # SOFT's own stage: its sparsifier, the controller's ratio
    ratio = "controller.sparsification"
    assert not applies(Scenario, dense, ratio) and not applies(Scenario, fixed, ratio)
    assert applies(Scenario, topk, ratio) and applies(Scenario, soft, ratio)
    for key in ("compression.ratio", "compression.error_feedback", "compression.importance"):
        assert not applies(Scenario, dense, key)
    assert applies(Scenario, topk, "compression.ratio")
    assert not applies(Scenario, topk, "compression.importance")  # top-k weighs nothing
    assert applies(Scenario, soft, "compression.importance")
    # another algorithm's table is kept but never used
    hetlora = _config(**{"algorithm.name": "hetlora", "strategy": {"fslora": {"download": "full"}}})
    assert not applies(Scenario, hetlora, "strategy.fslora.download")
    assert applies(Scenario, hetlora, "strategy.hetlora.self_pruning")
    # keys without a rule, and keys the schema does not know, apply
    for key in ("controller.d_th_s", "devices.classes.laptop_cpu", "strategy", "no.such.key"):
        assert applies(Scenario, dense, key)
    # another controller's key is kept but never read: V is osfa's, not the fixed controller's
    assert not applies(Scenario, dense, "controller.V")
    osfa = _config(**{"controller.name": "osfa"})
    assert applies(Scenario, osfa, "controller.V")
    assert not applies(Scenario, osfa, "controller.bandwidth")
    assert applies(Scenario, {"compression": {"sparsifier": 3}}, ratio)  # unreadable: applies


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("sparsifier", [None, "none", "topk", "soft"])
@pytest.mark.parametrize("ratio", [None, 0.25])
def test_the_config_rule_is_the_stage_the_algorithm_resolves(name, sparsifier, ratio):
    """The ratio knob applies exactly when the resolved stage follows the controller, and the
    stage's keys exactly when it is active (``wirelessfl.algorithms.compression``)."""
    section = {"sparsifier": sparsifier, "ratio": ratio}
    config = {"algorithm": {"name": name}, "compression": section}
    stage = resolve_compression(SimpleNamespace(**section), cost_model_class(name).OWN_STAGE)
    assert applies(Scenario, config, "controller.sparsification") == stage.follows_controller
    assert applies(Scenario, config, "compression.ratio") == stage.active


_TABLE_COLUMNS = ["delay_s", "sparsification", "queue", "bits_up", "t_end_s"]


@pytest.mark.parametrize("name", ["tsfa", "osfa", "fixed"])
def test_the_controller_rule_is_what_the_controllers_read(name, tmp_path):
    """controller.sparsification and controller.bandwidth apply exactly where changing them
    changes a run's tables: the fixed controller's, not tsfa's or osfa's (they choose O^t)."""
    tables = {}
    for o, rule in ((0.3, "equal_delay"), (1.0, "equal_delay"), (0.3, "minmax")):
        scenario = small_scenario(
            **{
                "controller.name": name,
                "controller.sparsification": o,
                "controller.bandwidth": rule,
                "rounds": 8,
                "devices.include_compute": True,  # min-max shares weigh compute times
                "devices.kind": "lognormal",
                "devices.median_flops_per_s": 1.0e9,
            }
        )
        run = run_scenario(scenario, tmp_path / f"{o}-{rule}")
        tables[o, rule] = run.rounds[_TABLE_COLUMNS]
        config = run.config
    same_o = tables[0.3, "equal_delay"].equals(tables[1.0, "equal_delay"])
    same_rule = tables[0.3, "equal_delay"].equals(tables[0.3, "minmax"])
    assert applies(Scenario, config, "controller.sparsification") == (not same_o)
    assert applies(Scenario, config, "controller.bandwidth") == (not same_rule)
    assert same_o == (name != "fixed")


def test_a_controller_that_chooses_o_is_labelled_without_the_fixed_ratio():
    """A grid of controller.name x controller.sparsification: the ratio labels only the fixed
    controller's groups; tsfa's runs at either ratio are one group (2 runs, 1 seed)."""
    runs = [
        _run(**{"controller.name": c, "controller.sparsification": o})
        for c in ("tsfa", "fixed")
        for o in (0.3, 1.0)
    ]
    groups = group_runs(runs)
    assert [g.label for g in groups] == [
        "name=tsfa",
        "name=fixed, sparsification=0.3",
        "name=fixed, sparsification=1",
    ]
    assert (len(groups[0].runs), groups[0].seeds) == (2, 1)


def test_an_energy_budget_labels_only_the_controllers_that_keep_one():
    """A budgeted tsfa, an unbudgeted tsfa and a fixed controller (which has no online stage
    and refuses a budget): the budget names the tsfa groups, never the fixed one."""
    runs = [
        _run(**{"controller.name": "tsfa", "controller.energy_budget_j": 0.005}),
        _run(**{"controller.name": "tsfa"}),
        _run(),
    ]
    assert [g.label for g in group_runs(runs)] == [
        "energy_budget_j=0.005, name=tsfa",
        "energy_budget_j=None, name=tsfa",
        "name=fixed",
    ]
    budgeted = {**runs[2].config, "controller": {"name": "fixed", "energy_budget_j": 0.005}}
    assert not applies(Scenario, budgeted, "controller.energy_budget_j")
    assert applies(Scenario, runs[0].config, "controller.energy_budget_j")


# -- labels ---------------------------------------------------------------------------------------
def test_dense_ilora_is_labelled_without_the_ratio_the_sparsifiers_keep():
    # strategy.soft.zeta pinned: left null it resolves to SOFT's 0.001 and the baselines' 0,
    # a setting that does differ (and is then labelled)
    runs = _grid()
    for run in runs:
        run.config["strategy"]["soft"]["zeta"] = 0.0
    groups = group_runs(runs)
    labels = [g.label for g in groups]
    assert labels == [
        "sparsifier=soft, sparsification=0.5",
        "sparsifier=soft, sparsification=0.1",
        "sparsifier=topk, sparsification=0.5",
        "sparsifier=topk, sparsification=0.1",
        "sparsifier=random, sparsification=0.5",
        "sparsifier=random, sparsification=0.1",
        "sparsifier=structured, sparsification=0.5",
        "sparsifier=structured, sparsification=0.1",
        "sparsifier=none",
    ]
    ilora = groups[-1]
    assert len(ilora.runs) == 2 and ilora.seeds == 1  # the same run twice: one seed
    assert ilora.params["controller.sparsification"] is None
    # per-run labels stay unique: the two dense runs name their (unused) ratio
    per_run = run_labels(runs)
    assert len(set(per_run)) == len(per_run)
    assert per_run[-2:] == [
        "sparsifier=none, sparsification=0.5, seed=0",
        "sparsifier=none, sparsification=0.1, seed=0",
    ]


def test_resolved_zeta_is_a_setting_that_applies():
    labels = [g.label for g in group_runs(_grid())]
    assert labels[0] == "sparsifier=soft, sparsification=0.5, zeta=0.001"
    assert labels[-1] == "sparsifier=none, zeta=0"


def test_legend_counts_seeds_not_repeated_runs():
    table = accuracy_table(_grid(seeds=(0, 1)))
    ilora = table[table["label"] == "sparsifier=none, zeta=0"].iloc[0]
    assert (ilora["runs"], ilora["seeds"]) == (4, 2)
    from wirelessfl import plots

    ax = plots.accuracy_vs_round(table).axes[0]
    assert ax.lines[-1].get_label() == "sparsifier=none, zeta=0 (2 seeds)"


def test_a_panel_with_one_ratio_names_no_ratio():
    """Fig. 3's panels: the sparsifiers at O = 0.1 with dense ILoRA (written at the scenario's
    0.5): the ratio no longer tells any two groups apart."""
    runs = [
        _run(**{"compression.sparsifier": s, "controller.sparsification": 0.1})
        for s in SPARSIFIERS[:-1]
    ]
    runs.append(_run(**{"compression.sparsifier": "none", "controller.sparsification": 0.5}))
    labels = [g.label for g in group_runs(runs)]
    assert labels[0] == "sparsifier=soft, zeta=0.001"
    assert labels[-1] == "sparsifier=none, zeta=0"


def test_another_algorithms_settings_leave_its_label():
    runs = [
        _run(**{"algorithm.name": name, "strategy": {"fslora": {"download": download}}})
        for name in ("fslora", "hetlora")
        for download in ("full", "sketch")
    ]
    labels = [g.label for g in group_runs(runs)]
    assert labels == [
        "name=fslora, download=full",
        "name=fslora, download=sketch",
        "name=hetlora",
    ]
    assert len(set(labels)) == len(labels)


def test_values_alike_to_four_digits_are_written_in_full():
    runs = [_run(**{"controller.name": "osfa", "controller.V": v}) for v in (1.0e-4, 1.00001e-4)]
    assert [g.label for g in group_runs(runs)] == ["V=0.0001", "V=0.000100001"]
    other = _run(**{"controller.name": "osfa", "controller.V": 2e-4})
    assert [g.label for g in group_runs(runs[:1] + [other])] == [
        "V=0.0001",
        "V=0.0002",
    ]
