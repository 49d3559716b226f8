"""``clients.csv``'s rows of a synchronous round (docs/results.md, "Run folders")."""

from __future__ import annotations

from typing import Any

import numpy as np

from wirelessfl.uplinks.base import Uplink

__all__ = ["client_rows"]


def client_rows(r: Any, arrived: set[int], uplink: Uplink) -> list[dict]:
    """``clients.csv`` rows: the training clients in order, then dropped, outage and
    unavailable ones.

    Rank and ratio are what the algorithm planned for a client that trained, and the
    controller's decision for one that dropped. Energy is 0 for a client that did not train.
    """
    rows = []
    assert r.energy is not None
    energy = {
        c: (e_c, e_t)
        for c, e_c, e_t in zip(
            r.energy.clients.tolist(),
            r.energy.compute_j.tolist(),
            r.energy.transmit_j.tolist(),
            strict=True,
        )
    }

    def row(i: int, status: str) -> dict:
        cid = int(r.scheduled[i])
        report = r.reports.get(cid)
        return {
            "round": r.t,
            "client": cid,
            "snr_db": float(r.snr_db[i]),
            "share": float(r.shares[i]),
            "compute_s": r.compute_s.get(cid, 0.0),
            "upload_s": r.upload_s.get(cid, 0.0),
            "bits": report.bits_up if report is not None else 0.0,
            "status": status,
            "rank": report.rank if report is not None else int(r.ranks[i]),
            "ratio": report.ratio if report is not None else float(r.ratios[i]),
            "bits_down": report.bits_down if report is not None else 0.0,
            "tx_power_w": float(r.tx_power_w[i]),
            "compute_energy_j": energy.get(cid, (0.0, 0.0))[0],
            "transmit_energy_j": energy.get(cid, (0.0, 0.0))[1],
            **({} if r.cpu_hz is None else {"cpu_hz": float(r.cpu_hz[i])}),
            **uplink.client_values(cid),
        }

    for i in np.flatnonzero(r.active):
        rows.append(row(i, "arrived" if int(r.scheduled[i]) in arrived else "straggler"))
    for i in np.flatnonzero(~r.active):
        status = "outage" if r.outage[i] else "unavailable" if r.unavailable[i] else "dropped"
        if r.excluded is not None and r.excluded[i] and not r.outage[i]:
            status = "excluded"
        rows.append(row(i, status))
    return rows
