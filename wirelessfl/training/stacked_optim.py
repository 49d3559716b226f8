"""Per-client SGD and Adam over stacked parameters ``(K, *param.shape)``.

The updates use the arithmetic of ``torch.optim``'s single-tensor (CPU) implementation, per
client: clients are grouped by (step count, lr, betas, eps) and each group is updated with
``torch._foreach_*`` ops over the stack rows. Adam state goes in and out in the format of
``torch.optim.Adam.state_dict()`` of a per-client optimizer over ``TrainableState.params``
(index ``i`` = i-th trainable parameter; ``step``, ``exp_avg``, ``exp_avg_sq``), so the
sequential and the batched trainer's states are interchangeable between rounds. As in
``torch.optim``, a loaded state's ``param_groups`` hyper-parameters (lr, betas, eps) win over
the defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch


def adam_defaults(params: list[torch.Tensor], lr: float) -> dict[str, Any]:
    """The parameter group of ``torch.optim.Adam(params, lr=lr).state_dict()``."""
    return torch.optim.Adam(params, lr=lr).state_dict()["param_groups"][0]


def sgd_step(
    stacks: Iterable[torch.Tensor], grads: Sequence[torch.Tensor | None], g: int, lr: float
) -> None:
    """``param.add_(grad, alpha=-lr)`` on the rows ``0 .. g-1`` of the stacks
    (torch.optim.SGD, momentum 0); ``grads`` are ``(g, ...)`` or ``None`` (skipped)."""
    params = [s[:g] for s, gr in zip(stacks, grads, strict=True) if gr is not None]
    used = [gr for gr in grads if gr is not None]
    if params:
        torch._foreach_add_(params, used, alpha=-lr)


class StackedAdam:
    """Per-client Adam over the stacks, with torch.optim.Adam's single-tensor arithmetic.

    Args:
        stacks: the trainable parameters' stacks ``(K, *shape)``, in the order of
            ``TrainableState.params``; row ``pos`` belongs to the client ``order[pos]``.
        order: position -> client index.
        states: per client (by client index), an Adam ``state_dict()`` to resume from or
            ``None``; ``None`` for all fresh.
        defaults: the parameter group of a fresh client (:func:`adam_defaults`).
    """

    def __init__(
        self,
        stacks: Iterable[torch.Tensor],
        order: list[int],
        states: Sequence[dict | None] | None,
        defaults: dict[str, Any],
    ):
        self.stacks = list(stacks)
        n_params = len(self.stacks)
        k_all = len(order)
        self.exp_avg = [torch.zeros_like(s, requires_grad=False) for s in self.stacks]
        self.exp_avg_sq = [torch.zeros_like(s, requires_grad=False) for s in self.stacks]
        self.step_count = np.zeros((k_all, n_params), dtype=np.int64)
        self.has_state = np.zeros((k_all, n_params), dtype=bool)
        self.groups: list[dict[str, Any]] = []
        self.hyper: list[tuple[float, float, float, float]] = []
        for pos, k in enumerate(order):
            loaded = None if states is None else states[k]
            group = dict(defaults)
            if loaded is not None:
                group.update(self._load(pos, loaded, n_params))
            self.groups.append(group)
            beta1, beta2 = group["betas"]
            self.hyper.append((float(group["lr"]), float(beta1), float(beta2), group["eps"]))

    def _load(self, pos: int, loaded: dict, n_params: int) -> dict[str, Any]:
        groups = loaded.get("param_groups", [])
        if len(groups) != 1 or len(groups[0].get("params", [])) != n_params:
            raise ValueError(
                f"optimizer state has {len(groups)} parameter groups; expected one group of "
                f"{n_params} parameters (an Adam state_dict of LocalTrainer or BatchedTrainer)"
            )
        group = {k: v for k, v in groups[0].items() if k != "params"}
        if group.get("weight_decay", 0) or group.get("amsgrad") or group.get("maximize"):
            raise NotImplementedError(
                "BatchedTrainer's Adam supports weight_decay=0, amsgrad=False, maximize=False"
            )
        for i, entry in loaded.get("state", {}).items():
            i = int(i)
            s = self.stacks[i]
            self.exp_avg[i][pos].copy_(entry["exp_avg"].to(device=s.device, dtype=s.dtype))
            self.exp_avg_sq[i][pos].copy_(entry["exp_avg_sq"].to(device=s.device, dtype=s.dtype))
            self.step_count[pos, i] = round(float(entry["step"]))
            self.has_state[pos, i] = True
        return group

    def step(self, g: int, grads: list[torch.Tensor | None]) -> None:
        """One Adam step for the clients at positions ``0 .. g-1`` (grads are ``(g, ...)``)."""
        buckets: dict[tuple, list[tuple[int, list[int]]]] = {}
        with_grad = [i for i, gr in enumerate(grads) if gr is not None]  # torch skips the rest
        counts = self.step_count[:g, with_grad]
        if counts.size and (counts == counts[:, :1]).all():  # usual case: one count per client
            by_key: dict[tuple, list[int]] = {}
            for pos in range(g):
                by_key.setdefault((int(counts[pos, 0]) + 1, *self.hyper[pos]), []).append(pos)
            for key, positions in by_key.items():
                buckets[key] = [(i, positions) for i in with_grad]
        else:
            for i in with_grad:
                by_key = {}
                for pos in range(g):
                    key = (int(self.step_count[pos, i]) + 1, *self.hyper[pos])
                    by_key.setdefault(key, []).append(pos)
                for key, positions in by_key.items():
                    buckets.setdefault(key, []).append((i, positions))
        for (step, lr, beta1, beta2, eps), members in buckets.items():
            params, gs, ms, vs, scatter = [], [], [], [], []
            for i, positions in members:
                lo, hi = positions[0], positions[-1] + 1
                if hi - lo == len(positions):  # contiguous rows: in-place on views
                    sel: slice | torch.Tensor = slice(lo, hi)
                    params.append(self.stacks[i].data[sel])
                    ms.append(self.exp_avg[i][sel])
                    vs.append(self.exp_avg_sq[i][sel])
                    gs.append(grads[i][lo:hi])  # type: ignore[index]
                else:  # gather, update, scatter back
                    sel = torch.tensor(positions, device=self.stacks[i].device)
                    params.append(self.stacks[i].data.index_select(0, sel))
                    ms.append(self.exp_avg[i].index_select(0, sel))
                    vs.append(self.exp_avg_sq[i].index_select(0, sel))
                    gs.append(grads[i].index_select(0, sel))  # type: ignore[union-attr]
                    scatter.append((i, sel, len(params) - 1))
                self.step_count[positions, i] = step
                self.has_state[positions, i] = True
            torch._foreach_lerp_(ms, gs, 1 - beta1)
            torch._foreach_mul_(vs, beta2)
            torch._foreach_addcmul_(vs, gs, gs, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** float(step)
            bias_correction2 = 1 - beta2 ** float(step)
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            denom = torch._foreach_sqrt(vs)
            torch._foreach_div_(denom, bias_correction2_sqrt)
            torch._foreach_add_(denom, eps)
            torch._foreach_addcdiv_(params, ms, denom, value=-step_size)
            for i, sel, j in scatter:
                self.stacks[i].data.index_copy_(0, sel, params[j])
                self.exp_avg[i].index_copy_(0, sel, ms[j])
                self.exp_avg_sq[i].index_copy_(0, sel, vs[j])

    def state_dict(self, pos: int) -> dict:
        """Client ``pos``'s state as ``torch.optim.Adam(params).state_dict()`` gives it."""
        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        state = {
            i: {
                "step": torch.tensor(float(self.step_count[pos, i]), dtype=scalar),
                "exp_avg": self.exp_avg[i][pos].clone(),
                "exp_avg_sq": self.exp_avg_sq[i][pos].clone(),
            }
            for i in range(len(self.stacks))
            if self.has_state[pos, i]
        }
        group = copy.deepcopy(self.groups[pos])
        group["params"] = list(range(len(self.stacks)))
        return {"state": state, "param_groups": [group]}
