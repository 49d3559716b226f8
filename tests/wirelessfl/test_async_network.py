"""Downloads, availability, faults, mobility and traces in the event-driven modes
(docs/simulator.md, "Asynchronous rounds": "Downloads under concurrency" and "Availability and
faults under asynchrony").

An event loop written here (heapq and plain Python, every download's and upload's remaining
bits tracked, each running at R / n_down(t) and B log2(1 + SNR) / n_up(t)) reproduces the
engine's updates, including the lost ones: who was dispatched, dropped, in outage or
unavailable (an availability trace read here as plain intervals, or ``channels``' Markov chain
asked for round t = the aggregations done), cut by ``faults.deadline_s``, when, and the
aggregations' counts. The network-only learner keeps every test within seconds.
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np
import pytest
from scenario_helpers import small_scenario

from channels.availability import MarkovAvailability
from channels.streams import round_generator
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim import run_scenario
from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.sim.setup import build_radio

N = 12
RANK = 4
V = 32
LAYERS = [[64, 64], [64, 32]]
BITS = float(V * RANK * sum(d + ell for d, ell in LAYERS))  # SOFT at ratio 1, up and down
BANDWIDTH_HZ = 200.0  # uploads of ~30-150 s alone: the band's sharing matters
DOWNLINK_BPS = 100.0  # a download of ~290 s alone
SNR_DB = np.linspace(-3.0, 21.0, N)  # client k's SNR, every round
FLOPS_PER_S = [2.0e9 * (1 + (7 * k) % 5) for k in range(N)]  # compute of 540-2,700 s
SEED = 3  # small_scenario's
GAP_S = (6000.0, 9000.0)  # nobody is available then: the slots stay empty


def _availability_intervals(seed: int, horizon_s: float) -> list[list[tuple[float, float]]]:
    """Each client's on-intervals [start, end): alternating on/off runs of 300-4,000 s, none
    inside ``GAP_S``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N):
        t, on, spans = 0.0, bool(rng.random() < 0.7), []
        while t < horizon_s:
            length = float(rng.uniform(300.0, 4000.0))
            if on:
                spans.append((t, t + length))
            t, on = t + length, not on
        clipped = []
        for a, b in spans:  # cut out the gap
            for lo, hi in ((a, min(b, GAP_S[0])), (max(a, GAP_S[1]), b)):
                if hi > lo:
                    clipped.append((lo, hi))
        out.append(clipped)
    return out


def _write_trace(path, intervals) -> None:
    rows = ["client,start_s,end_s"]
    for client, spans in enumerate(intervals):
        rows += [f"{client},{a!r},{b!r}" for a, b in spans]
    path.write_text("\n".join(rows) + "\n")


def _scenario(tmp_path, mode: str, rounds: int, server: dict, **overrides):
    trace = tmp_path / "snr.npy"
    np.save(trace, np.tile(SNR_DB, (rounds, 1)))
    base = {
        "n_clients": N,
        "n_scheduled": 4,
        "rounds": rounds,
        "eval_every": 5,
        "channel": {"bandwidth_hz": BANDWIDTH_HZ, "snr_trace": str(trace)},
        "devices": {
            "kind": "listed",
            "per_client_flops_per_s": FLOPS_PER_S,
            "include_compute": True,
        },
        "controller": {"name": "fixed", "rank": RANK, "r_max": 16},
        "learner.shape.layer_shapes": LAYERS,
        "server": {"mode": mode, **server},
    }
    return small_scenario(**base, **overrides)


class _Reference:
    """The event loop of the module docstring; ``rows`` in clients.csv's order."""

    def __init__(
        self, *, mode, seed, rounds, concurrency, m, deadline_s, downlink_bps, compute_s,
        available, available_only, outage_db, dropout, empty_round_s, cutoff_s,
    ):  # fmt: skip
        self.mode, self.seed, self.rounds, self.c, self.m = mode, seed, rounds, concurrency, m
        self.deadline_s, self.r = deadline_s, downlink_bps
        self.compute_s, self.available = compute_s, available  # (t, time) -> (N,) bool
        self.available_only, self.outage_db, self.dropout = available_only, outage_db, dropout
        self.empty_round_s, self.cutoff_s = empty_round_s, cutoff_s
        self.full_rate = [BANDWIDTH_HZ * math.log2(1.0 + 10.0 ** (db / 10.0)) for db in SNR_DB]
        self.now, self.version, self.j = 0.0, 0, 0
        self.idle, self.benched = list(range(N)), []
        self.busy: dict[int, dict] = {}
        self.down: dict[int, float] = {}  # bits left of the downloads in progress
        self.up: dict[int, float] = {}  # bits left of the uploads on the air
        self.computing: list[tuple[float, int]] = []
        self.buffer: list[dict] = []
        self.lost: list[dict] = []
        self.rows: list[dict] = []
        self.counts: list[dict] = []

    def on(self, client: int) -> bool:
        """Whether ``client`` is available now, in round t = the aggregations done."""
        return self.available is None or bool(self.available(self.version, self.now)[client])

    def lose(self, u: dict, status: str) -> None:
        u["status"], u["lost_s"] = status, self.now
        self.lost.append(u)
        self.benched.append(u["client"])

    def refill(self) -> None:
        while len(self.busy) < self.c:
            pool = [c for c in self.idle if not self.available_only or self.on(c)]
            if not pool:
                return
            rng = round_generator(self.seed, stream="dispatch", round_index=self.j)
            client = pool[int(rng.integers(len(pool)))]
            self.idle.remove(client)
            j, self.j = self.j, self.j + 1
            u = {"client": client, "j": j, "dispatch_s": self.now, "version": self.version,
                 "compute_start_s": math.nan, "upload_start_s": math.nan,
                 "arrival_s": math.nan, "lost_s": math.nan, "staleness": -1}  # fmt: skip
            if not self.on(client):
                self.lose(u, "unavailable")
            elif self.outage_db is not None and SNR_DB[client] < self.outage_db:
                self.lose(u, "outage")
            elif (
                self.dropout > 0
                and round_generator(self.seed, stream="faults", round_index=j).random()
                < self.dropout
            ):
                self.lose(u, "dropped")
            else:
                self.busy[client] = u
                if self.r > 0:
                    self.down[client] = BITS
                else:
                    self.start_compute(u)

    def start_compute(self, u: dict) -> None:
        u["compute_start_s"] = self.now
        heapq.heappush(self.computing, (self.now + self.compute_s[u["client"]], u["client"]))

    def cut(self) -> None:
        """The update in flight longest past its dispatch + cutoff is a straggler."""
        _, _, client = min(
            (u["dispatch_s"] + self.cutoff_s, u["j"], c) for c, u in self.busy.items()
        )
        self.down.pop(client, None)
        self.up.pop(client, None)
        self.computing = [e for e in self.computing if e[1] != client]
        heapq.heapify(self.computing)
        self.lose(self.busy.pop(client), "straggler")
        if self.mode != "semi_sync":
            self.refill()

    def left(self, u: dict) -> bool:
        """Lost as unavailable at the end of a phase; the slot refills (not semi_sync)."""
        if self.on(u["client"]):
            return False
        del self.busy[u["client"]]
        self.lose(u, "unavailable")
        if self.mode != "semi_sync":
            self.refill()
        return True

    def aggregate(self, taken: list[dict]) -> None:
        for u in taken:
            u["round"], u["staleness"] = self.version, self.version - u["version"]
        for u in self.lost:
            u["round"] = self.version
        self.rows += taken + self.lost
        self.counts.append(
            {s: sum(u["status"] == s for u in self.lost) for s in
             ("dropped", "outage", "unavailable", "straggler")}
            | {"t_end_s": self.now, "n": len(taken)}
        )  # fmt: skip
        for client in [u["client"] for u in taken] + self.benched:
            bisect.insort(self.idle, client)
        self.lost, self.benched = [], []
        self.version += 1

    def run(self) -> _Reference:
        deadline = self.deadline_s if self.mode == "semi_sync" else math.inf
        self.refill()
        while self.version < self.rounds:
            n_up, n_down = len(self.up), len(self.down)
            ups = sorted((left * n_up / self.full_rate[c], c) for c, left in self.up.items())
            downs = sorted((left * n_down / self.r, c) for c, left in self.down.items())
            upload_end = self.now + ups[0][0] if ups else math.inf
            download_end = self.now + downs[0][0] if downs else math.inf
            compute_end = self.computing[0][0] if self.computing else math.inf
            cut = math.inf
            if self.cutoff_s is not None and self.busy:
                cut = min(u["dispatch_s"] for u in self.busy.values()) + self.cutoff_s
            next_s = min(upload_end, download_end, compute_end, cut, deadline)
            if math.isinf(next_s):  # stalled: an empty aggregation after empty_round_s
                assert not self.busy
                self.now += self.empty_round_s
                self.aggregate([])
                self.refill()
                continue
            for c in self.up:
                self.up[c] -= self.full_rate[c] / n_up * (next_s - self.now)
            for c in self.down:
                self.down[c] -= self.r / n_down * (next_s - self.now)
            self.now = next_s
            if upload_end == next_s:
                client = ups[0][1]
                del self.up[client]
                u = self.busy[client]
                if self.left(u):
                    continue
                del self.busy[client]
                u["arrival_s"] = self.now
                self.buffer.append(u)
                if self.mode == "async" or (self.mode == "buffered" and len(self.buffer) == self.m):
                    taken, self.buffer = self.buffer, []
                    self.aggregate(taken)
                    self.refill()
                elif self.mode == "buffered":
                    self.refill()
            elif download_end == next_s:
                client = downs[0][1]
                del self.down[client]
                if not self.left(self.busy[client]):
                    self.start_compute(self.busy[client])
            elif compute_end == next_s:
                _, client = heapq.heappop(self.computing)
                u = self.busy[client]
                u["upload_start_s"] = self.now
                if not self.left(u):
                    self.up[client] = BITS
            elif cut == next_s:
                self.cut()
            else:
                taken, self.buffer = self.buffer, []
                self.aggregate(taken)
                deadline = self.now + self.deadline_s
                self.refill()
        return self


def _compute_s(tmp_path) -> list[float]:
    """Each client's compute time, read from a fault-free run (FLOPs / FLOP/s)."""
    res = run_scenario(_scenario(tmp_path, "async", 3, {"concurrency": N}), tmp_path / "c")
    flops = float(res.clients.compute_s.iloc[0]) * FLOPS_PER_S[int(res.clients.client.iloc[0])]
    return [flops / f for f in FLOPS_PER_S]


CASES = {
    "async, downloads": ("async", 30, {"concurrency": 5}, {}, None),
    "buffered, downloads": ("buffered", 10, {"concurrency": 6, "buffer_size": 3}, {}, None),
    "semi_sync, downloads": ("semi_sync", 12, {"concurrency": 5, "deadline_s": 900.0}, {}, None),
    "async, faults": (
        "async", 30, {"concurrency": 4},
        {"faults.dropout_prob": 0.3, "faults.outage_snr_db": 0.0}, None,
    ),
    "buffered, availability": (
        "buffered", 14, {"concurrency": 5, "buffer_size": 2}, {"faults.dropout_prob": 0.1},
        ("trace", False),
    ),
    "async, available only": (
        "async", 30, {"concurrency": 4}, {"faults.outage_snr_db": 0.0}, ("trace", True),
    ),
    "semi_sync, availability": (
        "semi_sync", 16, {"concurrency": 6, "deadline_s": 1000.0}, {}, ("trace", False),
    ),
    "async, Markov": ("async", 30, {"concurrency": 4}, {}, ("markov", False)),
    "buffered, Markov, available only": (
        "buffered", 12, {"concurrency": 5, "buffer_size": 2}, {}, ("markov", True),
    ),
    "async, cutoff": ("async", 30, {"concurrency": 5}, {"faults.deadline_s": 2500.0}, None),
    "buffered, cutoff and availability": (
        "buffered", 14, {"concurrency": 6, "buffer_size": 2}, {"faults.deadline_s": 2200.0},
        ("trace", True),
    ),
    "buffered, short cutoff": (  # cuts in every phase, most while downloading
        "buffered", 10, {"concurrency": 10, "buffer_size": 2}, {"faults.deadline_s": 1500.0},
        None,
    ),
    "semi_sync, cutoff and faults": (
        "semi_sync", 12, {"concurrency": 6, "deadline_s": 800.0},
        {"faults.deadline_s": 3200.0, "faults.dropout_prob": 0.2}, None,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_an_independent_event_loop_gives_the_same_updates_and_losses(tmp_path, case):
    mode, rounds, server, faults, availability = CASES[case]
    overrides = {
        "channel.downlink_rate_bps": DOWNLINK_BPS,
        "availability.empty_round_s": 250.0,
        **faults,
    }
    available, available_only, model = None, False, None
    if availability is not None:
        model, available_only = availability
        overrides |= {"availability.model": model, "selection.available_only": available_only}
    if model == "trace":
        intervals = _availability_intervals(7, horizon_s=60000.0)
        _write_trace(tmp_path / "avail.csv", intervals)
        overrides["availability.trace"] = str(tmp_path / "avail.csv")

        def available(t, time_s):  # read here from the intervals: time only
            return np.array([any(a <= time_s < b for a, b in spans) for spans in intervals])

    if model == "markov":  # the chain moves once per round t (channels.availability)
        overrides |= {"availability.p_on_to_off": 0.4, "availability.p_off_to_on": 0.3}
        chain = MarkovAvailability(SEED, N, p_off_to_on=0.3, p_on_to_off=0.4)

        def available(t, time_s):
            return chain.available(t, time_s)

    sc = _scenario(tmp_path, mode, rounds, server, **overrides)
    assert sc.seed == SEED
    res = run_scenario(sc, tmp_path / "run")
    ref = _Reference(
        mode=mode, seed=sc.seed, rounds=rounds, concurrency=server["concurrency"],
        m=server.get("buffer_size", 1), deadline_s=server.get("deadline_s"),
        downlink_bps=DOWNLINK_BPS, compute_s=_compute_s(tmp_path), available=available,
        available_only=available_only, outage_db=faults.get("faults.outage_snr_db"),
        dropout=faults.get("faults.dropout_prob", 0.0), empty_round_s=250.0,
        cutoff_s=faults.get("faults.deadline_s"),
    ).run()  # fmt: skip
    got = res.clients
    assert got.client.tolist() == [u["client"] for u in ref.rows]
    assert got.status.tolist() == [u.get("status", "arrived") for u in ref.rows]
    assert got["round"].tolist() == [u["round"] for u in ref.rows]
    assert got.staleness.tolist() == [u["staleness"] for u in ref.rows]
    for column, ref_column in (
        ("dispatch_s", "dispatch_s"),
        ("upload_start_s", "upload_start_s"),
        ("arrival_s", "arrival_s"),
        ("lost_s", "lost_s"),
    ):
        np.testing.assert_allclose(
            got[column], [u[ref_column] for u in ref.rows], rtol=1e-9, atol=1e-9
        )
    np.testing.assert_allclose(
        got.download_s,
        [u["compute_start_s"] - u["dispatch_s"] for u in ref.rows],
        rtol=1e-9,
        atol=1e-9,
    )
    rounds_table = res.rounds
    np.testing.assert_allclose(rounds_table.t_end_s, [c["t_end_s"] for c in ref.counts], rtol=1e-9)
    for column, key in (("n_dropped", "dropped"), ("n_outage", "outage"),
                        ("n_unavailable", "unavailable"), ("n_stragglers", "straggler"),
                        ("n_arrived", "n")):  # fmt: skip
        assert rounds_table[column].tolist() == [c[key] for c in ref.counts], column
    arrived = got[got.status == "arrived"]
    assert (arrived.bits == BITS).all() and (arrived.bits_down == BITS).all()
    # downloads overlap: some took longer than alone (R shared), none shorter
    assert (arrived.download_s >= BITS / DOWNLINK_BPS * (1 - 1e-12)).all()
    assert (arrived.download_s > BITS / DOWNLINK_BPS * 1.5).any()
    if faults or availability is not None:
        assert (got.status != "arrived").any()  # the case exercises losses
    ends = res.events[res.events.kind == "download_end"]
    ended = got[got.download_s.notna()]
    pairs = set(zip(ends.client, ends.time_s, strict=True))
    assert all(
        (c, s + d) in pairs or any(k == c and abs(t - s - d) < 1e-6 for k, t in pairs)
        for c, s, d in zip(ended.client, ended.dispatch_s, ended.download_s, strict=True)
    )


def test_losses_of_each_kind_and_their_energy(tmp_path):
    """Availability with clients leaving mid-way, outage and dropout together: every kind of
    loss happens, and the energy is what the lost update spent (compute once its compute
    ended, transmit power x upload time once its upload ended)."""
    intervals = _availability_intervals(11, horizon_s=60000.0)
    _write_trace(tmp_path / "avail.csv", intervals)
    sc = _scenario(
        tmp_path, "async", 40, {"concurrency": 5},
        **{
            "channel.downlink_rate_bps": DOWNLINK_BPS,
            "availability.model": "trace",
            "availability.trace": str(tmp_path / "avail.csv"),
            "faults.dropout_prob": 0.2,
            "faults.outage_snr_db": -1.0,
            "faults.deadline_s": 2600.0,
            "devices.energy.joules_per_flop": 1.0e-10,
        },
    )  # fmt: skip
    learner = make_learner(sc)
    res = run_scenario(sc, tmp_path / "run", learner=learner)
    c, rounds, ev = res.clients, res.rounds, res.events
    assert len(learner._arrivals) == rounds.n_in_flight.iloc[-1]  # lost ones forgotten
    assert {"arrived", "dropped", "outage", "unavailable", "straggler"} <= set(c.status)
    at_dispatch = c[c.status.isin(["dropped", "outage"]) | (c.bits == 0)]
    assert (at_dispatch.compute_energy_j == 0).all() and (at_dispatch.transmit_energy_j == 0).all()
    in_flight = c[(c.status == "unavailable") & (c.bits > 0)]
    assert len(in_flight) > 0  # some left while downloading, computing or uploading
    full_j = c.compute_s * _flops_per_s(c) * 1e-10  # FLOPs x J/FLOP
    computed = c.upload_start_s.notna()
    np.testing.assert_allclose(c.compute_energy_j[computed], full_j[computed], rtol=1e-12)
    compute_start_s = c.dispatch_s + c.download_s
    cut = (c.status == "straggler") & ~computed & c.download_s.notna()  # cut while computing
    assert cut.any()
    np.testing.assert_allclose(
        c.compute_energy_j[cut],
        full_j[cut] * (c.lost_s - compute_start_s)[cut] / c.compute_s[cut],
        rtol=1e-9,
    )
    assert (c.compute_energy_j[c.download_s.isna()] == 0).all()  # never computed
    sent = c.upload_start_s.notna()
    end_s = c.arrival_s.fillna(c.lost_s)  # an upload lost or cut counts to its loss
    assert ((c.status != "arrived") & sent).any()
    np.testing.assert_allclose(
        c.transmit_energy_j[sent],
        c.tx_power_w[sent] * (end_s - c.upload_start_s)[sent],
        rtol=1e-12,
    )
    assert (c.transmit_energy_j[~sent] == 0).all()
    per_round = c.groupby("round")[["compute_energy_j", "transmit_energy_j"]].sum()
    per_round = per_round.reindex(rounds["round"], fill_value=0.0)
    np.testing.assert_allclose(rounds.compute_energy_j, per_round.compute_energy_j, rtol=1e-12)
    np.testing.assert_allclose(rounds.transmit_energy_j, per_round.transmit_energy_j, rtol=1e-12)
    # each loss is one event of its kind at its time; the counts are the rounds' columns
    for status, kind, column in (("dropped", "drop", "n_dropped"), ("outage", "outage", "n_outage"),
                                 ("unavailable", "unavailable", "n_unavailable"),
                                 ("straggler", "straggler", "n_stragglers")):  # fmt: skip
        assert (ev.kind == kind).sum() == (c.status == status).sum() == rounds[column].sum()
    # a dispatch below the outage threshold is always an outage (the trace's SNR is fixed)
    assert (c[c.status == "outage"].snr_db < -1.0).all()
    assert (c[c.status == "arrived"].snr_db >= -1.0).all()


def _flops_per_s(rows) -> np.ndarray:
    """(n,) the FLOP/s of the rows' clients."""
    return np.array([FLOPS_PER_S[k] for k in rows.client], dtype=float)


# ---- mobility and traces: each update's SNR is the channel's row t at its dispatch -----------
def test_mobility_snr_is_the_channel_at_the_dispatch_time(tmp_path):
    moving = {
        "channel.mean_snr_db": None,
        "channel.d_max_m": 300.0,
        "channel.path_loss.model": "3gpp_umi",
        "channel.path_loss.carrier_ghz": 3.5,
        "mobility.model": "random_waypoint",
        "mobility.speed_min_mps": 5.0,
        "mobility.speed_max_mps": 15.0,
        "devices.include_compute": True,
        "devices.flops_per_s": 1.0e9,  # ~0.3 s of compute: the clients move between dispatches
        "channel.downlink_rate_bps": 1.0e5,
        "server": {"mode": "buffered", "concurrency": 6, "buffer_size": 2},
        "rounds": 15,
    }
    sc = small_scenario(**moving)
    c = run_scenario(sc, tmp_path / "run").clients
    channel = ChannelProcess(build_radio(sc), sc.channel.block_rounds)  # a fresh one
    at_dispatch = [
        10.0 * math.log10(channel.observe(v, s)[0][k])
        for v, s, k in zip(c.version, c.dispatch_s, c.client, strict=True)
    ]
    np.testing.assert_allclose(c.snr_db, at_dispatch, rtol=0, atol=1e-9)
    at_zero = [
        10.0 * math.log10(channel.observe(v, 0.0)[0][k])
        for v, k in zip(c.version, c.client, strict=True)
    ]
    moved = np.abs(np.asarray(at_zero) - c.snr_db.to_numpy()) > 1e-6
    assert moved.sum() > len(c) // 2  # the positions at the dispatch time, not at time 0
    assert c.version.nunique() > 5 and c.dispatch_s.nunique() > 10


def test_an_snr_trace_gives_row_t_of_the_dispatch(tmp_path):
    rounds = 20
    trace_db = np.random.default_rng(5).uniform(-5.0, 25.0, size=(rounds, 20))
    np.save(tmp_path / "snr.npy", trace_db)
    sc = small_scenario(
        **{
            "channel.mean_snr_db": None,
            "channel.snr_trace": str(tmp_path / "snr.npy"),
            "faults.outage_snr_db": 0.0,
            "server": {"mode": "async", "concurrency": 5},
            "rounds": rounds,
        }
    )
    c = run_scenario(sc, tmp_path / "run").clients
    np.testing.assert_allclose(
        c.snr_db, trace_db[c.version.to_numpy(), c.client.to_numpy()], rtol=0, atol=1e-9
    )
    assert c.version.nunique() > 10
    assert (c[c.status == "outage"].snr_db < 0.0).all() and (c.status == "outage").any()
    assert (c[c.status == "arrived"].snr_db >= 0.0).all()


# ---- what the event-driven modes do not read: one line each -----------------------------------
@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("faults.redistribute_unused", True, "the shared band already divides the whole band "
         "among the uploads on the air, so no share idles"),
        ("selection.method", "best_snr", "a slot that frees takes one client drawn by "
         "server.dispatch, not K of N"),
    ],
)  # fmt: skip
def test_what_is_not_read_is_refused_in_one_line(key, value, why):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"server.mode": "buffered", key: value})
    assert str(err.value) == (
        f"{key}: not read with server.mode: buffered ({why}); remove it or use server.mode: sync"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"channel.downlink_rate_bps": 1.0e6},
        {"faults.dropout_prob": 0.2, "faults.outage_snr_db": 3.0, "faults.deadline_s": 9.0},
        {"availability.model": "markov", "selection.available_only": True},
    ],
)
def test_the_keys_now_modelled_load_in_every_event_driven_mode(overrides):
    for mode in ("async", "buffered"):
        small_scenario(**{"server.mode": mode, **overrides})
    small_scenario(**{"server.mode": "semi_sync", "server.deadline_s": 2.0, **overrides})


# ---- real training ---------------------------------------------------------------------------
@pytest.mark.usefixtures("one_torch_thread")
def test_real_training_with_downloads_availability_and_faults(tmp_path):
    """fedit trains its real updates while clients drop, fall into outage and leave mid-way;
    a lost update is forgotten by the learner, never aggregated later."""
    pytest.importorskip("torch")
    from scenario_helpers import digits_scenario

    sc = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "rounds": 8,
            "eval_every": 4,
            "channel.downlink_rate_bps": 2.0e6,
            "availability": {"model": "markov", "p_on_to_off": 0.5, "p_off_to_on": 0.5},
            "faults": {"dropout_prob": 0.2, "outage_snr_db": 3.0},
            "server": {"mode": "buffered", "concurrency": 3, "buffer_size": 2},
            "output.clients": True,
        }
    )
    learner = make_learner(sc)
    result = run_scenario(sc, tmp_path / "run", learner=learner)
    rounds, c = result.rounds, result.clients
    assert len(rounds) == 8 and np.isfinite(rounds.loss[rounds.n_arrived > 0]).all()
    assert (c.status == "arrived").sum() == rounds.n_arrived.sum() > 0
    assert (
        (c.status != "arrived").sum()
        == (rounds.n_dropped + rounds.n_outage + rounds.n_unavailable).sum()
        > 0
    )
    assert (c[c.status == "arrived"].download_s > 0).all()
    # the learner keeps exactly the updates still in flight (dispatched, not aggregated)
    assert len(learner._pending) == rounds.n_in_flight.iloc[-1]
    assert ((c.status == "unavailable") & (c.bits > 0)).any()  # some left mid-way


def test_a_run_with_availability_and_faults_is_repeatable(tmp_path):
    """Every draw is addressed by (seed, stream, index): the same scenario gives the same
    tables, and another seed other ones."""
    overrides = {
        "channel.downlink_rate_bps": DOWNLINK_BPS,
        "availability": {"model": "markov", "p_on_to_off": 0.4, "p_off_to_on": 0.3},
        "faults": {"dropout_prob": 0.2, "outage_snr_db": 0.0, "deadline_s": 2500.0},
    }
    server = {"concurrency": 5, "buffer_size": 2}
    runs = [
        run_scenario(_scenario(tmp_path, "buffered", 12, server, **overrides, seed=seed),
                     tmp_path / f"run{i}")
        for i, seed in enumerate((3, 3, 4))
    ]  # fmt: skip
    first, again, other = runs
    assert first.clients.equals(again.clients) and first.events.equals(again.events)
    assert not first.clients.client.equals(other.clients.client)
