"""``--resume`` of an event-driven run (``server.mode``: async, buffered, semi_sync) in the middle
of overlapping uploads gives the uninterrupted run's tables, byte for byte (docs/simulator.md,
"Results, checkpoints, resume").

Each run is interrupted (KeyboardInterrupt as a round starts) a few aggregations after a
checkpoint at which several uploads are on the air at once, resumed in a new learner and
simulator, and its tables compared with an uninterrupted run's as bytes (``rounds.csv`` without
``wall_s``). The state pieces (the shared band, a message, a plan) are checked to round-trip
exactly on their own.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scenario_helpers import (
    assert_same_tables,
    digits_scenario,
    interrupt_at,
    rounds_text,
    small_scenario,
)

from channels import lora_training_flops
from wirelessfl.errors import UserError
from wirelessfl.learners import make_learner
from wirelessfl.plans import (
    ClientPlan,
    RoundPlan,
    client_plan_from_state,
    client_plan_state,
    round_plan_from_state,
    round_plan_state,
)
from wirelessfl.sim.runner import Run, resume_run, run_scenario
from wirelessfl.sim.shared_band import SharedBand
from wirelessfl.sim.simulator import Simulator

LAYERS = [[64, 64], [64, 32]]
RANK = 4
#: FLOPs of one network-only local round (the surrogate's estimate)
FLOPS = lora_training_flops(
    [tuple(s) for s in LAYERS], RANK, batch_size=16, steps=5, seq_len=197, base_params=86e6
)

#: the tables a resume must give byte for byte (rounds.csv: but for wall_s)
TABLES = ("events.csv", "clients.csv", "devices.csv")


def _network_only(
    mode: str, overrides: dict | None = None, controller: dict | None = None, **server
) -> object:
    """30 aggregations of N = 20 clients, C = 8 at once, computing for about 50 ms (lognormal
    speeds) and uploading for 0.1-0.6 s over a Rayleigh channel: uploads overlap all the time.
    ``controller``: the controller section (default: fixed at rank 4)."""
    return small_scenario(
        **(overrides or {}),
        rounds=30,
        controller=controller or {"name": "fixed", "rank": RANK, "r_max": 16},
        devices={
            "kind": "lognormal",
            "median_flops_per_s": FLOPS / 0.05,
            "sigma": 0.5,
            "include_compute": True,
        },
        server={"mode": mode, "concurrency": 8, **server},
        output={
            "events": True,
            "clients": True,
            "checkpoint_every": 7,
            "checkpoint_interval_s": 1.0e6,
        },
    )


def _cut(scenario, out: Path, stop_at: int) -> dict:
    """Run ``scenario`` into ``out`` until aggregation ``stop_at`` starts; the engine's state in
    the current checkpoint, after checking the uploads it holds in flight."""
    interrupt_at(Run(scenario, out), stop_at)
    written = rounds_text(out / "rounds.csv")
    assert len(written) - 1 == stop_at  # rows past the checkpoint: the resume cuts and reruns
    state = json.loads((out / "state.json").read_text())
    next_round = state["next_round"]
    assert next_round < stop_at
    sim = json.loads((out / "checkpoints" / state["folder"] / "sim.json").read_text())
    engine = sim["engine"]
    header, row = written[0], written[next_round]  # the checkpoint's last aggregation
    n_in_flight = int(row[header.index("n_in_flight")])
    assert n_in_flight == len(engine["busy"]) + len(engine["buffer"]) > 0
    on_air = [u for u in engine["busy"] if not math.isnan(u["upload_start_s"])]
    assert len(engine["band"]["ends"]) == len(on_air) >= 2  # uploads overlap at the checkpoint
    return engine


@pytest.mark.parametrize(
    ("mode", "server", "computing"),
    [
        ("async", {"alpha": 0.6}, True),
        ("buffered", {"buffer_size": 3, "server_lr": 1.5}, True),
        ("semi_sync", {"deadline_s": 0.1}, False),  # its clients start only at deadlines
    ],
)
def test_a_network_only_run_resumed_mid_way_equals_the_uninterrupted_one(
    tmp_path, mode, server, computing
):
    scenario = _network_only(mode, **server)
    run_scenario(scenario, tmp_path / "full")
    engine = _cut(scenario, tmp_path / "cut", 17)  # the checkpoint after aggregation 13
    assert engine["n_dispatched"] > scenario.server.concurrency  # slots were refilled
    assert bool(engine["computing"]) == computing  # clients still computing at the cut, too
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut", TABLES)


def test_downloads_faults_and_availability_resume_exactly(tmp_path):
    """A buffered run with a shared downlink, per-update deadline cuts, dropouts and a Markov
    availability chain: the checkpoint carries the downlink, the cut heap and the benched
    clients, and the resumed tables equal the uninterrupted run's."""
    overrides = {
        "channel.downlink_rate_bps": 2.0e6,
        "faults.deadline_s": 0.3,
        "faults.dropout_prob": 0.1,
        "availability.model": "markov",
        "availability.p_on_to_off": 0.05,
        "availability.p_off_to_on": 0.5,
    }
    scenario = _network_only("buffered", overrides, buffer_size=3)
    full = run_scenario(scenario, tmp_path / "full")
    lost = full.clients[full.clients.status != "arrived"].status
    assert {"dropped", "straggler", "unavailable"} <= set(lost)  # every kind of loss happens
    engine = _cut(scenario, tmp_path / "cut", 17)
    assert engine["downlink"]["ends"] and engine["cuts"]  # downloads and cuts in flight
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut", TABLES)
    # the updates in flight at the checkpoint were taken by later aggregations, stale
    rows = csv.DictReader((tmp_path / "full" / "clients.csv").open())
    taken = {(int(r["client"]), int(r["version"])): int(r["round"]) for r in rows}
    crossing = [taken[u["client"], u["version"]] for u in engine["busy"]]
    assert min(crossing) >= 14 and max(u["version"] for u in engine["busy"]) <= 13


@pytest.mark.train
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(("algorithm", "mode"), [("fedit", "async"), ("soft", "buffered")])
def test_a_training_run_resumed_mid_way_equals_the_uninterrupted_one(tmp_path, algorithm, mode):
    """Real training (FedIT under FedAsync, SOFT under FedBuff): the checkpoint holds the
    in-flight clients' messages and, for FedAsync's mixing, the global states they started
    from (``learner.pt``)."""
    torch = pytest.importorskip("torch")
    scenario = digits_scenario(
        **{
            "algorithm.name": algorithm,
            "rounds": 6,
            "eval_every": 3,
            "server": {"mode": mode, "concurrency": 4, "buffer_size": 2},
            "output": {"clients": True, "events": True, "checkpoint_every": 2},
        }
    )
    run_scenario(scenario, tmp_path / "full")
    engine = _cut(scenario, tmp_path / "cut", 3)
    folder = tmp_path / "cut" / "checkpoints" / "2"
    in_flight = torch.load(folder / "learner.pt", weights_only=True)["in_flight"]
    assert sorted(int(c) for c in in_flight["messages"]) == sorted(
        u["client"] for u in engine["busy"]
    )
    starts = set(in_flight["messages"]) if mode == "async" else set()
    assert set(in_flight["starts"]) == starts  # FedAsync mixes them in; FedBuff adds Delta
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut", TABLES)


def test_a_moving_cell_resumed_mid_way_equals_the_uninterrupted_one(tmp_path):
    """Clients that move (random waypoint): each dispatch's SNR is taken at its own time."""
    moving = {"channel.mean_snr_db": None, "channel.d_max_m": 300.0}
    scenario = _network_only("async", {**moving, "mobility.model": "random_waypoint"})
    run_scenario(scenario, tmp_path / "full")
    _cut(scenario, tmp_path / "cut", 24)  # the checkpoint after aggregation 20
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut", TABLES)


def test_extending_a_finished_run_equals_running_it_longer(tmp_path):
    """``--resume --set rounds=30`` of a finished 15-aggregation run (uploads in flight at its
    end) continues as the 30-aggregation run (15 a multiple of ``eval_every``: same tables)."""
    scenario = _network_only("buffered", buffer_size=2)
    run_scenario(scenario, tmp_path / "full")
    run_scenario(replace(scenario, rounds=15), tmp_path / "short")
    Run.resume_from(tmp_path / "short", rounds=30).execute()
    assert_same_tables(tmp_path / "full", tmp_path / "short", TABLES)


# ---- the pieces of the state ----------------------------------------------------------------
def test_the_shared_band_continues_exactly_from_its_state():
    """Two bands, one restored from the other's state (through JSON) mid-way, end the same
    uploads at the same float times."""
    rng = np.random.default_rng(0)
    uploads = [(c, float(rng.uniform(1e4, 1e5)), float(rng.uniform(1e5, 1e7))) for c in range(6)]

    def ends(band: SharedBand, todo) -> list[tuple[float, int]]:
        now, out = 0.0, []
        for client, bits, rate in todo:
            band.advance(1e-3)
            now += 1e-3
            band.start(client, bits, rate)
        while band.n_active:
            dt = band.next_end_in_s()
            band.advance(dt)
            now += dt
            out.append((now, band.end_next()))
        return out

    a, b = SharedBand(), SharedBand()
    for band in (a, b):
        for client, bits, rate in uploads[:3]:
            band.start(client, bits, rate)
        band.advance(2.5e-3)
    restored = SharedBand()
    restored.restore(json.loads(json.dumps(b.state())))
    assert restored.service == b.service and restored.n_active == 3
    assert ends(restored, uploads[3:]) == ends(a, uploads[3:])


def test_plans_round_trip_through_json():
    from wirelessfl.algorithms.fslora.cost import SketchPlan

    base = ClientPlan(client=3, round_index=17, rank=4, ratio=0.1 + 0.2)
    again = client_plan_from_state(json.loads(json.dumps(client_plan_state(base))))
    assert again == base and type(again) is ClientPlan
    sub = SketchPlan(1, 2, 2, 1.0, model_rank=8, index_sets=((0, 5), (3, 7)))
    again = client_plan_from_state(json.loads(json.dumps(client_plan_state(sub))))
    assert again == sub and type(again) is SketchPlan
    with pytest.raises(ValueError, match="is not a ClientPlan"):
        client_plan_from_state({**client_plan_state(base), "class": "wirelessfl.plans:RoundPlan"})
    plan = RoundPlan(9, np.array([5]), 4, 1.0 / 3.0, math.nan, 8)
    again = round_plan_from_state(json.loads(json.dumps(round_plan_state(plan))))
    assert again.round_index == 9 and again.n_scheduled == 8 and math.isnan(again.bound)
    assert again.ratios.tolist() == [1.0 / 3.0] and again.clients.tolist() == [5]


def test_a_message_round_trips_through_a_weights_only_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    from wirelessfl.algorithms.message import IndexSpace, LoraTensors, Message

    g = torch.Generator().manual_seed(1)
    b, a = torch.randn(6, 2, generator=g), torch.randn(2, 5, generator=g)
    message = Message(
        shared={"l.B": b, "l.A": a, "head": torch.randn(3, generator=g)},
        private={"memory": {"l": torch.randn(4, generator=g)}},
        sparse=[IndexSpace(("l.B", "l.A"), 9, 22)],
        diagnostics={"local": torch.randn(2, generator=g)},
        side_bits=64.0,
        lora=[LoraTensors("l", "l.B", "l.A", (0, 2))],
    )
    torch.save(message.state_dict(), tmp_path / "m.pt")
    again = Message.from_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    assert again.sparse == message.sparse and again.lora == message.lora
    assert again.side_bits == 64.0
    for name in ("shared", "diagnostics"):
        got, want = getattr(again, name), getattr(message, name)
        assert list(got) == list(want)
        assert all(torch.equal(got[k], want[k]) for k in want)
    assert torch.equal(again.private["memory"]["l"], message.private["memory"]["l"])
    kw = {"bits_per_value": 32, "count_index": True}
    assert again.payload(**kw) == message.payload(**kw)


def test_a_checkpoint_without_the_engine_state_is_refused_in_one_line():
    """What an older version wrote: no uploads in flight recorded."""
    scenario = small_scenario(server={"mode": "buffered", "buffer_size": 2})
    sim = Simulator(scenario, make_learner(scenario))
    state = sim.state_dict()
    del state["engine"]
    with pytest.raises(UserError) as err:
        sim.load_state_dict({**state, "next_round": 3}, None)
    message = str(err.value)
    assert message.startswith("--resume: the checkpoint of this server.mode: buffered run")
    assert "\n" not in message


def test_the_controller_dispatching_under_faults_resumes_exactly(tmp_path):
    """tsfa choosing who starts (``server.dispatch: controller``) and each ratio, with an energy
    budget, a shared downlink, dropouts and Markov availability: the controller's queues and the
    updates' plans come back from the checkpoint, the resumed tables equal the uninterrupted
    run's, and the energy queues took the energy of the lost updates too (eq. (21)-style
    recursion recomputed here from clients.csv)."""
    budget_j = 300.0  # an update's compute costs about 540 J here
    controller = {
        "name": "tsfa",
        "V": 1.0e-4,
        "d_th_s": 0.05,
        "o_min": 0.05,
        "r_max": 16,
        "energy_budget_j": budget_j,
    }
    overrides = {
        "channel.downlink_rate_bps": 2.0e6,
        "faults.dropout_prob": 0.15,
        "availability.model": "markov",
        "availability.p_on_to_off": 0.05,
        "availability.p_off_to_on": 0.5,
        "selection.available_only": True,
    }  # fmt: skip
    scenario = _network_only(
        "buffered", overrides, controller, buffer_size=3, dispatch="controller", concurrency=10
    )
    full = run_scenario(scenario, tmp_path / "full")
    rounds, clients = full.rounds, full.clients
    assert (clients.status == "dropped").any() and (rounds.queue > 0).any()
    assert clients.ratio[clients.status == "arrived"].min() < 1.0  # the controller decided
    z = np.zeros(scenario.n_clients)
    for t in range(len(rounds)):
        spent = np.zeros(scenario.n_clients)
        mine = clients[clients["round"] == t]
        np.add.at(spent, mine.client, mine.compute_energy_j + mine.transmit_energy_j)
        z = np.maximum(z + spent - budget_j, 0.0)
        assert rounds.energy_queue_mean_j[t] == pytest.approx(z.mean(), rel=1e-12)
    _cut(scenario, tmp_path / "cut", 24)  # the checkpoint after aggregation 20
    resume_run(tmp_path / "cut")
    assert_same_tables(tmp_path / "full", tmp_path / "cut", TABLES)
