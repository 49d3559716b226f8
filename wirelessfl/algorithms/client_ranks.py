"""Per-client ranks of the heterogeneous-rank algorithms (FSLoRA and its baselines).

FSLoRA gives client i a sketch of k_i of the global rank r (its *sketching ratio* k_i / r);
the paper gives every baseline client the same rank r_i = k_i ("the same rank configuration",
Tables 5.1/5.2). One setting therefore drives all of them, so that one grid compares them at the
same ratios. Exactly one of three ways sets a client's ratio (``strategy.<name>.*``):

- ``sketch_ratio``: one ratio for every client (default 1: the full rank);
- ``ratio_choices``: each client draws its ratio once, uniformly from the list, and keeps it for
  the run (the paper's heterogeneous setting draws from [0.125, 0.25, 0.5, 0.75]; the
  authors' code keeps each client's draw fixed and redraws only the index set, as here);
- ``ratio_by_class``: device class -> ratio, for ``devices.kind: classes`` (a phone gets a
  smaller sketch than a laptop).

A client's rank is then ``k_i = min(r_ctrl, clip(round(ratio_i r), 1, r))``, where r is the
model rank (the controller's rank) and r_ctrl the rank the controller gave the client this
round: a controller that chooses per-client ranks (``controller.name: sketch``) decides with
``sketch_ratio: 1``; a controller that gives everyone r leaves the scenario's ratios in charge.
Draws come from the ``ratios`` stream addressed by (seed, client), so adding clients keeps the
existing clients' ratios. This module does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels.compute import DEVICE_CLASSES, DeviceProfile
from channels.streams import stream_generator
from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError

__all__ = ["HeteroRankSettings", "client_rank", "client_ratios"]


@dataclass
class HeteroRankSettings:
    """How each client's ratio k_i / r is set (see the module docstring); ``strategy.<name>.*``."""

    sketch_ratio: float = option(
        1.0,
        gt=0.0,
        le=1.0,
        doc="k_i / r of every client (FSLoRA's sketching ratio; a baseline's rank ratio r_i / r)",
    )
    ratio_choices: list[float] = option(
        default_factory=list,
        doc="non-empty: each client draws its ratio once, uniformly from these (e.g. "
        "[0.125, 0.25, 0.5, 0.75], the paper's heterogeneous setting)",
    )
    ratio_by_class: dict[str, float] = option(
        default_factory=dict,
        doc="device class -> ratio (devices.kind: classes)",
    )

    def __post_init__(self) -> None:
        for i, value in enumerate(self.ratio_choices):
            _check_ratio(f"strategy.ratio_choices[{i}]", value)
        for name, value in self.ratio_by_class.items():
            if name not in DEVICE_CLASSES:
                raise ConfigError(
                    f"strategy.ratio_by_class: unknown device class {name!r}; accepted: "
                    f"{', '.join(DEVICE_CLASSES)}"
                )
            _check_ratio(f"strategy.ratio_by_class.{name}", value)
        if self.ratio_choices and self.ratio_by_class:
            raise ConfigError(
                "strategy.ratio_choices and strategy.ratio_by_class: give one way of setting "
                "the clients' ratios, not both"
            )


def _check_ratio(key: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigError(f"{key}: expected a ratio in (0, 1], got {value!r}")


def client_ratios(settings: HeteroRankSettings, scenario) -> np.ndarray:
    """(N,) every client's ratio k_i / r for the whole run (see the module docstring)."""
    n, seed = scenario.n_clients, scenario.seed
    if settings.ratio_choices:
        choices = np.asarray(settings.ratio_choices, dtype=float)
        picks = [stream_generator(seed, "ratios", c).integers(len(choices)) for c in range(n)]
        return choices[np.asarray(picks, dtype=int)]
    if settings.ratio_by_class:
        dv = scenario.devices
        if dv.kind != "classes":
            raise ConfigError(
                f"strategy.ratio_by_class needs devices.kind: classes, got {dv.kind!r}"
            )
        classes = DeviceProfile(kind="classes", classes=dict(dv.classes)).draw_classes(seed, n)
        assert classes is not None
        missing = sorted(set(classes) - set(settings.ratio_by_class))
        if missing:
            raise ConfigError(
                f"strategy.ratio_by_class: no ratio for device class {missing[0]!r} "
                f"(devices.classes draws {sorted(set(classes))})"
            )
        return np.array([float(settings.ratio_by_class[c]) for c in classes])
    return np.full(n, float(settings.sketch_ratio))


def client_rank(ratio: float, model_rank: int, controller_rank: int) -> int:
    """k_i = min(controller's rank, clip(round(ratio * r), 1, r)) for one client."""
    k = int(np.clip(round(float(ratio) * model_rank), 1, model_rank))
    return min(k, int(controller_rank))
