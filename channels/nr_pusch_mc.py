"""Link-level Monte Carlo of one NR PUSCH allocation on an AWGN channel through Sionna's own
chain (the ``nr`` extra): ``PUSCHTransmitter`` (TS 38.212 LDPC coding, rate matching, QAM,
one DMRS symbol of type 1 with both CDM groups free of data, one layer, one antenna) ->
unit-gain channel plus complex white noise of variance 1 / SINR per resource element ->
``PUSCHReceiver`` (perfect channel knowledge, LMMSE detection, the transport block decoder's
defaults: 20 belief-propagation iterations) and its transport block CRC.

It is the independent reference for the BLER tables the NR uplink decodes with
(:mod:`channels.nr_bler`, which are Sionna's single-code-block AWGN curves): the same
decoder family, but a whole transport block through the PUSCH chain. Slow (seconds per
hundred blocks on a CPU); Sionna is imported inside :func:`pusch_block_errors`, with one torch
thread while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PuschErrors", "pusch_block_errors"]

#: numerology of the Monte Carlo carrier (30 kHz; the BLER does not depend on it on AWGN)
SUBCARRIER_SPACING_KHZ = 30


@dataclass(frozen=True)
class PuschErrors:
    """``errors`` of ``blocks`` transport blocks of ``tbs_bits`` [bit] lost (CRC failed)."""

    tbs_bits: int
    blocks: int
    errors: int

    @property
    def bler(self) -> float:
        """The transport block error rate measured."""
        return self.errors / self.blocks


def pusch_block_errors(
    n_prb: int,
    mcs_index: int,
    sinr_db: float,
    n_blocks: int,
    *,
    mcs_table: int = 1,
    seed: int = 0,
    batch_blocks: int = 100,
) -> PuschErrors:
    """Send ``n_blocks`` transport blocks on ``n_prb`` PRBs at MCS ``mcs_index`` of TS 38.214
    MCS table ``mcs_table`` (1 or 2) at ``sinr_db`` [dB] per resource element, ``batch_blocks``
    per call, seeded by ``seed`` (module docstring)."""
    import torch
    from sionna.phy import config
    from sionna.phy.channel import AWGN
    from sionna.phy.nr import PUSCHConfig, PUSCHReceiver, PUSCHTransmitter

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        config.seed = seed
        pusch = PUSCHConfig()
        pusch.carrier.subcarrier_spacing = SUBCARRIER_SPACING_KHZ
        pusch.carrier.n_size_grid = n_prb
        pusch.n_size_bwp = n_prb
        pusch.tb.mcs_table = mcs_table
        pusch.tb.mcs_index = mcs_index
        transmitter = PUSCHTransmitter(pusch, device="cpu")
        receiver = PUSCHReceiver(
            transmitter, channel_estimator="perfect", return_tb_crc_status=True, device="cpu"
        )
        awgn = AWGN(device="cpu")
        no = torch.tensor(10.0 ** (-sinr_db / 10.0))
        errors, sent = 0, 0
        with torch.no_grad():
            while sent < n_blocks:
                size = min(batch_blocks, n_blocks - sent)
                x, bits = transmitter(size)
                y = awgn(x, no)
                h = torch.ones((size, 1, 1, 1, 1, x.shape[-2], x.shape[-1]), dtype=torch.complex64)
                _, crc_ok = receiver(y, no, h)
                errors += int((~crc_ok.bool()).sum())
                sent += size
        return PuschErrors(int(pusch.tb_size), sent, errors)
    finally:
        torch.set_num_threads(threads)
