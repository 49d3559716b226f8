"""One LTE cell with EPC in ns-3, its uploads advanced round by round from Python (the ``ns3``
extra; docs/simulator.md, "Packet-level uploads with ns-3").

The cell: one eNB at the origin, N UEs at given positions [m], a remote host (the server)
behind the PGW on a point-to-point link (100 Gb/s, 1 ms by default: the core is not the
bottleneck). Each UE has one sink port on the server. A round's clients each send their bytes
to it as one TCP bulk transfer (``BulkSendApplication``, a new socket a round) or a UDP
stream at a constant rate; the round ends when the server has received every client's bytes
(or at a cap). The simulation is one ns-3 run per process, advanced round by round: the clock
goes on, so the RLC, HARQ and scheduler state of one round carries into the next, as in a cell.

Defaults that are bad for bulk uploads are set and named in :class:`LteSettings`: TCP segments
of 1,400 bytes (ns-3: 536), RLC AM (ns-3 with EPC: UM with a 10 KB buffer that drops a bulk
transfer's bursts), 23 dBm UEs with closed-loop power control off, log-distance path loss
(ns-3: Friis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from channels.ns3_loader import load_ns

__all__ = ["LTE_BANDWIDTHS_RB", "LteCell", "LteSettings", "LteUploads"]

#: the uplink bandwidths LTE has [RB] (1.4, 3, 5, 10, 15, 20 MHz)
LTE_BANDWIDTHS_RB = (6, 15, 25, 50, 75, 100)
_SCHEDULERS = {"pf": "ns3::PfFfMacScheduler", "rr": "ns3::RrFfMacScheduler"}
_RLC = {"am": "RlcAmAlways", "um": "RlcUmAlways"}
#: the first sink port
_PORT = 5000
#: simulated time the UEs are given to attach before the first round [s]
ATTACH_S = 0.5


@dataclass(frozen=True)
class LteSettings:
    """An ns-3 LTE cell's settings (module docstring for the defaults' reasons)."""

    bandwidth_rb: int = 25
    scheduler: str = "pf"
    rlc_mode: str = "am"
    rlc_buffer_bytes: int = 10 * 1024 * 1024
    tcp_segment_bytes: int = 1400
    ue_power_dbm: float = 23.0
    pathloss_exponent: float = 3.0
    reference_loss_db: float = 46.6777  # log-distance at 1 m (ns-3's default, 2.4 GHz Friis)
    enb_height_m: float = 25.0
    transport: str = "tcp"
    udp_rate_bps: float = 50.0e6
    backhaul_rate: str = "100Gb/s"
    backhaul_delay: str = "1ms"

    def __post_init__(self) -> None:
        if self.bandwidth_rb not in LTE_BANDWIDTHS_RB:
            raise ValueError(f"bandwidth_rb: one of {LTE_BANDWIDTHS_RB}, got {self.bandwidth_rb}")
        for name, value, choices in (
            ("scheduler", self.scheduler, _SCHEDULERS),
            ("rlc_mode", self.rlc_mode, _RLC),
            ("transport", self.transport, ("tcp", "udp")),
        ):
            if value not in choices:
                raise ValueError(f"{name}: one of {', '.join(choices)}, got {value!r}")


@dataclass
class LteUploads:
    """One round's uploads: ``upload_s`` (m,) from the round's start to the last byte at the
    server (inf: not by the cap), ``bytes_received`` (m,), ``retransmissions`` (m,) TCP
    retransmissions, ``mean_mcs`` (m,) of the eNB's uplink grants to the UE (NaN: none)."""

    upload_s: np.ndarray
    bytes_received: np.ndarray
    retransmissions: np.ndarray
    mean_mcs: np.ndarray


class LteCell:
    """The cell of ``settings`` with UEs at ``positions_m`` (N, 2) [m] around the eNB, seeded by
    ``seed``. One per process at a time (ns-3's simulator is a singleton): :meth:`close` it."""

    def __init__(self, settings: LteSettings, positions_m: np.ndarray, seed: int) -> None:
        self.ns, self.handlers = load_ns()
        self.settings = settings
        self.positions_m = np.asarray(positions_m, dtype=float)
        self._round = 0
        self._build(int(seed))

    # ---- the topology -----------------------------------------------------------------------
    def _build(self, seed: int) -> None:
        ns, s = self.ns, self.settings
        self.handlers.Reset()
        ns.RngSeedManager.SetSeed(seed % (2**31 - 1) + 1)
        ns.RngSeedManager.SetRun(1)
        defaults = {
            "ns3::TcpSocket::SegmentSize": ns.UintegerValue(s.tcp_segment_bytes),
            "ns3::LteEnbRrc::EpsBearerToRlcMapping": ns.StringValue(_RLC[s.rlc_mode]),
            "ns3::LteRlcAm::MaxTxBufferSize": ns.UintegerValue(s.rlc_buffer_bytes),
            "ns3::LteRlcUm::MaxTxBufferSize": ns.UintegerValue(s.rlc_buffer_bytes),
            "ns3::LteUePhy::TxPower": ns.DoubleValue(s.ue_power_dbm),
            "ns3::LteUePowerControl::ClosedLoop": ns.BooleanValue(False),
            "ns3::LteUePowerControl::Pcmax": ns.DoubleValue(s.ue_power_dbm),
        }
        for key, value in defaults.items():
            ns.Config.SetDefault(key, value)
        lte = ns.CreateObject[ns.LteHelper]()
        epc = ns.CreateObject[ns.PointToPointEpcHelper]()
        lte.SetEpcHelper(epc)
        lte.SetSchedulerType(_SCHEDULERS[s.scheduler])
        lte.SetAttribute("PathlossModel", ns.StringValue("ns3::LogDistancePropagationLossModel"))
        lte.SetPathlossModelAttribute("Exponent", ns.DoubleValue(s.pathloss_exponent))
        lte.SetPathlossModelAttribute("ReferenceLoss", ns.DoubleValue(s.reference_loss_db))
        lte.SetEnbDeviceAttribute("UlBandwidth", ns.UintegerValue(s.bandwidth_rb))
        lte.SetEnbDeviceAttribute("DlBandwidth", ns.UintegerValue(s.bandwidth_rb))
        remote = ns.NodeContainer()
        remote.Create(1)
        internet = ns.InternetStackHelper()
        internet.Install(remote)
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(s.backhaul_rate))
        p2p.SetChannelAttribute("Delay", ns.StringValue(s.backhaul_delay))
        link = p2p.Install(epc.GetPgwNode(), remote.Get(0))
        ipv4 = ns.Ipv4AddressHelper()
        ipv4.SetBase(ns.Ipv4Address("1.0.0.0"), ns.Ipv4Mask("255.0.0.0"))
        self.server_address = ipv4.Assign(link).GetAddress(1)
        routing = ns.Ipv4StaticRoutingHelper()
        server_routes = routing.GetStaticRouting(remote.Get(0).GetObject[ns.Ipv4]())
        server_routes.AddNetworkRouteTo(ns.Ipv4Address("7.0.0.0"), ns.Ipv4Mask("255.0.0.0"), 1)
        enb, ues = ns.NodeContainer(), ns.NodeContainer()
        enb.Create(1)
        ues.Create(len(self.positions_m))
        places = ns.CreateObject[ns.ListPositionAllocator]()
        places.Add(ns.Vector(0.0, 0.0, s.enb_height_m))
        for x, y in self.positions_m:
            places.Add(ns.Vector(float(x), float(y), 1.5))
        mobility = ns.MobilityHelper()
        mobility.SetPositionAllocator(places)
        mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
        mobility.Install(enb)
        mobility.Install(ues)
        enb_devices, ue_devices = lte.InstallEnbDevice(enb), lte.InstallUeDevice(ues)
        internet.Install(ues)
        epc.AssignUeIpv4Address(ue_devices)
        for i in range(ues.GetN()):
            routes = routing.GetStaticRouting(ues.Get(i).GetObject[ns.Ipv4]())
            routes.SetDefaultRoute(epc.GetUeDefaultGatewayAddress(), 1)
        lte.Attach(ue_devices, enb_devices.Get(0))
        self.handlers.HookMac(enb_devices.Get(0).GetObject[ns.LteEnbNetDevice]().GetMac())
        self._rnti = [
            ue_devices.Get(i).GetObject[ns.LteUeNetDevice]().GetRrc() for i in range(ues.GetN())
        ]
        factory = "ns3::TcpSocketFactory" if s.transport == "tcp" else "ns3::UdpSocketFactory"
        for i in range(ues.GetN()):
            any_address = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), _PORT + i).ConvertTo()
            sinks = ns.PacketSinkHelper(factory, any_address).Install(remote.Get(0))
            sinks.Start(ns.Seconds(0.0))
            self.handlers.HookSink(sinks.Get(0).GetObject[ns.PacketSink](), i)
        self._ues, self._factory = ues, factory
        self._lte, self._epc = lte, epc  # keep the helpers (and what they own) alive
        # the UEs attach (random access, RRC connection, default bearer) before the first
        # round: a TCP SYN sent earlier is dropped and resent only after ConnTimeout (3 s)
        self.ns.Simulator.Stop(self.ns.Seconds(ATTACH_S))
        self.ns.Simulator.Run()

    # ---- a round ----------------------------------------------------------------------------
    def now_s(self) -> float:
        """The ns-3 clock [s]."""
        return float(self.ns.Simulator.Now().GetSeconds())

    def upload(self, clients: np.ndarray, n_bytes: np.ndarray, cap_s: float) -> LteUploads:
        """The round's uploads of ``n_bytes`` (m,) from the UEs ``clients`` (m,), started now
        (plus 1 ms, the apps' start), until all have arrived or ``cap_s`` [s] passed."""
        h = self.handlers
        clients, n_bytes = np.asarray(clients, dtype=int), np.asarray(n_bytes, dtype=np.int64)
        start = self.now_s() + 1e-3
        before_rx = {int(c): int(h.rx_bytes[int(c)]) for c in clients}
        before_retx = {int(c): int(h.retransmissions[int(c)]) for c in clients}
        before_grants = {int(r): (int(n), int(h.mcs_sum[r])) for r, n in h.grants}
        for c, b in zip(clients.tolist(), n_bytes.tolist(), strict=True):
            h.Expect(c, b)
            self._start_app(c, b, start)
        h.RunFor(cap_s + 1e-3)
        rntis = {int(c): int(self._rnti[int(c)].GetRnti()) for c in clients}  # attached by now
        upload = np.full(len(clients), math.inf)
        got, retx, mcs = (np.zeros(len(clients)) for _ in range(3))
        for k, c in enumerate(clients.tolist()):
            if h.done_s.count(c):
                upload[k] = float(h.done_s[c]) - start
            got[k] = int(h.rx_bytes[c]) - before_rx[c]
            retx[k] = int(h.retransmissions[c]) - before_retx[c]
            was = before_grants.get(rntis[c], (0, 0))
            grants = int(h.grants[rntis[c]]) - was[0]
            total = int(h.mcs_sum[rntis[c]]) - was[1]
            mcs[k] = total / grants if grants else math.nan
        self._round += 1
        return LteUploads(upload, got, retx, mcs)

    def _start_app(self, client: int, n_bytes: int, start_s: float) -> None:
        ns, s = self.ns, self.settings
        to = ns.InetSocketAddress(self.server_address, _PORT + client).ConvertTo()
        if s.transport == "tcp":
            helper = ns.BulkSendHelper(self._factory, to)
            helper.SetAttribute("MaxBytes", ns.UintegerValue(n_bytes))
        else:
            helper = ns.OnOffHelper(self._factory, to)
            helper.SetConstantRate(ns.DataRate(int(s.udp_rate_bps)), s.tcp_segment_bytes)
            helper.SetAttribute("MaxBytes", ns.UintegerValue(n_bytes))
        apps = helper.Install(self._ues.Get(client))
        # an application added while the simulation runs starts after its start "time" as a
        # delay from now (Node::AddApplication schedules it so), not at that absolute time
        delay_s = start_s - self.now_s()
        apps.Start(ns.Seconds(delay_s))
        if s.transport == "tcp":
            app = apps.Get(0).GetObject[ns.BulkSendApplication]()
            self.handlers.ScheduleHook(app, client, delay_s + 1e-6)

    def close(self) -> None:
        """End the ns-3 run (its simulator can then be built again)."""
        self.ns.Simulator.Destroy()
