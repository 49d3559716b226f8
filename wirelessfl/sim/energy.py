"""Energy the clients of a round spend: compute (a ``channels`` energy model) and transmit.

A client that trained spends its compute energy in proportion to the part of its compute done
by the round's end (all of it unless the deadline cut it while computing), and its transmit
power times the time it spent uploading (up to the deadline for a cut upload; nothing for a
client without bandwidth). Download energy is not counted (docs/simulator.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from channels.energy import ComputeEnergyModel, make_compute_energy, transmit_energy_j
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.wireless import DEFAULT_JOULES_PER_FLOP
from wirelessfl.errors import ConfigError

__all__ = ["RoundEnergy", "build_compute_energy", "round_energy"]


@dataclass
class RoundEnergy:
    """Energy of the clients that trained in one round; arrays of shape (m,).

    ``clients`` their ids; ``compute_j`` and ``transmit_j`` [J].
    """

    clients: np.ndarray
    compute_j: np.ndarray
    transmit_j: np.ndarray

    def per_device(self, n_clients: int) -> np.ndarray:
        """(N,) energy of every device this round [J] (0 for those that did not train)."""
        out = np.zeros(n_clients)
        out[self.clients] = self.compute_j + self.transmit_j
        return out


def build_compute_energy(scenario: Scenario) -> ComputeEnergyModel:
    """The scenario's compute energy model (``devices.energy``)."""
    cfg = scenario.devices.energy
    kwargs = cfg.model_kwargs()
    if (
        cfg.model == "per_flop"
        and cfg.joules_per_flop is None
        and scenario.devices.kind != "classes"
    ):
        kwargs["joules_per_flop"] = DEFAULT_JOULES_PER_FLOP
    try:
        return make_compute_energy(cfg.model, **kwargs)
    except ValueError as err:
        raise ConfigError(f"devices.energy: {err}") from None


def round_energy(
    model: ComputeEnergyModel,
    *,
    clients: np.ndarray,
    flops: np.ndarray,
    client_class: Sequence[str] | None,
    tx_power_w: np.ndarray,
    compute_start_s: np.ndarray,
    compute_end_s: np.ndarray,
    upload_end_s: np.ndarray,
    end_s: float,
) -> RoundEnergy:
    """Energy of the m clients that trained, from their timeline (all arrays (m,)).

    ``upload_end_s`` is inf for a client without bandwidth (it never transmits); ``end_s``
    the round's end [s] (the deadline when it cut someone).
    """
    full_j = model.energy_j(flops, client_class)
    busy_s = compute_end_s - compute_start_s
    done_s = np.clip(np.minimum(compute_end_s, end_s) - compute_start_s, 0.0, None)
    fraction = np.where(
        busy_s > 0, done_s / np.where(busy_s > 0, busy_s, 1.0), compute_start_s <= end_s
    )
    sends = np.isfinite(upload_end_s)
    upload_s = np.where(
        sends, np.clip(np.minimum(upload_end_s, end_s) - compute_end_s, 0.0, None), 0.0
    )
    transmit_j = np.asarray(transmit_energy_j(tx_power_w, upload_s), dtype=float).reshape(-1)
    return RoundEnergy(np.asarray(clients, dtype=int), full_j * fraction, transmit_j)
