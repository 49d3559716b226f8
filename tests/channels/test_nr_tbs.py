"""TS 38.214 §5.1.3.2 transport block sizes (channels/nr_tbs.py): cases worked by hand through
each branch (the table of step 3, step 4 with one code block, with several, and the R <= 1/4
branch), the MCS tables' rows the standard prints, and Sionna's ``calculate_tb_size`` on a grid
of PRBs, symbols, DMRS and layers where the ``nr`` extra is installed."""

from __future__ import annotations

import pytest

from channels.nr_tbs import MCS_TABLES, TBS_TABLE, mcs, transport_block, transport_block_bits

# fmt: off
HAND = [
    # n_prb, mcs, want: N_RE = 156 n_prb (14 symbols, 12 DMRS REs per PRB), N_info = N_RE R Q_m
    # N_info = 780 x 340/1024 x 4 = 1035.9: n = 4, N'_info = 16 x 64 = 1024 -> table: 1032
    (5, 10, 1032),
    # N_info = 15600 x 120/1024 x 2 = 3656.25: n = 5, N'_info = 32 x 114 = 3648 -> table: 3752
    (100, 0, 3752),
    # N_info = 42588 x 0.234375 = 9981.56: n = 8, N'_info = 256 x round(38.90) = 9984; R <= 1/4:
    # C = ceil(10008 / 3816) = 3, TBS = 24 ceil(10008 / 24) - 24 = 9984
    (273, 0, 9984),
    # N_info = 42588 x 6 x 910/1024 = 227080.5: n = 12, N'_info = 4096 x 55 = 225280 > 8424:
    # C = ceil(225304 / 8424) = 27, TBS = 216 ceil(225304 / 216) - 24 = 225480
    (273, 27, 225480),
    # N_info = 3120 x 4 x 658/1024 = 8019.25: n = 7, N'_info = 128 x 62 = 7936 <= 8424: C = 1,
    # TBS = 8 ceil(7960 / 8) - 24 = 7936
    (20, 16, 7936),
]
# fmt: on


@pytest.mark.parametrize(("n_prb", "index", "want"), HAND)
def test_cases_worked_by_hand(n_prb, index, want):
    assert transport_block_bits(n_prb, index) == want


def test_the_tables_as_printed():
    assert len(TBS_TABLE) == 93 and TBS_TABLE[0] == 24 and TBS_TABLE[-1] == 3824
    assert list(TBS_TABLE) == sorted(set(TBS_TABLE))
    assert len(MCS_TABLES[1]) == 29 and len(MCS_TABLES[2]) == 28
    assert mcs(10) == (4, 340 / 1024) and mcs(28) == (6, 948 / 1024)
    assert mcs(20, table=2) == (8, 682.5 / 1024) and mcs(27, table=2) == (8, 948 / 1024)
    assert transport_block_bits(0, 5) == 0


def test_more_prbs_never_carry_fewer_bits():
    for index in range(29):
        sizes = [transport_block_bits(n, index) for n in range(1, 274)]
        assert sizes == sorted(sizes), index


@pytest.mark.parametrize(
    ("call", "key"),
    [
        (lambda: transport_block_bits(-1, 3), "n_prb"),
        (lambda: transport_block_bits(5, 29), "index"),
        (lambda: transport_block_bits(5, 3, table=3), "table"),
        (lambda: transport_block_bits(5, 3, n_layers=5), "n_layers"),
    ],
)
def test_bad_input_names_the_argument(call, key):
    with pytest.raises(ValueError, match=key):
        call()


def test_code_blocks_by_hand():
    # MCS 27 of table 1 (Q_m 6, R 910/1024) on 273 PRBs: N_RE 156 x 273 = 42,588, N_info =
    # 227,080.8; n = 12, N'_info = 4096 x round(55.43) = 225,280 > 8424 at R > 1/4: C = ceil(
    # 225,304 / 8424) = 27, TBS = 216 ceil(225,304 / 216) - 24 = 225,480; K' = 225,504 / 27 + 24
    assert transport_block(273, 27) == (225_480, 27, 8376)
    # MCS 2 (Q_m 2, R 193/1024 <= 1/4) on 100 PRBs: N_info 5880.5, N'_info 128 x 46 = 5888:
    # C = ceil(5912 / 3816) = 2, TBS = 16 ceil(5912 / 16) - 24 = 5896, K' = 5920 / 2 + 24
    assert transport_block(100, 2) == (5896, 2, 2984)
    # one code block: TBS + its 16-bit CRC (TBS <= 3824), no code block CRC
    assert transport_block(5, 10) == (1032, 1, 1048)
    assert transport_block(0, 10) == (0, 0, 0)


def test_against_sionna():
    pytest.importorskip("sionna.phy", reason="the nr extra (sionna-no-rt) is not installed")
    import torch
    from sionna.phy.nr.utils import calculate_tb_size

    torch.set_num_threads(1)
    for table, rows in MCS_TABLES.items():
        for index in range(len(rows)):
            q_m, rate = mcs(index, table)
            for n_prb, symbols, dmrs, layers in [
                (1, 14, 12, 1), (7, 12, 24, 1), (51, 14, 6, 2), (133, 7, 36, 1), (273, 14, 12, 2)
            ]:  # fmt: skip
                ours = transport_block_bits(
                    n_prb, index, table=table, n_layers=layers, n_symbols=symbols,
                    dmrs_re_per_prb=dmrs,
                )  # fmt: skip
                ref = calculate_tb_size(
                    q_m, rate, num_prbs=n_prb, num_ofdm_symbols=symbols, num_dmrs_per_prb=dmrs,
                    num_layers=layers, return_cw_length=False,
                )  # fmt: skip
                assert ours == int(ref[0]), (table, index, n_prb, symbols, dmrs, layers)
                blocks = transport_block(
                    n_prb, index, table=table, n_layers=layers, n_symbols=symbols,
                    dmrs_re_per_prb=dmrs,
                )[1:]  # fmt: skip
                assert blocks == (int(ref[2]), int(ref[1])), (table, index, n_prb, symbols)
