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

With weights w_k fixed by public information (the data fractions p_k, the counts), replacing
one client's clipped update moves sum_k w_k Delta_k by at most 2 w_k C, and adding or removing
it by w_k C: the noise std z C max_k w_k is the Gaussian mechanism at multiplier z for
add/remove adjacency, the one Opacus's accountants assume. With uniform weights 1/K this is
McMahan et al.'s fixed-denominator estimator (arXiv:1710.06963).

Adaptive clipping (Andrew et al., arXiv:1905.03871, Algorithm 1): each client also reports
b_k = 1[||Delta_k|| <= C]; the server estimates b_hat = (sum_k b_k + N(0, sigma_b^2)) / K and
sets C <- C exp(-eta_C (b_hat - gamma)); the update noise multiplier is
z_Delta = (z^-2 - (2 sigma_b)^-2)^-1/2, so that both releases together are worth one Gaussian
mechanism at z (their Theorem 1): the accountant counts z.

The event-driven server modes (``server.mode``, docs/privacy.md "Asynchronous rounds") add
updates with the weights of :mod:`wirelessfl.sim.staleness`: FedBuff and semi_sync
theta + sum_k w_k Delta_k with w_k = eta_g s(tau_k) / n, FedAsync
theta + w (Delta + theta_start - theta) with w = alpha s(tau), where theta and theta_start are
models already released. Either way one client's clipped update moves the release by at most
w_k C, so the server's noise std is z C max_k w_k over the updates the aggregation takes,
staleness weights included; one release per aggregation that took an update, at q = 1.
Locally noised updates are counted at their dispatch (:meth:`PrivacyStage.dispatched`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
import torch

from wirelessfl.config.privacy import updates_per_aggregation
from wirelessfl.privacy.accounting import History, default_delta, epsilon, sampling_rate
from wirelessfl.privacy.mechanism import add_gaussian_noise, clip_to_norm

__all__ = ["NORM", "PrivacyStage", "update_noise_multiplier"]

#: ``Message.diagnostics`` entry: the client's update norm ||Delta_k||_2 before clipping.
NORM = "dp_update_norm"


def update_noise_multiplier(z: float, count_noise: float | None) -> float:
    """z_Delta of the update given the total z and sigma_b (None: no count is released)."""
    if count_noise is None:
        return z
    return (z**-2 - (2.0 * count_noise) ** -2) ** -0.5


class PrivacyStage:
    """The client-level DP stage of a run (``privacy.mode`` central | local).

    Args:
        scenario: the whole scenario (its ``privacy`` section, N, K, selection).

    Server state (checkpointed, :meth:`state_dict`): the clip norm C, the releases counted
    (central: aggregations; local: updates each device sent).
    """

    def __init__(self, scenario: Any) -> None:
        pv = scenario.privacy
        self.mode: str = pv.mode
        self.z = float(pv.noise_multiplier)
        self.adaptive = bool(pv.adaptive_clipping)
        #: K of the synchronous round, the updates an event-driven aggregation takes
        self.per_aggregation = updates_per_aggregation(scenario)
        self.count_noise: float | None = None
        if self.adaptive:
            self.count_noise = (
                pv.count_noise if pv.count_noise is not None else self.per_aggregation / 20.0
            )
        self.z_update = update_noise_multiplier(self.z, self.count_noise)
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

    # ---- client side ---------------------------------------------------------------------
    def before_compression(
        self, shared: MutableMapping[str, torch.Tensor], generator: torch.Generator
    ) -> float:
        """Local mode: clip the update to C and add N(0, (z C)^2) to every value, in place;
        central: nothing. Returns ||Delta_k|| before clipping (NaN: not measured here)."""
        if self.mode != "local":
            return math.nan
        norm = clip_to_norm(shared, self.clip_norm)
        add_gaussian_noise(shared, self.z * self.clip_norm, generator, names=sorted(shared))
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
        """Central: the std z_Delta C max_k |w_k| added to every aggregated value; 0 local."""
        if self.mode != "central" or not weights:
            return 0.0
        return self.z_update * self.clip_norm * max(abs(float(w)) for w in weights)

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
            b_hat = (unclipped + self.count_noise * noise) / self.per_aggregation
            self.clip_norm *= math.exp(-self.clip_lr * (b_hat - self.target_quantile))

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
