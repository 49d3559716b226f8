"""What the DP-SGD study tests share (importable: pytest puts tests/ on sys.path): the
declaration of a FedIT / FFA-LoRA study and the epsilon of its busiest device, from Opacus's
accountant stepped here, independently of the run's own accounting."""

from __future__ import annotations

from typing import Any

#: a network-only learner: the same schedule without training (drawn from the seed)
SURROGATE = 'learner={"kind":"surrogate","shape":{"layer_shapes":[[64,64],[64,32]]}}'


def check_ffa_declaration(spec: Any, sigmas: list[float]) -> None:
    """At least 3 seeds of FedIT and FFA-LoRA, DP-SGD at ``sigmas``, the no-DP reference."""
    assert spec.seeds >= 3
    assert {a for g in spec.sweeps.values() for a in g["algorithm.name"]} == {"fedit", "ffa_lora"}
    assert spec.sweeps["dp_sgd"]["privacy.sample_noise_multiplier"] == sigmas
    assert spec.reference.value == {"privacy.dp_sgd": False}


def largest_epsilon(sigma: float, q: float, steps: list[int], delta: float) -> float:
    """Epsilon of the device that trained most: one RDP step per local batch at rate q."""
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    for _ in range(max(steps)):
        acc.step(noise_multiplier=sigma, sample_rate=q)
    return acc.get_epsilon(delta)
