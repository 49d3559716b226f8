"""FLoRAL's Table 1 and its synthetic tasks as reproductions (``floral-*``, scenarios under
``floral/``): the methods as sweeps and the FedAvg references.
"""

from __future__ import annotations

from wirelessfl.study.floral_figures import draw_adaptors, draw_methods, draw_synthetic
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = [
    "FEDAVG_REFERENCE",
    "FEDAVG_SYNTHETIC",
    "FLORAL_MNIST",
    "FLORAL_MNIST_REDUCED",
    "FLORAL_REPRODUCTIONS",
    "floral_methods",
]


def floral_methods(
    n_clusters: int, rhos: tuple[float, ...] = (0.01,), floral: dict | None = None
) -> dict[str, dict]:
    """Table 1's methods as sweeps (each sets the whole strategy section, so one scenario
    serves every algorithm): FedAvg, Local Adaptor, Ensemble and FLoRAL(rhos[0]) with a
    learned and the oracle router, FLoRAL at the other rhos with a learned router; C = the
    task's clusters. ``floral``: further FLoRAL settings (the grid replaces the scenario's
    ``strategy`` section, so a scenario's ``strategy.floral`` table must be repeated here)."""
    routers = [{"router": "learned"}, {"router": "oracle"}]
    extra = dict(floral or {})
    return {
        "fedavg": {"algorithm.name": ["fedavg_full"], "strategy": [{}]},
        "local": {"algorithm.name": ["floral_local"], "strategy": [{}]},
        "ensemble": {
            "algorithm.name": ["ensemble"],
            "strategy": [{"n_members": n_clusters, **r} for r in routers],
        },
        "floral": {
            "algorithm.name": ["floral"],
            "strategy": [{"n_adaptors": n_clusters, "rho": rhos[0], **r, **extra} for r in routers]
            + [{"n_adaptors": n_clusters, "rho": rho, **routers[0], **extra} for rho in rhos[1:]],
        },
    }


#: Table 1's MNIST methods (C = 4; FLoRAL at rho = 1 % and 10 %) on both concept shifts.
FLORAL_MNIST = {
    name: {**grid, "learner.dataset": ["mnist_rotate", "mnist_label_shift"]}
    for name, grid in floral_methods(4, (0.01, 0.1)).items()
}
#: The same on reduced MNIST, with FLoRAL's router lr 0.3 of scenarios/floral/mnist_reduced.yaml
#: (the authors' reduced runs).
FLORAL_MNIST_REDUCED = {
    name: {**grid, "learner.dataset": ["mnist_rotate", "mnist_label_shift"]}
    for name, grid in floral_methods(4, (0.01, 0.1), {"router_lr": 0.3}).items()
}

#: Table 1's methods against FedAvg on the same task
FEDAVG_REFERENCE = Reference({"algorithm.name": "fedavg_full"}, keys=("strategy",), label="FedAvg")
#: the synthetic tasks' claims are about the test loss (``final_test_loss``: lower is better)
FEDAVG_SYNTHETIC = Reference(
    {"algorithm.name": "fedavg_full"},
    keys=("strategy",),
    metrics=("final_test_loss",),
    label="FedAvg",
)


#: FLoRAL's claims, by name
FLORAL_REPRODUCTIONS: dict[str, Reproduction] = {
    "floral-synthetic-linear": Reproduction(
        scenario="floral/synthetic_linear.yaml",
        sweeps=floral_methods(2),
        claim="synthetic linear task (K = 10, C = 2): FLoRAL and the Ensemble fit every "
        "client (test loss near 0, routers recover the clusters); FedAvg and the Local "
        "Adaptor do not",
        seeds=3,
        full=[],
        draw=draw_synthetic,
        reference=FEDAVG_SYNTHETIC,
    ),
    "floral-synthetic-mlp": Reproduction(
        scenario="floral/synthetic_mlp.yaml",
        sweeps=floral_methods(4),
        claim="synthetic MLP task (K = 20, C = 4): FLoRAL and the Ensemble reach a test loss far "
        "below FedAvg's and the Local Adaptor's",
        seeds=3,
        full=[],
        draw=draw_synthetic,
        reference=FEDAVG_SYNTHETIC,
    ),
    "floral-mnist": Reproduction(
        scenario="floral/mnist.yaml",
        sweeps=FLORAL_MNIST,
        claim="Table 1, MNIST full: FedAvg fails on label shift; FLoRAL is close to Ensemble "
        "pi*; FLoRAL is above the Local Adaptor",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=draw_methods,
        reference=FEDAVG_REFERENCE,
    ),
    "floral-mnist-reduced": Reproduction(
        scenario="floral/mnist_reduced.yaml",
        sweeps=FLORAL_MNIST_REDUCED,
        claim="Table 1, MNIST reduced (5 %): FedAvg fails on label shift; the Local Adaptor "
        "collapses; FLoRAL with the oracle router is close to Ensemble pi*",
        target_accuracy=0.6,
        seeds=3,
        full=[],
        draw=draw_methods,
        reference=FEDAVG_REFERENCE,
    ),
    "floral-adaptors": Reproduction(
        scenario="floral/mnist.yaml",
        sweeps={
            "C": {
                "learner.dataset": ["mnist_label_shift"],
                "strategy": [{"n_adaptors": c, "rho": 0.1} for c in (1, 2, 4, 8)],
            }
        },
        claim="the wireless cost of C: more adaptors, more bits per round (at rho = 10 %); "
        "C below the 4 clusters cannot personalise label shift, C above them reaches the "
        "target no sooner in virtual time",
        target_accuracy=0.8,
        seeds=3,
        full=[],
        draw=draw_adaptors,
        reference=Reference(
            {"strategy": {"n_adaptors": 4, "rho": 0.1}},
            metrics=("final_accuracy", "time_to_target_s", "total_bits_up"),
            label="C = 4",
        ),
    ),
}
