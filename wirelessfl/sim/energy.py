"""Energy the clients of a round spend: compute (a ``channels`` energy model) and transmit.

A client that trained spends its compute energy in proportion to the part of its compute done
by the round's end (all of it unless the deadline cut it while computing), and its transmit
power times the time it spent uploading (up to the deadline for a cut upload; nothing for a
client without bandwidth). Download energy is not counted (docs/simulator.md). The simulator
takes these times from each client's timeline (``Simulator._transmit``), the same times its
events record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from channels.energy import ComputeEnergyModel, make_compute_energy
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
    compute_s: np.ndarray,
    computed_s: np.ndarray,
    started: np.ndarray,
    uploaded_s: np.ndarray,
    client_class: Sequence[str] | None,
    tx_power_w: np.ndarray,
    cpu_hz: np.ndarray | None = None,
) -> RoundEnergy:
    """Energy of the m clients that trained (all arrays (m,)).

    ``compute_s`` is each client's planned compute time [s] and ``computed_s`` the part done
    by the round's end (less when the deadline cut it while computing); ``started`` whether it
    began computing at all (a client cut while downloading did not); ``uploaded_s`` the time
    it transmitted [s] (to the deadline for a cut upload; 0 without bandwidth); ``cpu_hz`` the
    clock each computed at when the controller decided it [Hz] (the model is then ``cmos``:
    kappa f^2 cycles), None: the model's own.
    """
    fraction = np.divide(computed_s, compute_s, out=started.astype(float), where=compute_s > 0)
    if cpu_hz is None:
        full_j = model.energy_j(flops, client_class)
    else:
        full_j = model.energy_j(flops, client_class, cpu_hz=cpu_hz)  # type: ignore[call-arg]
    compute_j = full_j * fraction
    transmit_j = tx_power_w * uploaded_s  # P t (channels.transmit_energy_j)
    return RoundEnergy(np.asarray(clients, dtype=int), compute_j, transmit_j)
