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
from typing import Any

import numpy as np

from channels.ns3_cell import Ns3Cell, Ns3Transport

__all__ = ["LTE_BANDWIDTHS_RB", "LteCell", "LteSettings"]

#: the uplink bandwidths LTE has [RB] (1.4, 3, 5, 10, 15, 20 MHz)
LTE_BANDWIDTHS_RB = (6, 15, 25, 50, 75, 100)
_SCHEDULERS = {"pf": "ns3::PfFfMacScheduler", "rr": "ns3::RrFfMacScheduler"}
_RLC = {"am": "RlcAmAlways", "um": "RlcUmAlways"}


@dataclass(frozen=True)
class LteSettings(Ns3Transport):
    """An ns-3 LTE cell's settings (module docstring for the defaults' reasons)."""

    bandwidth_rb: int = 25
    scheduler: str = "pf"
    rlc_mode: str = "am"
    rlc_buffer_bytes: int = 10 * 1024 * 1024
    ue_power_dbm: float = 23.0
    pathloss_exponent: float = 3.0
    reference_loss_db: float = 46.6777  # log-distance at 1 m (ns-3's default, 2.4 GHz Friis)
    noise_figure_db: float = 5.0  # the eNB receiver's (ns-3's default)
    enb_height_m: float = 25.0
    ue_height_m: float = 1.5
    backhaul_rate: str = "100Gb/s"
    backhaul_delay: str = "1ms"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bandwidth_rb not in LTE_BANDWIDTHS_RB:
            raise ValueError(f"bandwidth_rb: one of {LTE_BANDWIDTHS_RB}, got {self.bandwidth_rb}")
        for name, value, choices in (
            ("scheduler", self.scheduler, _SCHEDULERS),
            ("rlc_mode", self.rlc_mode, _RLC),
        ):
            if value not in choices:
                raise ValueError(f"{name}: one of {', '.join(choices)}, got {value!r}")


class LteCell(Ns3Cell):
    """The LTE cell of ``settings`` (:class:`LteSettings`) with UEs at ``positions_m`` (N, 2)
    [m] around the eNB, seeded by ``seed``; the UEs attach (random access, RRC, the default
    bearer: a TCP SYN sent earlier is dropped and resent only after ns-3's 3 s connection
    timeout) in the cell's warm-up, which lasts until every UE is connected."""

    def _build(self) -> tuple[Any, Any, Any]:
        ns, s = self.ns, self.settings
        defaults = {
            "ns3::LteEnbRrc::EpsBearerToRlcMapping": ns.StringValue(_RLC[s.rlc_mode]),
            "ns3::LteRlcAm::MaxTxBufferSize": ns.UintegerValue(s.rlc_buffer_bytes),
            "ns3::LteRlcUm::MaxTxBufferSize": ns.UintegerValue(s.rlc_buffer_bytes),
            "ns3::LteUePhy::TxPower": ns.DoubleValue(s.ue_power_dbm),
            "ns3::LteUePowerControl::ClosedLoop": ns.BooleanValue(False),
            "ns3::LteUePowerControl::Pcmax": ns.DoubleValue(s.ue_power_dbm),
            "ns3::LteEnbPhy::NoiseFigure": ns.DoubleValue(s.noise_figure_db),
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
        server_address = ipv4.Assign(link).GetAddress(1)
        routing = ns.Ipv4StaticRoutingHelper()
        server_routes = routing.GetStaticRouting(remote.Get(0).GetObject[ns.Ipv4]())
        server_routes.AddNetworkRouteTo(ns.Ipv4Address("7.0.0.0"), ns.Ipv4Mask("255.0.0.0"), 1)
        enb, ues = ns.NodeContainer(), ns.NodeContainer()
        enb.Create(1)
        ues.Create(len(self.positions_m))
        places = ns.CreateObject[ns.ListPositionAllocator]()
        places.Add(ns.Vector(0.0, 0.0, s.enb_height_m))
        for x, y in self.positions_m:
            places.Add(ns.Vector(float(x), float(y), s.ue_height_m))
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
        # the random streams from a fixed index (as in the Wi-Fi cell)
        stream = lte.AssignStreams(enb_devices, 0)
        stream += lte.AssignStreams(ue_devices, stream)
        for nodes in (remote, ues):
            stream += internet.AssignStreams(nodes, stream)
        self.handlers.HookMac(enb_devices.Get(0).GetObject[ns.LteEnbNetDevice]().GetMac())
        self._rnti = [
            ue_devices.Get(i).GetObject[ns.LteUeNetDevice]().GetRrc() for i in range(ues.GetN())
        ]
        self._lte, self._epc = lte, epc  # keep the helpers (and what they own) alive
        return ues, remote.Get(0), server_address

    def _attached(self) -> list[bool]:
        """Whether each UE's RRC is connected (its default bearer up)."""
        connected = self.ns.LteUeRrc.CONNECTED_NORMALLY
        return [int(rrc.GetState()) == int(connected) for rrc in self._rnti]

    def _mcs_snapshot(self) -> dict[int, tuple[int, int]]:
        """The eNB's uplink grants and MCS sums per RNTI so far."""
        h = self.handlers
        return {int(r): (int(n), int(h.mcs_sum[r])) for r, n in h.grants}

    def _mean_mcs(self, clients: list[int], before: dict[int, tuple[int, int]]) -> np.ndarray:
        """The mean MCS of each UE's grants this round (its RNTI read after the round)."""
        h, out = self.handlers, np.full(len(clients), math.nan)
        for k, c in enumerate(clients):
            rnti = int(self._rnti[c].GetRnti())
            grants, total = before.get(rnti, (0, 0))
            grants, total = int(h.grants[rnti]) - grants, int(h.mcs_sum[rnti]) - total
            if grants:
                out[k] = total / grants
        return out
