"""The closed-form client timeline equals one SimPy process per client, table for table.

``Simulator._transmit`` computes each client's compute start, compute end and upload end in
numpy and gives SimPy only the round's end (the last arrival or the deadline). The reference
here is the design it replaced, written out independently: one SimPy process per client that
waits for its download, compute and upload, interrupted at the deadline. Every table must be
identical (``wall_s`` aside), with deadlines cutting clients in every phase, a downlink,
dropouts, outages and clients without bandwidth; the reference counts energy from what its
processes saw (the energy columns included).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import simpy
from scenario_helpers import small_scenario

from channels import rate_bps
from wirelessfl.learners import make_learner
from wirelessfl.sim import run_scenario
from wirelessfl.sim.energy import round_energy
from wirelessfl.sim.events import Kind
from wirelessfl.sim.simulator import Simulator

COMPUTE = {
    "devices.include_compute": True,
    "devices.kind": "lognormal",
    "devices.median_flops_per_s": 1.0e13,
    "devices.sigma": 1.0,
}
CASES = {
    "plain": {},
    "deadline": {**COMPUTE, "faults.deadline_s": 0.8, "faults.dropout_prob": 0.2},
    "downlink": {
        **COMPUTE,
        "channel.downlink_rate_bps": 2.0e6,
        "faults.deadline_s": 1.5,
        "faults.outage_snr_db": 3.0,
        "channel.fading.model": "gauss_markov",
        "channel.fading.rho": 0.9,
    },
    # every client's download (114,688 bits at 50 kbit/s = 2.3 s) outlasts the deadline
    "slow_downlink": {"channel.downlink_rate_bps": 5.0e4, "faults.deadline_s": 1.5},
    "osfa_pf": {
        "controller.name": "osfa",
        "controller.rank": 4,
        "selection.method": "proportional_fair",
    },
}


class ProcessPerClient(Simulator):
    """The reference: one SimPy process per training client."""

    def _transmit(self, r):
        sc, env, ch = self.scenario, self.env, self.scenario.channel
        processes, no_rate, self.seen = [], [], {}
        for i in np.flatnonzero(r.active).tolist():
            cid = int(r.scheduled[i])
            report = r.reports[cid]
            rate = float(rate_bps(r.shares[i], ch.bandwidth_hz, r.snr[i]))
            down = report.bits_down / ch.downlink_rate_bps if ch.downlink_rate_bps > 0 else 0.0
            comp = (
                report.flops / float(self.flops_per_s[cid]) if sc.devices.include_compute else 0.0
            )
            up = report.bits_up / rate if rate > 0 else math.inf
            r.compute_s[cid], r.upload_s[cid] = comp, up
            if math.isfinite(up):
                processes.append(env.process(self._one(r.log, cid, down, comp, up, report.bits_up)))
            else:
                no_rate.append(cid)
        if processes:
            everyone = simpy.AllOf(env, processes)
            if sc.faults.deadline_s is not None:
                yield env.any_of([everyone, env.timeout(sc.faults.deadline_s)])
                for p in processes:
                    if p.is_alive:
                        p.interrupt("deadline")
                yield simpy.AllOf(env, processes)
            else:
                yield everyone
        for cid in no_rate:
            r.log.add(env.now, Kind.STRAGGLER, cid)
        self._energy(r)

    def _energy(self, r):
        """Energy from what each process saw: compute and upload up to their end or the cut."""
        idx = np.flatnonzero(r.active)
        clients = r.scheduled[idx]
        now, seen = self.env.now, self.seen
        computed, started, uploaded = [], [], []
        for c in clients.tolist():
            times = seen.get(c, {})
            started.append("compute_start" in times)
            plan = (r.compute_s[c], r.upload_s[c])  # what a finished phase took
            computed.append(
                plan[0] if "compute_end" in times else now - times.get("compute_start", now)
            )
            uploaded.append(
                plan[1] if "upload_end" in times else now - times.get("upload_start", now)
            )
        reports = [r.reports[c] for c in clients.tolist()]
        r.energy = round_energy(
            self.compute_energy,
            clients=clients,
            flops=np.array([rep.flops for rep in reports]),
            compute_s=np.array([r.compute_s[c] for c in clients.tolist()]),
            computed_s=np.array(computed),
            started=np.array(started),
            uploaded_s=np.array(uploaded),
            client_class=None,
            tx_power_w=r.tx_power_w[idx],
        )

    def _one(self, log, cid, down, comp, up, bits):
        env, seen = self.env, self.seen.setdefault(cid, {})
        try:
            if down > 0:
                yield env.timeout(down)
            log.add(env.now, Kind.COMPUTE_START, cid)
            seen["compute_start"] = env.now
            if comp > 0:
                yield env.timeout(comp)
            log.add(env.now, Kind.COMPUTE_END, cid)
            log.add(env.now, Kind.UPLOAD_START, cid)
            seen["compute_end"] = seen["upload_start"] = env.now
            yield env.timeout(up)
            log.add(env.now, Kind.UPLOAD_END, cid, bits)
            seen["upload_end"] = env.now
        except simpy.Interrupt:
            log.add(env.now, Kind.STRAGGLER, cid)


def _tables(result) -> dict[str, pd.DataFrame]:
    return {
        "rounds": result.rounds.drop(columns="wall_s"),
        "events": result.events,
        "clients": result.clients,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_closed_form_timeline_equals_process_per_client(case, tmp_path, monkeypatch):
    sc = small_scenario(**CASES[case])
    fast = _tables(run_scenario(sc, tmp_path / "fast"))
    monkeypatch.setattr("wirelessfl.sim.runner.Simulator", ProcessPerClient)
    slow = _tables(run_scenario(sc, tmp_path / "slow"))
    for name, table in fast.items():
        pd.testing.assert_frame_equal(table, slow[name], check_exact=True, obj=name)
    if case in ("deadline", "downlink", "slow_downlink"):  # cut in every phase
        ev = fast["events"]
        key = list(zip(ev["round"], ev.client, strict=True))
        began = {
            kind: {k for k, e in zip(key, ev.kind, strict=True) if e == kind}
            for kind in ("compute_start", "upload_start", "straggler")
        }
        cut = began["straggler"]
        uploading = cut & began["upload_start"]
        computing = (cut & began["compute_start"]) - uploading
        downloading = cut - began["compute_start"]
        if case == "slow_downlink":
            assert downloading and not (uploading or computing)
        else:
            assert uploading and computing


def test_reference_is_used(tmp_path, monkeypatch):
    """The monkeypatched runner really builds the per-client reference (the check can fail)."""
    built = []
    monkeypatch.setattr(
        "wirelessfl.sim.runner.Simulator",
        lambda sc, learner: built.append(1) or ProcessPerClient(sc, learner),
    )
    run_scenario(small_scenario(rounds=2), tmp_path / "r")
    assert built == [1]
    sim = ProcessPerClient(small_scenario(rounds=2), make_learner(small_scenario(rounds=2)))
    assert sim.run_round(0).record["n_arrived"] == 5
