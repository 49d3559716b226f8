"""TSFA (Algorithm 3): the offline rank search (Algorithm 2, Lemma 2) then online Lyapunov.

The offline stage plans with the algorithm's cost model: for every rank r = 1..r_max it costs
the N clients' plans at r on the planning channel, takes the largest ratio that meets D_th on
average (Lemma 2 for a payload affine in O; a rank whose payload the controller cannot thin is
feasible when it meets D_th as sent) and keeps the rank of least penalty (ties: the smaller
rank). When every client sends r (d + l) values per layer thinned by O (SOFT and any algorithm
with a compression stage that follows the controller, its dense values aside) this is the
paper's closed form, ``optim.offline_rank_search``, to the last bit. The online stage is OSFA's
(:mod:`wirelessfl.controllers.lyapunov`).

``controller.offline_channel`` picks the channel the offline stage plans with: ``mean_snr``
(the paper: log2(1 + mean SNR)) or ``expected_rate`` (E[1/log2(1 + SNR)] under Rayleigh fading,
above the outage threshold ``faults.outage_snr_db``, or above each client's
``controller.offline_outage_prob`` quantile when there is none; ``optim.offline`` and
docs/solvers.md, "The offline stage").

An algorithm whose penalty does not depend on the rank r (FSLoRA: Theorem 4.4 sees only
k_i / r) makes every feasible rank tie; the offline stage then takes the largest feasible one
(a client's cost is its sketch k_i, not r: a large global rank is what sketching is for; the
paper's r = 64) instead of the paper's smaller-rank tie rule, which would give r = 1.

Over the air (``channel.uplink: aircomp``) a round's analog sum lasts n(r) / B whatever K and
the channel (n(r): the dense values of a client's message at rank r, which no ratio
shortens), so the offline stage keeps the ranks with n(r) / B <= D_th, each at O = 1, and
takes the one of least penalty; like FDMA's, it leaves the compute time out (the online
queue counts it; :mod:`wirelessfl.controllers.air_planning`).

The offline stage asks the uplink for its average delay
(:meth:`~wirelessfl.controllers.uplink_planning.UplinkPlanning.offline_delay`); an uplink that
has none (``channel.uplink: noma``: a round's delay is its slowest client's, with no average
over the planning channel in closed form) refuses TSFA at load in one line (``UPLINK_NEEDS``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from channels.fdma import full_band_upload_s
from optim import OfflineResult, offline_rank_search
from optim.offline import OFFLINE_CHANNELS, affine_offline_ratio, planning_inverse_efficiency
from wirelessfl.algorithms.cost import RATIO
from wirelessfl.config.schema import option
from wirelessfl.controllers.lyapunov import LyapunovSettings, OnlineLyapunov
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.plans import RoundPlan


@dataclass
class TsfaSettings(LyapunovSettings):
    """TSFA's settings: the online stage's and the offline search's planning channel."""

    offline_channel: str = option(
        "mean_snr",
        choices=OFFLINE_CHANNELS,
        doc="TSFA offline stage plans with log2(1 + mean SNR) (the paper), or with "
        "E[1/log2(1 + SNR)] under Rayleigh fading above the outage cut-off (docs/solvers.md)",
    )
    offline_outage_prob: float = option(
        0.01,
        gt=0.0,
        lt=1.0,
        doc="expected_rate without faults.outage_snr_db: plan over each client's fading "
        "states above this quantile of its SNR",
    )


class TwoStage(OnlineLyapunov):
    """Rank from the offline search on the planning channel; then as OSFA."""

    Settings = TsfaSettings

    #: OSFA's needs and an average delay for the offline stage
    UPLINK_NEEDS = frozenset({"round", "offline"})

    @classmethod
    def uplink_needs(cls, settings: Any) -> frozenset[str]:
        return super().uplink_needs(settings) | {"offline"}

    def _inverse_efficiency(self) -> np.ndarray | None:
        """(N,) w_k of ``expected_rate`` [s Hz / bit]; ``None`` for ``mean_snr`` (the paper)."""
        c, s = self.ctx, self.ctx.settings
        self.planning_cutoff = "none (average channel)"
        if s.offline_channel == "mean_snr":  # the uplink's own rate (NR), else Shannon's
            return c.planning.offline_inverse_efficiency(np.asarray(c.mean_snr, dtype=float))
        if getattr(c.fading, "k_factor", None) != 0.0:
            name = type(c.fading).__name__
            raise ConfigError(
                "controller.offline_channel: expected_rate is computed for Rayleigh fading "
                f"(channel.fading.model rayleigh or gauss_markov), got {name}; use mean_snr"
            )
        if c.outage_snr is not None:
            self.planning_cutoff = "faults.outage_snr_db (partial expectation)"
        else:
            self.planning_cutoff = (
                f"controller.offline_outage_prob = {s.offline_outage_prob:g} "
                "(conditional expectation above each client's quantile)"
            )
        return planning_inverse_efficiency(
            c.mean_snr,
            channel="expected_rate",
            outage_snr=c.outage_snr,
            outage_prob=s.offline_outage_prob,
        )

    def choose_rank(self) -> int:
        w = self._inverse_efficiency()
        self.planning_w_mean = float(np.mean(w)) if w is not None else None
        groups = self._client_groups()
        closed = self._closed_form(groups)
        if closed is not None:
            return self._paper_search(w, *closed)
        return self._general_search(w, groups)

    # ---- who costs what ----------------------------------------------------------------------
    def _client_groups(self) -> dict[Any, np.ndarray]:
        """Client ids grouped by cost profile (clients of a group cost the same)."""
        groups: dict[Any, list[int]] = defaultdict(list)
        for client in range(self.ctx.n_clients):
            groups[self.ctx.cost.client_profile(client)].append(client)
        return {key: np.asarray(ids) for key, ids in groups.items()}

    def _plans_at(self, rank: int, ratio: float, groups: dict[Any, np.ndarray]) -> list:
        """One plan per group (its first client) when every client is planned at ``rank``,
        at the least b of ``controller.bits_choices`` (the cheapest upload the online step may
        choose; none: the scenario's quantiser)."""
        firsts = np.array([ids[0] for ids in groups.values()])
        bits = min(self.bits_choices) if self.bits_choices != [None] else None
        plan = RoundPlan(0, firsts, rank, ratio, float("nan"), self.ctx.n_scheduled, bits)
        return self.ctx.cost.plan(plan, model_rank=rank)

    def _closed_form(self, groups: dict[Any, np.ndarray]) -> tuple[float, float] | None:
        """``(P, h)`` when every client sends O r P values plus h dense at rank r (the paper's
        Lemma 2 applies as printed), else ``None``."""
        cost, r_max = self.ctx.cost, self.ctx.constants.r_max
        if RATIO not in cost.knobs or len(groups) != 1 or not self.ctx.planning.LEMMA_2:
            return None
        ranks = sorted({1, 2, r_max})
        splits = [cost.affine_upload(self._plans_at(r, 1.0, groups)[0]) for r in ranks]
        per_rank, dense, side = splits[0]
        exact = all(
            s.ratio_values == r * per_rank and s.fixed_values == dense and s.side_bits == side == 0
            for r, s in zip(ranks, splits, strict=True)
        )
        return (per_rank, dense) if exact and per_rank > 0 else None

    # ---- the paper's closed form --------------------------------------------------------------
    def _paper_search(self, w: np.ndarray | None, per_rank: float, dense: float) -> int:
        c, s = self.ctx, self.ctx.settings
        # Lemma 2 with a fixed dense part h (a task head): (K/N) sum_k v h / (B log2(1 + SNR_k))
        # of the budget D_th is spent on it, so the LoRA payload gets what remains.
        if w is None:
            fixed_s = self._dense_delay_s(dense, c.mean_snr)
        else:  # the same sum with w_k in place of 1/log2(1 + SNR_bar_k)
            fixed_s = c.bits_per_value * dense * float(np.sum(w)) / c.bandwidth_hz
        self.fixed_average_delay_s = c.n_scheduled / c.n_clients * fixed_s
        d_th_lora = s.d_th_s - self.fixed_average_delay_s
        if d_th_lora <= 0:
            raise UserError(
                f"controller.d_th_s: {s.d_th_s} s is spent by the dense task head alone "
                f"({self.fixed_average_delay_s:.4g} s on the planning channel); raise D_th"
            )
        try:
            self.offline = offline_rank_search(
                mean_snr=c.mean_snr,
                n_scheduled=c.n_scheduled,
                d_th_s=d_th_lora,
                params_per_rank=per_rank,
                bits_per_value=c.bits_per_value,
                bandwidth_hz=c.bandwidth_hz,
                o_min=s.o_min,
                constants=c.constants,
                inverse_efficiency=w,
            )
        except ValueError as err:  # no feasible rank: the user's D_th is too tight
            raise UserError(f"controller.d_th_s: {err}") from None
        return int(self.offline.rank)

    def _dense_delay_s(self, dense: float, snr: np.ndarray) -> float:
        """sum_k v h / (B log2(1 + SNR_k)) [s] (0 without dense values)."""
        c = self.ctx
        if dense == 0:
            return 0.0
        bits = c.bits_per_value * dense
        return float(full_band_upload_s(bits, c.bandwidth_hz, np.asarray(snr)).sum())

    # ---- any cost model -----------------------------------------------------------------------
    def _general_search(self, w: np.ndarray | None, groups: dict[Any, np.ndarray]) -> int:
        """Algorithm 2 over the cost model: Lemma 2 per rank for the affine payload, the
        penalty of the N clients' plans, the least penalty (ties: the smaller rank)."""
        c, s = self.ctx, self.ctx.settings
        if w is None:
            w = 1.0 / np.log2(1.0 + np.asarray(c.mean_snr, dtype=float))
        w_sum = np.array([float(w[ids].sum()) for ids in groups.values()])
        counts = np.array([ids.size for ids in groups.values()], dtype=float)
        scale = c.n_scheduled / c.n_clients / c.bandwidth_hz
        ranks = np.arange(1, c.constants.r_max + 1)
        slope, fixed = np.zeros(ranks.size), np.zeros(ranks.size)
        uplink = c.planning
        for i, r in enumerate(ranks):
            plans = self._plans_at(int(r), 1.0, groups)
            slope[i], fixed[i] = uplink.offline_delay(
                self.planned_uploads(plans), self.dense_values_for_uplink(plans), w_sum, scale
            )
        o, feasible = affine_offline_ratio(
            delay_per_ratio_s=slope, fixed_delay_s=fixed, d_th_s=s.d_th_s, o_min=s.o_min
        )
        if not feasible.any():
            raise UserError(
                f"controller.d_th_s: no rank meets the delay budget: at rank 1 algorithm "
                f"{c.cost.name!r} takes {fixed[0] + slope[0] * s.o_min:.6g} s on average "
                f"> d_th_s = {s.d_th_s:g} s; raise d_th_s or add bandwidth"
            )
        bounds = np.full(ranks.size, np.inf)
        for i in np.flatnonzero(feasible):
            plans = self._plans_at(int(ranks[i]), float(o[i]), groups)
            values = [
                c.cost.client_penalty(p, n_scheduled=c.n_scheduled, constants=c.constants)
                for p in plans
            ]
            bounds[i] = float(np.dot(values, counts) / counts.sum())
        best = int(np.argmin(bounds))  # ties: the smaller rank (Algorithm 2)
        if not c.cost.PENALTY_DEPENDS_ON_RANK:  # every feasible rank ties: the largest
            best = int(np.flatnonzero(feasible)[-1])
        delays = fixed + slope * o
        self.fixed_average_delay_s = float(fixed[best])
        self.offline = OfflineResult(
            rank=int(ranks[best]),
            sparsification=float(o[best]),
            bound=float(bounds[best]),
            delay_s=float(delays[best]),
            ranks=ranks,
            bounds=bounds,
            sparsifications=o,
            feasible=feasible,
            delays_s=delays,
        )
        return int(ranks[best])

    def summary(self) -> dict[str, Any]:
        o = self.offline
        out = {
            "rank": self.rank,
            "rank_source": "offline stage (Algorithm 2)",
            "offline_sparsification": float(o.sparsification),
            "offline_fixed_delay_s": self.fixed_average_delay_s,
            "offline_bounds": [float(b) for b in o.bounds],
            "offline_sparsifications": [float(x) for x in o.sparsifications],
            "offline_tie_rule": (
                "smaller rank (Algorithm 2)"
                if self.ctx.cost.PENALTY_DEPENDS_ON_RANK
                else "largest feasible rank (the penalty does not depend on r)"
            ),
            "online_knob": self.knob,
        }
        if self.planning_w_mean is not None:  # keys only for expected_rate: meta.json unchanged
            out["offline_channel"] = "expected_rate"
            out["offline_cutoff"] = self.planning_cutoff
            out["offline_mean_inverse_efficiency"] = self.planning_w_mean
        if self.ctx.settings.radio == "joint":  # the key only then: meta.json unchanged
            out["radio"] = "joint"
        return out
