"""Throughput of batched multi-client LoRA training vs sequential peft clients (issue #7).

For a random-init ViT-Base (``vit_random``, default config, 224 px) and the MiniLM text model
(sequences of 64 tokens), with peft LoRA (rank 8, attention query / value, head as
``modules_to_save``), K clients in {1, 10, 50}, a per-client batch of 16 and E local steps
of Adam with the eq. (2) regularizer, it reports samples/s of

(a) sequential clients: K calls of ``LocalTrainer.train`` (the runtime's CPU default);
(b) ``BatchedTrainer.train_many`` over the K clients;
(c) one peft client stepping over single batches of K x 16 samples (the practical ceiling:
    the same samples per step, one LoRA state);

and prints (b)/(a) and (b)/(c). For the largest K it reports the peak GPU memory of (b)
against the estimate base model + activations of K x 16 samples (measured on (c)) + K x
per-client state (LoRA and head parameters, gradients, Adam moments); on a CPU memory is not
measured. Data are synthetic (random images / token ids) and every client's data is one pass
(16 x E samples), so the figures are about the trainer, not the data. Prints figures only;
asserts nothing about time. Goals on an H100 (bf16): (b)/(a) >= 4 at K = 10, (b)/(c) >= 0.85.

Run: ``python benchmarks/bench_trainer.py [--device cuda] [--dtype bf16|fp32] [--small]``.
``--small`` uses a tiny ViT (hidden 64, 2 layers, 32 px) and MiniLM cut to 2 layers with
16-token sequences, and E = 2, so that it finishes on a 2-core CPU in about a minute.

Imports only torch / transformers / peft and ``wirelessfl.training`` / ``models`` / ``data``
(the GPU machine lacks simpy and cvxpy).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402
from torch import nn  # noqa: E402

from wirelessfl.data import ArrayDataset  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.models.bundle import ModelBundle  # noqa: E402
from wirelessfl.models.rng import seeded, torch_generator  # noqa: E402
from wirelessfl.training.batched import BatchedTrainer  # noqa: E402
from wirelessfl.training.local import LocalTrainer  # noqa: E402
from wirelessfl.training.lora_state import TrainableState  # noqa: E402

SEED = 0
LR = 1e-3
ZETA = 1e-3


@dataclass
class Setup:
    """A peft-wrapped model, its trainers and a synthetic data maker."""

    name: str
    bundle: ModelBundle
    model: nn.Module
    state: TrainableState
    make_data: Callable[[int, int], ArrayDataset]  # (n samples, seed) -> data on device
    describe: str


def _wrap(bundle: ModelBundle, rank: int, device: torch.device) -> tuple[nn.Module, TrainableState]:
    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.0,
        target_modules=bundle.target_modules,
        modules_to_save=bundle.head_modules,
    )
    with seeded(SEED):
        model = get_peft_model(bundle.model, config).to(device)
    return model, TrainableState(model)


def vit_setup(small: bool, rank: int, device: torch.device) -> Setup:
    """``vit_random``: ViT-Base shapes (or a tiny config with ``small``), random images."""
    opts = (
        dict(hidden_size=64, num_layers=2, num_heads=4, image_size=32, patch_size=8)
        if small
        else {}
    )
    bundle = build_model("vit_random", n_classes=10, seed=SEED, **opts)
    size = opts.get("image_size", 224)
    model, state = _wrap(bundle, rank, device)

    def make(n: int, seed: int) -> ArrayDataset:
        gen = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 3, size, size, generator=gen)
        y = torch.randint(0, 10, (n,), generator=gen)
        return ArrayDataset(x, y).to(device)

    cfg = model.base_model.model.config
    text = f"{cfg.num_hidden_layers} layers x {cfg.hidden_size}, {size} px"
    return Setup("vit_random", bundle, model, state, make, text)


def minilm_setup(small: bool, rank: int, device: torch.device) -> Setup:
    """MiniLM-L6 (pretrained weights), random token ids of 64 (16 with ``small``) tokens; with
    ``small`` only its first 2 layers are kept."""
    bundle = build_model("minilm", n_classes=2, seed=SEED)
    seq = 16 if small else 64
    if small:
        bundle.model.encoder.encoder.layer = bundle.model.encoder.encoder.layer[:2]
    model, state = _wrap(bundle, rank, device)

    def make(n: int, seed: int) -> ArrayDataset:
        gen = torch.Generator().manual_seed(seed)
        x = torch.randint(1000, 20000, (n, seq), generator=gen)
        lengths = torch.randint(seq // 2, seq + 1, (n,), generator=gen)
        mask = (torch.arange(seq) < lengths[:, None]).long()
        y = torch.randint(0, 2, (n,), generator=gen)
        return ArrayDataset(x * mask, y, mask).to(device)

    n_layers = len(bundle.model.encoder.encoder.layer)
    return Setup("minilm", bundle, model, state, make, f"{n_layers} layers x 384, {seq} tokens")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def _precision(device: torch.device, dtype: str) -> Iterator[None]:
    if dtype == "bf16":
        with torch.autocast(device.type, dtype=torch.bfloat16):
            yield
    else:
        yield


def _timed(fn: Callable[[], object], device: torch.device, dtype: str, repeats: int) -> float:
    """Best wall time of ``repeats`` runs of ``fn`` (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        with _precision(device, dtype):
            fn()
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def _gens(k: int) -> list[torch.Generator]:
    # CPU generators: LocalTrainer passes its generator's indices through numpy
    return [torch_generator(SEED, "batches", c, 0) for c in range(k)]


def run_model(setup: Setup, args: argparse.Namespace, device: torch.device) -> list[dict]:
    """Rows of the table for one model."""
    kw = dict(
        model=setup.model,
        state=setup.state,
        loss_fn=setup.bundle.loss_and_logits,
        optimizer="adam",
        lr=LR,
        zeta=ZETA,
    )
    local, batched = LocalTrainer(**kw), BatchedTrainer(**kw)
    g = setup.state.snapshot()
    b, e = args.batch, args.steps
    rows = []
    for k in args.K:
        data = [setup.make_data(b * e, SEED + c) for c in range(k)]
        big = ArrayDataset(
            torch.cat([d.x for d in data]),
            torch.cat([d.y for d in data]),
            None if data[0].attention_mask is None else torch.cat([d.attention_mask for d in data]),
        )

        def seq(data: list[ArrayDataset] = data, k: int = k) -> None:
            for c, gen in enumerate(_gens(k)):
                local.train(g, data[c], steps=e, batch_size=b, generator=gen)

        def bat(data: list[ArrayDataset] = data, k: int = k) -> None:
            batched.train_many(g, data, steps=[e] * k, batch_size=b, generators=_gens(k))

        def ceiling(big: ArrayDataset = big, k: int = k) -> None:
            local.train(g, big, steps=e, batch_size=k * b, generator=_gens(1)[0])

        def one(data: list[ArrayDataset] = data) -> None:
            local.train(g, data[0], steps=1, batch_size=b, generator=_gens(1)[0])

        for fn in (bat, ceiling, one):  # warm-up at this K's shapes (kernels, allocator)
            _timed(fn, device, args.dtype, 1)
        t_seq = _timed(seq, device, args.dtype, args.repeats)
        t_bat = _timed(bat, device, args.dtype, args.repeats)
        t_cei = _timed(ceiling, device, args.dtype, args.repeats)
        n = k * b * e
        row = dict(model=setup.name, K=k, a=n / t_seq, b=n / t_bat, c=n / t_cei)
        if k == max(args.K):
            row["memory"] = memory_report(setup, batched, bat, ceiling, device, args.dtype, k)
        rows.append(row)
        print(
            f"  {setup.name:<10} K={k:<3} (a) {row['a']:10.1f}  (b) {row['b']:10.1f}  "
            f"(c) {row['c']:10.1f} samples/s",
            flush=True,
        )
    return rows


def memory_report(
    setup: Setup,
    batched: BatchedTrainer,
    bat: Callable[[], None],
    ceiling: Callable[[], None],
    device: torch.device,
    dtype: str,
    k: int,
) -> str:
    """Peak GPU memory of (b) vs base model + activations of K x batch + K x client state."""
    if device.type != "cuda":
        return "not measured (CPU run)"
    base = sum(p.numel() * p.element_size() for p in setup.model.parameters())
    _sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    _timed(ceiling, device, dtype, 1)
    activations = torch.cuda.max_memory_allocated(device) - before  # + one client's state
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    _timed(bat, device, dtype, 1)
    peak = torch.cuda.max_memory_allocated(device) - before + base
    estimate = base + activations + batched.last_client_state_bytes
    mib = 2.0**20
    return (
        f"peak {peak / mib:.0f} MiB vs estimate {estimate / mib:.0f} MiB = base model "
        f"{base / mib:.0f} + activations of {k}x batch {activations / mib:.0f} (peak of (c)) "
        f"+ {k} x client state {batched.last_client_state_bytes / k / mib:.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], default=None)
    parser.add_argument("--small", action="store_true", help="tiny configs for a CPU")
    parser.add_argument("--K", default="1,10,50", help="clients per round, comma-separated")
    parser.add_argument("--batch", type=int, default=16, help="samples per client per step")
    parser.add_argument("--steps", type=int, default=None, help="local steps E (5; 2 small)")
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    parser.add_argument("--models", default="vit_random,minilm")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default 1 on a CPU device: a shared, oversubscribed CPU makes "
        "multi-threaded small ops erratic; 0 keeps torch's default)",
    )
    args = parser.parse_args(argv)
    args.K = [int(x) for x in args.K.split(",")]
    if args.steps is None:
        args.steps = 2 if args.small else 5
    device = torch.device(args.device)
    if args.dtype is None:
        args.dtype = "bf16" if device.type == "cuda" else "fp32"
    if args.threads is None:
        args.threads = 1 if device.type == "cpu" else 0
    if args.threads:
        torch.set_num_threads(args.threads)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(
        f"device {device} ({name or platform.machine()}), {args.dtype}, torch "
        f"{torch.__version__}, {torch.get_num_threads()} CPU threads; LoRA r={args.rank} on "
        f"q/v + head, Adam, zeta={ZETA}, batch {args.batch}/client, E={args.steps}, "
        f"best of {args.repeats}"
    )
    builders = {"vit_random": vit_setup, "minilm": minilm_setup}
    rows: list[dict] = []
    for model_name in args.models.split(","):
        try:
            setup = builders[model_name](args.small, args.rank, device)
        except Exception as err:  # noqa: BLE001 - e.g. the MiniLM weights package is absent
            print(f"  {model_name}: skipped ({type(err).__name__}: {err})")
            continue
        print(f"{model_name}: {setup.describe}", flush=True)
        rows += run_model(setup, args, device)
        del setup
        if device.type == "cuda":
            torch.cuda.empty_cache()

    print()
    print("samples/s: (a) sequential LocalTrainer, (b) BatchedTrainer, (c) one K x batch step")
    print(f"{'model':<11}{'K':>4}{'(a)':>11}{'(b)':>11}{'(c)':>11}{'(b)/(a)':>9}{'(b)/(c)':>9}")
    for r in rows:
        print(
            f"{r['model']:<11}{r['K']:>4}{r['a']:>11.1f}{r['b']:>11.1f}{r['c']:>11.1f}"
            f"{r['b'] / r['a']:>9.2f}{r['b'] / r['c']:>9.2f}"
        )
    for r in rows:
        if "memory" in r:
            print(f"memory {r['model']} K={r['K']}: {r['memory']}")


if __name__ == "__main__":
    main()
