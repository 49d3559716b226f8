"""One Wi-Fi cell in ns-3: stations uploading to a server behind their access point, advanced
round by round from Python (the ``ns3`` extra; docs/simulator.md, "Packet-level uploads with
ns-3").

The cell: one AP at the origin (3 m high), N stations at given positions [m] (1.5 m), the
server behind the AP on a point-to-point link (100 Gb/s, 1 ms), an infrastructure BSS on one
channel (``standard`` 802.11ax or 802.11ac, ``channel_width_mhz``, 5 GHz), one spatial stream,
the ideal rate manager (the best MCS for the last SNR, ns-3's ``IdealWifiManager``),
log-distance path loss (exponent 3, the 5 GHz free-space loss at 1 m; ns-3's default is
Friis at 2.4 GHz), stations at 20 dBm. Uploads contend for the channel by EDCA, so a round's
stations share it as Wi-Fi shares it, collisions and backoff included. The MAC's MCS is not
reported (NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from channels.ns3_cell import Ns3Cell, Ns3Transport

__all__ = ["WIFI_STANDARDS", "WifiCell", "WifiSettings"]

#: ``standard`` -> (ns-3's WifiStandard name, the channel widths it has [MHz])
WIFI_STANDARDS = {"80211ax": ("WIFI_STANDARD_80211ax", (20, 40, 80, 160)),
                  "80211ac": ("WIFI_STANDARD_80211ac", (20, 40, 80, 160))}  # fmt: skip


@dataclass(frozen=True)
class WifiSettings(Ns3Transport):
    """An ns-3 Wi-Fi cell's settings (module docstring)."""

    standard: str = "80211ax"
    channel_width_mhz: int = 20
    station_power_dbm: float = 20.0
    pathloss_exponent: float = 3.0
    reference_loss_db: float = 46.7  # free space at 1 m, 5.18 GHz
    noise_figure_db: float = 7.0  # every receiver's (ns-3's default)
    ap_height_m: float = 3.0
    station_height_m: float = 1.5
    backhaul_rate: str = "100Gb/s"
    backhaul_delay: str = "1ms"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.standard not in WIFI_STANDARDS:
            raise ValueError(f"standard: one of {', '.join(WIFI_STANDARDS)}, got {self.standard!r}")
        widths = WIFI_STANDARDS[self.standard][1]
        if self.channel_width_mhz not in widths:
            raise ValueError(f"channel_width_mhz: one of {widths}, got {self.channel_width_mhz}")


class WifiCell(Ns3Cell):
    """The Wi-Fi cell of ``settings`` (:class:`WifiSettings`) with stations at ``positions_m``
    (N, 2) [m] around the AP, seeded by ``seed``; the stations associate in the cell's
    warm-up, which lasts until every station is associated. The ARP caches are filled at
    build (ns-3's ``NeighborCacheHelper``), as in a network whose stations have sent before:
    otherwise the first round's broadcast ARP requests collide and a lost one costs a 1 s
    retry."""

    def _build(self) -> tuple[Any, Any, Any]:
        ns, s = self.ns, self.settings
        ap, stations, server = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
        ap.Create(1)
        stations.Create(len(self.positions_m))
        server.Create(1)
        channel = ns.YansWifiChannelHelper()
        channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel")
        channel.AddPropagationLoss(
            "ns3::LogDistancePropagationLossModel",
            "Exponent", ns.DoubleValue(s.pathloss_exponent),
            "ReferenceLoss", ns.DoubleValue(s.reference_loss_db),
        )  # fmt: skip
        phy = ns.YansWifiPhyHelper()
        phy.SetChannel(channel.Create())
        phy.Set("ChannelSettings", ns.StringValue(f"{{0, {s.channel_width_mhz}, BAND_5GHZ, 0}}"))
        phy.Set("TxPowerStart", ns.DoubleValue(s.station_power_dbm))
        phy.Set("TxPowerEnd", ns.DoubleValue(s.station_power_dbm))
        phy.Set("RxNoiseFigure", ns.DoubleValue(s.noise_figure_db))
        wifi = ns.WifiHelper()
        wifi.SetStandard(getattr(ns, WIFI_STANDARDS[s.standard][0]))
        wifi.SetRemoteStationManager("ns3::IdealWifiManager")
        mac = ns.WifiMacHelper()
        ssid = ns.Ssid("wirelessfl")
        mac.SetType("ns3::StaWifiMac", "Ssid", ns.SsidValue(ssid))
        station_devices = wifi.Install(phy, mac, stations)
        mac.SetType("ns3::ApWifiMac", "Ssid", ns.SsidValue(ssid))
        ap_devices = wifi.Install(phy, mac, ap)
        places = ns.CreateObject[ns.ListPositionAllocator]()
        places.Add(ns.Vector(0.0, 0.0, s.ap_height_m))
        for x, y in self.positions_m:
            places.Add(ns.Vector(float(x), float(y), s.station_height_m))
        mobility = ns.MobilityHelper()
        mobility.SetPositionAllocator(places)
        mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel")
        mobility.Install(ap)
        mobility.Install(stations)
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(s.backhaul_rate))
        p2p.SetChannelAttribute("Delay", ns.StringValue(s.backhaul_delay))
        link = p2p.Install(ap.Get(0), server.Get(0))
        internet = ns.InternetStackHelper()
        for nodes in (ap, stations, server):
            internet.Install(nodes)
        ipv4 = ns.Ipv4AddressHelper()
        ipv4.SetBase(ns.Ipv4Address("10.1.0.0"), ns.Ipv4Mask("255.255.0.0"))
        ipv4.Assign(ap_devices)
        ipv4.Assign(station_devices)
        ipv4.SetBase(ns.Ipv4Address("10.2.0.0"), ns.Ipv4Mask("255.255.255.0"))
        server_address = ipv4.Assign(link).GetAddress(1)
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
        ns.NeighborCacheHelper().PopulateNeighborCache()
        # the random streams from a fixed index, not from the process's running count, so
        # that a seed gives the same cell whatever ns-3 objects the process made before
        stream = wifi.AssignStreams(ap_devices, 0)
        stream += wifi.AssignStreams(station_devices, stream)
        for nodes in (ap, stations, server):
            stream += internet.AssignStreams(nodes, stream)
        self._wifi = (wifi, phy, mac, channel)  # keep the helpers (and what they own) alive
        self._station_macs = [
            ns.DynamicCast[ns.StaWifiMac](
                station_devices.Get(i).GetObject[ns.WifiNetDevice]().GetMac()
            )
            for i in range(stations.GetN())
        ]
        return stations, server.Get(0), server_address

    def _attached(self) -> list[bool]:
        """Whether each station is associated with the AP."""
        return [bool(mac.IsAssociated()) for mac in self._station_macs]
