"""5G NR transport block size (3GPP TS 38.214 §5.1.3.2, used for PUSCH by §6.1.4.2) and the
MCS index tables (TS 38.214 Table 5.1.3.1-1 "table 1", up to 64QAM, and Table 5.1.3.1-2
"table 2", up to 256QAM). Pure arithmetic, no Sionna: the NR uplink's sizes, checked by hand
and against Sionna's ``calculate_tb_size`` in the tests.

Steps of §5.1.3.2 for one layer set of ``n_prb`` PRBs:

1. N'_RE = 12 N_symb - N_DMRS - N_oh per PRB; N_RE = min(156, N'_RE) n_PRB;
2. N_info = N_RE R Q_m v;
3. N_info <= 3824: n = max(3, floor(log2 N_info) - 6), N'_info = max(24, 2^n floor(N_info / 2^n)),
   TBS = the smallest entry of Table 5.1.3.2-1 >= N'_info;
4. else: n = floor(log2(N_info - 24)) - 5, N'_info = max(3840, 2^n round((N_info - 24) / 2^n))
   (round half up); C code blocks: ceil((N'_info + 24) / 3816) if R <= 1/4, else
   ceil((N'_info + 24) / 8424) if N'_info > 8424, else 1;
   TBS = 8 C ceil((N'_info + 24) / (8 C)) - 24.
"""

from __future__ import annotations

import math

from channels.nr_grid import pusch_re_per_prb

__all__ = ["MCS_TABLES", "TBS_TABLE", "mcs", "transport_block", "transport_block_bits"]

#: TS 38.214 Table 5.1.3.2-1: TBS for N_info <= 3824 [bit]
TBS_TABLE: tuple[int, ...] = (
    24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176,
    184, 192, 208, 224, 240, 256, 272, 288, 304, 320, 336, 352, 368, 384, 408, 432, 456, 480,
    504, 528, 552, 576, 608, 640, 672, 704, 736, 768, 808, 848, 888, 928, 984, 1032, 1064, 1128,
    1160, 1192, 1224, 1256, 1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672, 1736, 1800, 1864,
    1928, 2024, 2088, 2152, 2216, 2280, 2408, 2472, 2536, 2600, 2664, 2728, 2792, 2856, 2976,
    3104, 3240, 3368, 3496, 3624, 3752, 3824,
)  # fmt: skip

#: (Q_m, 1024 R) per MCS index: TS 38.214 Tables 5.1.3.1-1 (1) and 5.1.3.1-2 (2)
MCS_TABLES: dict[int, tuple[tuple[int, float], ...]] = {
    1: (
        (2, 120), (2, 157), (2, 193), (2, 251), (2, 308), (2, 379), (2, 449), (2, 526),
        (2, 602), (2, 679), (4, 340), (4, 378), (4, 434), (4, 490), (4, 553), (4, 616),
        (4, 658), (6, 438), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666), (6, 719),
        (6, 772), (6, 822), (6, 873), (6, 910), (6, 948),
    ),
    2: (
        (2, 120), (2, 193), (2, 308), (2, 449), (2, 602), (4, 378), (4, 434), (4, 490),
        (4, 553), (4, 616), (4, 658), (6, 466), (6, 517), (6, 567), (6, 616), (6, 666),
        (6, 719), (6, 772), (6, 822), (6, 873), (8, 682.5), (8, 711), (8, 754), (8, 797),
        (8, 841), (8, 885), (8, 916.5), (8, 948),
    ),
}  # fmt: skip


def mcs(index: int, table: int = 1) -> tuple[int, float]:
    """(Q_m bits per symbol, code rate R) of MCS ``index`` in MCS table ``table`` (1 or 2)."""
    if table not in MCS_TABLES:
        raise ValueError(f"table: 1 or 2, got {table!r}")
    rows = MCS_TABLES[table]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(rows):
        raise ValueError(
            f"index: an MCS index in 0..{len(rows) - 1} of table {table}, got {index!r}"
        )
    q_m, rate_1024 = rows[index]
    return q_m, rate_1024 / 1024.0


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def transport_block_bits(n_prb: int, mcs_index: int, **options: int) -> int:
    """The transport block size [bit] of TS 38.214 §5.1.3.2 (module docstring) for ``n_prb``
    PRBs at MCS ``mcs_index``; ``options`` are :func:`transport_block`'s (``table``,
    ``n_layers``, ``n_symbols``, ``dmrs_re_per_prb``, ``overhead_re_per_prb``; 0 for no PRB)."""
    return transport_block(n_prb, mcs_index, **options)[0]


def transport_block(
    n_prb: int,
    mcs_index: int,
    *,
    table: int = 1,
    n_layers: int = 1,
    n_symbols: int = 14,
    dmrs_re_per_prb: int = 12,
    overhead_re_per_prb: int = 0,
) -> tuple[int, int, int]:
    """(TBS [bit], C code blocks, K' bits per code block) of the transport block of
    :func:`transport_block_bits` (same arguments). C is step 4's (1 in step 3), which is the
    LDPC segmentation of TS 38.212 §5.2.2 for the base graph §7.2.2 picks; K' = (TBS + L_TB) / C
    + L_CB with the transport block CRC L_TB = 24 (16 for TBS <= 3824) and the code block CRC
    L_CB = 24 when C > 1 (0 otherwise), rounded down: the code block size a BLER table is read
    at; one code block in error loses the transport block. (0, 0, 0) for no PRB."""
    if isinstance(n_prb, bool) or not isinstance(n_prb, int) or n_prb < 0:
        raise ValueError(f"n_prb: a PRB count >= 0, got {n_prb!r}")
    if not 1 <= n_layers <= 4 or not 1 <= n_symbols <= 14:
        raise ValueError(f"n_layers in 1..4 and n_symbols in 1..14, got {n_layers}, {n_symbols}")
    q_m, rate = mcs(mcs_index, table)
    re_per_prb = pusch_re_per_prb(n_symbols, dmrs_re_per_prb, overhead_re_per_prb)
    if n_prb == 0 or re_per_prb <= 0:
        return 0, 0, 0
    n_info = re_per_prb * n_prb * rate * q_m * n_layers  # step 2
    if n_info <= 3824:  # step 3
        n = max(3, math.floor(math.log2(n_info)) - 6)
        n_info_q = max(24, 2**n * math.floor(n_info / 2**n))
        tbs, c = next(t for t in TBS_TABLE if t >= n_info_q), 1
    else:
        n = math.floor(math.log2(n_info - 24)) - 5  # step 4
        n_info_q = max(3840, 2**n * _round_half_up((n_info - 24) / 2**n))
        if rate <= 0.25:
            c = math.ceil((n_info_q + 24) / 3816)
        elif n_info_q > 8424:
            c = math.ceil((n_info_q + 24) / 8424)
        else:
            c = 1
        tbs = 8 * c * math.ceil((n_info_q + 24) / (8 * c)) - 24
    tb_crc = 24 if tbs > 3824 else 16
    return tbs, c, (tbs + tb_crc) // c + (24 if c > 1 else 0)
