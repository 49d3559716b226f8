"""The gap between Shannon's FDMA uplink and a 5G NR PUSCH as reproductions (``nr-gap*``,
docs/results.md, "A 5G NR uplink: the gap to Shannon"): the same cell, clients, payloads and
seeds under ``channel.uplink: fdma`` and ``nr``.

* ``nr-gap``: SOFT/TSFA's D_th sweep, network only (``nr/gap_dth.yaml``): does the
  time-average D^t still meet D_th, how far is the measured D^t from the plan, what O^t and
  rank the controller settles on.
* ``nr-gap-accuracy``: Fig. 3(a)/(b)'s sparsifiers at r = 4, O = 0.5 in real training
  (``paper/fig3ab_sparsifiers.yaml``): are the rankings the same, how much longer are rounds.
* ``nr-gap-aircomp``: over-the-air aggregation against FDMA and NR at K = 5, 10 and 5 or
  20 MHz, network only (``aircomp/latency.yaml``).
"""

from __future__ import annotations

from wirelessfl.study.nr_figures import (
    accuracy_tables,
    draw_accuracy_gap,
    draw_aircomp_gap,
    draw_dth_gap,
    dth_tables,
    nr_gap_columns,
)
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_paper import SPARSIFIERS
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["NR_GAP_D_TH_S", "NR_REPRODUCTIONS", "NR_VS_FDMA"]

#: the D_th values of ``nr-gap`` [s]
NR_GAP_D_TH_S = [0.5, 1.0, 2.0, 4.0]
#: every NR run against the FDMA run at the same seed and context (D_th, or sparsifier)
NR_VS_FDMA = Reference(
    {"channel.uplink": "fdma"},
    metrics=("mean_delay_s", "mean_sparsification", "rank", "delay_over_plan"),
    label="FDMA",
)
#: the sparsifiers against SOFT on the same uplink and seed
SOFT_ON_EACH_UPLINK = Reference(
    {"compression.sparsifier": "soft"},
    metrics=("final_accuracy", "time_to_target_s", "mean_delay_s"),
    label="SOFT",
)
#: FDMA and NR against AirComp at the same K, bandwidth and seed
AIRCOMP_VS_DIGITAL = Reference(
    {"channel.uplink": "aircomp"}, metrics=("mean_delay_s",), label="AirComp"
)

NR_REPRODUCTIONS: dict[str, Reproduction] = {
    "nr-gap": Reproduction(
        scenario="nr/gap_dth.yaml",
        sweeps={"dth": {"channel.uplink": ["fdma", "nr"], "controller.d_th_s": NR_GAP_D_TH_S}},
        claim="SOFT/TSFA's time-average delay meets D_th on a 5G NR uplink as on Shannon's, the "
        "controller planning NR with NR's own goodput tables",
        seeds=5,
        full=["rounds=3000"],
        draw=draw_dth_gap,
        reference=NR_VS_FDMA,
        run_columns=nr_gap_columns,
        tables=dth_tables,
    ),
    "nr-gap-accuracy": Reproduction(
        scenario="paper/fig3ab_sparsifiers.yaml",
        sweeps={
            "sparsifiers": {
                "compression.sparsifier": [*SPARSIFIERS, "none"],
                "channel.uplink": ["fdma", "nr"],
            }
        },
        claim="Fig. 3(a)/(b)'s ranking (SOFT above TLoRA, SLoRA and RLoRA at O = 0.5) is the "
        "same on a 5G NR uplink as on Shannon's; NR's rounds are longer",
        target_accuracy=0.7,
        seeds=5,
        draw=draw_accuracy_gap,
        reference=SOFT_ON_EACH_UPLINK,
        run_columns=nr_gap_columns,
        tables=accuracy_tables,
    ),
    "nr-gap-aircomp": Reproduction(
        scenario="aircomp/latency.yaml",
        sweeps={
            "uplinks": {
                "channel.uplink": ["aircomp", "fdma", "nr"],
                "n_scheduled": [5, 10],
                "channel.bandwidth_hz": [5.0e6, 20.0e6],
            }
        },
        claim="over-the-air aggregation's upload time stays orders of magnitude below digital "
        "uploads when those are 5G NR PUSCH uploads rather than Shannon-rate ones",
        seeds=5,
        full=[],
        draw=draw_aircomp_gap,
        reference=AIRCOMP_VS_DIGITAL,
        run_columns=nr_gap_columns,
    ),
}
