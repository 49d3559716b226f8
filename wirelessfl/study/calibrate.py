"""``wirelessfl run SCENARIO --calibrate``: estimate the bound's constants from a short pilot.

The pilot trains the scenario's model for a few rounds at each rank of a small sweep
(r/2, r, 2r, capped by the adapted layers' dimensions), with no sparsification (O = 1) so that
only learning shapes the numbers, and records what :func:`optim.calibrate_constants` needs
(:class:`optim.PilotRecord`):

- G: every local step's stochastic-gradient norm (trainable LoRA + head parameters);
- W: ||theta_B[:, i]|| ||theta_A[i, :]|| of the global LoRA after every round;
- phi: ||Cov(theta_B, theta_A)||_F^2 (eq. 12) over the round's clients, and ||theta_B theta_A||_F^2;
- S: the global trainable parameters after every round, with the gradient there on a fixed
  batch of up to 256 training samples (gradient differences along the trajectory);
- H: the final theta_r = theta_B theta_A (all layers, flattened) and sigma(theta_r) per swept
  rank, the highest rank standing in for theta_o (Assumption 2).

The LoRA factors are taken in the paper's orientation without the alpha/r scaling, as in
Assumptions 2-6. The constants are printed and written to ``OUT/calibration.yaml`` as a
``constants:`` section to paste into the scenario.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import torch
import yaml

from optim import PilotRecord, calibrate_constants
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import UserError

PILOT_ROUNDS = 5
GRADIENT_SAMPLES = 256


class PilotRecorder:
    """Collects pilot arrays from a :class:`~wirelessfl.learners.federated.FederatedLearner`
    (a :class:`~wirelessfl.learners.federated.RoundObserver`)."""

    record_grad_norms = True

    def __init__(self) -> None:
        self.grad_norms: list[float] = []
        self.component_norms: list[float] = []
        self.cov_sq: list[float] = []
        self.theta_sq: list[float] = []
        self.params: list[np.ndarray] = []
        self.grads: list[np.ndarray] = []

    def local(self, results: list) -> None:
        """Every local step's gradient norm of the round's clients."""
        for result in results:
            self.grad_norms.extend(result.grad_norms)

    def aggregated(self, learner, metrics: dict[str, float]) -> None:
        """Record after the server updated the global state."""
        cov_sq = metrics.get("cov_norm", math.nan) ** 2
        theta_sq = 0.0
        for b, a in _global_factors(learner):
            self.component_norms.extend(_component_norms(b, a).tolist())
            theta_sq += float(torch.linalg.matrix_norm(b @ a) ** 2)
        self.theta_sq.append(theta_sq)
        if math.isfinite(cov_sq):
            self.cov_sq.append(cov_sq)
        self.params.append(_flat(learner.global_state).numpy())
        self.grads.append(_gradient_at_global(learner).numpy())


def _flat(values: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([v.detach().reshape(-1).double().cpu() for v in values.values()])


def _gradient_at_global(learner) -> torch.Tensor:
    """Gradient of the task loss at the global state on a fixed training batch."""
    runtime = learner.runtime
    runtime.state.load(learner.global_state)
    n = min(GRADIENT_SAMPLES, len(runtime.train_data))
    batch = runtime.train_data.batch(torch.arange(n))
    runtime.model.zero_grad(set_to_none=True)
    _, task = runtime.trainer.loss(batch)
    task.backward()
    grads = {
        name: (p.grad if p.grad is not None else torch.zeros_like(p))
        for name, p in runtime.state.params.items()
    }
    flat = _flat(grads)
    runtime.model.zero_grad(set_to_none=True)
    return flat


def _component_norms(b: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """||theta_B[:, i]|| ||theta_A[i, :]|| for each rank component i: (r,)."""
    return torch.linalg.vector_norm(b, dim=0) * torch.linalg.vector_norm(a, dim=1)


def _global_factors(learner) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(theta_B, theta_A) of every adapted layer of the global model, on the CPU."""
    state = learner.runtime.state
    return [
        tuple(t.cpu() for t in state.paper_factors(learner.global_state, layer))
        for layer in state.layers
    ]


def _sweep_ranks(rank: int, limit: int) -> list[int]:
    ranks = sorted({max(1, rank // 2), rank, min(2 * rank, limit)})
    return ranks if len(ranks) > 1 else sorted({1, min(2, limit)})


def _pilot(scenario: Scenario, rank: int, rounds: int):
    """Run ``rounds`` rounds at ``rank`` with O = 1; returns the learner and its recorder."""
    from wirelessfl.config import scenario_from_dict
    from wirelessfl.config.schema import to_dict
    from wirelessfl.learners import make_learner
    from wirelessfl.sim.simulator import Simulator

    data = to_dict(scenario)
    data["controller"].update(name="fixed", rank=rank, sparsification=1.0)
    data["controller"]["r_max"] = max(data["controller"]["r_max"], rank)
    data["rounds"] = rounds
    data["eval_every"] = 10**6
    pilot = scenario_from_dict(data)
    learner = make_learner(pilot)
    recorder = PilotRecorder()
    learner.observers.append(recorder)
    sim = Simulator(pilot, learner)
    for t in range(rounds):
        sim.run_round(t)
    return learner, recorder


def calibrate(scenario: Scenario, rank: int, *, rounds: int = PILOT_ROUNDS, progress=print):
    """Pilot runs over a small rank sweep → (BoundConstants, PilotRecord, swept ranks)."""
    from wirelessfl.models.bundle import check_rank

    if scenario.learner.kind != "lora":
        raise UserError("--calibrate: needs learner.kind = lora (a real training pilot)")
    from wirelessfl.learners import make_learner

    probe = make_learner(scenario).runtime
    limit = min(min(d, e) for d, e in probe.layer_shapes)
    check_rank(probe.bundle, rank, scenario.learner.target_modules)
    ranks = _sweep_ranks(rank, limit)
    updates, sigmas, main = [], [], None
    for r in ranks:
        progress(f"calibration pilot: rank {r}, {rounds} rounds")
        learner, rec = _pilot(scenario, r, rounds)
        factors = _global_factors(learner)
        updates.append(torch.cat([(b @ a).reshape(-1) for b, a in factors]).double().numpy())
        sigmas.append(max(float(_component_norms(b, a).max()) for b, a in factors))
        if r == rank or main is None:
            main = rec
    record = PilotRecord(
        grad_norms=np.array(main.grad_norms),
        component_norms=np.array(main.component_norms),
        cov_sq_norms=np.array(main.cov_sq) if main.cov_sq else None,
        theta_sq_norms=np.array(main.theta_sq[-len(main.cov_sq) :]) if main.cov_sq else None,
        trajectory_params=np.stack(main.params),
        trajectory_grads=np.stack(main.grads),
        sweep_ranks=np.array(ranks),
        sweep_updates=np.stack(updates),
        sweep_sigma=np.array(sigmas),
    )
    lc = scenario.learner
    steps = lc.local_steps if lc.local_unit == "steps" else None
    # r_max is left to the sweep: its highest rank stands in for theta_o when estimating H
    constants = calibrate_constants(record, eta=lc.lr, E=steps or scenario.constants.E)
    return constants, record, ranks


def calibrate_run(run, *, progress: bool = True) -> int:
    """CLI entry: calibrate for ``run``'s scenario and rank; print and save the constants."""
    say = print if progress else (lambda *_: None)
    constants, _, ranks = calibrate(run.scenario, run.sim.rank, progress=say)
    fields = dataclasses.asdict(constants)
    section = {k: fields[k] for k in ("S", "H", "W", "phi", "G", "eta", "E")}
    out = Path(run.out) / "calibration.yaml"
    out.write_text(
        "# BoundConstants estimated by `wirelessfl run --calibrate` from pilots at ranks "
        f"{ranks}\n" + yaml.safe_dump({"constants": section}, sort_keys=False)
    )
    print("calibrated constants (paste into the scenario):")
    print(yaml.safe_dump({"constants": section}, sort_keys=False).rstrip())
    print(f"written to {out}")
    return 0
