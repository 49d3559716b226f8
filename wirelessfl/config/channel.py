"""``channel``: the uplink's band, geometry or mean SNR, noise, fading, power control and the
uplink itself (``channel.uplink``, ``wirelessfl.registries.UPLINKS``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from channels import FADING_MODELS, NOISE_BANDWIDTHS, POWER_CONTROLS
from wirelessfl.config.limits import MAX_DB, check_option_names
from wirelessfl.config.schema import key_text, option, plugin_settings
from wirelessfl.config.wireless import PathLossConfig, check_per_class
from wirelessfl.errors import ConfigError
from wirelessfl.registries import UPLINKS

#: Built-in fading models take their parameters from their own keys, not ``params``.
_FADING_OWN_KEYS = {
    "rayleigh": "it has no settings",
    "gauss_markov": "it is set by channel.fading.rho, or doppler_hz and slot_s",
    "rician": "it is set by channel.fading.k_factor",
    "none": "it has no settings",
}


@dataclass
class FadingConfig:
    """Small-scale fading model (``channels.make_fading``)."""

    model: str = option("rayleigh", choices=FADING_MODELS, doc="a channels.FADING_MODELS name")
    rho: float | None = option(None, ge=0.0, le=1.0, doc="Gauss-Markov correlation per round")
    doppler_hz: float | None = option(None, ge=0.0, doc="Doppler for rho = J0(2 pi f_d T)")
    slot_s: float | None = option(None, gt=0.0, doc="round duration T for the Jakes rho")
    k_factor: float = option(3.0, ge=0.0, doc="Rician K-factor (linear)")
    params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered fading model"
    )

    def validate(self, prefix: str) -> None:
        check_option_names(self.params, f"{prefix}.params")
        if self.params and self.model in _FADING_OWN_KEYS:
            raise ConfigError(
                f"{prefix}.params: only for a user-registered fading model, not {self.model!r} "
                f"({_FADING_OWN_KEYS[self.model]}); got {key_text(next(iter(self.params)))}"
            )

    def model_kwargs(self) -> dict:
        if self.model == "gauss_markov":
            if self.rho is not None:
                return {"rho": self.rho}
            return {"doppler_hz": self.doppler_hz, "slot_s": self.slot_s}
        if self.model == "rician":
            return {"k_factor": self.k_factor}
        return dict(self.params)


@dataclass
class ChannelConfig:
    """FDMA uplink: bandwidth, large-scale geometry or a fixed mean SNR, noise, fading."""

    bandwidth_hz: float = option(1.0e6, gt=0.0, doc="total uplink bandwidth B")
    mean_snr_db: float | None = option(
        None,
        ge=-MAX_DB,
        le=MAX_DB,
        doc="if set, every client has this mean SNR (geometry keys are ignored)",
    )
    d_min_m: float = option(10.0, gt=0.0, doc="inner cell radius")
    d_max_m: float = option(500.0, gt=0.0, doc="outer cell radius")
    path_loss_exponent: float = option(
        1.5, gt=0.0, doc="gamma in h = s q^-gamma (amplitude; power falls as q^-2 gamma)"
    )
    tx_power_dbm: float = option(23.0, ge=-MAX_DB, le=MAX_DB, doc="client transmit power")
    reference_gain_db: float = option(
        -35.0,
        ge=-MAX_DB,
        le=0.0,
        doc="path gain at 1 m, folded into the transmit power (q^-gamma has none)",
    )
    noise_psd_dbm_per_hz: float = option(
        -174.0, ge=-MAX_DB, le=MAX_DB, doc="noise spectral density"
    )
    noise_figure_db: float = option(7.0, ge=0.0, le=MAX_DB, doc="receiver noise figure")
    noise_bandwidth: str = option(
        "band",
        choices=NOISE_BANDWIDTHS,
        doc="the noise a client's share sees: band (of the whole band B, rate b B log2(1 + "
        "SNR)) | share (of its share b B, rate b B log2(1 + SNR / b)); SNR is the whole-band "
        "SNR at the client's power",
    )
    shadowing_sigma_db: float = option(
        0.0, ge=0.0, le=100.0, doc="log-normal shadowing std (6 sigma stays within 600 dB)"
    )
    fading: FadingConfig = field(default_factory=FadingConfig)
    path_loss: PathLossConfig = field(default_factory=PathLossConfig)
    power_control: str = option(
        "fixed",
        choices=POWER_CONTROLS,
        doc="client transmit power: fixed (tx_power_dbm) | per_class (tx_power_dbm_by_class) | "
        "fractional (3GPP open loop: min(tx_power_dbm, p0_dbm + alpha PL)) | a user-registered "
        "model (channels.POWER_CONTROLS)",
    )
    tx_power_dbm_by_class: dict[str, float] = option(
        default_factory=dict, doc="power_control per_class: {device class: dBm}"
    )
    p0_dbm: float = option(-90.0, ge=-202.0, le=24.0, doc="power_control fractional: P0")
    power_control_alpha: float = option(
        0.8, ge=0.0, le=1.0, doc="power_control fractional: path-loss compensation alpha"
    )
    power_control_params: dict[str, object] = option(
        default_factory=dict, doc="keyword arguments of a user-registered power control"
    )
    snr_trace: str | None = option(
        None,
        doc="per-round SNRs from a file, .npy or .csv of shape rounds x clients in dB (replaces "
        "geometry and fading; relative to the working directory)",
    )
    downlink_rate_bps: float = option(
        0.0,
        ge=0.0,
        doc="the server's downlink rate R: a synchronous broadcast reaches every client at R, "
        "the event-driven modes' concurrent downloads share it (R / n each); 0 = "
        "instantaneous downlink (the paper)",
    )
    block_rounds: int = option(
        128,
        ge=1,
        doc="rounds of fading drawn per block (memory/speed); n_clients x block_rounds x 40 B "
        "must stay within 4 GiB",
    )
    uplink: str = option(
        "fdma",
        choices=UPLINKS,
        doc="an uplink registry name: fdma (digital uploads on bandwidth shares) | aircomp "
        "(analog over-the-air sum of the updates on the whole band, channel.aircomp) | noma "
        "(power-domain NOMA with SIC) | nr (5G NR PUSCH: PRBs, MCS, transport blocks, HARQ, "
        "channel.nr; the nr extra) | ns3_lte, ns3_wifi (packet-level uploads in ns-3, "
        "channel.ns3; the ns3 extra)",
    )
    uplink_params: dict[str, object] = option(
        default_factory=dict,
        doc="the settings of an uplink that takes them (noma: sic_residual; a user-registered "
        "one's), passed to it by name; fdma and aircomp take none (aircomp's are "
        "channel.aircomp)",
    )
    aircomp: Any = plugin_settings(
        UPLINKS, "aircomp", doc="the AirComp uplink's settings (its Settings)"
    )
    nr: Any = plugin_settings(UPLINKS, "nr", doc="the NR uplink's settings (its Settings)")
    ns3: Any = plugin_settings(
        UPLINKS, "ns3_lte", doc="the ns-3 uplinks' settings (ns3_lte and ns3_wifi; the ns3 extra)"
    )

    def validate(self, prefix: str) -> None:
        if self.mean_snr_db is None and self.d_min_m >= self.d_max_m:
            raise ConfigError(
                f"{prefix}.d_min_m: must be < d_max_m ({self.d_max_m}), got {self.d_min_m}"
            )
        check_per_class(
            f"{prefix}.tx_power_dbm_by_class", self.tx_power_dbm_by_class, -MAX_DB, MAX_DB
        )
        check_option_names(self.power_control_params, f"{prefix}.power_control_params")
        check_option_names(self.uplink_params, f"{prefix}.uplink_params")
        if self.power_control_params and self.power_control in ("fixed", "per_class", "fractional"):
            raise ConfigError(
                f"{prefix}.power_control_params: only for a user-registered power control, not "
                f"{self.power_control!r} (it is set by tx_power_dbm, tx_power_dbm_by_class, p0_dbm "
                "and power_control_alpha)"
            )
        if self.mean_snr_db is not None or self.snr_trace is not None:
            given = "mean_snr_db" if self.snr_trace is None else "snr_trace"
            if self.path_loss.model != "single_slope" or self.power_control != "fixed":
                what = (
                    f"path_loss.model {self.path_loss.model!r}"
                    if self.path_loss.model != "single_slope"
                    else f"power_control {self.power_control!r}"
                )
                raise ConfigError(
                    f"{prefix}.{given}: gives the SNRs directly, so {what} has nothing to act "
                    f"on; remove {given} (a geometric cell) or the {what.split()[0]} setting"
                )
        if self.mean_snr_db is not None and self.snr_trace is not None:
            raise ConfigError(
                f"{prefix}.snr_trace: replaces the channel; remove mean_snr_db "
                f"({self.mean_snr_db:g}) or snr_trace"
            )

    @property
    def geometric(self) -> bool:
        """Client positions, path loss and transmit power make the SNRs."""
        return self.mean_snr_db is None and self.snr_trace is None
