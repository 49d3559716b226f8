"""Any shipped scenario switches algorithm with ``--set algorithm.name=X``: every shipped
scenario loads with every algorithm, and one round of a shipped training scenario runs for
every algorithm whose model and data fit it, the others refused in one line."""

from __future__ import annotations

import pytest

from wirelessfl.config import load_scenario
from wirelessfl.config.shipped import shipped_names
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.registries import ALGORITHMS
from wirelessfl.sim import run_scenario

#: Algorithms on the runtime's peft LoRA: they fit any scenario of a LoRA model.
LORA = ["soft", "fedit", "fedit_topk", "fslora", "hetlora", "flexlora", "fedstack", "ffa_lora"]
#: Why the others may not fit a scenario (one of these phrases is in the refusal's line).
MISFITS = (
    "per-client test rows",  # FLoRAL's family evaluates every client on its own test split
    "has no such knob",  # a payload fixed by its settings, under a controller that decides
    "outside transformer blocks",  # H2Tune's family needs one block index per LoRA target
    "larger than strategy.global_rank",  # H2Tune: the group's rank above r_g
    "trains with plain SGD",  # FLoRAL's family: Algorithm 1's optimizer
    "needs n_clients",  # H2Tune's groups: a data set built per client is no group's task
)
#: Per scenario, overrides that keep one round short (fewer test rows to evaluate, one local step).
SHORT = {
    "default": ["learner.dataset_options.max_test=100", "learner.local_steps=1"],
    "fslora/minilm_rotten_tomatoes": [
        "learner.dataset_options.max_test=32",
        "learner.local_steps=1",
    ],
}


#: Why a shipped scenario may refuse an algorithm when it loads (one of these phrases is in the
#: refusal's line): the over-the-air uplink sums single updates (``CostModel.SINGLE_UPDATES``).
LOAD_MISFITS = ("aircomp receives a weighted sum of the clients' shared tensors",)


@pytest.mark.parametrize("scenario", shipped_names())
def test_every_shipped_scenario_loads_with_every_algorithm(scenario: str) -> None:
    loaded = []
    for name in ALGORITHMS.names():
        try:
            sc = load_scenario(scenario, [f"algorithm.name={name}"])
        except ConfigError as err:
            line = str(err)
            assert "\n" not in line and any(m in line for m in LOAD_MISFITS), line
            assert not ALGORITHMS.load(name).CostModel.SINGLE_UPDATES
            continue
        assert sc.algorithm.name == name
        assert type(sc.strategy) is ALGORITHMS.load(name).Settings
        loaded.append(name)
    assert {"soft", "fedit", "fedit_topk", "ffa_lora"} <= set(loaded)


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    "scenario",
    ["default", "umi_energy", "fslora/minilm_rotten_tomatoes", "floral/synthetic_linear"],
)
def test_every_algorithm_runs_a_shipped_scenario_or_is_refused_in_one_line(
    scenario: str, tmp_path
) -> None:
    pytest.importorskip("torch")
    ran = []
    for name in ALGORITHMS.names():
        sc = load_scenario(
            scenario,
            [
                f"algorithm.name={name}",
                "rounds=1",
                "eval_every=1",
                "n_clients=8",
                "n_scheduled=2",
                *SHORT.get(scenario, []),
            ],
        )
        try:
            result = run_scenario(sc, tmp_path / name)
        except (ConfigError, UserError) as err:
            text = str(err)
            assert "\n" not in text, text
            assert any(reason in text for reason in MISFITS), f"{name}: {text}"
            assert name not in LORA or "floral" in scenario, f"{name} refused: {text}"
            continue
        assert result.finished and result.rounds.loss.notna().all(), name
        ran.append(name)
    assert set(ran) >= (set(LORA) if "floral" not in scenario else {"floral"})
