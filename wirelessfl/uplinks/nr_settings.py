"""``channel.nr``: the 5G NR PUSCH uplink's settings (its ``Settings``; docs/simulator.md,
"A 5G NR uplink"). Sionna-free: the scenario schema loads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError

__all__ = ["NrSettings", "uses_nr"]


def uses_nr(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) sends on the NR uplink."""
    return (config.get("channel") or {}).get("uplink", "fdma") == "nr"


@dataclass
class NrSettings:
    """The NR uplink: numerology, PUSCH resources, link adaptation, HARQ and fidelity."""

    numerology: int = option(
        1,
        choices=(0, 1, 2),
        doc="mu: subcarrier spacing 15 2^mu kHz, slots of 1 ms / 2^mu (FR1); with "
        "channel.bandwidth_hz (an FR1 channel bandwidth) it sets the PRBs (TS 38.101-1 Table "
        "5.3.2-1)",
        applies=uses_nr,
    )
    mcs_table: int = option(
        1,
        choices=(1, 2),
        doc="TS 38.214 MCS table: 1 (up to 64QAM) | 2 (up to 256QAM)",
        applies=uses_nr,
    )
    link_adaptation: str = option(
        "illa",
        choices=("illa", "olla"),
        doc="illa: the highest MCS whose TBLER at the slot's SINR is at most bler_target "
        "(known channel) | olla: ILLA at the previous slot's SINR minus an offset moved by "
        "HARQ feedback (needs fidelity: slot)",
        applies=uses_nr,
    )
    bler_target: float = option(
        0.1, gt=0.0, lt=1.0, doc="link adaptation's block error rate target", applies=uses_nr
    )
    olla_delta_up_db: float = option(
        1.0,
        gt=0.0,
        le=10.0,
        doc="olla: the offset's step up on a NACK [dB] (down on an ACK: delta_up t / (1 - t))",
        applies=uses_nr,
    )
    max_transmissions: int = option(
        4,
        ge=1,
        le=16,
        doc="HARQ: transmissions of a transport block before it is dropped (its bits are "
        "sent again in new blocks)",
        applies=uses_nr,
    )
    harq_combining: str = option(
        "chase",
        choices=("chase", "none"),
        doc="chase: a retransmission is decoded at the sum of the block's SINRs so far | none: "
        "at its own",
        applies=uses_nr,
    )
    fading: str = option(
        "block",
        choices=("block", "iid"),
        doc="the SINR of a slot: block (the round's SINR for the whole upload, the simulator's "
        "block fading) | iid (the round's SINR times an independent draw per slot of "
        "channel.fading's marginal: the round's SINR is the local mean)",
        applies=uses_nr,
    )
    fidelity: str = option(
        "fast",
        choices=("fast", "slot"),
        doc="slot: every slot through link adaptation and the BLER tables (the reference) | "
        "fast: whole HARQ cycles drawn at once, the same distribution (illa only)",
        applies=uses_nr,
    )
    coherence_bandwidth_hz: float | None = option(
        None,
        gt=0.0,
        doc="frequency-selective fading: the carrier's PRBs in subbands of this width, one "
        "unit-mean gain of channel.fading's marginal per client and subband (redrawn each "
        "slot with fading: iid), a block decoded at the EESM effective SINR of its PRBs | "
        "null: flat, every PRB at the round's SINR",
        applies=uses_nr,
    )
    prb_policy: str = option(
        "shares",
        choices=("shares", "pf"),
        doc="shares: the controller's shares as whole PRBs, held for the upload | pf: every "
        "slot Sionna SYS's proportional fair rule gives each free PRB to the client with the "
        "largest log2(1 + SINR) / discounted throughput (HARQ retransmissions keep their "
        "PRBs; needs fidelity: slot)",
        applies=uses_nr,
    )
    pf_beta: float = option(
        0.98,
        gt=0.0,
        lt=1.0,
        doc="pf: the discount of the throughput average per slot (Sionna's beta)",
        applies=uses_nr,
    )
    dmrs_re_per_prb: int = option(
        12,
        ge=0,
        le=72,
        doc="DMRS resource elements per PRB and slot (12: one DMRS symbol of type 1)",
        applies=uses_nr,
    )
    overhead_re_per_prb: int = option(
        0,
        choices=(0, 6, 12, 18),
        doc="TS 38.214 xOverhead: further resource elements per PRB and slot without data",
        applies=uses_nr,
    )
    scheduling_delay_slots: int = option(
        0,
        ge=0,
        le=1000,
        doc="slots from the round's grant to a client's first PUSCH slot (scheduling request "
        "and K2), added to every upload",
        applies=uses_nr,
    )

    def validate(self, prefix: str) -> None:
        if self.fidelity == "fast" and self.link_adaptation == "olla":
            raise ConfigError(
                f"{prefix}.link_adaptation: olla carries each slot's HARQ feedback into the "
                "next slot's MCS, and fidelity fast draws independent HARQ cycles; use "
                "fidelity: slot, or link_adaptation: illa"
            )
        if self.prb_policy == "pf" and self.fidelity == "fast":
            raise ConfigError(
                f"{prefix}.prb_policy: pf schedules the PRBs slot by slot, and fidelity fast "
                "draws whole HARQ cycles on fixed PRBs; use fidelity: slot, or prb_policy: "
                "shares"
            )
        if 12 * 14 - self.dmrs_re_per_prb - self.overhead_re_per_prb <= 0:
            raise ConfigError(
                f"{prefix}.dmrs_re_per_prb: with overhead_re_per_prb it leaves no data "
                "resource element in a PRB (12 x 14 = 168 per slot)"
            )
