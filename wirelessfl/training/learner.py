"""Real federated LoRA training behind the simulator's :class:`~wirelessfl.learners.Learner`.

One base model per process, wrapped once by peft with the run's rank; it is never copied per
client. The server side holds the global trainable state (LoRA factors and the task head, the
head trained and aggregated as full parameters); a client starts every round from it
(eq. 1 / Algorithm 3 step 10), trains E local steps or epochs of SGD or Adam on the task loss
plus zeta times the orthogonality regularizer (eq. 2), and sends the sparsified update
S(m + Delta) with error feedback (eqs. 4-7). Per-client state is only what persists between a
client's rounds: its error memory (LoRA-sized) and, if ``keep_optimizer_state``, its Adam
moments.

Randomness is addressed by (seed, client, round): batch order and random sparsification masks
do not depend on which clients trained before, so results do not depend on training order and
a resumed run repeats an uninterrupted one.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import numpy as np
import torch

from channels import lora_training_flops
from wirelessfl.compress import compress_update
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientUpload, Learner, ModelGeometry, RoundPlan
from wirelessfl.lora_math import covariance_norm, orthogonality_penalty, orthogonality_residual
from wirelessfl.training.aggregation import aggregation_weights, apply_updates
from wirelessfl.training.local import (
    LocalTrainer,
    derived_seed,
    measure_step_flops,
    torch_generator,
)
from wirelessfl.training.lora_state import TrainableState


def _pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("learner.device: 'cuda' requested but no CUDA device is available")
    return torch.device(name)


class LoraLearner(Learner):
    """Federated LoRA fine-tuning of a registry model on a registry data set."""

    def __init__(self, scenario: Scenario):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from wirelessfl.compress import SPARSIFIERS
        from wirelessfl.data import load_dataset, partition
        from wirelessfl.models import build_model

        self.scenario = scenario
        lc = scenario.learner
        if scenario.strategy.sparsifier not in SPARSIFIERS:
            raise ConfigError(
                f"strategy.sparsifier: unknown sparsifier {scenario.strategy.sparsifier!r} "
                f"(accepted: {', '.join(SPARSIFIERS)})"
            )
        from wirelessfl.training.aggregation import AGGREGATIONS

        if scenario.strategy.aggregation not in AGGREGATIONS:
            raise ConfigError(
                f"strategy.aggregation: unknown rule {scenario.strategy.aggregation!r} "
                f"(accepted: {', '.join(AGGREGATIONS)})"
            )
        self.device = _pick_device(lc.device)
        try:
            self.data = load_dataset(lc.dataset, seed=scenario.seed, **dict(lc.dataset_options))
            self.bundle = build_model(
                lc.model,
                n_classes=self.data.n_classes,
                seed=scenario.seed,
                target_modules=lc.target_modules,
            )
        except (UserError, ValueError) as err:
            raise ConfigError(f"learner: {err}") from None
        if self.bundle.kind != self.data.kind:
            raise ConfigError(
                f"learner.model: {lc.model!r} takes {self.bundle.kind} data but "
                f"{lc.dataset!r} is {self.data.kind} data"
            )
        try:
            self.partition = partition(
                lc.partition,
                self.data.train.labels,
                scenario.n_clients,
                seed=scenario.seed,
                groups=self.data.train_groups,
                **dict(lc.partition_options),
            )
        except (UserError, ValueError) as err:
            raise ConfigError(f"learner.partition: {err}") from None
        sizes = self.partition.sizes.astype(float)
        self.data_fraction = sizes / sizes.sum()  # p_k = |D_k| / |D|
        self.targets = self.bundle.target_names(lc.target_modules)
        self.layer_shapes = self.bundle.layer_shapes(lc.target_modules)
        self.train = self.data.train.to(self.device)
        self.test = self.data.test.to(self.device)
        self.head_values = self._head_values()  # counted before peft wraps the head
        self.memory: dict[int, dict] = {}
        self.optimizer_state: dict[int, dict] = {}
        self._pending: dict[int, dict] = {}
        self.recorder = None  # a calibrate.PilotRecorder during --calibrate pilots

    # ---- sizes ---------------------------------------------------------------------------
    def geometry(self) -> ModelGeometry:
        base = sum(p.numel() for p in self.bundle.model.parameters())
        seq = int(self.train.x.shape[1]) if self.data.kind != "image" else 1
        return ModelGeometry(
            tuple(self.layer_shapes),
            int(base),
            self.scenario.learner.batch_size,
            seq,
            fixed_values=self.head_values,
        )

    def _head_values(self) -> int:
        """Parameters of the task head (trained and sent dense every round)."""
        heads = set(self.bundle.head_modules)
        return int(
            sum(
                p.numel()
                for name, module in self.bundle.model.named_modules()
                if name in heads or name.rsplit(".", 1)[-1] in heads
                for p in module.parameters()
            )
        )

    def expected_flops(self, rank: int) -> float:
        return float(self._flops_per_step * self._steps_for(int(np.median(self.partition.sizes))))

    def _steps_for(self, n_samples: int) -> int:
        lc = self.scenario.learner
        if lc.local_unit == "steps":
            return lc.local_steps
        return lc.local_steps * math.ceil(n_samples / lc.batch_size)

    # ---- setup ---------------------------------------------------------------------------
    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        from peft import LoraConfig, get_peft_model

        from wirelessfl.models.bundle import check_rank
        from wirelessfl.models.rng import seeded

        lc = self.scenario.learner
        try:
            check_rank(self.bundle, rank, lc.target_modules)
        except (UserError, ValueError) as err:
            raise ConfigError(f"controller.rank: {err}") from None
        self.rank = rank
        config = LoraConfig(
            r=rank,
            lora_alpha=lc.lora_alpha,
            lora_dropout=0.0,
            target_modules=self.targets,
            modules_to_save=self.bundle.head_modules or None,
        )
        with seeded(seed):  # LoRA A init (kaiming) and the new head come from the run seed
            self.model = get_peft_model(self.bundle.model, config).to(self.device)
        self.state = TrainableState(self.model)
        self.global_state = self.state.snapshot()
        trainer_args = {
            "model": self.model,
            "state": self.state,
            "loss_fn": self.bundle.loss_and_logits,
            "optimizer": lc.optimizer,
            "lr": lc.lr,
            "zeta": lc.zeta,
        }
        self.trainer = LocalTrainer(**trainer_args)
        self.batched = None
        wanted = lc.trainer
        if wanted == "auto":
            wanted = "batched" if self.device.type == "cuda" else "sequential"
        if wanted == "batched":
            from wirelessfl.training.batched import BatchedTrainer

            try:
                self.batched = BatchedTrainer(**trainer_args)
            except NotImplementedError as err:
                if lc.trainer == "batched":
                    raise ConfigError(f"learner.trainer: {err}") from None
                logging.getLogger(__name__).info("batched trainer unavailable (%s)", err)
        self.trainer_name = "batched" if self.batched is not None else "sequential"
        self._flops_per_step = measure_step_flops(
            self.model, self.bundle.loss_and_logits, self.train, lc.batch_size
        )
        if not self._flops_per_step:  # counter unavailable: the documented estimate
            g = self.geometry()
            self._flops_per_step = lora_training_flops(
                list(g.layer_shapes),
                rank,
                batch_size=g.batch_size,
                steps=1,
                seq_len=g.seq_len,
                base_params=g.base_params,
            )

    # ---- a round -------------------------------------------------------------------------
    def local_round(self, plan: RoundPlan) -> dict[int, ClientUpload]:
        sc, lc = self.scenario, self.scenario.learner
        self._pending = {}
        uploads: dict[int, ClientUpload] = {}
        new_memory: dict[int, dict] = {}
        clients = [int(c) for c in plan.clients]
        for cid, n_steps, result in zip(clients, *self._train_clients(plan, clients), strict=True):
            if self.recorder is not None:
                self.recorder.local(result.grad_norms)
            if not math.isfinite(result.mean_loss):
                raise SimulationError(
                    f"round {plan.round_index}: client {cid} has a non-finite training loss"
                )
            delta = {
                layer.name: tuple(
                    local - glob
                    for local, glob in zip(
                        self.state.paper_factors(result.local, layer),
                        self.state.paper_factors(self.global_state, layer),
                        strict=True,
                    )
                )
                for layer in self.state.layers
            }
            sent = compress_update(
                delta,
                self.memory.get(cid),
                sparsifier=sc.strategy.sparsifier,
                ratio=float(plan.sparsification),
                generator=torch_generator(sc.seed, "sparsify", cid, plan.round_index, self.device),
                error_feedback=sc.strategy.error_feedback,
            )
            update: dict[str, torch.Tensor] = {}
            for layer in self.state.layers:
                update.update(self.state.from_paper(layer, *sent.sent[layer.name]))
            n_head = 0
            for name in self.state.full_names:
                update[name] = result.local[name] - self.global_state[name]
                n_head += update[name].numel()
            if not all(bool(torch.isfinite(v).all()) for v in update.values()):
                raise SimulationError(
                    f"round {plan.round_index}: client {cid} produced a non-finite update"
                )
            new_memory[cid] = sent.memory
            if lc.keep_optimizer_state:
                self.optimizer_state[cid] = result.optimizer_state
            local_factors = [self.state.paper_factors(result.local, la) for la in self.state.layers]
            self._pending[cid] = {
                "update": update,
                "loss": result.mean_loss,
                "local": local_factors,
            }
            uploads[cid] = ClientUpload(
                n_values=int(sent.n_kept) + n_head,
                n_total=int(sent.n_total) + n_head,
                index_bits=int(sent.index_bits()),
                flops=float(self._flops_per_step * n_steps),
                train_loss=result.mean_loss,
            )
        for cid, mem in new_memory.items():  # committed only once every client succeeded
            if mem is None:
                self.memory.pop(cid, None)
            else:
                self.memory[cid] = mem
        self._n_scheduled = plan.n_scheduled
        return uploads

    def _train_clients(self, plan: RoundPlan, clients: list[int]) -> tuple[list[int], list]:
        """Local training of ``clients`` (sequential peft or batched); (steps, results).

        Batch order comes from CPU generators addressed by (seed, client, round), so it is the
        same on every device and for both trainers.
        """
        sc, lc = self.scenario, self.scenario.learner
        subsets = [self.train.subset(self.partition.indices[c]) for c in clients]
        steps = [self._steps_for(len(self.partition.indices[c])) for c in clients]
        gens = [torch_generator(sc.seed, "batches", c, plan.round_index) for c in clients]
        opt_states = (
            [self.optimizer_state.get(c) for c in clients] if lc.keep_optimizer_state else None
        )
        seeds = [derived_seed(sc.seed, "model", c, plan.round_index) for c in clients]
        record = self.recorder is not None
        if self.batched is not None:
            results = self.batched.train_many(
                self.global_state,
                subsets,
                steps=steps,
                batch_size=lc.batch_size,
                generators=gens,
                optimizer_states=opt_states,
                record_grad_norms=record,
                model_seeds=seeds,
            )
        else:
            results = [
                self.trainer.train(
                    self.global_state,
                    data,
                    steps=n,
                    batch_size=lc.batch_size,
                    generator=gen,
                    optimizer_state=None if opt_states is None else opt_states[i],
                    record_grad_norms=record,
                    model_seed=seeds[i],
                )
                for i, (data, n, gen) in enumerate(zip(subsets, steps, gens, strict=True))
            ]
        return steps, results

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        sc = self.scenario
        ids = [int(c) for c in arrived]
        if not ids:
            return {"loss": math.nan, "cov_norm": math.nan, "orth_residual": self._orth()}
        weights = aggregation_weights(
            [float(self.data_fraction[c]) for c in ids],
            rule=sc.strategy.aggregation,
            n_clients=sc.n_clients,
            n_scheduled=self._n_scheduled,
        )
        apply_updates(self.global_state, [self._pending[c]["update"] for c in ids], weights)
        p = np.array([self.data_fraction[c] for c in ids])
        loss = float(np.dot(p, [self._pending[c]["loss"] for c in ids]) / p.sum())
        cov_sq = 0.0
        if len(ids) > 1:
            for i in range(len(self.state.layers)):
                bs = [self._pending[c]["local"][i][0] for c in ids]
                as_ = [self._pending[c]["local"][i][1] for c in ids]
                cov_sq += covariance_norm(bs, as_, weights=list(p)) ** 2
        self._pending = {}
        if self.recorder is not None:
            self.recorder.aggregate(self, cov_sq if len(ids) > 1 else math.nan)
        return {
            "loss": loss,
            "cov_norm": math.sqrt(cov_sq) if len(ids) > 1 else math.nan,
            "orth_residual": self._orth(),
        }

    def _orth(self) -> float:
        values = [
            orthogonality_residual(*self.state.paper_factors(self.global_state, layer))
            for layer in self.state.layers
        ]
        return float(np.mean(values)) if values else math.nan

    @torch.no_grad()
    def evaluate(self, round_index: int) -> dict[str, float]:
        self.state.load(self.global_state)
        self.model.eval()
        correct, total, loss_sum = 0, 0, 0.0
        n = len(self.test)
        for start in range(0, n, self.scenario.learner.eval_batch_size):
            idx = torch.arange(start, min(n, start + self.scenario.learner.eval_batch_size))
            batch = self.test.batch(idx)
            loss, logits = self.bundle.loss_and_logits(self.model, batch)
            y = batch["y"].to(logits.device)
            correct += int((logits.argmax(dim=-1) == y).sum())
            loss_sum += float(loss) * len(idx)
            total += len(idx)
        self.model.train()
        return {"accuracy": correct / total, "test_loss": loss_sum / total}

    def regularizer_value(self) -> float:
        """Sum over layers of eq. (2)'s penalty at the global model (diagnostics)."""
        return float(
            sum(
                orthogonality_penalty(*self.state.paper_factors(self.global_state, layer))
                for layer in self.state.layers
            )
        )

    # ---- persistence ---------------------------------------------------------------------
    def save_state(self, folder: Path) -> None:
        payload = {
            "global": {k: v.cpu() for k, v in self.global_state.items()},
            "memory": {
                str(c): {k: [t.cpu() for t in v] for k, v in m.items()}
                for c, m in self.memory.items()
            },
            "optimizer": {str(c): s for c, s in self.optimizer_state.items()},
        }
        tmp = folder / "learner.pt.tmp"
        torch.save(payload, tmp)
        os.replace(tmp, folder / "learner.pt")

    def load_state(self, folder: Path) -> None:
        payload = torch.load(folder / "learner.pt", map_location=self.device, weights_only=True)
        self.global_state = {k: v.to(self.device) for k, v in payload["global"].items()}
        self.memory = {
            int(c): {k: tuple(v) for k, v in m.items()} for c, m in payload["memory"].items()
        }
        self.optimizer_state = {int(c): s for c, s in payload["optimizer"].items()}

    def describe(self) -> dict[str, object]:
        lc = self.scenario.learner
        return {
            "learner": "lora",
            "model": lc.model,
            "dataset": lc.dataset,
            "device": str(self.device),
            "trainer": getattr(self, "trainer_name", None),
            "device_name": torch.cuda.get_device_name(0) if self.device.type == "cuda" else "cpu",
            "target_modules": self.targets,
            "adapted_layers": len(self.layer_shapes),
            "params_per_rank": int(sum(d + e for d, e in self.layer_shapes)),
            "train_samples": len(self.train),
            "test_samples": len(self.test),
            "client_sizes": self.partition.sizes.tolist(),
            "label_histograms": self.partition.label_histograms().tolist(),
        }
