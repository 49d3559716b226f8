"""``learner.kind: flower``: the Flower clients' settings (their ClientApp or client_fn, the
initial parameters and the config records; docs/flower.md). Torch- and flwr-free: the scenario
schema reads it."""

from __future__ import annotations

from dataclasses import dataclass

from wirelessfl.config.learner import LearnerSettings
from wirelessfl.config.schema import option, show
from wirelessfl.errors import ConfigError
from wirelessfl.learners.kinds import LearnerSpec


def _check_flower_values(values: dict, key: str) -> None:
    """Flower's config records hold text keys and numbers, text or bools (``UserConfigValue``)."""
    for name, value in values.items():
        if not isinstance(name, str) or not isinstance(value, (bool, int, float, str)):
            raise ConfigError(
                f"{key}: Flower config values are numbers, text or true/false, got "
                f"{show(name)}: {show(value)}"
            )


@dataclass
class FlowerSettings(LearnerSettings):
    """Flower clients produce the updates; the simulator times and aggregates them."""

    client_fn: str | None = option(
        None,
        doc="flower: 'module:attribute' naming a flwr ClientApp, a client_fn(context) -> Client "
        "or a client_fn(client_id) -> NumPyClient (docs/flower.md)",
    )
    initial_parameters: str | None = option(
        None,
        doc="flower: the initial global parameters, 'module:attribute' (a list of numpy arrays "
        "or an ArrayRecord) or a .npz file (null: client 0's get_parameters)",
    )
    run_config: dict[str, object] = option(
        default_factory=dict,
        check=_check_flower_values,
        doc="flower: the clients' context.run_config (numbers, text, bools)",
    )
    train_config: dict[str, object] = option(
        default_factory=dict,
        check=_check_flower_values,
        doc="flower: the train message's config record (fit's config) besides server-round",
    )
    evaluate_config: dict[str, object] = option(
        default_factory=dict,
        check=_check_flower_values,
        doc="flower: the evaluate message's config record (evaluate's config) besides server-round",
    )
    client_flops: float = option(
        0.0, ge=0.0, doc="flower: FLOPs of a client's fit, unless its metrics report 'flops'"
    )


#: ``learner.kind: flower`` (``wirelessfl.registries.LEARNERS``)
FLOWER = LearnerSpec(
    FlowerSettings, "wirelessfl.bridges.flower_learner:FlowerClientLearner.from_scenario"
)
