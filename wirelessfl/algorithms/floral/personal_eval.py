"""Personalised evaluation: every client runs its own model on its own test split.

The reported ``accuracy`` and ``test_loss`` are means over all the clients' test samples
(i.e. the clients' values weighted by test size, as the FLoRAL authors report). A client's
model is what :data:`ClientModel` returns for it: the global state with its router logits
(FLoRAL, Ensemble), or with its private adaptor (Local Adaptor); a client that never trained
has no private state and evaluates with the uniform router (zero logits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from wirelessfl.algorithms.floral.mixture_model import RoutedModel

__all__ = ["ClientModel", "client_test_rows", "personalised_metrics"]

#: client id -> (federated values, router logits or None) of that client's model.
ClientModel = Callable[[int], tuple[dict[str, torch.Tensor], torch.Tensor | None]]


def client_test_rows(test_groups: np.ndarray | None, n_clients: int) -> list[np.ndarray] | None:
    """Test row indices of each client when ``test_groups`` are client ids 0..N-1, else None."""
    if test_groups is None:
        return None
    groups = np.asarray(test_groups)
    if groups.size == 0 or groups.min() < 0 or groups.max() >= n_clients:
        return None
    return [np.flatnonzero(groups == k) for k in range(n_clients)]


@torch.no_grad()
def personalised_metrics(
    model: RoutedModel,
    loss_fn: Callable,
    test_data,
    rows: Sequence[np.ndarray],
    client_model: ClientModel,
    *,
    classification: bool,
    batch_size: int,
) -> dict[str, float]:
    """``accuracy`` (NaN for regression) and ``test_loss`` over every client's test rows."""
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    try:
        for client, idx in enumerate(rows):
            if len(idx) == 0:
                continue
            values, theta = client_model(client)
            model.load(values, theta)
            for start in range(0, len(idx), batch_size):
                chunk = idx[start : start + batch_size]
                batch = test_data.batch(chunk)
                loss, out = loss_fn(model, batch)
                loss_sum += float(loss) * len(chunk)
                total += len(chunk)
                if classification:
                    y = batch["y"].to(out.device)
                    correct += int((out.argmax(dim=-1) == y).sum())
    finally:
        model.train()
    accuracy = correct / total if classification and total else math.nan
    return {"accuracy": accuracy, "test_loss": loss_sum / total if total else math.nan}
