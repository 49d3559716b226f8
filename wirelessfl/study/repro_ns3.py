"""Analytic uploads against packets in ns-3 as reproductions (``ns3-gap*``, docs/results.md,
"Packets against formulas: the gap to ns-3"): the same cell, clients, payloads and seeds under
``channel.uplink: fdma``, ``nr`` and an ns-3 uplink (the ``ns3`` extra; NR's runs need the
``nr`` extra).

* ``ns3-gap``: an outdoor cell (``ns3/gap_upload.yaml``), FDMA, NR and ns-3's LTE with EPC,
  K in {2, 5, 10}, payloads 0.1, 1 and 10 MB a client, network only: each client's upload time
  against FDMA's (``client_ratios.csv``, ``ratio_quantiles.csv``), each round's against the
  plan (``by_uplink.csv``).
* ``ns3-gap-wifi``: the same on an indoor cell (``ns3/gap_indoor.yaml``) with ns-3's 802.11ax
  BSS.
* ``ns3-gap-training``: SOFT/TSFA's default task (``ns3/gap_training.yaml``) over FDMA and
  ns-3's LTE, the controller planning with FDMA: does D^t stay near D_th (``dth.csv``)?
"""

from __future__ import annotations

from wirelessfl.study.ns3_figures import (
    MB_PER_RANK,
    client_ratio_tables,
    draw_training_gap,
    draw_upload_gap,
    ns3_gap_columns,
    training_tables,
    upload_tables,
)
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["NS3_GAP_K", "NS3_GAP_RANKS", "NS3_REPRODUCTIONS"]

#: the scheduled clients K of ``ns3-gap`` and ``ns3-gap-wifi``
NS3_GAP_K = [2, 5, 10]
#: the ranks on the study's one layer: payloads of 0.1, 1 and 10 MB a client (``MB_PER_RANK``)
NS3_GAP_RANKS = [1, 10, 100]
#: every run against the FDMA run at the same seed and context (K and payload)
NS3_VS_FDMA = Reference({"channel.uplink": "fdma"}, metrics=("mean_delay_s",), label="FDMA")
#: the training study's ns-3 runs against FDMA's
TRAINING_VS_FDMA = Reference(
    {"channel.uplink": "fdma"},
    metrics=("mean_delay_s", "mean_sparsification", "final_accuracy"),
    label="FDMA",
)


def _payload_study(scenario: str, ns3_uplink: str, claim: str) -> Reproduction:
    """The uplinks ``fdma``, ``nr`` and ``ns3_uplink`` on ``scenario`` at every K and payload,
    5 seeds, each run against FDMA's."""
    grid = {
        "channel.uplink": ["fdma", "nr", ns3_uplink],
        "n_scheduled": NS3_GAP_K,
        "controller.rank": NS3_GAP_RANKS,
    }
    return Reproduction(
        scenario=scenario,
        sweeps={ns3_uplink.removeprefix("ns3_"): grid},
        claim=claim,
        seeds=5,
        full=[],
        draw=draw_upload_gap,
        reference=NS3_VS_FDMA,
        run_columns=ns3_gap_columns,
        tables=upload_tables,
        run_tables=client_ratio_tables,
    )


_PAYLOADS = ", ".join(f"{MB_PER_RANK * r:g}" for r in NS3_GAP_RANKS)
NS3_REPRODUCTIONS: dict[str, Reproduction] = {
    "ns3-gap": _payload_study(
        "ns3/gap_upload.yaml",
        "ns3_lte",
        f"Shannon-rate FDMA uploads are optimistic against TCP over ns-3's LTE (K = 2, 5, 10; "
        f"{_PAYLOADS} MB a client): how much, for which clients and payloads, and how much of "
        "it a 5G NR PHY abstraction explains",
    ),
    "ns3-gap-wifi": _payload_study(
        "ns3/gap_indoor.yaml",
        "ns3_wifi",
        f"the same gap indoors, against TCP over ns-3's 802.11ax BSS ({_PAYLOADS} MB a client)",
    ),
    "ns3-gap-training": Reproduction(
        scenario="ns3/gap_training.yaml",
        sweeps={"uplinks": {"channel.uplink": ["fdma", "ns3_lte"]}},
        claim="SOFT/TSFA's time-average D^t stays near D_th when the controller plans with "
        "Shannon's FDMA and the uploads are TCP over ns-3's LTE",
        seeds=5,
        full=[],
        draw=draw_training_gap,
        reference=TRAINING_VS_FDMA,
        run_columns=ns3_gap_columns,
        tables=training_tables,
    ),
}
