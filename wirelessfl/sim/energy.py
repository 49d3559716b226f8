"""Energy the clients of a round spend: compute (a ``channels`` energy model) and transmit.

Read off the round's events: a client that trained spends its compute energy in proportion to
the part of its compute done by the round's end (all of it unless the deadline cut it while
computing), and its transmit power times the time it spent uploading (up to the deadline for a
cut upload; nothing for a client without bandwidth). Download energy is not counted
(docs/simulator.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from channels.energy import ComputeEnergyModel, make_compute_energy, transmit_energy_j
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.wireless import DEFAULT_JOULES_PER_FLOP
from wirelessfl.errors import ConfigError
from wirelessfl.sim.events import EventTable, Kind

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


def _time_of(events: EventTable, mask: np.ndarray, clients: np.ndarray) -> np.ndarray:
    """(m,) time of each client's event among ``mask`` (NaN where it has none); ``clients``
    ascending."""
    out = np.full(clients.size, np.nan)
    ids = events.client[mask]
    where = np.minimum(np.searchsorted(clients, ids), clients.size - 1)
    found = clients[where] == ids
    out[where[found]] = events.time_s[mask][found]
    return out


def round_energy(
    model: ComputeEnergyModel,
    events: EventTable,
    *,
    clients: np.ndarray,
    flops: np.ndarray,
    compute_s: np.ndarray,
    client_class: Sequence[str] | None,
    tx_power_w: np.ndarray,
) -> RoundEnergy:
    """Energy of the m clients that trained, read off the round's events (arrays (m,);
    ``clients`` ascending, as the simulator schedules them).

    ``compute_s`` is each client's planned compute time [s]; a client cut by the deadline
    while computing spent the part it did (from ``compute_start`` to the round's end), one cut
    before computing nothing. Transmit time runs from ``upload_start`` to ``upload_end``, or
    to the ``straggler`` event of a cut upload.
    """
    clients = np.asarray(clients, dtype=int)
    if clients.size == 0:
        return RoundEnergy(clients, np.zeros(0), np.zeros(0))
    end_s = float(events.time_s[events.of(Kind.AGGREGATE)][0])
    started = _time_of(events, events.of(Kind.COMPUTE_START), clients)
    finished = _time_of(events, events.of(Kind.COMPUTE_END), clients)
    done_s = np.where(np.isnan(finished), end_s, finished) - started
    fraction = np.where(
        np.isnan(started),
        0.0,
        np.where(compute_s > 0, done_s / np.where(compute_s > 0, compute_s, 1.0), 1.0),
    )
    upload_from = _time_of(events, events.of(Kind.UPLOAD_START), clients)
    upload_to = _time_of(events, events.of(Kind.UPLOAD_END) | events.of(Kind.STRAGGLER), clients)
    upload_s = np.where(np.isnan(upload_from), 0.0, upload_to - upload_from)
    transmit_j = np.asarray(transmit_energy_j(tx_power_w, upload_s), dtype=float).reshape(-1)
    compute_j = model.energy_j(flops, client_class) * np.clip(fraction, 0.0, 1.0)
    return RoundEnergy(clients, compute_j, transmit_j)
