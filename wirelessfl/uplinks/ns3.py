"""``channel.uplink: ns3_lte`` and ``ns3_wifi``: each round's uploads as packets in ns-3 (the
``ns3`` extra; docs/simulator.md, "Packet-level uploads with ns-3").

The clients sit where the scenario's cell puts them: at the distances the simulator draws
(uniform in area over ``d_min_m``..``d_max_m``, the same streams) and at angles drawn from a
stream of their own, around one eNB (``ns3_lte``: LTE with EPC, :mod:`channels.ns3_lte`) or
AP (``ns3_wifi``: :mod:`channels.ns3_wifi`). Each round the training clients with a share send
their message's bytes (ceil(bits / 8)) to the server as TCP bulk transfers (or UDP); an
upload lasts from the round's start to its last byte at the server, and one not done within
``round_cap_s`` never arrives. ns-3's own scheduler and MAC share the channel: the controllers'
shares only say who sends. The cell's link budget is the scenario's (:class:`LinkBudget`): ns-3's
log-distance loss has the single-slope model's exponent (in power, 2 gamma) and loss at 1 m
(-``reference_gain_db``), the receiver the scenario's noise figure, the clients
``tx_power_dbm``, and the base station stands at the clients' height, so that ns-3's distances
are the simulator's; ns-3 then computes its own SINR per resource block. The controllers plan
with the scenario's SNR on the analytic uplink named by ``plan_with`` (FDMA or NR), and
``rounds.csv`` shows the plan against the measured delay.

One ns-3 run per simulator run, advanced round by round and seeded from the run's seed; the
checkpoint holds each past round's clients and bytes, and a resumed run replays them in a new
ns-3 run before going on (ns-3 has no checkpoint of its own), which gives the tables the
uninterrupted run gave.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from channels.streams import client_generators
from channels.topology import annulus_distances
from wirelessfl.controllers.uplink_planning import AffineUploads, FdmaPlanning
from wirelessfl.errors import ConfigError
from wirelessfl.uplinks.base import Uplink
from wirelessfl.uplinks.fdma import FdmaUplink
from wirelessfl.uplinks.ns3_settings import Ns3Settings

__all__ = ["LinkBudget", "Ns3LteUplink", "Ns3WifiUplink"]

#: the height of the clients and of the base station in the ns-3 cell [m] (equal: the
#: simulator's distances are 2-D)
ANTENNA_HEIGHT_M = 1.5
#: the thermal noise density ns-3's receivers assume [dBm/Hz]
NS3_NOISE_PSD_DBM_PER_HZ = -174.0

#: ``clients.csv``'s columns with an ns-3 uplink (NaN for a client that did not send)
NS3_CLIENT_COLUMNS = {
    "ns3_bytes": "bytes the server received from the client this round",
    "ns3_retransmissions": "its TCP retransmissions this round",
    "ns3_mean_mcs": "mean MCS of the MAC's uplink grants to it (ns3_lte; NaN for Wi-Fi)",
}


@dataclass(frozen=True)
class LinkBudget:
    """The scenario's link, as the ns-3 cell takes it: the clients' power [dBm], the
    log-distance exponent in power (2 gamma of the single-slope model), the loss at 1 m
    (-``channel.reference_gain_db``) [dB] and the receiver's noise figure [dB]."""

    tx_power_dbm: float
    pathloss_exponent: float
    reference_loss_db: float
    noise_figure_db: float

    @classmethod
    def of(cls, channel: Any) -> LinkBudget:
        """The budget of a scenario's ``channel`` section."""
        return cls(
            tx_power_dbm=float(channel.tx_power_dbm),
            pathloss_exponent=2.0 * float(channel.path_loss_exponent),
            reference_loss_db=-float(channel.reference_gain_db),
            noise_figure_db=float(channel.noise_figure_db),
        )


class _Ns3Uplink(Uplink):
    """An ns-3 cell's uploads (module docstring); subclasses name the cell. The planners see
    ``planner``, the analytic uplink of ``plan_with`` (its planning members, delegated)."""

    Settings = Ns3Settings
    PACKAGES = ("ns3",)
    SHARES_BAND = True
    OFFERS = FdmaPlanning.OFFERS  # plan_with: nr checks NR's at load (check_scenario)

    def __init__(
        self, settings: Ns3Settings, planner: Uplink, positions_m: np.ndarray, seed: int,
        link: LinkBudget,
    ) -> None:  # fmt: skip
        self.planner = planner
        # what the controllers read of their planning view, as the plan_with uplink has it
        self.LEMMA_2 = planner.LEMMA_2
        self.READS_DENSE_VALUES = planner.READS_DENSE_VALUES
        self.bandwidth_hz = planner.bandwidth_hz
        self.settings, self.positions_m, self.seed = settings, positions_m, int(seed)
        self.link = link
        self._cell: Any = None
        self._history: list[list[Any]] = []  # [round, clients, bytes] of the rounds so far
        self._round: tuple[int, np.ndarray] = (0, np.zeros(0, dtype=int))
        self._clients: dict[int, dict[str, float]] = {}

    @classmethod
    def from_scenario(cls, scenario: Any) -> _Ns3Uplink:
        ch, n = scenario.channel, scenario.n_clients
        distance = annulus_distances(scenario.seed, n, d_min_m=ch.d_min_m, d_max_m=ch.d_max_m)
        angle = np.array(
            [
                rng.uniform(0.0, 2.0 * math.pi)
                for rng in client_generators(scenario.seed, range(n), stream="ns3")
            ]
        )
        positions = np.stack([distance * np.cos(angle), distance * np.sin(angle)], axis=1)
        if ch.ns3.plan_with == "nr":
            from wirelessfl.uplinks.nr import NrUplink

            planner: Uplink = NrUplink.from_scenario(scenario)
        else:
            planner = FdmaUplink(ch.bandwidth_hz, ch.noise_bandwidth)
        return cls(ch.ns3, planner, positions, scenario.seed, LinkBudget.of(ch))

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """The base's checks, then one line each for: no ``ns3`` extra, a cell that is not the
        single-slope annulus of fixed-power clients that stay put (what the ns-3 cell is built
        from)."""
        from channels.ns3_loader import ns3_version

        super().check_scenario(scenario)
        ch, name = scenario.channel, scenario.channel.uplink
        if ns3_version() is None:
            raise ConfigError(
                f"channel.uplink: {name} needs the ns3 extra (ns3==3.44.post0), which is not "
                "installed; pip install 'wirelessfl[ns3]' (bash scripts/setup.sh installs it), "
                "or use channel.uplink: fdma"
            )
        refusals = [
            (ch.mean_snr_db is not None or ch.snr_trace is not None,
             "channel.mean_snr_db and channel.snr_trace give no positions; leave them out"),
            (ch.path_loss.model != "single_slope",
             f"channel.path_loss.model: {ch.path_loss.model}: the ns-3 cell has log-distance "
             "path loss (the single-slope model's exponent and loss at 1 m); use single_slope"),
            (ch.shadowing_sigma_db > 0.0,
             f"channel.shadowing_sigma_db: {ch.shadowing_sigma_db:g}: the ns-3 cell has no "
             "shadowing; use 0"),
            (ch.noise_psd_dbm_per_hz != NS3_NOISE_PSD_DBM_PER_HZ,
             f"channel.noise_psd_dbm_per_hz: {ch.noise_psd_dbm_per_hz:g}: ns-3's receivers "
             f"assume {NS3_NOISE_PSD_DBM_PER_HZ:g}; use it"),
            (scenario.mobility.moves, "mobility: the ns-3 cell's clients stay put"),
            (ch.power_control != "fixed",
             f"channel.power_control: {ch.power_control}: the ns-3 clients send at "
             "channel.tx_power_dbm; use fixed"),
        ]  # fmt: skip
        for refused, line in refusals:
            if refused:
                raise ConfigError(f"channel.uplink: {name}: {line}")
        if ch.ns3.plan_with == "nr":  # what NR's planning needs: its extra, carrier, offers
            from wirelessfl.uplinks.nr import NrUplink

            try:
                NrUplink.check_scenario(scenario)
            except ConfigError as err:
                raise ConfigError(f"channel.ns3.plan_with: nr: {err}") from None

    # ---- the planners' view: the plan_with uplink's -----------------------------------------
    def start(self, n_clients: int) -> None:
        self.planner.start(n_clients)

    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        return self.planner.plan_round(bits, n_values, snr, compute_s)

    def delay_pieces(
        self, uploads: AffineUploads, n_values: np.ndarray | None, snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        return self.planner.delay_pieces(uploads, n_values, snr, compute_s)

    def offline_delay(self, *args: Any, **kwargs: Any) -> Any:
        return self.planner.offline_delay(*args, **kwargs)

    def offline_inverse_efficiency(self, mean_snr: np.ndarray) -> np.ndarray | None:
        return self.planner.offline_inverse_efficiency(mean_snr)

    # ---- the cell ---------------------------------------------------------------------------
    @abstractmethod
    def _make_cell(self) -> Any:
        """The run's ns-3 cell (built on the first upload)."""

    def _cell_now(self) -> Any:
        if self._cell is None:
            self._cell = self._make_cell()
        return self._cell

    def state(self) -> dict:
        """The rounds sent so far (their clients and bytes), for :meth:`restore`'s replay."""
        return {"ns3_history": self._history}

    def restore(self, state: dict) -> None:
        """A new ns-3 run that replays the checkpoint's rounds (module docstring)."""
        if self._cell is not None:
            self._cell.close()
            self._cell = None
        self._history = []
        for t, clients, n_bytes in state["ns3_history"]:
            self._send(int(t), np.asarray(clients, dtype=int), np.asarray(n_bytes, dtype=int))

    def _send(self, t: int, clients: np.ndarray, n_bytes: np.ndarray) -> Any:
        done = self._cell_now().upload(clients, n_bytes, self.settings.round_cap_s)
        self._history.append([t, clients.tolist(), n_bytes.tolist()])
        return done

    # ---- a round ----------------------------------------------------------------------------
    def prepare_uploads(self, round_index: int, clients: np.ndarray) -> None:
        """Keep the round and its training clients."""
        self._round = (int(round_index), np.asarray(clients, dtype=np.int64))
        self._clients = {}

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) each training client's upload in ns-3 [s] (inf: no share, or not done by the
        cap)."""
        t, clients = self._round
        sends = np.flatnonzero(np.asarray(shares, dtype=float) > 0)
        upload_s = np.full(len(clients), math.inf)
        if sends.size:
            n_bytes = np.ceil(np.asarray(bits, dtype=float)[sends] / 8.0).astype(np.int64)
            done = self._send(t, clients[sends], n_bytes)
            upload_s[sends] = done.upload_s
            for k, c in enumerate(clients[sends].tolist()):
                self._clients[c] = {
                    "ns3_bytes": float(done.bytes_received[k]),
                    "ns3_retransmissions": float(done.retransmissions[k]),
                    "ns3_mean_mcs": float(done.mean_mcs[k]),
                }
        return upload_s

    def client_columns(self) -> dict[str, str]:
        return dict(NS3_CLIENT_COLUMNS)

    def client_values(self, client: int) -> dict[str, float]:
        values = self._clients.get(int(client), {})
        return {name: values.get(name, math.nan) for name in NS3_CLIENT_COLUMNS}


class Ns3LteUplink(_Ns3Uplink):
    """``ns3_lte``: one LTE cell with EPC (:class:`channels.ns3_lte.LteCell`)."""

    NAME = "ns3_lte"

    def _make_cell(self) -> Any:
        from channels.ns3_lte import LteCell, LteSettings

        s, b = self.settings, self.link
        settings = LteSettings(
            transport=s.transport, segment_bytes=s.segment_bytes, udp_rate_bps=s.udp_rate_bps,
            bandwidth_rb=s.bandwidth_rb, scheduler=s.scheduler, rlc_mode=s.rlc_mode,
            rlc_buffer_bytes=s.rlc_buffer_bytes, ue_power_dbm=b.tx_power_dbm,
            pathloss_exponent=b.pathloss_exponent, reference_loss_db=b.reference_loss_db,
            noise_figure_db=b.noise_figure_db, enb_height_m=ANTENNA_HEIGHT_M,
            ue_height_m=ANTENNA_HEIGHT_M,
        )  # fmt: skip
        return LteCell(settings, self.positions_m, self.seed)


class Ns3WifiUplink(_Ns3Uplink):
    """``ns3_wifi``: one Wi-Fi BSS (:class:`channels.ns3_wifi.WifiCell`)."""

    NAME = "ns3_wifi"

    def _make_cell(self) -> Any:
        from channels.ns3_wifi import WifiCell, WifiSettings

        s, b = self.settings, self.link
        settings = WifiSettings(
            transport=s.transport, segment_bytes=s.segment_bytes, udp_rate_bps=s.udp_rate_bps,
            standard=s.standard, channel_width_mhz=s.channel_width_mhz,
            station_power_dbm=b.tx_power_dbm, pathloss_exponent=b.pathloss_exponent,
            reference_loss_db=b.reference_loss_db, noise_figure_db=b.noise_figure_db,
            ap_height_m=ANTENNA_HEIGHT_M, station_height_m=ANTENNA_HEIGHT_M,
        )  # fmt: skip
        return WifiCell(settings, self.positions_m, self.seed)
