"""Client compute: device speeds, local-training FLOPs and compute delay.

:data:`DEVICE_CLASSES` gives *sustained* training throughputs in FLOP/s: the vendor's peak
times an assumed utilisation for small-batch fine-tuning on the device (training kernels on
phones and laptops reach roughly 10-30 % of peak, GPUs 20-40 %). They are order-of-magnitude
defaults for simulation, not measurements; override them with your own numbers.

========================  ==========  ====================================================
class                     FLOP/s      basis (peak, source)
========================  ==========  ====================================================
``low_end_phone``         1e10        4-8 Cortex-A53/A55 cores, ≈ 50-100 GFLOP/s FP32 NEON
                                      peak (Arm core TRMs: 4-8 FP32 FLOP/cycle/core)
``flagship_phone``        1e11        Snapdragon 8 Gen 2 / Apple A16 class; mobile GPU
                                      ≈ 2 TFLOP/s FP32 peak, thermally limited, ≈ 5 %
``laptop_cpu``            2e11        8-core x86 with AVX2 FMA at ≈ 3 GHz: 8 × 32 FLOP/cycle
                                      × 3 GHz ≈ 770 GFLOP/s FP32 peak, ≈ 25 %
``edge_gpu_jetson``       1e12        NVIDIA Jetson Orin NX 16 GB: 1024 CUDA cores at
                                      918 MHz ≈ 1.9 TFLOP/s FP32 (NVIDIA datasheet), ≈ 50 %
                                      with FP16 tensor cores
``desktop_gpu``           3e13        NVIDIA GeForce RTX 4090: 82.6 TFLOP/s FP32,
                                      165 TFLOP/s dense FP16 tensor (Ada whitepaper), ≈ 20 %
========================  ==========  ====================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, as_int, scalar_or_array
from channels.payload import lora_param_count
from channels.streams import client_generators

__all__ = [
    "DEVICE_CLASSES",
    "DEVICE_PROFILE_KINDS",
    "DeviceProfile",
    "compute_delay_s",
    "lora_training_flops",
]

#: Sustained training throughput per device class [FLOP/s] (see the module docstring).
DEVICE_CLASSES: dict[str, float] = {
    "low_end_phone": 1.0e10,
    "flagship_phone": 1.0e11,
    "laptop_cpu": 2.0e11,
    "edge_gpu_jetson": 1.0e12,
    "desktop_gpu": 3.0e13,
}

DEVICE_PROFILE_KINDS = ("fixed", "classes", "lognormal", "listed")


@dataclass(frozen=True)
class DeviceProfile:
    """How client compute speeds are drawn.

    - ``kind="fixed"``: every client has ``flops_per_s`` > 0.
    - ``kind="classes"``: each client draws a class from ``classes`` (name in
      :data:`DEVICE_CLASSES` → probability; probabilities >= 0 summing to 1 ± 1e-6) and gets
      that class's FLOP/s.
    - ``kind="lognormal"``: FLOP/s = ``median_flops_per_s`` · exp(``sigma`` · Z), Z ~ N(0, 1),
      ``sigma`` >= 0 in natural-log units.
    - ``kind="listed"``: client i has ``per_client_flops_per_s[i]`` (each > 0 and finite; one
      value per client, checked by :meth:`draw`).

    Draws come from ``client_generators(seed, range(N), stream="devices")`` (one draw per
    client), so adding clients keeps existing clients' speeds (``listed`` draws nothing).
    """

    kind: str = "fixed"
    flops_per_s: float | None = None
    classes: Mapping[str, float] | None = None
    median_flops_per_s: float | None = None
    sigma: float | None = None
    per_client_flops_per_s: Sequence[float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in DEVICE_PROFILE_KINDS:
            raise ValueError(
                f"kind must be one of {{{', '.join(DEVICE_PROFILE_KINDS)}}}, got {self.kind!r}"
            )
        if self.kind == "fixed":
            if self.flops_per_s is None:
                raise ValueError("flops_per_s must be given (> 0) for kind='fixed'")
            v = as_float("flops_per_s", self.flops_per_s, lower=0.0, lower_op=">")
            object.__setattr__(self, "flops_per_s", v)
        elif self.kind == "classes":
            if not isinstance(self.classes, Mapping) or not self.classes:
                raise ValueError(
                    "classes must be a non-empty mapping {class name: probability} for "
                    f"kind='classes', names in {{{', '.join(DEVICE_CLASSES)}}}"
                )
            probs: dict[str, float] = {}
            for name, p in self.classes.items():
                if name not in DEVICE_CLASSES:
                    raise ValueError(
                        f"classes keys must be in {{{', '.join(DEVICE_CLASSES)}}}, got {name!r}"
                    )
                probs[name] = as_float(f"classes[{name!r}]", p, lower=0.0, upper=1.0)
            total = sum(probs.values())
            if abs(total - 1.0) > 1e-6:
                raise ValueError(f"classes probabilities must sum to 1 (± 1e-6), got {total!r}")
            object.__setattr__(self, "classes", probs)
        elif self.kind == "listed":
            values = self.per_client_flops_per_s
            arr = None
            if values is not None and not isinstance(values, str | bytes):
                arr = as_float_array("per_client_flops_per_s", values, lower=0.0, lower_op=">")
            if arr is None or arr.ndim != 1:
                raise ValueError(
                    "per_client_flops_per_s must be a list of FLOP/s (> 0), one per client, "
                    f"for kind='listed', got {values!r}"
                )
            if arr.size == 0:
                raise ValueError(
                    "per_client_flops_per_s must hold one FLOP/s (> 0) per client, got []"
                )
            object.__setattr__(self, "per_client_flops_per_s", tuple(arr.tolist()))
        else:
            if self.median_flops_per_s is None or self.sigma is None:
                raise ValueError(
                    "median_flops_per_s (> 0) and sigma (>= 0) must be given for kind='lognormal'"
                )
            med = as_float("median_flops_per_s", self.median_flops_per_s, lower=0.0, lower_op=">")
            sig = as_float("sigma", self.sigma, lower=0.0)
            object.__setattr__(self, "median_flops_per_s", med)
            object.__setattr__(self, "sigma", sig)

    def draw_classes(self, seed: int, n_clients: int) -> list[str] | None:
        """Each client's device class (``kind="classes"``), else ``None``.

        Input: ``seed`` >= 0; ``n_clients`` >= 1.
        Output: (n_clients,) class names, the same draw :meth:`draw` turns into FLOP/s.
        """
        n_clients = as_int("n_clients", n_clients, lower=1)
        if self.kind != "classes":
            return None
        assert self.classes is not None
        gens = client_generators(seed, range(n_clients), stream="devices")
        names = list(self.classes)
        cdf = np.cumsum([self.classes[n] for n in names])
        cdf /= cdf[-1]
        u = np.array([g.random() for g in gens])
        idx = np.minimum(np.searchsorted(cdf, u, side="right"), len(names) - 1)
        return [names[i] for i in idx]

    def draw(self, seed: int, n_clients: int) -> np.ndarray:
        """Per-client compute speeds.

        Input: ``seed`` >= 0; ``n_clients`` >= 1 (for ``kind="listed"``, the length of
        ``per_client_flops_per_s``).
        Output: float64 (n_clients,) [FLOP/s].
        """
        n_clients = as_int("n_clients", n_clients, lower=1)
        if self.kind == "fixed":
            return np.full(n_clients, float(self.flops_per_s))  # type: ignore[arg-type]
        if self.kind == "listed":
            values = self.per_client_flops_per_s
            assert values is not None
            if len(values) != n_clients:
                raise ValueError(
                    f"per_client_flops_per_s has {len(values)} values for {n_clients} clients"
                )
            return np.array(values, dtype=np.float64)
        classes = self.draw_classes(seed, n_clients)
        if classes is not None:
            return np.array([DEVICE_CLASSES[n] for n in classes])
        gens = client_generators(seed, range(n_clients), stream="devices")
        z = np.array([g.standard_normal() for g in gens])
        return float(self.median_flops_per_s) * np.exp(float(self.sigma) * z)  # type: ignore[arg-type]


def compute_delay_s(flops: ArrayLike, flops_per_s: ArrayLike) -> float | np.ndarray:
    """Local compute time, flops / flops_per_s [s] (broadcasting).

    Input: ``flops`` >= 0 [FLOP]; ``flops_per_s`` > 0 [FLOP/s].
    Output: delay [s], broadcast shape (float for scalars).
    """
    f = as_float_array("flops", flops, lower=0.0)
    speed = as_float_array("flops_per_s", flops_per_s, lower=0.0, lower_op=">")
    return scalar_or_array(f / speed)


def lora_training_flops(
    layer_shapes: Sequence[tuple[int, int]],
    rank: int,
    *,
    batch_size: int,
    steps: int,
    seq_len: int = 1,
    base_params: int = 0,
) -> float:
    """Estimated FLOPs of ``steps`` local LoRA training steps on one client.

    With T = batch_size · seq_len tokens per step, P = ``base_params`` frozen weights used in
    the forward pass and L = Σ_l r(d_l + ℓ_l) LoRA weights (x·θ_B costs d·r, then ·θ_A costs
    r·ℓ multiply-adds per token):

    - forward: 2·(P + L)·T (one multiply-add = 2 FLOPs per weight per token);
    - backward, activation gradients: 2·(P + L)·T (the gradient flows through frozen and
      LoRA weights alike);
    - backward, weight gradients: 2·L·T, for the LoRA weights only (frozen weights need none).

    Total = steps · T · (4P + 6L). Assumptions: dense matmuls dominate (attention scores,
    norms, activations and optimiser updates are ignored, so this is a lower bound for long
    sequences); the gradient is propagated through every frozen weight counted in P (put in P
    all frozen weights above the first adapted layer, including the adapted layers' own d×ℓ
    matrices); no recomputation (gradient checkpointing adds one forward). With the default
    ``base_params=0`` only the adapters are counted. The naive "backward = 2× forward" rule
    would give 6P + 6L; for frozen weights it over-counts the weight gradients.
    Input: ``layer_shapes`` sequence of (d, ℓ) >= 1 per adapted layer; ``rank`` r >= 1;
    ``batch_size`` >= 1; ``steps`` >= 0; ``seq_len`` >= 1 tokens per sample;
    ``base_params`` >= 0.
    Output: FLOPs (float).
    """
    lora = int(lora_param_count(layer_shapes, rank))
    batch = as_int("batch_size", batch_size, lower=1)
    n_steps = as_int("steps", steps, lower=0)
    seq = as_int("seq_len", seq_len, lower=1)
    base = as_int("base_params", base_params, lower=0)
    tokens = batch * seq
    return float(n_steps) * float(tokens) * (4.0 * base + 6.0 * lora)
