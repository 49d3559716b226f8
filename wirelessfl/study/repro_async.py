"""FedBuff's and FedScale's claim on the server modes as reproductions (``async-*``,
scenarios under ``async/``): sync, semi-sync, buffered and async rounds as sweeps.
"""

from __future__ import annotations

from wirelessfl.study.async_figures import draw_modes, update_columns
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["ASYNC_REPRODUCTIONS", "SYNC_REFERENCE", "server_modes"]


def server_modes(
    *,
    k: int,
    updates: int,
    eval_updates: int,
    concurrency: int,
    semi_sync_deadline_s: float,
    semi_sync_rounds: int,
    semi_sync_eval_every: int,
) -> dict[str, dict]:
    """Sync, semi-sync, buffered and async rounds as sweeps (docs/results.md, "Asynchronous
    rounds"). Sync, buffered and async aggregate the same ``updates`` client updates (sync:
    updates / k rounds of k clients; buffered: M = k, updates / k aggregations; async: one
    update per aggregation) and evaluate every ``eval_updates`` updates. Buffered and async
    keep ``concurrency`` clients training at once; semi-sync keeps k, as sync, and aggregates
    every ``semi_sync_deadline_s`` what arrived, for ``semi_sync_rounds`` aggregations."""
    return {
        "sync": {
            "server.mode": ["sync"],
            "rounds": [updates // k],
            "eval_every": [eval_updates // k],
        },
        "semi_sync": {
            "server.mode": ["semi_sync"],
            "server.concurrency": [k],
            "server.deadline_s": [semi_sync_deadline_s],
            "rounds": [semi_sync_rounds],
            "eval_every": [semi_sync_eval_every],
        },
        "buffered": {
            "server.mode": ["buffered"],
            "server.concurrency": [concurrency],
            "server.buffer_size": [k],
            "rounds": [updates // k],
            "eval_every": [eval_updates // k],
        },
        "async": {
            "server.mode": ["async"],
            "server.concurrency": [concurrency],
            "rounds": [updates],
            "eval_every": [eval_updates],
        },
    }


#: the modes against synchronous rounds at the same seed; each mode's settings (concurrency,
#: buffer, deadline, rounds, evaluations) are part of the method, not a context
SYNC_REFERENCE = Reference(
    {"server.mode": "sync"},
    keys=("server.concurrency", "server.buffer_size", "server.deadline_s", "rounds", "eval_every"),
    metrics=("time_to_target_s", "updates_to_target", "bits_to_target", "final_accuracy"),
    label="sync",
)


#: the server modes' claims, by name
ASYNC_REPRODUCTIONS: dict[str, Reproduction] = {
    "async-default": Reproduction(
        scenario="async/default_hetero.yaml",
        # 120 updates (24 rounds of K = 5), evaluated every 20; C = 2K; semi-sync every 2 s
        sweeps=server_modes(
            k=5,
            updates=120,
            eval_updates=20,
            concurrency=10,
            semi_sync_deadline_s=2.0,
            semi_sync_rounds=36,
            semi_sync_eval_every=6,
        ),
        claim="FedBuff, FedScale: with devices a decade apart, buffered asynchrony reaches "
        "the target accuracy in less virtual time than synchronous rounds, at a cost in "
        "staleness",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_modes("async_default", "EfficientNet-Lite0 / MNIST-5k", 0.6),
        reference=SYNC_REFERENCE,
        run_columns=update_columns,
    ),
    "async-minilm": Reproduction(
        scenario="async/minilm_rt.yaml",
        # 40 updates (10 rounds of K = 4), evaluated every 8; C = 2K; semi-sync every 2.5 s
        sweeps=server_modes(
            k=4,
            updates=40,
            eval_updates=8,
            concurrency=8,
            semi_sync_deadline_s=2.5,
            semi_sync_rounds=25,
            semi_sync_eval_every=5,
        ),
        claim="FedBuff, FedScale on MiniLM / Rotten Tomatoes: with devices a decade apart, "
        "buffered asynchrony reaches the target accuracy in less virtual time than "
        "synchronous rounds, at a cost in staleness",
        target_accuracy=0.6,
        seeds=5,
        full=[],
        draw=draw_modes("async_minilm", "MiniLM / Rotten Tomatoes", 0.6),
        reference=SYNC_REFERENCE,
        run_columns=update_columns,
    ),
}
