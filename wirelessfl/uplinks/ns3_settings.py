"""``channel.ns3``: the settings of the ns-3 uplinks, ``ns3_lte`` and ``ns3_wifi`` (their
``Settings``; docs/simulator.md, "Packet-level uploads with ns-3"). ns-3-free: the scenario
schema loads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirelessfl.config.schema import option

__all__ = ["Ns3Settings", "uses_ns3"]


def _uplink(config: Mapping[str, Any]) -> str:
    return (config.get("channel") or {}).get("uplink", "fdma")


def uses_ns3(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) uploads through ns-3."""
    return _uplink(config) in ("ns3_lte", "ns3_wifi")


def _lte(config: Mapping[str, Any]) -> bool:
    return _uplink(config) == "ns3_lte"


def _wifi(config: Mapping[str, Any]) -> bool:
    return _uplink(config) == "ns3_wifi"


@dataclass
class Ns3Settings:
    """The ns-3 cell (LTE with EPC, or a Wi-Fi BSS) and how the uploads travel."""

    transport: str = option(
        "tcp", choices=("tcp", "udp"), doc="tcp: one bulk transfer a client and round (a new "
        "socket) | udp: a constant-rate stream of datagrams", applies=uses_ns3,
    )  # fmt: skip
    segment_bytes: int = option(
        1400, ge=100, le=8000, doc="TCP segment (and UDP datagram) [bytes]; ns-3's TCP default, "
        "536, is small for bulk uploads", applies=uses_ns3,
    )  # fmt: skip
    udp_rate_bps: float = option(
        50.0e6, gt=0.0, doc="udp: the stream's rate [bit/s]", applies=uses_ns3
    )
    round_cap_s: float = option(
        600.0, gt=0.0, doc="an upload not complete this long after its round's start never "
        "arrives [s]", applies=uses_ns3,
    )  # fmt: skip
    plan_with: str = option(
        "fdma", choices=("fdma", "nr"), doc="the analytic uplink the controllers plan with: "
        "fdma (Shannon shares) | nr (the NR link's goodput on channel.bandwidth_hz, "
        "channel.nr's settings; the nr extra)", applies=uses_ns3,
    )  # fmt: skip
    bandwidth_rb: int = option(
        25, choices=(6, 15, 25, 50, 75, 100), doc="ns3_lte: uplink resource blocks "
        "(1.4-20 MHz)", applies=_lte,
    )  # fmt: skip
    scheduler: str = option(
        "pf", choices=("pf", "rr"), doc="ns3_lte: the eNB's MAC scheduler", applies=_lte
    )
    rlc_mode: str = option(
        "am", choices=("am", "um"), doc="ns3_lte: the bearer's RLC mode (ns-3 with EPC: um, "
        "which drops a bulk transfer's bursts from its 10 KB buffer)", applies=_lte,
    )  # fmt: skip
    rlc_buffer_bytes: int = option(
        10 * 1024 * 1024, ge=1024, doc="ns3_lte: RLC transmit buffer [bytes]", applies=_lte
    )
    standard: str = option(
        "80211ax", choices=("80211ax", "80211ac"), doc="ns3_wifi: the Wi-Fi standard",
        applies=_wifi,
    )  # fmt: skip
    channel_width_mhz: int = option(
        20, choices=(20, 40, 80, 160), doc="ns3_wifi: the channel's width [MHz] (5 GHz)",
        applies=_wifi,
    )  # fmt: skip
