"""``channel.uplink: nr``: a 5G NR PUSCH uplink over OFDMA (docs/simulator.md, "A 5G NR
uplink"), with Sionna SYS's BLER tables (the ``nr`` extra).

The carrier (``channel.bandwidth_hz``, an FR1 channel bandwidth, at numerology
``channel.nr.numerology``) has N_RB PRBs (TS 38.101-1 Table 5.3.2-1) and slots of 14 OFDM
symbols. Each round the training clients' shares b_k become whole PRBs
(:func:`channels.nr_grid.prbs_from_shares`, largest remainder, sum <= N_RB, each client with a
share at least one), which they hold for their whole upload (``prb_policy: shares``), or the
clients with a share compete for the PRBs slot by slot (``pf``, :mod:`channels.nr_slots`). A
client's SINR on a resource element is the round's SNR (``channel.noise_bandwidth: band``:
its power spectral density does not depend on its PRBs), times a unit-mean gain per subband
where ``coherence_bandwidth_hz`` makes the carrier frequency-selective (a block then decoded
at its EESM effective SINR, :mod:`channels.nr_eesm`). Every slot it sends one transport block
(TS 38.214 §5.1.3.2) at the MCS link adaptation picks, decoded with the probability Sionna's
``PHYAbstraction`` gives, with HARQ retransmissions (:mod:`channels.nr_harq`). Its upload lasts
(scheduling delay + slots) x the slot duration; a client without PRBs never arrives.

Randomness (HARQ outcomes, per-slot fading) comes from a stream per (run seed, client, round),
so a resumed run draws what the uninterrupted one drew; OLLA's per-device offsets are part of
the checkpoint. The planners see :class:`~wirelessfl.uplinks.nr_planning.NrPlanning`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from channels import make_fading
from channels.nr_bank import LinkBank
from channels.nr_eesm import SubbandLayout, eesm_beta
from channels.nr_fast_selective import fast_selective_uploads
from channels.nr_grid import prbs_from_shares, resource_blocks, slot_s, subcarrier_spacing_hz
from channels.nr_harq import LinkAdaptation, fast_uploads, slot_uploads
from channels.nr_link import HarqSettings, LinkTable, link_table
from channels.nr_slots import PrbPolicy, PrbUploads, prb_slot_uploads
from channels.streams import client_generators
from wirelessfl.errors import ConfigError
from wirelessfl.results.columns import NR_CLIENT_COLUMNS, NR_ROUND_COLUMNS
from wirelessfl.uplinks.base import Uplink
from wirelessfl.uplinks.nr_planning import NrPlanning
from wirelessfl.uplinks.nr_settings import NrSettings

__all__ = ["NrUplink"]

#: the random stream of the uploads' HARQ outcomes and per-slot fading
STREAM = "nr_uplink"


class NrUplink(NrPlanning, Uplink):
    """The NR uplink of a run: ``settings`` (``channel.nr``) on a carrier of ``bandwidth_hz``
    [Hz], drawing from ``seed``; ``fading``: the model whose marginal ``fading: iid`` draws
    per slot and ``coherence_bandwidth_hz`` per subband (None: neither)."""

    NAME = "nr"
    Settings = NrSettings
    PACKAGES = ("sionna-no-rt",)  # its BLER tables
    CELL_RESOURCES = "band"  # its PRBs, a share of the carrier (occupied_shares)

    def __init__(
        self, settings: NrSettings, bandwidth_hz: float, seed: int, fading: Any = None
    ) -> None:
        self.settings = settings
        self.bandwidth_hz = float(bandwidth_hz)
        self.seed = int(seed)
        self.n_rb = resource_blocks(bandwidth_hz, settings.numerology)
        self.slot_s = slot_s(settings.numerology)
        self.scheduling_delay_s = settings.scheduling_delay_slots * self.slot_s
        self.harq = HarqSettings(settings.max_transmissions, settings.harq_combining == "chase")
        self.adaptation = LinkAdaptation(
            settings.link_adaptation, settings.bler_target, settings.olla_delta_up_db
        )
        self.fading = fading
        self.layout = SubbandLayout.from_coherence(
            self.n_rb, settings.coherence_bandwidth_hz, subcarrier_spacing_hz(settings.numerology)
        )
        self.policy = PrbPolicy(settings.prb_policy, settings.pf_beta)
        self._tables: dict[int, LinkTable] = {}
        self._bank: LinkBank | None = None
        self.offset_db: np.ndarray | None = None  # (N,) OLLA offsets
        self._round: tuple[int, np.ndarray] = (0, np.zeros(0, dtype=int))
        self._clients: dict[int, dict[str, float]] = {}
        self._summary: dict[str, float] = {}

    @classmethod
    def from_scenario(cls, scenario: Any) -> NrUplink:
        ch = scenario.channel
        fading = None
        if ch.nr.fading == "iid" or ch.nr.coherence_bandwidth_hz is not None:
            fading = _marginal(ch.fading.model, ch.fading.model_kwargs())
        return cls(ch.nr, ch.bandwidth_hz, scenario.seed, fading)

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """The base's checks (controllers that plan Shannon shares or powers, event-driven
        modes), then one line each for: no ``nr`` extra, a bandwidth that is no FR1 channel
        bandwidth at the numerology, more scheduled clients than PRBs, noise over the share,
        the ``expected_rate`` offline channel, and ``fading: iid`` on a time-correlated
        plug-in model."""
        from channels.nr_bler import sionna_version

        super().check_scenario(scenario)
        ch, nr = scenario.channel, scenario.channel.nr
        if sionna_version() is None:
            raise ConfigError(
                "channel.uplink: nr needs the nr extra (sionna-no-rt==2.2.0, its BLER tables), "
                "which is not installed; pip install 'wirelessfl[nr]' (bash scripts/setup.sh "
                "installs it), or use channel.uplink: fdma"
            )
        try:
            n_rb = resource_blocks(ch.bandwidth_hz, nr.numerology)
        except ValueError as err:
            raise ConfigError(f"channel.bandwidth_hz: with channel.uplink: nr, {err}") from None
        if scenario.n_scheduled > n_rb:
            raise ConfigError(
                f"n_scheduled: {scenario.n_scheduled} clients need a PRB each, and the carrier "
                f"has {n_rb} (channel.bandwidth_hz {ch.bandwidth_hz:g} Hz at numerology "
                f"{nr.numerology}); schedule at most {n_rb}, or widen the carrier"
            )
        if ch.noise_bandwidth != "band":
            raise ConfigError(
                "channel.noise_bandwidth: share: with channel.uplink: nr a client's SINR per "
                "resource element is the round's SNR (its power spectral density fixed, "
                "docs/simulator.md); use band"
            )
        if scenario.controller.given("offline_channel") == "expected_rate":
            raise ConfigError(
                "controller.offline_channel: expected_rate averages 1 / log2(1 + SNR) over "
                "Rayleigh fading, and channel.uplink: nr plans with its goodput at the mean SNR; "
                "use mean_snr"
            )
        if nr.fading == "iid" or nr.coherence_bandwidth_hz is not None:
            model = _marginal(ch.fading.model, ch.fading.model_kwargs())
            if getattr(model, "time_correlated", False):
                key = "fading: iid" if nr.fading == "iid" else "coherence_bandwidth_hz"
                raise ConfigError(
                    f"channel.nr.{key} draws independent gains (slots or subbands), and "
                    f"channel.fading.model {ch.fading.model!r} is time-correlated with no known "
                    "marginal; use fading: block and coherence_bandwidth_hz: null"
                )
        if nr.prb_policy == "pf" and scenario.cells.enabled:
            raise ConfigError(
                "channel.nr.prb_policy: pf moves the PRBs every slot, and the cells' "
                "interference model needs each upload's PRB share of the round; use "
                "prb_policy: shares"
            )

    # ---- the links --------------------------------------------------------------------------
    def table(self, n_prb: int) -> LinkTable:
        """The link of ``n_prb`` PRBs (cached; the first call reads Sionna's tables)."""
        table = self._tables.get(n_prb)
        if table is None:
            from channels.nr_bler import pusch_bler_tables

            s = self.settings
            table = link_table(
                pusch_bler_tables(s.mcs_table),
                n_prb,
                mcs_table=s.mcs_table,
                bler_target=s.bler_target,
                dmrs_re_per_prb=s.dmrs_re_per_prb,
                overhead_re_per_prb=s.overhead_re_per_prb,
            )
            self._tables[n_prb] = table
        return table

    def bank(self) -> LinkBank:
        """The links of every PRB count (:class:`~channels.nr_bank.LinkBank`; kept)."""
        if self._bank is None:
            self._bank = LinkBank(self.table, self.n_rb)
        return self._bank

    def carrier_rate_bps(self, snr: np.ndarray) -> np.ndarray:
        """(k,) expected goodput [bit/s] alone on all N_RB PRBs at (k,) linear SINRs."""
        per_slot = self.table(self.n_rb).goodput_bits_per_slot(np.asarray(snr), self.harq)
        return np.asarray(per_slot, dtype=float) / self.slot_s

    # ---- the run ----------------------------------------------------------------------------
    def start(self, n_clients: int) -> None:
        """Zero OLLA offsets for the N devices."""
        self.offset_db = np.zeros(n_clients)

    def state(self) -> dict:
        """The OLLA offsets (olla; else nothing)."""
        if self.adaptation.kind != "olla" or self.offset_db is None:
            return {}
        return {"nr_olla_offset_db": self.offset_db.tolist()}

    def restore(self, state: dict) -> None:
        """The OLLA offsets of :meth:`state`."""
        if self.adaptation.kind == "olla":
            self.offset_db = np.asarray(state["nr_olla_offset_db"], dtype=float)

    def prepare_uploads(self, round_index: int, clients: np.ndarray) -> None:
        """Keep the round and its training clients (the streams' keys)."""
        self._round = (int(round_index), np.asarray(clients, dtype=np.int64))
        self._clients, self._summary = {}, {}

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) (scheduling delay + slots) x slot [s] of the m training clients on the PRBs of
        their shares (inf: no PRB)."""
        t, clients = self._round
        prbs = prbs_from_shares(np.asarray(shares, dtype=float), self.n_rb)
        sends = np.flatnonzero(prbs > 0)
        upload_s = np.full(len(prbs), math.inf)
        if sends.size:
            done = self._uploads(prbs[sends], np.asarray(snr)[sends], bits, sends, clients, t)
            slots = done.uploads.slots
            upload_s[sends] = (self.settings.scheduling_delay_slots + slots) * self.slot_s
            self._keep(clients[sends], prbs[sends], done)
        return upload_s

    def _uploads(
        self,
        prbs: np.ndarray,
        snr: np.ndarray,
        bits: np.ndarray,
        rows: np.ndarray,
        clients: np.ndarray,
        t: int,
    ) -> PrbUploads:
        """The uploads of the clients at ``rows`` on their ``prbs`` (the ``shares`` policy's
        PRBs): on a flat carrier with ``shares`` through :mod:`channels.nr_harq`, else on PRB
        sets through :mod:`channels.nr_slots` (``slot``) or
        :mod:`channels.nr_fast_selective` (``fast``)."""
        ids = clients[rows]
        assert self.offset_db is not None
        s = self.settings
        per_slot = s.fading == "iid"
        draw = self._draw_gain if (per_slot or s.coherence_bandwidth_hz is not None) else None
        common = {
            "harq": self.harq,
            "offset_db": self.offset_db[ids],
        }
        data = (
            snr,
            np.asarray(bits, dtype=float)[rows],
            client_generators(self.seed, ids, stream=STREAM, block=t),
        )
        if s.coherence_bandwidth_hz is None and s.prb_policy == "shares":
            run = slot_uploads if s.fidelity == "slot" else fast_uploads
            tables = [self.table(int(n)) for n in prbs]
            done = run(tables, *data, adaptation=self.adaptation, draw_gain=draw, **common)
            result = PrbUploads(done, done.transmissions * prbs)
        else:
            beta = eesm_beta(self.table(1).grid.eesm_beta, self.table(1).tbs_bits.size)
            on_prbs = {"layout": self.layout, "beta": beta, "prbs": prbs, "draw_gain": draw,
                       "per_slot": per_slot}  # fmt: skip
            if s.fidelity == "slot":
                result = prb_slot_uploads(
                    self.bank(), *data, adaptation=self.adaptation, policy=self.policy,
                    **on_prbs, **common,
                )  # fmt: skip
            else:
                result = fast_selective_uploads(
                    self.bank(), *data, bler_target=s.bler_target, **on_prbs, **common
                )
        self.offset_db[ids] = result.uploads.offset_db
        return result

    def _draw_gain(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Unit-mean fading powers of ``shape``: |s|^2 / E|s|^2 of the marginal model."""
        n = int(np.prod(shape))
        s = self.fading.sample(rng, n, 1)[:, 0]
        return (np.abs(s) ** 2 / float(self.fading.mean_power)).reshape(shape)

    def _keep(self, ids: np.ndarray, prbs: np.ndarray, result: PrbUploads) -> None:
        """The per-client and round values of the uploads on their (``shares``) ``prbs``
        (``pf``: the mean PRBs of their transmissions)."""
        done = result.uploads
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_mcs = done.mcs_sum / done.blocks
            bler = done.nacks / done.transmissions
            goodput = done.delivered_bits / (done.slots * self.slot_s)
            if self.policy.kind == "pf":
                prbs = result.prb_slots / done.transmissions
        for i, cid in enumerate(ids.tolist()):
            self._clients[cid] = {
                "nr_prbs": float(prbs[i]),
                "nr_mean_mcs": float(mean_mcs[i]),
                "nr_transmissions": float(done.transmissions[i]),
                "nr_bler": float(bler[i]),
                "nr_goodput_bps": float(goodput[i]),
            }
        finite = np.isfinite(done.slots)
        longest = float(done.slots[finite].max()) if finite.any() else 0.0
        used = float(result.prb_slots[finite].sum())
        utilisation = used / (self.n_rb * longest) if longest > 0 else math.nan
        blocks, sent = float(done.blocks.sum()), float(done.transmissions.sum())
        allocated = float(prbs.sum()) / self.n_rb
        self._summary = {
            "nr_prb_allocated": utilisation if self.policy.kind == "pf" else allocated,
            "nr_prb_utilisation": utilisation,
            "nr_mean_mcs": float(done.mcs_sum.sum()) / blocks if blocks else math.nan,
            "nr_bler": float(done.nacks.sum()) / sent if sent else math.nan,
            "nr_transmissions": sent,
        }

    def occupied_shares(self, shares: np.ndarray) -> np.ndarray:
        """(m,) each upload's PRBs as a share of the carrier's (the rounding of
        :func:`prbs_from_shares`)."""
        return prbs_from_shares(np.asarray(shares, dtype=float), self.n_rb) / self.n_rb

    def round_columns(self) -> dict[str, str]:
        """The NR round columns (results.columns.NR_ROUND_COLUMNS)."""
        return dict(NR_ROUND_COLUMNS)

    def record(self, prepared: Any) -> dict[str, float]:
        """The round's NR columns (NaN when nobody sent)."""
        return {name: self._summary.get(name, math.nan) for name in NR_ROUND_COLUMNS}

    def client_columns(self) -> dict[str, str]:
        """The NR client columns (results.columns.NR_CLIENT_COLUMNS)."""
        return dict(NR_CLIENT_COLUMNS)

    def client_values(self, client: int) -> dict[str, float]:
        """The client's NR columns this round (NaN where it did not send)."""
        values = self._clients.get(int(client), {})
        return {name: values.get(name, math.nan) for name in NR_CLIENT_COLUMNS}


def _marginal(name: str, kwargs: dict) -> Any:
    """The fading model whose draws ``fading: iid`` takes per slot: Gauss-Markov's stationary
    marginal is Rayleigh; the others as configured."""
    if name == "gauss_markov":
        return make_fading("rayleigh")
    return make_fading(name, **kwargs)
