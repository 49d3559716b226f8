"""Many cells as reproductions (``cells-*``, docs/results.md, "Many cells: interference and
hierarchies").

* ``cells-interference``: what inter-cell interference does to SOFT/TSFA, network only
  (``cells/interference.yaml``, 7 cells x 20 clients, 1,000 rounds): each cell's D^t and Q^t,
  and the cell-edge clients' SINR and upload times, with reuse 1 and 3 against the
  interference-free model on the same layout, the controllers planning on the SNR or on last
  round's interference.
* ``cells-hierfavg``: HierFAVG's claims in real training (``cells/hierfavg.yaml``): against
  averaging at the cloud every round (tau = 1, the cloud-based FedAvg of a network whose every
  round crosses the backhaul), fewer cloud rounds and less virtual time to a target accuracy
  for tau > 1, and the trade-off as tau grows ("Client-Edge-Cloud Hierarchical Federated
  Learning", Liu, Zhang, Song, Letaief, arXiv:1905.06641, in spirit: their claim that edge
  aggregation trains faster than cloud-based FedAvg).
"""

from __future__ import annotations

from wirelessfl.study.cells_figures import (
    cells_columns,
    draw_hierarchy,
    draw_interference,
    hierarchy_tables,
    interference_tables,
)
from wirelessfl.study.paired import Reference
from wirelessfl.study.repro_spec import Reproduction

__all__ = ["CELLS_REPRODUCTIONS", "HIERFAVG_TAUS"]

#: the tau values of ``cells-hierfavg`` (edge rounds between cloud aggregations)
HIERFAVG_TAUS = [1, 2, 5, 10]

CELLS_REPRODUCTIONS: dict[str, Reproduction] = {
    "cells-interference": Reproduction(
        scenario="cells/interference.yaml",
        sweeps={
            "reuse": {
                "cells.reuse": [1, 3],
                "cells.controller_sees": ["snr", "last_round", "expected"],
            },
            "free": {"cells.interference": [False]},
        },
        claim="inter-cell interference raises each cell's D^t and queue above the "
        "interference-free model's and slows the cell-edge uploads; reuse 3 and planning on "
        "last round's interference recover part of it",
        seeds=5,
        full=[],
        draw=draw_interference,
        reference=Reference(
            {"cells.interference": False},
            metrics=("mean_cell_delay_s", "mean_cell_queue", "edge_sinr_db", "edge_upload_s"),
            label="no interference",
        ),
        run_columns=cells_columns,
        tables=interference_tables,
    ),
    "cells-hierfavg": Reproduction(
        scenario="cells/hierfavg.yaml",
        sweeps={"tau": {"server.hierarchy.edge_rounds": HIERFAVG_TAUS}},
        claim="averaging at the edge servers and at the cloud only every tau > 1 edge rounds "
        "reaches the target accuracy in fewer cloud rounds and less virtual time than "
        "averaging at the cloud every round",
        target_accuracy=0.7,
        seeds=5,
        full=[],
        draw=draw_hierarchy,
        reference=Reference(
            {"server.hierarchy.edge_rounds": 1},
            metrics=("time_to_target_s", "cloud_rounds_to_target", "final_accuracy"),
            label="tau = 1",
        ),
        run_columns=cells_columns,
        tables=hierarchy_tables,
    ),
}
