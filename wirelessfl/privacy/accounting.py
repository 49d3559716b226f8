"""Epsilon at delta of a run's DP releases, with Opacus's accountants (no accountant of ours).

Client-level DP (``privacy.mode``) composes one subsampled Gaussian mechanism per release:

- central: one per aggregation, noise multiplier z, sampling rate q = K/N when every client
  is equally likely to be scheduled (``selection.method: uniform``, ``availability.model:
  always``) and the aggregate has a fixed denominator (``strategy.aggregation: unbiased``)
  under ``privacy.adjacency: zero_out | add_remove``, else q = 1 (no amplification). Opacus's
  analysis is for Poisson sampling at rate q; K of N drawn without replacement is not
  Poisson, and q = K/N is the customary stand-in (McMahan et al., arXiv:1710.06963, sample
  Poisson; docs/privacy.md says what this assumes);
- local: per device, one per round it sent, q = 1 (the server sees who sent: no
  amplification); the reported epsilon is the largest over the devices.

The event-driven server modes (``server.mode: async | buffered | semi_sync``) amplify
nothing: q = 1. Who arrives at an aggregation follows from the devices' speeds, channels and
what is already in flight, not from a uniform draw of a fixed-size or Poisson subsample, and
the dispatch order is visible to the server; no subsampling theorem applies. Central mode
composes one Gaussian mechanism at z per aggregation that took an update (FedAsync: every
arrival; FedBuff: every M-th; semi_sync: every deadline with an arrival); local mode counts,
per device, every update it computed (at its dispatch, whether or not it arrives).

Sample-level DP-SGD (``privacy.dp_sgd``) composes, per device, one step per local batch at
q = batch / |D_k| (Poisson in Opacus's analysis; the trainer draws shuffled batches, the usual
stand-in); the reported epsilon is the largest over the devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["History", "default_delta", "epsilon", "fixed_denominator", "sampling_rate"]

#: Opacus's accountant history: (noise multiplier, sample rate, steps) per phase.
History = list[tuple[float, float, int]]


def epsilon(
    history: History,
    *,
    delta: float,
    accountant: str = "rdp",
    alphas: Sequence[float] | None = None,
) -> float:
    """Epsilon at ``delta`` of ``history`` by Opacus's ``rdp`` or ``prv`` accountant (0 for an
    empty history; ``alphas``: RDP orders, Opacus's default when None)."""
    history = [(float(z), float(q), int(n)) for z, q, n in history if n > 0]
    if not history:
        return 0.0
    from opacus.accountants import PRVAccountant, RDPAccountant

    if accountant == "rdp":
        rdp = RDPAccountant()
        rdp.history = history
        return float(rdp.get_epsilon(delta, alphas=None if alphas is None else list(alphas)))
    prv = PRVAccountant()
    prv.history = history
    return float(prv.get_epsilon(delta))


def fixed_denominator(scenario: Any) -> bool:
    """Whether the server's weights have a fixed denominator: synchronous rounds whose
    ``strategy.aggregation`` rule is marked so (``unbiased``; :mod:`wirelessfl.algorithms.
    aggregation``). Only then does one client absent remove its own term and nothing else."""
    from wirelessfl.config.privacy import has_fixed_denominator

    if scenario.server.event_driven:
        return False
    return has_fixed_denominator(getattr(scenario.strategy, "aggregation", "weighted_mean"))


def sampling_rate(scenario: Any) -> float:
    """q of client-level central DP: K/N under uniform scheduling of always-available clients
    in synchronous rounds with a fixed-denominator aggregate, under ``zero_out`` or
    ``add_remove`` adjacency; else 1 (module docstring, docs/privacy.md "Adjacency").

    With weights normalised over the arrived clients, a client scheduled with its update
    zeroed is not the same as a client not scheduled (the others' weights differ), so the
    subsampled Gaussian analysis does not apply; under ``replace`` Opacus's analysis (for
    add/remove) does not either."""
    uniform = (
        not scenario.server.event_driven
        and scenario.selection.method == "uniform"
        and scenario.availability.model == "always"
        and not scenario.selection.available_only
    )
    amplified = (
        scenario.privacy.mode == "central"
        and uniform
        and scenario.privacy.adjacency != "replace"
        and fixed_denominator(scenario)
    )
    return scenario.n_scheduled / scenario.n_clients if amplified else 1.0


def default_delta(scenario: Any) -> float:
    """``privacy.delta``, or N^-1.1 for client-level DP (McMahan et al.) and 1e-5 for DP-SGD
    alone."""
    if scenario.privacy.delta is not None:
        return float(scenario.privacy.delta)
    if scenario.privacy.client_level:
        return float(scenario.n_clients) ** -1.1
    return 1e-5
