"""``wirelessfl export``: the exported adapter, loaded by peft, predicts as the run evaluated.

Independent reference: the base model rebuilt from ``base_model.json`` by ``build_model``,
wrapped by ``PeftModel.from_pretrained`` (peft's own loading and alpha / r scaling), evaluated
here on the data set loaded here; compared with the run's ``rounds.csv`` and with the runtime's
model holding the checkpoint's global state.
"""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from scenario_helpers import digits_scenario, interrupt_at  # noqa: E402

from wirelessfl import cli  # noqa: E402
from wirelessfl.config import load_scenario  # noqa: E402
from wirelessfl.data import load_dataset  # noqa: E402
from wirelessfl.errors import UserError  # noqa: E402
from wirelessfl.learners.export import BASE_MODEL, export_run, exportable_algorithms  # noqa: E402
from wirelessfl.learners.federated import CHECKPOINT  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.registries import ALGORITHMS  # noqa: E402
from wirelessfl.results import load  # noqa: E402
from wirelessfl.results.run_folder import find_checkpoint  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

RATIOS = [0.25, 0.5, 1.0]  # HetLoRA client ranks 1, 2, 4 at model rank 4
CASES = {
    "soft": {},  # SOFT with the trained head (modules_to_save)
    "hetlora_frozen_head": {  # lower-rank clients; a head left at its seeded init
        "algorithm.name": "hetlora",
        "strategy": {"ratio_choices": RATIOS},
        "learner.head": "frozen",
    },
    "rslora_bias_options": {  # peft's other LoRA settings and a model option
        "algorithm.name": "hetlora",
        "strategy": {"ratio_choices": RATIOS},
        "learner.use_rslora": True,
        "learner.lora_bias": "all",
        "learner.lora_dropout": 0.1,
        "learner.model_options": {"hidden": 24},
    },
    "ffa_lora": {"algorithm.name": "ffa_lora"},  # A frozen, B trained: A comes from the seed
    # fc1 at its own rank 8, fc2 at the run's 4
    "rank_pattern": {"algorithm.name": "fedit", "learner.rank_pattern": {"fc1": 8}},
}


def _run(folder, rounds=4, **overrides):
    scenario = digits_scenario(rounds=rounds, eval_every=rounds, **overrides)
    return Run(scenario, folder).execute()


@pytest.fixture(scope="module", params=sorted(CASES))
def exported(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(request.param)
    result = _run(root / "run", **CASES[request.param])
    return result, export_run(root / "run", root / "adapter")


def _peft_model(out):
    base = build_model(**json.loads((out / BASE_MODEL).read_text()))
    model = peft.PeftModel.from_pretrained(base.model, str(out / "global")).eval()
    return base, model


@torch.no_grad()
def _logits(bundle, model, data):
    batch = data.batch(torch.arange(len(data)))
    loss, logits = bundle.loss_and_logits(model, batch)
    return float(loss), logits, batch["y"]


@pytest.mark.filterwarnings("ignore:Careful, disabling adapter layers:UserWarning")  # bias=all
def test_loaded_adapter_reproduces_the_final_evaluation(exported):
    result, out = exported
    scenario = load_scenario(result.path / "config.yaml")
    base, model = _peft_model(out)
    test = load_dataset("digits", seed=scenario.seed, n_clients=scenario.n_clients).test
    loss, logits, labels = _logits(base, model, test)
    last = result.rounds.iloc[-1]
    accuracy = float((logits.argmax(dim=-1) == labels).double().mean())
    assert accuracy == pytest.approx(float(last["accuracy"]), abs=1e-12)
    assert loss == pytest.approx(float(last["test_loss"]), rel=1e-5)

    runtime = Runtime(scenario)
    runtime.start(rank=4, seed=scenario.seed)
    checkpoint = find_checkpoint(result.path)
    state = torch.load(checkpoint.folder / CHECKPOINT, weights_only=True)["global"]
    runtime.state.load(state)
    runtime.model.eval()
    _, expected, _ = _logits(runtime.bundle, runtime.model, runtime.test_data)
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    # the adapter matters: the base model alone predicts otherwise
    with model.disable_adapter():
        _, plain, _ = _logits(base, model, test)
    assert not torch.allclose(plain, logits, atol=1e-3)


def test_adapter_files_and_model_card(exported):
    result, out = exported
    config = json.loads((out / "global" / "adapter_config.json").read_text())
    scenario = load_scenario(result.path / "config.yaml")
    assert config["r"] == 4 and config["lora_alpha"] == scenario.learner.lora_alpha
    assert config["use_rslora"] == scenario.learner.use_rslora
    assert config["bias"] == scenario.learner.lora_bias
    assert config["rank_pattern"] == (scenario.learner.rank_pattern or {})
    base = json.loads((out / BASE_MODEL).read_text())
    assert {k: base[k] for k in scenario.learner.model_options} == scenario.learner.model_options
    head = scenario.learner.head == "train"
    assert (config["modules_to_save"] == ["head"]) == head
    card = (out / "README.md").read_text()
    assert "PeftModel.from_pretrained" in card and "tiny_mlp" in card
    assert ("in it as peft `modules_to_save`" in card) == head
    assert f"| test accuracy | {float(result.rounds['accuracy'].iloc[-1]):.6g} |" in card
    assert (result.path / "config.yaml").read_text().strip() in card
    with pytest.raises(UserError, match=r"^--out: .* is not empty"):
        export_run(result.path, out)


def test_a_damaged_checkpoint_is_refused_before_anything_is_written(exported, tmp_path):
    result, _ = exported
    copy = tmp_path / "run"
    shutil.copytree(result.path, copy)
    learner = find_checkpoint(copy).folder / CHECKPOINT
    learner.write_bytes(learner.read_bytes()[:-8])
    with pytest.raises(UserError, match=r"^export: .*learner.pt is missing or damaged.*run "):
        export_run(copy, tmp_path / "adapter")
    assert not (tmp_path / "adapter").exists()


def test_exportable_algorithms_are_those_on_the_runtimes_peft_model():
    names = set(exportable_algorithms())
    assert {"soft", "fedit", "fedit_topk", "fslora", "hetlora", "flexlora", "ffa_lora"} <= names
    own_state = {"fedstack", "floral", "floral_local", "ensemble", "fedavg_full", "h2tune"}
    assert not names & (own_state | {"h2tune_local", "fllm", "h2tune_hetlora"})
    assert names < set(ALGORITHMS.names())


def test_unsupported_algorithm_is_refused_with_one_line(tmp_path):
    strategy = {"ratio_choices": RATIOS}
    _run(tmp_path / "run", rounds=1, **{"algorithm.name": "fedstack", "strategy": strategy})
    with pytest.raises(
        UserError, match=r"^export: algorithm 'fedstack' .* export supports .*\bsoft\b"
    ):
        export_run(tmp_path / "run", tmp_path / "adapter")
    assert not (tmp_path / "adapter").exists()


def test_cli_refuses_a_missing_or_unfinished_run_with_one_line(tmp_path, capsys):
    missing = tmp_path / "nothing"
    assert cli.main(["export", str(missing), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a run folder (no config.yaml)" in err

    unfinished = Run(digits_scenario(rounds=3), tmp_path / "killed")
    interrupt_at(unfinished, 1)
    assert not load(tmp_path / "killed").finished
    assert cli.main(["export", str(tmp_path / "killed"), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has not finished" in err and "--resume" in err
