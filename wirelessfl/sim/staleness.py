"""The server's weights of stale updates in the event-driven modes (``server.mode``).

tau = (the server's model version when the update is aggregated) - (the version the client
downloaded): the number of aggregations the update missed. Each update is added as
``x <- x + w (Delta + m (x_start - x))`` (:class:`~wirelessfl.plans.WeightedUpdate`); the modes
choose ``w`` and ``m``:

- ``async``, FedAsync ("Asynchronous Federated Optimization", C. Xie, S. Koyejo, I. Gupta,
  arXiv:1903.03934, Algorithm 1): every arrival is mixed into the global model,
  ``x_t = (1 - alpha_t) x_{t-1} + alpha_t x_new`` with ``alpha_t = alpha s(t - tau)``, where
  ``x_new = x_start + Delta`` is the client's model. That is ``w = alpha_t``, ``m = 1``:
  ``(1 - w) x + w (x_start + Delta) = x + w (Delta + x_start - x)``;
- ``buffered``, FedBuff ("Federated Learning with Buffered Asynchronous Aggregation",
  J. Nguyen et al., AISTATS 2022, arXiv:2106.06639, Algorithm 1): the server sums the M
  buffered updates, each scaled by s(tau), divides by M and takes a server step of rate
  eta_g, ``x <- x + eta_g (1/M) sum_k s(tau_k) Delta_k``: ``w_k = eta_g s(tau_k) / M``,
  ``m = 0`` (the paper's clients send y_0 - y_Q and the server subtracts; here Delta = y_Q -
  y_0 is added, the same step). FedBuff scales by 1/sqrt(1 + tau), the polynomial below with
  a = 0.5 (the default of ``server.staleness``);
- ``semi_sync``: FedBuff's step over the n updates that arrived by the deadline (M = n).

The staleness functions s (FedAsync, section on the adaptive mixing weight, "Staleness
functions"):

- constant: s(tau) = 1;
- polynomial: s_a(tau) = (tau + 1)^(-a);
- hinge: s_{a,b}(tau) = 1 if tau <= b, else 1 / (a (tau - b) + 1).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["buffered_weights", "fedasync_weight", "staleness_weight"]


def staleness_weight(tau: int, function: str, a: float, b: float) -> float:
    """s(tau) of ``function`` (constant | polynomial | hinge) with parameters a, b; tau >= 0."""
    if tau < 0:
        raise ValueError(f"staleness must be >= 0, got {tau}")
    if function == "constant":
        return 1.0
    if function == "polynomial":
        return float((tau + 1.0) ** (-a))
    if function == "hinge":
        return 1.0 if tau <= b else 1.0 / (a * (tau - b) + 1.0)
    raise ValueError(f"unknown staleness function {function!r}")


def fedasync_weight(alpha: float, tau: int, function: str, a: float, b: float) -> float:
    """FedAsync's alpha_t = alpha s(tau): the weight of the client's model in the mix."""
    return alpha * staleness_weight(tau, function, a, b)


def buffered_weights(
    taus: Sequence[int], server_lr: float, function: str, a: float, b: float
) -> list[float]:
    """FedBuff's weight of each of the n buffered updates: eta_g s(tau_k) / n."""
    n = len(taus)
    return [server_lr * staleness_weight(tau, function, a, b) / n for tau in taus]
