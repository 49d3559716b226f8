"""What the ns-3 cells share (the ``ns3`` extra; docs/simulator.md, "Packet-level uploads with
ns-3"): a server with one sink port per client, uploads as TCP bulk transfers or UDP streams,
and one ns-3 run per process advanced round by round.

A subclass builds its radio (:meth:`Ns3Cell._build`: the clients' nodes, the server's node and
address) and may report the MAC's MCS (:meth:`Ns3Cell._mcs_snapshot`, :meth:`Ns3Cell._mean_mcs`).
Each round's clients send their bytes on new sockets; the round ends when the server has every
client's bytes (or at a cap). The clock goes on between rounds, so MAC, RLC and scheduler state
carries over. An application added while ns-3 runs starts after its start "time" taken as a
delay from now (``Node::AddApplication`` schedules it so), not at that absolute time.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from channels.ns3_loader import load_ns

__all__ = ["Ns3Cell", "Ns3Transport", "Ns3Uploads"]

#: the first sink port
_PORT = 5000


@dataclass(frozen=True)
class Ns3Transport:
    """How the uploads travel: ``transport`` tcp | udp, TCP segments (and UDP datagrams) of
    ``segment_bytes`` (ns-3's TCP default, 536, is small for bulk uploads), UDP at
    ``udp_rate_bps``."""

    transport: str = "tcp"
    segment_bytes: int = 1400
    udp_rate_bps: float = 50.0e6

    def __post_init__(self) -> None:
        if self.transport not in ("tcp", "udp"):
            raise ValueError(f"transport: one of tcp, udp, got {self.transport!r}")


@dataclass
class Ns3Uploads:
    """One round's uploads: ``upload_s`` (m,) from the round's start to the last byte at the
    server (inf: not by the cap), ``bytes_received`` (m,), ``retransmissions`` (m,) TCP
    retransmissions, ``mean_mcs`` (m,) of the MAC's uplink transmissions (NaN: not reported)."""

    upload_s: np.ndarray
    bytes_received: np.ndarray
    retransmissions: np.ndarray
    mean_mcs: np.ndarray


class Ns3Cell(ABC):
    """A cell of ``settings`` (an :class:`Ns3Transport`) with clients at ``positions_m`` (N, 2)
    [m] around its base station, seeded by ``seed``. One per process at a time (ns-3's
    simulator is a singleton): :meth:`close` it."""

    #: simulated time the clients get to attach (associate) before the first round [s]; then
    #: the warm-up goes on in steps of ``WARM_UP_STEP_S`` until every client is attached, up to
    #: ``MAX_WARM_UP_S`` (a client still out then never delivers)
    WARM_UP_S = 0.5
    WARM_UP_STEP_S = 0.1
    MAX_WARM_UP_S = 10.0

    def __init__(self, settings: Any, positions_m: np.ndarray, seed: int) -> None:
        self.ns, self.handlers = load_ns()
        self.settings = settings
        self.positions_m = np.asarray(positions_m, dtype=float)
        self.ns.Simulator.Destroy()  # a run the process left open (one cell at a time)
        self.handlers.Reset()
        self.ns.RngSeedManager.SetSeed(int(seed) % (2**31 - 1) + 1)
        self.ns.RngSeedManager.SetRun(1)
        self.ns.Config.SetDefault(
            "ns3::TcpSocket::SegmentSize", self.ns.UintegerValue(settings.segment_bytes)
        )
        self._clients, server, self.server_address = self._build()
        tcp = settings.transport == "tcp"
        self._factory = "ns3::TcpSocketFactory" if tcp else "ns3::UdpSocketFactory"
        for i in range(self._clients.GetN()):
            here = self.ns.InetSocketAddress(self.ns.Ipv4Address.GetAny(), _PORT + i).ConvertTo()
            sinks = self.ns.PacketSinkHelper(self._factory, here).Install(server)
            sinks.Start(self.ns.Seconds(0.0))
            self.handlers.HookSink(sinks.Get(0).GetObject[self.ns.PacketSink](), i)
        self._advance(self.WARM_UP_S)
        while not all(self._attached()) and self.now_s() < self.MAX_WARM_UP_S:
            self._advance(self.WARM_UP_STEP_S)

    def _advance(self, duration_s: float) -> None:
        """Run the cell for ``duration_s`` [s] of simulated time."""
        self.ns.Simulator.Stop(self.ns.Seconds(duration_s))
        self.ns.Simulator.Run()

    @abstractmethod
    def _build(self) -> tuple[Any, Any, Any]:
        """(the clients' NodeContainer in index order, the server's node, its Ipv4Address)."""

    @abstractmethod
    def _attached(self) -> list[bool]:
        """(N,) whether each client is attached to the base station (can send) now."""

    def _mcs_snapshot(self) -> Any:
        """The MAC's MCS counters before a round (None: not reported)."""
        return None

    def _mean_mcs(self, clients: list[int], before: Any) -> np.ndarray:
        """(m,) the clients' mean MCS this round (NaN: not reported)."""
        return np.full(len(clients), math.nan)

    def now_s(self) -> float:
        """The ns-3 clock [s]."""
        return float(self.ns.Simulator.Now().GetSeconds())

    def upload(self, clients: np.ndarray, n_bytes: np.ndarray, cap_s: float) -> Ns3Uploads:
        """The round's uploads of ``n_bytes`` (m,) from the ``clients`` (m,), started now
        (plus 1 ms), until all have arrived or ``cap_s`` [s] passed."""
        h = self.handlers
        ids = np.asarray(clients, dtype=int).tolist()
        sizes = np.asarray(n_bytes, dtype=np.int64).tolist()
        start = self.now_s() + 1e-3
        before_rx = {c: int(h.rx_bytes[c]) for c in ids}
        before_retx = {c: int(h.retransmissions[c]) for c in ids}
        before_mcs = self._mcs_snapshot()
        for c, b in zip(ids, sizes, strict=True):
            h.Expect(c, b)
            self._start_app(c, b, 1e-3)
        h.RunFor(cap_s + 1e-3)
        upload = np.array([float(h.done_s[c]) - start if h.done_s.count(c) else math.inf
                           for c in ids])  # fmt: skip
        got = np.array([int(h.rx_bytes[c]) - before_rx[c] for c in ids], dtype=float)
        retx = np.array([int(h.retransmissions[c]) - before_retx[c] for c in ids], dtype=float)
        return Ns3Uploads(upload, got, retx, self._mean_mcs(ids, before_mcs))

    def _start_app(self, client: int, n_bytes: int, delay_s: float) -> None:
        ns, s = self.ns, self.settings
        to = ns.InetSocketAddress(self.server_address, _PORT + client).ConvertTo()
        if s.transport == "tcp":
            helper = ns.BulkSendHelper(self._factory, to)
        else:
            helper = ns.OnOffHelper(self._factory, to)
            helper.SetConstantRate(ns.DataRate(int(s.udp_rate_bps)), s.segment_bytes)
        helper.SetAttribute("MaxBytes", ns.UintegerValue(n_bytes))
        apps = helper.Install(self._clients.Get(client))
        apps.Start(ns.Seconds(delay_s))  # a delay from now (module docstring)
        if s.transport == "tcp":
            app = apps.Get(0).GetObject[ns.BulkSendApplication]()
            self.handlers.ScheduleHook(app, client, delay_s + 1e-6)

    def close(self) -> None:
        """End the ns-3 run (its simulator can then be built again)."""
        self.ns.Simulator.Destroy()
