"""The many-cell reproductions (``wirelessfl reproduce cells-*``) at a few rounds: their tables,
paired comparisons, figures and run columns against the run folders."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wirelessfl.results import load
from wirelessfl.results.columns import STUDY_CELLS_COLUMNS
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce

SURROGATE = 'learner={"kind":"surrogate","shape":{"layer_shapes":[[64,64],[64,32]]}}'


def test_interference_study_tables_and_figure(tmp_path):
    result = reproduce("cells-interference", out_dir=tmp_path, overrides=["rounds=30"], seeds=1)
    summary = result["summary"]
    assert len(summary) == 7 and set(STUDY_CELLS_COLUMNS) <= set(summary.columns)
    by_model = result["tables"]["by_model"]
    assert len(by_model) == 7 and (by_model.seeds == 1).all()
    views = result["tables"]["views_vs_snr"]
    assert set(views.metric) == {"mean_cell_delay_s", "mean_cell_queue", "edge_upload_s"}
    assert all(path.is_file() for path in result["figures"])
    # one run's columns against its own tables
    run = load(next(p for p in (tmp_path / "cells-interference" / "free").iterdir() if p.is_dir()))
    row = summary[summary.sweep == "free"].iloc[0]
    assert row.mean_cell_delay_s == pytest.approx(run.cells.delay_s.mean())
    sent = run.clients[run.clients.status == "arrived"]
    assert row.mean_sinr_db == pytest.approx(sent.sinr_db.mean())
    # interference-free: the SINR is the SNR
    np.testing.assert_allclose(sent.sinr_db, sent.snr_db, atol=1e-12)


def test_hierarchy_study_counts_cloud_rounds_to_the_target(tmp_path):
    spec = REPRODUCTIONS["cells-hierfavg"]
    assert spec.sweeps == {"tau": {"server.hierarchy.edge_rounds": [1, 2, 5, 10]}}
    result = reproduce(
        "cells-hierfavg",
        out_dir=tmp_path,
        overrides=[SURROGATE, "rounds=10", "eval_every=1"],
        seeds=1,
        target_accuracy=0.105,
    )
    summary = result["summary"].set_index("server.hierarchy.edge_rounds")
    for tau in (1, 2, 5, 10):
        row = summary.loc[tau]
        edge_rounds = row.edge_rounds_to_target
        if math.isnan(edge_rounds):
            continue
        # the cloud's model exists at cloud rounds only: every tau-th edge round
        assert edge_rounds % tau == 0 or edge_rounds == 10
        assert row.cloud_rounds_to_target == math.ceil(edge_rounds / tau)
    assert summary.loc[1].edge_rounds_to_target == summary.loc[1].cloud_rounds_to_target
    by_tau = result["tables"]["by_tau"]
    assert by_tau["server.hierarchy.edge_rounds"].tolist() == [1, 2, 5, 10]
    assert all(path.is_file() for path in result["figures"])
