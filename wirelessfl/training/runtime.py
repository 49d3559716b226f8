"""The training runtime every federated algorithm uses: model, data, trainers, evaluation.

One base model per process, wrapped once by peft at the run's model rank (the largest rank any
client gets) and never copied per client; the data set and its client partition; the
sequential and batched trainers; device placement; FLOP counting; evaluation of any state. A
client of a lower rank r_k trains on the same wrapped model: its factors are zero-padded to the
model rank and its LoRA output is scaled by alpha / r_k instead of alpha / r (so it trains as
its unpadded self; the padded components get exactly zero gradients and stay zero). With
rsLoRA that is alpha / sqrt(r_k), unless the algorithm's clients train a sketch of the rank-r
LoRA (FSLoRA: (alpha / sqrt(r)) (r / r_k), eq. (2)); see
:func:`~wirelessfl.training.stacked_ranks.rank_multiplier`.

Randomness is addressed by (seed, client, round) through ``channels.streams``: batch order,
random masks and stochastic layers do not depend on which clients trained before, so results
do not depend on training order and a resumed run repeats an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from channels.streams import stream_seed
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.models.layers import layers_in, pattern_ranks
from wirelessfl.models.rng import seeded, torch_generator
from wirelessfl.plans import ModelGeometry
from wirelessfl.privacy.dp_sgd import DpSgd
from wirelessfl.training.local import LocalResult, LocalTrainer, measure_step_flops
from wirelessfl.training.lora_state import PEFT_PREFIX, TrainableState
from wirelessfl.training.private_state import ADAPTER_MULTIPLE, PrivateState
from wirelessfl.training.rank_padding import lora_rank, truncate_rank, zero_pad_rank
from wirelessfl.training.stacked_ranks import RANK_SCALINGS, RankScaling, rank_multiplier

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario
    from wirelessfl.plans import ClientPlan

__all__ = ["OPTIMIZER", "Runtime", "pick_device"]

#: The private-state entry holding a client's optimizer moments (``keep_optimizer_state``).
OPTIMIZER = "optimizer"


def pick_device(name: str) -> torch.device:
    """``auto`` (CUDA when present), ``cpu`` or ``cuda`` (an error when there is none)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("learner.device: 'cuda' requested but no CUDA device is available")
    return torch.device(name)


class Runtime:
    """Builds the scenario's data, partition and model; trains and evaluates states.

    Construction validates the learner section (model, data set, partition, their options)
    and raises :class:`~wirelessfl.errors.ConfigError` with one line; :meth:`start` wraps the
    model once at the model rank.
    """

    def __init__(self, scenario: Scenario) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from wirelessfl.data import load_dataset, partition
        from wirelessfl.models import build_model

        self.scenario = scenario
        self.settings = lc = scenario.learner
        self.seed = scenario.seed
        pv = scenario.privacy
        #: sample-level DP-SGD of the sequential trainer (``privacy.dp_sgd``), or None
        self.dp_sgd = DpSgd(pv.sample_clip_norm, pv.sample_noise_multiplier) if pv.dp_sgd else None
        self.device = pick_device(lc.device)
        if "n_clients" in lc.dataset_options:
            raise ConfigError(
                "learner.dataset_options.n_clients: the number of clients is the scenario's "
                "n_clients; remove it from dataset_options"
            )
        self._check_model_options()
        try:
            self.data = load_dataset(
                lc.dataset,
                seed=scenario.seed,
                n_clients=scenario.n_clients,
                **dict(lc.dataset_options),
            )
            self.bundle = build_model(
                lc.model,
                n_classes=self.data.n_classes,
                seed=scenario.seed,
                target_modules=lc.target_modules,
                **dict(lc.model_options),
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
        self.data_fractions = sizes / sizes.sum()  # p_k = |D_k| / |D|
        self.targets = self.bundle.target_names(lc.target_modules)
        if lc.layers_to_transform is not None:
            self.targets = layers_in(self.targets, lc.layers_to_transform)
        adaptable = self.bundle.adaptable_layers()
        self.layer_shapes = [adaptable[name] for name in self.targets]
        self.pattern_ranks = self._pattern_ranks()
        self.train_data = self.data.train.to(self.device)
        self.test_data = self.data.test.to(self.device)
        self.saved_modules = self._saved_modules()
        self.head_values = self._dense_values()  # before peft wraps it
        self.base_values = int(sum(p.numel() for p in self.bundle.model.parameters()))

    def _pattern_ranks(self) -> list[int | None]:
        """Per target, the rank ``learner.rank_pattern`` fixes for it (None: the controller's
        rank), each checked to fit its layer (1..min(d_in, d_out), as ``controller.rank``)."""
        pattern = self.settings.rank_pattern
        if not pattern:
            return [None] * len(self.targets)
        ranks = pattern_ranks(self.targets, pattern)
        for name, shape, rank in zip(self.targets, self.layer_shapes, ranks, strict=True):
            if rank is not None and rank > min(shape):
                raise ConfigError(
                    f"learner.rank_pattern: rank {rank} for {name!r} is out of range: accepted "
                    f"1..{min(shape)} (min(d_in, d_out) of that layer)"
                )
        return ranks

    @property
    def fixed_ranks(self) -> dict[str, int]:
        """Target module -> the rank ``learner.rank_pattern`` fixes for it (empty: none)."""
        pairs = zip(self.targets, self.pattern_ranks, strict=True)
        return {name: rank for name, rank in pairs if rank is not None}

    def fixed_layer_ranks(self) -> dict[str, int]:
        """:attr:`fixed_ranks` keyed by the wrapped model's layer paths (``LoraLayer.name``)."""
        return {PEFT_PREFIX + name: rank for name, rank in self.fixed_ranks.items()}

    def _check_model_options(self) -> None:
        """One line naming ``learner.model_options.<key>`` that the model does not take, or a
        half-precision dtype on the CPU (bf16 / fp16 training is for CUDA: on the CPU it is
        slow and its results would not match the float32 reference)."""
        from wirelessfl.models import model_option_names

        lc = self.settings
        accepted = model_option_names(lc.model)
        for key in lc.model_options:
            if key not in accepted:
                raise ConfigError(
                    f"learner.model_options.{key}: not an option of model "
                    f"{lc.model!r}; it accepts: {', '.join(accepted) or 'none'}"
                )
        dtype = lc.model_options.get("dtype", "float32")
        if dtype != "float32" and self.device.type != "cuda":
            raise ConfigError(
                f"learner.model_options.dtype: {dtype!r} trains on CUDA only (this run's "
                f"device is {self.device.type}); use float32 on the CPU"
            )

    # ---- sizes -----------------------------------------------------------------------------
    @property
    def trains_head(self) -> bool:
        """Whether the task head trains (and is sent dense); ``learner.head: frozen`` keeps the
        head at its seeded random init, a fixed random classifier, so only LoRA learns."""
        return self.settings.head == "train" and bool(self.bundle.head_modules)

    def _saved_modules(self) -> list[str]:
        """peft's ``modules_to_save``: the task head (when it trains) and
        ``learner.modules_to_save``, each checked to name a module (or a name's last part)."""
        extra = list(self.settings.modules_to_save or [])
        names = [n for n, _ in self.bundle.model.named_modules() if n]
        for key in extra:
            if not any(n == key or n.endswith("." + key) for n in names):
                last = sorted({n.rsplit(".", 1)[-1] for n in names})
                raise ConfigError(
                    f"learner.modules_to_save: {key!r} names no module of {self.settings.model!r};"
                    f" module names end in: {', '.join(last[:40])}"
                )
            if any(n == key or n.endswith("." + key) for n in self.targets):
                raise ConfigError(
                    f"learner.modules_to_save: {key!r} is also a LoRA target "
                    "(learner.target_modules); a module trains either in full or through LoRA"
                )
        heads = list(self.bundle.head_modules) if self.trains_head else []
        return heads + [m for m in extra if m not in heads]

    def _dense_values(self) -> int:
        """Parameters trained in full and sent dense every round: those of the saved modules
        (:meth:`_saved_modules`) and the biases ``learner.lora_bias`` trains (peft's rule:
        ``all``, every parameter named ``*bias*``; ``lora_only``, the LoRA targets' biases)."""
        saved, bias = set(self.saved_modules), self.settings.lora_bias
        targets = set(self.targets)
        # DoRA: one trained magnitude per output feature of each adapted layer (peft)
        dora = sum(d_out for _, d_out in self.layer_shapes) if self.settings.use_dora else 0
        dense: dict[str, int] = {}
        for name, module in self.bundle.model.named_modules():
            keep = name in saved or name.rsplit(".", 1)[-1] in saved
            for pname, p in module.named_parameters(prefix=name, recurse=keep):
                biased = (bias == "all" and "bias" in pname) or (
                    bias == "lora_only" and name in targets and pname == f"{name}.bias"
                )
                if keep or biased:
                    dense[pname] = p.numel()
        return int(sum(dense.values())) + dora

    @property
    def seq_len(self) -> int:
        """Tokens per sample (1 for images)."""
        return int(self.train_data.x.shape[1]) if self.data.kind != "image" else 1

    def _steps_for_samples(self, n_samples: int) -> int:
        """Local steps per round on ``n_samples``: E steps, or E epochs of the data."""
        lc = self.settings
        if lc.local_unit == "steps":
            return lc.local_steps
        return lc.local_steps * math.ceil(n_samples / lc.batch_size)

    def geometry(self) -> ModelGeometry:
        """The model's sizes for the network side: adapted layers (d_in, d_out), base values,
        batch and sequence length, and the values trained in full (the head)."""
        lc = self.settings
        return ModelGeometry(
            tuple(self.layer_shapes),
            self.base_values,
            lc.batch_size,
            self.seq_len,
            fixed_values=self.head_values,
            layer_ranks=tuple(self.pattern_ranks) if self.fixed_ranks else (),
        )

    def steps_for(self, client: int) -> int:
        """Local steps of ``client`` per round."""
        return self._steps_for_samples(len(self.partition.indices[client]))

    def flops_per_step_at(self, rank: int) -> float:
        """FLOPs of one local step at LoRA rank ``rank``: the measured step at the model rank,
        with its LoRA part (``channels.lora_training_flops``) moved from the model rank to
        ``rank`` (the frozen base's share and the layers of a fixed rank do not depend on it)."""
        if rank == self.rank:
            return float(self.flops_per_step)
        geometry = self.geometry()
        lora_at = geometry.training_flops(rank, steps=1, with_base=False)
        lora_model = geometry.training_flops(self.rank, steps=1, with_base=False)
        return float(self.flops_per_step) + lora_at - lora_model

    def expected_flops(self) -> float:
        """FLOPs the server expects a median client's round to take (compute-aware shares)."""
        median = int(np.median(self.partition.sizes))
        return float(self.flops_per_step * self._steps_for_samples(median))

    # ---- setup -----------------------------------------------------------------------------
    def start(self, *, rank: int, seed: int) -> None:
        """Wrap the model with peft at ``rank`` (the largest client rank) and build trainers."""
        from peft import LoraConfig, get_peft_model

        from wirelessfl.models import check_rank

        lc = self.settings
        free = [name for name in self.targets if name not in self.fixed_ranks]
        try:
            check_rank(self.bundle, rank, free)
        except (UserError, ValueError) as err:
            raise ConfigError(f"controller.rank: {err}") from None
        self.rank = rank
        config = LoraConfig(
            r=rank,
            lora_alpha=lc.lora_alpha,
            lora_dropout=lc.lora_dropout,
            use_rslora=lc.use_rslora,
            use_dora=lc.use_dora,
            rank_pattern=dict(lc.rank_pattern or {}),
            bias=lc.lora_bias,
            init_lora_weights=lc.init_lora_weights,
            target_modules=self.targets,
            modules_to_save=self.saved_modules or None,
        )
        with seeded(seed):  # LoRA A init (kaiming) and the new head come from the run seed
            self.model = get_peft_model(self.bundle.model, config).to(self.device)
        self.state = TrainableState(self.model, self.fixed_ranks)
        self._initial = self.state.snapshot()  # what frozen tensors stay at (frozen_values)
        self.private_limit = ADAPTER_MULTIPLE * sum(p.numel() for p in self.state.params.values())
        trainer_args = {
            "model": self.model,
            "state": self.state,
            "loss_fn": self.bundle.loss_and_logits,
            "optimizer": lc.optimizer,
            "lr": lc.lr,
        }
        self.trainer = LocalTrainer(**trainer_args, dp_sgd=self.dp_sgd)
        self.batched = None
        wanted = lc.trainer
        if wanted == "auto":  # DP-SGD's per-sample gradients: the sequential trainer's
            cuda = self.device.type == "cuda" and self.dp_sgd is None
            wanted = "batched" if cuda else "sequential"
        if wanted == "batched":
            from wirelessfl.training.batched import BatchedTrainer
            from wirelessfl.training.sample_loss import sample_loss_for

            try:
                self.batched = BatchedTrainer(
                    **trainer_args, sample_loss_fn=sample_loss_for(self.bundle.kind)
                )
            except NotImplementedError as err:
                if lc.trainer == "batched":
                    raise ConfigError(f"learner.trainer: {err}") from None
                logging.getLogger(__name__).info("batched trainer unavailable (%s)", err)
        self.trainer_name = "batched" if self.batched is not None else "sequential"
        self.flops_per_step = measure_step_flops(
            self.model, self.bundle.loss_and_logits, self.train_data, lc.batch_size
        )
        if not self.flops_per_step:  # counter unavailable: the documented estimate
            self.flops_per_step = self.geometry().training_flops(rank, steps=1)

    def initial_state(self) -> dict[str, torch.Tensor]:
        """Detached copies of the wrapped model's trainable values (the round-0 global state)."""
        return self.state.snapshot()

    def frozen_values(self, names: frozenset[str]) -> dict[str, torch.Tensor]:
        """The values every client holds of the tensors named in ``names`` (never trained):
        their initial values, kept from :meth:`start`."""
        return {n: self._initial[n] for n in names}

    def generator(self, stream: str, client: int, round_index: int) -> torch.Generator:
        """A generator on the runtime's device addressed by (seed, stream, client, round)."""
        return torch_generator(self.seed, stream, client, round_index, device=self.device)

    # ---- training --------------------------------------------------------------------------
    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[dict[str, torch.Tensor]],
        private: PrivateState,
        *,
        zeta: float = 0.0,
        frozen: frozenset[str] = frozenset(),
        record_grad_norms: bool = False,
        rank_scaling: RankScaling = "own_rank",
    ) -> list[LocalResult]:
        """Local training of every planned client from its start state.

        The loss is the task loss plus ``zeta`` times eq. (2)'s orthogonality regularizer: the
        algorithm's weight (``FederatedAlgorithm.orthogonality_weight``; 0: the task alone).
        The trainable tensors named in ``frozen`` keep their start values (both trainers).
        A client below the model rank is scaled as ``rank_scaling`` says (the algorithm's
        ``FederatedAlgorithm.RANK_SCALING``; :meth:`client_rank`).

        Batch order comes from CPU generators addressed by (seed, client, round), so it is the
        same on every device and for both trainers. With ``learner.keep_optimizer_state`` the
        optimizer moments are read from and staged into the clients' private state.

        Returns:
            One :class:`LocalResult` per plan; ``local`` holds values at the client's rank.
        """
        lc = self.settings
        clients = [p.client for p in plans]
        subsets = [self.train_data.subset(self.partition.indices[c]) for c in clients]
        steps = [self.steps_for(c) for c in clients]
        gens = [torch_generator(self.seed, "batches", p.client, p.round_index) for p in plans]
        keep = lc.keep_optimizer_state
        opt_states = [private.get(c).get(OPTIMIZER) for c in clients] if keep else None
        seeds = [stream_seed(self.seed, "model", p.client, p.round_index) for p in plans]
        ranks = [p.rank for p in plans]
        if self.batched is not None:
            shared = all(start is starts[0] for start in starts)
            results = self.batched.train_many(
                self.padded(starts[0]) if shared else [self.padded(s) for s in starts],
                subsets,
                steps=steps,
                batch_size=lc.batch_size,
                generators=gens,
                optimizer_states=opt_states,
                ranks=None if all(r == self.rank for r in ranks) else ranks,
                record_grad_norms=record_grad_norms,
                model_seeds=seeds,
                zeta=zeta,
                frozen=frozen,
                rank_scaling=rank_scaling,
            )
            results = [self._at_rank(r, rank) for r, rank in zip(results, ranks, strict=True)]
        else:
            results = []
            for i, (start, data, n, gen) in enumerate(
                zip(starts, subsets, steps, gens, strict=True)
            ):
                with self.client_rank(ranks[i], rank_scaling=rank_scaling):
                    result = self.trainer.train(
                        self.padded(start),
                        data,
                        steps=n,
                        batch_size=lc.batch_size,
                        generator=gen,
                        optimizer_state=None if opt_states is None else opt_states[i],
                        record_grad_norms=record_grad_norms,
                        model_seed=seeds[i],
                        zeta=zeta,
                        frozen=frozen,
                        dp_generator=self.generator("dp_sgd", clients[i], plans[i].round_index),
                    )
                results.append(self._at_rank(result, ranks[i]))
        if keep:
            for c, result in zip(clients, results, strict=True):
                private.stage(c, {OPTIMIZER: result.optimizer_state})
        return results

    def padded(self, values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``values`` zero-padded to the model rank (unchanged when already at it)."""
        if lora_rank(values, self.state.layers) == self.rank:
            return values
        return zero_pad_rank(values, self.state.layers, self.rank)

    def _at_rank(self, result: LocalResult, rank: int) -> LocalResult:
        """``result`` with its values cut to ``rank`` (unchanged at the model rank)."""
        if rank == self.rank:
            return result
        result.local = truncate_rank(result.local, self.state.layers, rank)
        return result

    @contextlib.contextmanager
    def client_rank(self, rank: int, *, rank_scaling: RankScaling = "own_rank") -> Iterator[None]:
        """Inside, every LoRA layer is scaled for a client of rank ``rank``: the model's scaling
        at its rank r (alpha / r, alpha / sqrt(r) with rsLoRA) times
        :func:`~wirelessfl.training.stacked_ranks.rank_multiplier`. ``"own_rank"`` (default):
        alpha / ``rank`` (alpha / sqrt(rank) with rsLoRA); ``"sketch"`` (FSLoRA, eq. (2)):
        (alpha / r) (r / ``rank``) = alpha / ``rank``, (alpha / sqrt(r)) (r / ``rank``) with
        rsLoRA."""
        if rank_scaling not in RANK_SCALINGS:
            raise ValueError(f"rank_scaling must be one of {RANK_SCALINGS}, got {rank_scaling!r}")
        if rank == self.rank:
            yield
            return
        if not 1 <= rank <= self.rank:
            raise ValueError(f"client rank {rank} is outside 1..{self.rank} (the model rank)")
        saved = []
        for layer in self.state.layers:
            if layer.fixed_rank is not None:  # learner.rank_pattern: peft's alpha / r_l stays
                continue
            module = self.model.get_submodule(layer.name)
            adapter = layer.a_param.split(".lora_A.")[1].split(".")[0]
            rslora = bool(getattr(module, "use_rslora", {}).get(adapter, False))
            saved.append((module, adapter, module.scaling[adapter]))
            alpha = module.lora_alpha[adapter]
            at_r = alpha / math.sqrt(self.rank) if rslora else alpha / self.rank
            module.scaling[adapter] = at_r * rank_multiplier(
                self.rank, rank, rslora=rslora, rank_scaling=rank_scaling
            )
        try:
            yield
        finally:
            for module, adapter, value in saved:
                module.scaling[adapter] = value

    # ---- evaluation ------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, values: dict[str, torch.Tensor]) -> dict[str, float]:
        """Test ``accuracy`` (NaN for regression) and ``test_loss`` of the model holding
        ``values``."""
        rank = lora_rank(values, self.state.layers) or self.rank
        with self.client_rank(rank):
            self.state.load(self.padded(values))
            self.model.eval()
            correct, total, loss_sum = 0, 0, 0.0
            n = len(self.test_data)
            size = self.settings.eval_batch_size
            for start in range(0, n, size):
                idx = torch.arange(start, min(n, start + size))
                batch = self.test_data.batch(idx)
                loss, logits = self.bundle.loss_and_logits(self.model, batch)
                if self.data.kind != "regression":
                    y = batch["y"].to(logits.device)
                    correct += int((logits.argmax(dim=-1) == y).sum())
                loss_sum += float(loss) * len(idx)
                total += len(idx)
            self.model.train()
        accuracy = math.nan if self.data.kind == "regression" else correct / total
        return {"accuracy": accuracy, "test_loss": loss_sum / total}

    def describe(self) -> dict[str, Any]:
        """Facts for ``meta.json``: model, data, device, partition."""
        lc = self.settings
        return {
            "model": lc.model,
            "dataset": lc.dataset,
            "device": str(self.device),
            "trainer": getattr(self, "trainer_name", None),
            "device_name": torch.cuda.get_device_name(0) if self.device.type == "cuda" else "cpu",
            "target_modules": self.targets,
            "adapted_layers": len(self.layer_shapes),
            "params_per_rank": self.geometry().params_per_rank,
            **({"rank_pattern": self.fixed_ranks} if self.fixed_ranks else {}),
            "train_samples": len(self.train_data),
            "test_samples": len(self.test_data),
            "client_sizes": self.partition.sizes.tolist(),
            "label_histograms": self.partition.label_histograms().tolist(),
        }
