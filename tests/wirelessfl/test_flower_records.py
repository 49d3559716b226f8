"""Our messages and plans as Flower records and back (the Flower ServerApp and ClientApp send
them), and the ServerApp learner's one-line refusal of scenarios it does not serve."""

from __future__ import annotations

import pytest
from scenario_helpers import digits_scenario

pytest.importorskip("flwr")
torch = pytest.importorskip("torch")

from wirelessfl.algorithms.fslora.algorithm import SketchPlan  # noqa: E402
from wirelessfl.algorithms.message import IndexSpace, Message  # noqa: E402
from wirelessfl.bridges.flower_records import (  # noqa: E402
    content_to_message,
    message_to_content,
    plan_from_text,
    plan_to_text,
)
from wirelessfl.bridges.flower_serverapp import FlowerGridLearner  # noqa: E402
from wirelessfl.errors import ConfigError  # noqa: E402
from wirelessfl.plans import ClientPlan  # noqa: E402


def test_a_message_crosses_without_its_private_part():
    g = torch.Generator().manual_seed(0)
    update = {"fc1.lora_A": torch.randn(4, 64, generator=g), "fc1.lora_B": torch.zeros(64, 4)}
    message = Message(
        private={"memory": torch.ones(3)},
        diagnostics={"factors": [(torch.ones(2, 2), torch.zeros(2, 2))], "sent_fraction": 0.25},
        side_bits=12.0,
    )
    message.add_sparse(update, n_sent=100, n_total=512)
    message.shared["head.weight"] = torch.randn(10, 64, generator=g)
    back = content_to_message(message_to_content(message), "cpu")
    assert back.private == {}
    assert sorted(back.shared) == sorted(message.shared)
    for name, tensor in message.shared.items():
        assert torch.equal(back.shared[name], tensor)
    assert back.sparse == [IndexSpace(("fc1.lora_A", "fc1.lora_B"), 100, 512)]
    assert back.side_bits == 12.0 and back.diagnostics["sent_fraction"] == 0.25
    assert torch.equal(back.diagnostics["factors"][0][0], torch.ones(2, 2))
    kwargs = {"bits_per_value": 32, "count_index": True}
    assert back.payload(**kwargs) == message.payload(**kwargs)


@pytest.mark.parametrize(
    "plan",
    [
        ClientPlan(3, 7, 4, 0.5),
        SketchPlan(2, 1, 3, 0.375, model_rank=8, index_sets=((0, 2, 5), (1, 3, 7))),
    ],
)
def test_a_plan_crosses_with_its_class_and_fields(plan):
    back = plan_from_text(plan_to_text(plan))
    assert type(back) is type(plan) and back == plan


def test_a_plan_names_a_client_plan_class():
    text = plan_to_text(ClientPlan(0, 0, 1, 1.0)).replace(
        "wirelessfl.plans:ClientPlan", "wirelessfl.algorithms.message:Message"
    )
    with pytest.raises(TypeError, match="is not a wirelessfl ClientPlan"):
        plan_from_text(text)


@pytest.mark.parametrize(
    ("setting", "value"), [("learner.kind", "surrogate"), ("learner.executor", "ray")]
)
def test_the_serverapp_serves_the_lora_learner_on_its_own_clientapps(setting, value):
    with pytest.raises(ConfigError, match="learner.kind: a Flower ServerApp trains") as caught:
        FlowerGridLearner(digits_scenario(**{setting: value}), grid=None, timeout_s=1.0)
    assert "\n" not in str(caught.value)
