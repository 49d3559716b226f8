"""One cell: N clients' large-scale gains, the receiver noise and a fading model.

The instantaneous SNR of client k in round t is

    SNR_k^t = G_k · |s_k^t|² / σ²,

with G_k = ``large_scale_power_gain[k]`` (transmit power × path *power* gain q^{-2γ} ×
shadowing, dimensionless when the transmit power is in watts and σ² in watts), s the
small-scale fading (E|s|² = 1) and σ² = ``noise_power_w``.

Fading for rounds ``block*n_rounds ... block*n_rounds + n_rounds - 1`` is drawn from
``client_generators(seed, range(N), stream="fading", block=block)``: it depends only on
(seed, client, block), so adding clients or resuming at a block reproduces the same numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, as_int
from channels.fading import FadingModel, RayleighFading
from channels.pathloss import path_power_gain, shadowing_power_gain
from channels.streams import client_generators
from channels.topology import annulus_distances

__all__ = ["Cell"]


@dataclass(eq=False)
class Cell:
    """Large-scale gains, noise power and fading model of N clients.

    Fields: ``large_scale_power_gain`` (N,) >= 0 (tx power × path loss × shadowing,
    dimensionless); ``noise_power_w`` σ² > 0 [W]; ``fading`` a fading model (see
    :mod:`channels.fading`); ``seed`` >= 0 for the fading streams; ``distances_m`` (N,) [m]
    or None when the gains were not derived from a geometry.
    Arrays are stored as read-only float64 copies.
    """

    large_scale_power_gain: np.ndarray
    noise_power_w: float
    fading: FadingModel
    seed: int
    distances_m: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        gain = as_float_array("large_scale_power_gain", self.large_scale_power_gain, lower=0.0)
        if gain.ndim != 1 or gain.size == 0:
            raise ValueError(
                f"large_scale_power_gain must have shape (n_clients,) with n_clients >= 1, "
                f"got shape {gain.shape}"
            )
        gain = gain.copy()
        gain.flags.writeable = False
        self.large_scale_power_gain = gain
        self.noise_power_w = as_float("noise_power_w", self.noise_power_w, lower=0.0, lower_op=">")
        self.seed = as_int("seed", self.seed, lower=0)
        if not isinstance(self.fading, FadingModel):
            raise ValueError(
                "fading must be a fading model with mean_power and sample(), "
                f"got {type(self.fading).__name__}"
            )
        if self.distances_m is not None:
            d = as_float_array("distances_m", self.distances_m, lower=0.0, lower_op=">")
            if d.shape != gain.shape:
                raise ValueError(
                    f"distances_m must have shape ({gain.size},) like large_scale_power_gain, "
                    f"got {d.shape}"
                )
            d = d.copy()
            d.flags.writeable = False
            self.distances_m = d

    @property
    def n_clients(self) -> int:
        """Number of clients N."""
        return int(self.large_scale_power_gain.size)

    @property
    def mean_snr(self) -> np.ndarray:
        """Mean SNR per client, G_k·E|s|²/σ² (linear), shape (N,)."""
        return self.large_scale_power_gain * float(self.fading.mean_power) / self.noise_power_w

    def snr_block(
        self, block: int, n_rounds: int, *, initial: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Instantaneous SNRs for one block of rounds.

        Input: ``block`` >= 0; ``n_rounds`` >= 1 (rounds per block; keep it fixed over a
        run so that round t is always drawn by the same block); ``initial`` (N,) complex, the
        last fading row of block ``block - 1`` (continues time-correlated fading; i.i.d.
        models ignore it; None starts stationary).
        Output: ``(snr, last)``: snr float64 (n_rounds, N) linear |h|²/σ² for rounds
        ``block*n_rounds ... block*n_rounds + n_rounds - 1``; last complex128 (N,), the final
        fading row (pass it as ``initial`` to the next block).
        """
        power, last = self.fading_power_block(block, n_rounds, initial=initial)
        power *= self.large_scale_power_gain / self.noise_power_w
        if not np.isfinite(power).all():
            raise ValueError("fading model produced non-finite channel draws (nan/inf)")
        return power, last

    def fading_power_block(
        self, block: int, n_rounds: int, *, initial: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """|s|² for one block of rounds: :meth:`snr_block` before the large-scale gain.

        Output: ``(power, last)``: power float64 (n_rounds, N), E = fading.mean_power; last as
        in :meth:`snr_block`. For large-scale gains that change over time (mobility).
        """
        block = as_int("block", block, lower=0)
        n_rounds = as_int("n_rounds", n_rounds, lower=1)
        gens = client_generators(self.seed, range(self.n_clients), stream="fading", block=block)
        s = self.fading.sample(gens, n_rounds, self.n_clients, initial=initial)
        power = s.real * s.real
        power += s.imag * s.imag
        if not np.isfinite(power).all():
            raise ValueError("fading model produced non-finite channel draws (nan/inf)")
        return power, s[-1].copy()

    @classmethod
    def from_geometry(
        cls,
        *,
        n_clients: int,
        seed: int,
        d_min_m: float,
        d_max_m: float,
        path_loss_exponent: float,
        noise_power_w: float,
        tx_power_w: float = 1.0,
        shadowing_sigma_db: float = 0.0,
        fading: FadingModel | None = None,
        distances_m: ArrayLike | None = None,
        reference_loss_db: float = 0.0,
    ) -> Cell:
        """A cell from client positions: G_k = P_tx · 10^{-L_ref/10} · q_k^{-2γ} · shadow_k.

        Input: ``n_clients`` >= 1; ``seed`` >= 0 (topology, shadowing and fading streams);
        ``d_min_m`` >= 0 < ``d_max_m`` [m] (annulus, used when ``distances_m`` is None);
        ``path_loss_exponent`` γ >= 0, the paper's *amplitude* exponent (h = s·q^{-γ}; power
        falls as q^{-2γ}, so γ = α/2 for a power exponent α); ``noise_power_w`` > 0 [W];
        ``tx_power_w`` > 0 [W]; ``shadowing_sigma_db`` >= 0 [dB] (log-normal, drawn from the
        ``"shadowing"`` stream, one draw per client); ``fading`` (default Rayleigh);
        ``distances_m`` (N,) > 0 [m] to skip the draw; ``reference_loss_db`` >= 0 [dB], a
        constant loss at 1 m (0: the paper's bare q^{-γ}).
        Output: a :class:`Cell` with ``distances_m`` set.
        """
        n_clients = as_int("n_clients", n_clients, lower=1)
        seed = as_int("seed", seed, lower=0)
        d_min = as_float("d_min_m", d_min_m, lower=0.0)
        d_max = as_float("d_max_m", d_max_m, lower=0.0, lower_op=">")
        if d_min >= d_max:
            raise ValueError(f"d_min_m must be < d_max_m, got d_min_m={d_min!r}, d_max_m={d_max!r}")
        p_tx = as_float("tx_power_w", tx_power_w, lower=0.0, lower_op=">")
        ref = as_float("reference_loss_db", reference_loss_db, lower=0.0)
        if distances_m is None:
            dist = annulus_distances(seed, n_clients, d_min_m=d_min, d_max_m=d_max)
        else:
            dist = as_float_array("distances_m", distances_m, lower=0.0, lower_op=">")
            if dist.shape != (n_clients,):
                raise ValueError(
                    f"distances_m must have shape ({n_clients},) (n_clients,), got {dist.shape}"
                )
        shadow = shadowing_power_gain(
            client_generators(seed, range(n_clients), stream="shadowing"),
            n_clients,
            shadowing_sigma_db,
        )
        gain = (
            p_tx
            * 10.0 ** (-ref / 10.0)
            * np.asarray(path_power_gain(dist, path_loss_exponent))
            * shadow
        )
        return cls(
            large_scale_power_gain=gain,
            noise_power_w=noise_power_w,
            fading=RayleighFading() if fading is None else fading,
            seed=seed,
            distances_m=dist,
        )

    @classmethod
    def from_mean_snr(
        cls,
        *,
        mean_snr_db: float | np.ndarray,
        n_clients: int,
        seed: int,
        fading: FadingModel | None = None,
        noise_power_w: float = 1.0,
    ) -> Cell:
        """A cell where every client's mean SNR is given (the paper's unit-mean block fading).

        Input: ``mean_snr_db`` [dB], scalar or (N,); ``n_clients`` >= 1; ``seed`` >= 0;
        ``fading`` (default Rayleigh); ``noise_power_w`` > 0 [W].
        Output: a :class:`Cell` with G_k = 10^{ρ̄_k/10}·σ²/E|s|² (``distances_m`` None).
        """
        n_clients = as_int("n_clients", n_clients, lower=1)
        snr_db = as_float_array("mean_snr_db", mean_snr_db)
        if snr_db.ndim not in (0, 1) or (snr_db.ndim == 1 and snr_db.shape != (n_clients,)):
            raise ValueError(
                f"mean_snr_db must be a scalar or have shape ({n_clients},), got {snr_db.shape}"
            )
        model = RayleighFading() if fading is None else fading
        sigma2 = as_float("noise_power_w", noise_power_w, lower=0.0, lower_op=">")
        gain = np.broadcast_to(10.0 ** (snr_db / 10.0), (n_clients,)) * sigma2
        gain = gain / float(model.mean_power)
        return cls(large_scale_power_gain=gain, noise_power_w=sigma2, fading=model, seed=seed)

    def with_fading(self, fading: FadingModel) -> Cell:
        """The same cell with another fading model."""
        return dataclasses.replace(self, fading=fading)
