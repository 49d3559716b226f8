"""``cells``: a network of hexagonal cells, each with its edge server, and ``server.hierarchy``:
how the edge servers' models meet at the cloud (docs/simulator.md, "Many cells").

Without ``cells.n_rings`` the run is one cell (the papers' model) and its tables are those of
every single-cell scenario; with it, :mod:`wirelessfl.sim.network` runs one edge server per cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from channels.interference import REUSE_FACTORS
from channels.multicell import DROPS, MultiCellLayout, multicell_layout
from channels.pathloss_3gpp import make_path_loss
from channels.sectors import SECTOR_COUNTS
from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError
from wirelessfl.registries import UPLINKS

#: what a cell's controller knows of the interference (``cells.controller_sees``)
CONTROLLER_VIEWS = ("snr", "last_round", "expected")

__all__ = [
    "CONTROLLER_VIEWS",
    "CellsConfig",
    "HierarchyConfig",
    "network_layout",
    "refuse_with_cells",
]


def _in_network(config: Mapping[str, Any]) -> bool:
    """The ``applies`` rule of the network's keys: ``cells.n_rings`` is set."""
    return (config.get("cells") or {}).get("n_rings") is not None


@dataclass
class CellsConfig:
    """A hexagonal grid of sites, the clients' drop and the uplinks' interference."""

    n_rings: int | None = option(
        None,
        ge=0,
        le=6,
        doc="rings of sites around the centre: 1 + 3 n (n + 1) sites (0: 1, 1: 7, 2: 19), each "
        "with cells.sectors cells; null: one cell, the single-cell model",
    )
    isd_m: float = option(500.0, gt=0.0, doc="inter-site distance [m]", applies=_in_network)
    sectors: int = option(
        1,
        choices=SECTOR_COUNTS,
        doc="cells a site: 1 (omni) | 3 (TR 38.901's 3-sector sites, antennas at 30, 150, "
        "270 degrees with its horizontal pattern)",
        applies=_in_network,
    )
    wrap_around: bool = option(
        True,
        doc="distances the least over the grid's seven copies, so edge cells see interferers "
        "all round",
        applies=_in_network,
    )
    drop: str = option(
        "per_cell",
        choices=DROPS,
        doc="per_cell (client k in cell k mod C) | area (uniform over the grid)",
        applies=_in_network,
    )
    reuse: int = option(
        1,
        choices=REUSE_FACTORS,
        doc="frequency reuse: 1 (every cell on channel.bandwidth_hz) | 3 (a third each)",
        applies=_in_network,
    )
    interference: bool = option(
        True,
        doc="count the other cells' uploads in each SINR (false: the interference-free "
        "baseline on the same layout)",
        applies=_in_network,
    )

    controller_sees: str = option(
        "snr",
        choices=CONTROLLER_VIEWS,
        doc="what each cell's controller plans with: snr (its clients' SNR, no interference) "
        "| last_round (SNR / (1 + I/N0), I/N0 the mean over the cell's uploads of the round "
        "before) | expected (I/N0 the mean interference of fully loaded neighbours, from the "
        "geometry)",
        applies=_in_network,
    )

    handover_hysteresis_db: float = option(
        3.0,
        ge=0.0,
        doc="a moving client hands over when another cell's coupling loss is this much below "
        "its serving cell's (A3 event) ...",
        applies=_in_network,
    )
    time_to_trigger_s: float = option(
        0.0,
        ge=0.0,
        doc="... at every check (each edge round's start) for at least this long",
        applies=_in_network,
    )

    @property
    def enabled(self) -> bool:
        """Whether the run is a network of cells."""
        return self.n_rings is not None


@dataclass
class HierarchyConfig:
    """Client-edge-cloud federated learning (HierFAVG): every ``edge_rounds`` edge rounds the
    cloud averages the edge models, weighted by their clients' data."""

    edge_rounds: int = option(
        1, ge=1, doc="tau: edge rounds between cloud aggregations (1: every round, flat FedAvg)"
    )
    backhaul_rate_bps: float | None = option(
        None, gt=0.0, doc="edge-cloud link rate [bit/s] each way (null: instantaneous)"
    )
    backhaul_latency_s: float = option(0.0, ge=0.0, doc="edge-cloud latency [s] each way")

    @property
    def is_default(self) -> bool:
        return (
            self.edge_rounds == 1
            and self.backhaul_rate_bps is None
            and (self.backhaul_latency_s == 0.0)
        )


def network_layout(scenario: Any) -> MultiCellLayout:
    """The layout of ``scenario``'s network (``cells``, the ``channel`` section's path-loss
    model and ``d_min_m``); a bad value is a one-line ``ConfigError`` naming ``cells``."""
    cells, ch = scenario.cells, scenario.channel
    try:
        return multicell_layout(
            seed=scenario.seed,
            n_clients=scenario.n_clients,
            n_rings=int(cells.n_rings),
            isd_m=cells.isd_m,
            d_min_m=ch.d_min_m,
            path_loss=make_path_loss(ch.path_loss.model, **ch.path_loss.model_kwargs(ch)),
            wrap_around=cells.wrap_around,
            drop=cells.drop,
            sectors=cells.sectors,
        )
    except ValueError as err:
        raise ConfigError(f"cells: {err}") from None


def _cell_uplinks() -> list[str]:
    return [n for n in UPLINKS.names() if UPLINKS.load(n).CELL_RESOURCES is not None]


def refuse_with_cells(scenario: Any) -> None:
    """One line for what a network of cells does not model yet, or a hierarchy without one."""
    if not scenario.cells.enabled:
        if not scenario.server.hierarchy.is_default:
            raise ConfigError(
                "server.hierarchy: edge servers need a network of cells; set cells.n_rings "
                "(0 for one cell with its edge server)"
            )
        return
    sc, ch = scenario, scenario.channel
    refusals = [
        (
            ch.mean_snr_db is not None or ch.snr_trace is not None,
            "channel.mean_snr_db and "
            "channel.snr_trace give no geometry; the cells need the path-loss model",
        ),
        (
            UPLINKS.load(ch.uplink).CELL_RESOURCES is None,
            f"channel.uplink: {ch.uplink} has no inter-cell interference model yet; use an "
            f"uplink that has ({', '.join(_cell_uplinks())})",
        ),
        (
            sc.server.event_driven,
            f"server.mode: {sc.server.mode} runs one server; the cells' "
            "edge servers run synchronous rounds (server.mode: sync)",
        ),
        (
            sc.controller.given("energy_budget_j") is not None,
            "controller.energy_budget_j: the "
            "per-device energy queues are not split by cell yet; leave it out",
        ),
        (
            sc.privacy.mode != "none",
            f"privacy.mode: {sc.privacy.mode}: the accounting would "
            "be per edge server, not the cloud's; use privacy.mode: none",
        ),
    ]
    for refused, line in refusals:
        if refused:
            raise ConfigError(f"cells.n_rings: {line}")
