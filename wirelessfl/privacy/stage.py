"""The client-level DP stage: clip each client's shared update to C, add Gaussian noise on the
device (local) or at the server (central), adapt C (Andrew et al.), account epsilon.

Order with the compression stage (docs/privacy.md, "Order with compression"):

- local: clip Delta_k to C -> add N(0, (z C)^2) to every shared value -> the compression stage
  (sparsify, error feedback). All that leaves the device, the sparsity mask and the error
  memory included, is post-processing of the noised update, so DP covers them.
- central: the compression stage -> clip what is sent to C -> the server adds
  N(0, (z C max_k w_k)^2) to every value of the shared tensors of the weighted sum
  theta + sum_k w_k Delta_k. Clipping last bounds exactly what is aggregated (error feedback
  adds the memory of earlier rounds, so a clip before sparsifying would not bound it); the
  server, trusted in this mode, sees the masks; the released model is noised everywhere.

Adjacency (``privacy.adjacency``, docs/privacy.md "Adjacency"): the noise std is z times
the release's sensitivity to one client. With weights w_k public (the data fractions p_k,
the counts, who arrived), replacing one client's clipped update by zero moves
theta + sum_k w_k Delta_k by at most w_k C (``zero_out``), by any other clipped update by
2 w_k C (``replace``). Removing the client (``add_remove``) moves it by w_k C only when the
weights have a fixed denominator (``strategy.aggregation: unbiased``, McMahan et al.'s
estimator, arXiv:1710.06963): normalised over the arrived clients, the others' weights move
too, up to 2 w_k C in all. The std is z C max_k w_k (twice under ``replace``), max over the
arrived, or over all N clients with a fixed denominator (the std then does not depend on who
arrived, which the subsampled analysis needs).

Adaptive clipping (Andrew et al., arXiv:1905.03871, Algorithm 1 and section 3): each client
also reports b_k = 1[||Delta_k|| <= C]; the server releases the *centred* count
sum_k (b_k - 1/2) + N(0, sigma_b^2), of sensitivity 1/2 (1 under ``replace``), estimates
b_hat = clip(1/2 + (that) / K, 0, 1) (the clamp of the paper's reference implementation) and
sets C <- C exp(-eta_C (b_hat - gamma)); the update noise multiplier is
z_Delta = (z^-2 - (sigma_b / s_b)^-2)^-1/2 (:func:`~wirelessfl.config.privacy.
update_noise_multiplier`), so that both releases together are one Gaussian mechanism at z
(their Theorem 1): the accountant counts z.

The event-driven server modes (``server.mode``, docs/privacy.md "Asynchronous rounds") add
updates with the weights of :mod:`wirelessfl.servers`: FedBuff and semi_sync
theta + sum_k w_k Delta_k with w_k = eta_g s(tau_k) / n, FedAsync
theta + w (Delta + theta_start - theta) with w = alpha s(tau), where theta and theta_start are
models already released. Either way zeroing one client's clipped update moves the release by at most
w_k C (2 w_k C replacing it), so the server's noise std is z C max_k w_k (twice under
``replace``) over the updates the aggregation takes, staleness weights included; one release
per aggregation that took an update, at q = 1.
Locally noised updates are counted at their dispatch (:meth:`PrivacyStage.dispatched`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
import torch

from wirelessfl.config.privacy import (
    update_noise_multiplier,
    update_sensitivity_factor,
    updates_per_aggregation,
)
from wirelessfl.privacy.accounting import (
    History,
    default_delta,
    epsilon,
    fixed_denominator,
    sampling_rate,
)
from wirelessfl.privacy.mechanism import add_gaussian_noise, clip_to_norm

__all__ = ["NORM", "PrivacyStage"]

#: ``Message.diagnostics`` entry: the client's update norm ||Delta_k||_2 before clipping.
NORM = "dp_update_norm"


class PrivacyStage:
    """The client-level DP stage of a run (``privacy.mode`` central | local).

    Args:
        scenario: the whole scenario (its ``privacy`` section, N, K, selection).
        data_fractions: p_k of every client (N,); needed with a fixed-denominator aggregate,
            whose largest weight over all N clients sets the noise.

    Server state (checkpointed, :meth:`state_dict`): the clip norm C, the releases counted
    (central: aggregations; local: updates each device sent).
    """

    def __init__(self, scenario: Any, data_fractions: Sequence[float] | None = None) -> None:
        pv = scenario.privacy
        self.mode: str = pv.mode
        self.z = float(pv.noise_multiplier)
        self.adjacency: str = pv.adjacency
        #: one client's largest move of the release, in units of w_k C (C locally)
        self.sensitivity_factor = update_sensitivity_factor(self.adjacency)
        #: the largest weight over all N clients (a fixed denominator), else None: the arrived
        self.weight_bound = self._weight_bound(scenario, data_fractions)
        self.adaptive = bool(pv.adaptive_clipping)
        #: K of the synchronous round, the updates an event-driven aggregation takes
        self.per_aggregation = updates_per_aggregation(scenario)
        self.count_noise: float | None = None
        if self.adaptive:
            self.count_noise = (
                pv.count_noise if pv.count_noise is not None else self.per_aggregation / 20.0
            )
        self.z_update = update_noise_multiplier(self.z, self.count_noise, self.adjacency)
        self.target_quantile = float(pv.target_quantile)
        self.clip_lr = float(pv.clip_lr)
        self.sample_rate = sampling_rate(scenario)
        self.delta = default_delta(scenario)
        self.accountant = pv.accountant
        self.target_epsilon = pv.target_epsilon
        self.clip_norm = float(pv.clip_norm)
        self.releases = 0  # central: aggregations that released a noised sum
        self.sent = np.zeros(scenario.n_clients, dtype=np.int64)  # local: updates each sent
        #: local mode, event-driven: a device's update is counted at its dispatch
        self.counts_dispatches = bool(scenario.server.event_driven)
        self._clipped_fraction = math.nan
        self._round_clip_norm = self.clip_norm

    @staticmethod
    def _weight_bound(scenario: Any, data_fractions: Sequence[float] | None) -> float | None:
        """max_k w_k over all N clients of a fixed-denominator rule (central), else None."""
        if scenario.privacy.mode != "central" or not fixed_denominator(scenario):
            return None
        if data_fractions is None:
            raise ValueError("a fixed-denominator aggregate needs every client's data fraction")
        from wirelessfl.registries import AGGREGATIONS

        rule = AGGREGATIONS.load(scenario.strategy.aggregation)
        p = [float(x) for x in data_fractions]
        return max(abs(w) for w in rule(p, scenario.n_clients, scenario.n_scheduled))

    # ---- client side ---------------------------------------------------------------------
    def before_compression(
        self, shared: MutableMapping[str, torch.Tensor], generator: torch.Generator
    ) -> float:
        """Local mode: clip the update to C and add N(0, (z C)^2) to every value (2 z C under
        ``replace``), in place; central: nothing. Returns ||Delta_k|| before clipping (NaN: not
        measured here)."""
        if self.mode != "local":
            return math.nan
        norm = clip_to_norm(shared, self.clip_norm)
        std = self.z * self.sensitivity_factor * self.clip_norm
        add_gaussian_noise(shared, std, generator, names=sorted(shared))
        return norm

    def after_compression(self, shared: MutableMapping[str, torch.Tensor]) -> float:
        """Central mode: clip what is sent to C, in place; local: nothing. Returns the norm
        before clipping (NaN: not measured here)."""
        if self.mode != "central":
            return math.nan
        return clip_to_norm(shared, self.clip_norm)

    def dispatched(self, clients: Sequence[int]) -> None:
        """Local mode in the event-driven modes: count one release for each of ``clients``,
        dispatched with a noised update, whether or not it arrives (it may leave the device,
        wholly or in part, before it is lost)."""
        if self.mode == "local" and self.counts_dispatches:
            self.sent[list(clients)] += 1

    # ---- server side ---------------------------------------------------------------------
    def noise_std(self, weights: Sequence[float]) -> float:
        """Central: the std z_Delta C max_k |w_k| (twice under ``replace``) added to every
        aggregated value, max over ``weights`` (the arrived) or over all N clients with a fixed
        denominator; 0 local."""
        if self.mode != "central" or not weights:
            return 0.0
        largest = self.weight_bound
        if largest is None:
            largest = max(abs(float(w)) for w in weights)
        return self.z_update * self.sensitivity_factor * self.clip_norm * largest

    def release(
        self,
        global_state: MutableMapping[str, torch.Tensor],
        names: Sequence[str],
        weights: Sequence[float],
        generator: torch.Generator,
    ) -> None:
        """Central: add the noise of :meth:`noise_std` to the tensors ``names`` of the new global
        state (in place), drawn from ``generator`` in sorted name order."""
        std = self.noise_std(weights)
        if std > 0.0:
            add_gaussian_noise(global_state, std, generator, names=sorted(names))

    def after_round(self, norms: Mapping[int, float], generator: torch.Generator | None) -> None:
        """Count the round's releases (``norms``: arrived client -> its pre-clip norm) and, with
        adaptive clipping, move C by the noised fraction of unclipped updates."""
        self._round_clip_norm = self.clip_norm
        if not norms:
            self._clipped_fraction = math.nan
            return
        unclipped = sum(1.0 for n in norms.values() if n <= self.clip_norm)
        self._clipped_fraction = 1.0 - unclipped / len(norms)
        if self.mode == "central":
            self.releases += 1
        elif not self.counts_dispatches:
            self.sent[list(norms)] += 1
        if self.adaptive:
            assert generator is not None and self.count_noise is not None
            noise = float(torch.randn((), generator=generator, dtype=torch.float64))
            b_hat = self._b_hat(unclipped, len(norms), noise)
            self.clip_norm *= math.exp(-self.clip_lr * (b_hat - self.target_quantile))

    def _b_hat(self, unclipped: float, arrived: int, noise: float) -> float:
        """The estimated unclipped fraction from the released centred count
        sum_k (b_k - 1/2) + sigma_b noise over the ``arrived`` clients: 1/2 + that / K, clamped
        to [0, 1] (module docstring; ``noise`` a standard normal draw)."""
        centred = unclipped - 0.5 * arrived + self.count_noise * noise
        return min(1.0, max(0.0, 0.5 + centred / self.per_aggregation))

    # ---- accounting ----------------------------------------------------------------------
    def history(self, extra: int = 0) -> History:
        """The releases as Opacus's history, ``extra`` more for the worst-placed client."""
        if self.mode == "central":
            return [(self.z, self.sample_rate, self.releases + extra)]
        return [(self.z, 1.0, int(self.sent.max(initial=0)) + extra)]

    def epsilon(self, extra: int = 0) -> float:
        """Epsilon at delta after the releases so far (``extra`` more)."""
        return epsilon(self.history(extra), delta=self.delta, accountant=self.accountant)

    def stop_reason(self) -> str | None:
        """Why the next round must not run: its release would take epsilon above
        ``privacy.target_epsilon`` (None: it may run)."""
        if self.target_epsilon is None:
            return None
        after = self.epsilon(extra=1)
        if after <= self.target_epsilon:
            return None
        return (
            f"privacy.target_epsilon: the next round would take epsilon to {after:.4g} > "
            f"{self.target_epsilon:g} at delta {self.delta:.3g}"
        )

    def metrics(self) -> dict[str, float]:
        """``dp_epsilon``, ``dp_clip_norm`` (the C of the round just counted) and
        ``dp_clipped_fraction``."""
        return {
            "dp_epsilon": self.epsilon(),
            "dp_clip_norm": self._round_clip_norm,
            "dp_clipped_fraction": self._clipped_fraction,
        }

    # ---- persistence ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "clip_norm": self.clip_norm,
            "releases": self.releases,
            "sent": torch.as_tensor(self.sent),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.clip_norm = float(state["clip_norm"])
        self.releases = int(state["releases"])
        self.sent = np.asarray(state["sent"].cpu(), dtype=np.int64).copy()
