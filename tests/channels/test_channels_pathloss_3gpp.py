"""3GPP TR 38.901 UMi/UMa path loss and LoS probability against hand-evaluated values.

Reference values are written out here, either as the Table 7.4.1-1 / 7.4.2-1 formula evaluated
with ``math.log10`` on literal numbers, or as fully numeric literals computed once with the
``bc -l`` calculator (scale=15, log10(x) = l(x)/l(10)), independently of the module.
"""

import dataclasses
import math

import numpy as np
import pytest

import channels
from channels import (
    PATH_LOSS_MODELS,
    PathLossModel,
    SingleSlope,
    UMa,
    UMi,
    breakpoint_distance_m,
    make_path_loss,
    path_power_gain,
    uma_los_probability,
    uma_path_loss_db,
    umi_los_probability,
    umi_path_loss_db,
)
from channels.registry import UnknownNameError

FC = 3.5  # GHz


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg and msg
    return msg


# -- hand-evaluated formulas (fc = 3.5 GHz, h_UT = 1.5 m) -----------------------------------
def test_umi_formula_evaluated_by_hand():
    # h_BS = 10 m, h_UT = 1.5 m: h_BS − h_UT = 8.5 m; d'_BP = 4·9·0.5·3.5e9/3e8 = 210 m.
    assert breakpoint_distance_m(carrier_ghz=3.5, h_bs_m=10.0, h_ut_m=1.5) == pytest.approx(
        210.0, rel=1e-14
    )
    d3_100 = math.sqrt(100.0**2 + 8.5**2)
    d3_800 = math.sqrt(800.0**2 + 8.5**2)
    los_100 = 32.4 + 21 * math.log10(d3_100) + 20 * math.log10(3.5)  # d2D <= d'_BP: PL1
    los_800 = (  # d2D > d'_BP: PL2
        32.4 + 40 * math.log10(d3_800) + 20 * math.log10(3.5) - 9.5 * math.log10(210.0**2 + 8.5**2)
    )
    # PL1 and PL2 meet at d2D = d'_BP = 210 m (float rounding only):
    d3_bp = math.sqrt(210.0**2 + 8.5**2)
    pl1_bp = 32.4 + 21 * math.log10(d3_bp) + 20 * math.log10(3.5)
    pl2_bp = (
        32.4 + 40 * math.log10(d3_bp) + 20 * math.log10(3.5) - 9.5 * math.log10(210.0**2 + 8.5**2)
    )
    assert abs(pl1_bp - pl2_bp) < 1e-9
    nlos_100 = max(los_100, 35.3 * math.log10(d3_100) + 22.4 + 21.3 * math.log10(3.5) - 0.0)
    nlos_800 = max(los_800, 35.3 * math.log10(d3_800) + 22.4 + 21.3 * math.log10(3.5) - 0.0)
    got = umi_path_loss_db(
        [100.0, 800.0, 100.0, 800.0],
        carrier_ghz=FC,
        h_bs_m=10.0,
        h_ut_m=1.5,
        los=np.array([True, True, False, False]),
    )
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [los_100, los_800, nlos_100, nlos_800], rtol=0, atol=1e-10)


def test_uma_formula_evaluated_by_hand():
    # h_BS = 25 m, h_UT = 1.5 m: h_BS − h_UT = 23.5 m; d'_BP = 4·24·0.5·3.5e9/3e8 = 560 m.
    assert breakpoint_distance_m(carrier_ghz=3.5, h_bs_m=25.0, h_ut_m=1.5) == pytest.approx(
        560.0, rel=1e-14
    )
    d3_100 = math.sqrt(100.0**2 + 23.5**2)
    d3_800 = math.sqrt(800.0**2 + 23.5**2)
    los_100 = 28.0 + 22 * math.log10(d3_100) + 20 * math.log10(3.5)  # PL1
    los_800 = (  # PL2
        28.0 + 40 * math.log10(d3_800) + 20 * math.log10(3.5) - 9 * math.log10(560.0**2 + 23.5**2)
    )
    nlos_100 = max(los_100, 13.54 + 39.08 * math.log10(d3_100) + 20 * math.log10(3.5) - 0.0)
    nlos_800 = max(los_800, 13.54 + 39.08 * math.log10(d3_800) + 20 * math.log10(3.5) - 0.0)
    got = uma_path_loss_db(
        np.array([100.0, 800.0, 100.0, 800.0]),
        carrier_ghz=FC,
        h_bs_m=25.0,
        h_ut_m=1.5,
        los=np.array([True, True, False, False]),
    )
    np.testing.assert_allclose(got, [los_100, los_800, nlos_100, nlos_800], rtol=0, atol=1e-10)


def test_numeric_literals_from_a_calculator():
    # Computed once with `bc -l` (scale=15), log10(3.5) = 0.544068044350275:
    # UMi LoS d2D=100: d3D = sqrt(100² + 8.5²) = 100.360599838781, log10 = 2.001563248356944,
    #   PL = 32.4 + 21·2.001563248356944 + 20·0.544068044350275 = 85.314189102501
    # UMi LoS d2D=800 (> d'_BP = 210): d3D = 800.045154975643, log10 = 2.903114499496102,
    #   PL = 32.4 + 40·2.903114499496102 + 10.8813608870055 − 9.5·log10(44172.25) = 115.277020412968
    # UMi NLoS: PL' = 35.3·log10(d3D) + 22.4 + 21.3·0.544068044350275
    #   = 104.643832011661 (100 m), 136.468591176873 (800 m); both above the LoS values.
    # UMa LoS d2D=100: d3D = sqrt(100² + 23.5²) = 102.724145165584, log10 = 2.011672535902130,
    #   PL = 28 + 22·2.011672535902130 + 10.8813608870055 = 83.138156676852
    # UMa LoS d2D=800 (> d'_BP = 560): d3D = 800.345081824084, log10 = 2.903277280515109,
    #   PL = 28 + 40·2.903277280515109 + 10.8813608870055 − 9·log10(313600 + 552.25)
    #   = 105.538190536771
    # UMa NLoS: PL' = 13.54 + 39.08·log10(d3D) + 10.8813608870055
    #   = 103.037523590061 (100 m), 137.881437009536 (800 m).
    los = np.array([True, True, False, False])
    d = [100.0, 800.0, 100.0, 800.0]
    np.testing.assert_allclose(
        umi_path_loss_db(d, carrier_ghz=3.5, los=los),
        [85.314189102501, 115.277020412968, 104.643832011661, 136.468591176873],
        rtol=0,
        atol=1e-9,
    )
    np.testing.assert_allclose(
        uma_path_loss_db(d, carrier_ghz=3.5, los=los),
        [83.138156676852, 105.538190536771, 103.037523590061, 137.881437009536],
        rtol=0,
        atol=1e-9,
    )
    # LoS probabilities (Table 7.4.2-1), same calculator:
    # UMi 100 m: 0.18 + exp(−100/36)·0.82 = 0.230984749698135
    # UMa 100 m, h_UT <= 13: 0.18 + exp(−100/63)·0.82 = 0.347670836844230
    # UMa 100 m, h_UT = 18: C' = 0.5^1.5 = 0.353553390593272,
    #   0.347670836844230·(1 + C'·1.25·1³·exp(−2/3)) = 0.426557507576568
    # UMa 300 m, h_UT = 18: (0.06 + exp(−300/63)·0.94)·(1 + C'·1.25·27·exp(−2)) = 0.177906782956661
    assert umi_los_probability(100.0) == pytest.approx(0.230984749698135, abs=1e-13)
    assert uma_los_probability(100.0, 1.5) == pytest.approx(0.347670836844230, abs=1e-13)
    assert uma_los_probability(100.0, 13.0) == pytest.approx(0.347670836844230, abs=1e-13)
    assert uma_los_probability(100.0, 18.0) == pytest.approx(0.426557507576568, abs=1e-13)
    assert uma_los_probability(300.0, 18.0) == pytest.approx(0.177906782956661, abs=1e-13)


def test_non_default_heights_and_frequency_by_hand():
    # UMi at fc = 28 GHz, h_UT = 10 m, d2D = 50 m: d'_BP = 4·9·9·28e9/3e8 = 30240 m (PL1).
    d3 = math.sqrt(50.0**2 + 0.0**2)
    los = 32.4 + 21 * math.log10(d3) + 20 * math.log10(28.0)
    nlos = max(los, 35.3 * math.log10(d3) + 22.4 + 21.3 * math.log10(28.0) - 0.3 * (10.0 - 1.5))
    got = umi_path_loss_db([50.0, 50.0], carrier_ghz=28.0, h_ut_m=10.0, los=np.array([1, 0]) > 0)
    np.testing.assert_allclose(got, [los, nlos], rtol=0, atol=1e-10)
    # UMa at fc = 2 GHz, h_UT = 13 m, d2D = 1500 m: d'_BP = 4·24·12·2e9/3e8 = 7680 m (PL1).
    d3 = math.sqrt(1500.0**2 + 12.0**2)
    los = 28.0 + 22 * math.log10(d3) + 20 * math.log10(2.0)
    nlos = max(los, 13.54 + 39.08 * math.log10(d3) + 20 * math.log10(2.0) - 0.6 * (13.0 - 1.5))
    got = uma_path_loss_db([1500.0] * 2, carrier_ghz=2.0, h_ut_m=13.0, los=np.array([True, False]))
    np.testing.assert_allclose(got, [los, nlos], rtol=0, atol=1e-10)


# -- structural properties -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fn", "h_bs", "h_ut", "fc", "bp_coeff"),
    [(umi_path_loss_db, 10.0, 1.5, 0.5, 9.5), (umi_path_loss_db, 10.0, 1.5, 3.5, 9.5),
     (umi_path_loss_db, 10.0, 1.5, 28.0, 9.5), (umi_path_loss_db, 10.0, 4.0, 3.5, 9.5),
     (umi_path_loss_db, 10.0, 10.0, 2.0, 9.5), (uma_path_loss_db, 25.0, 1.5, 0.5, 9.0),
     (uma_path_loss_db, 25.0, 1.5, 3.5, 9.0), (uma_path_loss_db, 25.0, 1.5, 28.0, 9.0),
     (uma_path_loss_db, 25.0, 7.0, 2.0, 9.0), (uma_path_loss_db, 25.0, 13.0, 0.7, 9.0)],
)  # fmt: skip
def test_los_path_loss_is_continuous_at_the_breakpoint(fn, h_bs, h_ut, fc, bp_coeff):
    d_bp = breakpoint_distance_m(carrier_ghz=fc, h_bs_m=h_bs, h_ut_m=h_ut)
    assert d_bp == pytest.approx(4 * (h_bs - 1) * (h_ut - 1) * fc * 1e9 / 3e8, rel=1e-14)
    assert 20.0 < d_bp < 4500.0  # the parameters put the breakpoint inside [10 m, 5 km]
    kw = {"carrier_ghz": fc, "h_bs_m": h_bs, "h_ut_m": h_ut, "los": True}
    # At d2D = d'_BP, d3D² = d'_BP² + Δh², so 40·log10(d3D) − bp·log10(d3D²) = (40 − 2·bp)·
    # log10(d3D), the PL1 slope (21 UMi, 22 UMa): the two branches meet exactly, and the
    # remaining mismatch is float rounding (measured below 1e-12 dB; 1e-9 dB asserted).
    pl = fn([d_bp * (1 - 1e-15), d_bp, d_bp * (1 + 1e-15)], **kw)
    assert np.ptp(pl) < 1e-9
    # ... and the slope does change there (a real kink, not one straight line): per decade of
    # d3D, PL2 rises by 40 dB, PL1 by (40 − 2·bp) dB.
    d3 = np.sqrt(np.array([d_bp / 1.1, d_bp, d_bp * 1.1]) ** 2 + (h_bs - h_ut) ** 2)
    pl = fn([d_bp / 1.1, d_bp, d_bp * 1.1], **kw)
    slopes = np.diff(pl) / np.diff(np.log10(d3))
    np.testing.assert_allclose(slopes, [40 - 2 * bp_coeff, 40.0], rtol=1e-9)


@pytest.mark.parametrize("fc", [0.5, 2.0, 3.5, 28.0, 100.0])
def test_nlos_is_never_below_los(fc):
    d = np.geomspace(1.0, 5000.0, 400)
    for fn, heights in ((umi_path_loss_db, (1.5, 10.0, 22.5)), (uma_path_loss_db, (1.5, 13.0))):
        for h_ut in heights:
            los = fn(d, carrier_ghz=fc, h_ut_m=h_ut, los=np.ones(d.shape, bool))
            nlos = fn(d, carrier_ghz=fc, h_ut_m=h_ut, los=np.zeros(d.shape, bool))
            assert (nlos >= los).all()
            assert (np.diff(los) >= -1e-12).all() and (np.diff(nlos) >= -1e-12).all()


def test_distances_below_10_m_are_clipped_and_above_5_km_rejected():
    for fn in (umi_path_loss_db, uma_path_loss_db):
        pl = fn([0.0, 3.0, 10.0], carrier_ghz=FC, los=np.array([True, True, True]))
        assert pl[0] == pl[1] == pl[2]
        assert fn(5000.0, carrier_ghz=FC, los=False) > fn(4999.0, carrier_ghz=FC, los=False)
        with pytest.raises(ValueError) as err:
            fn([100.0, 5000.5], carrier_ghz=FC, los=np.array([True, True]))
        assert _one_line(err) == "distance_2d_m must be in [0, 5000], got 5000.5"
        with pytest.raises(ValueError, match="distance_2d_m"):
            fn(-1.0, carrier_ghz=FC, los=True)


def test_los_probability_is_one_up_to_18_m_then_decreasing():
    d_near = np.array([0.0, 1.0, 10.0, 17.9, 18.0])
    assert (umi_los_probability(d_near) == 1.0).all()
    assert (uma_los_probability(d_near, 1.5) == 1.0).all()
    assert (uma_los_probability(d_near, 20.0) == 1.0).all()
    d_far = np.linspace(18.0, 5000.0, 2000)[1:]
    for p in (umi_los_probability(d_far), uma_los_probability(d_far, 1.5), UMa(FC, h_ut_m=13.0)
              .los_probability(d_far)):  # fmt: skip
        assert (p < 1.0).all() and (p > 0.0).all()
        assert (np.diff(p) < 0).all()
    # Continuous at 18 m: 18/18 + exp(·)·0 = 1.
    assert umi_los_probability(18.0 + 1e-9) == pytest.approx(1.0, abs=1e-9)
    assert isinstance(umi_los_probability(50.0), float)


def test_los_probability_argument_checks():
    with pytest.raises(ValueError) as err:
        uma_los_probability(50.0, 30.0)
    assert _one_line(err) == "h_ut_m must be in [1.5, 23], got 30.0"
    with pytest.raises(ValueError, match="distance_2d_m must be >= 0"):
        umi_los_probability([-1.0])


# -- models: LoS draws and shadowing ---------------------------------------------------------
@pytest.mark.parametrize("model", [UMi(FC), UMa(FC)])
def test_empirical_los_fraction_matches_p_los(model):
    rng = np.random.default_rng(7)
    n = 200_000
    for d2d in (30.0, 100.0, 400.0):
        p = float(model.los_probability(d2d))
        _, los = model.power_gain(np.full(n, d2d), rng.random(n), np.zeros(n))
        assert los.dtype == np.bool_ and los.shape == (n,)
        assert abs(los.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_los_state_changes_consistently_when_a_client_moves():
    model = UMi(FC)
    u = np.full(300, 0.4)  # one client's uniform, kept as it walks away from the BS
    d = np.linspace(5.0, 1000.0, 300)
    _, los = model.power_gain(d, u, np.zeros(300))
    # LoS while P_LoS(d) > 0.4, NLoS after: a single switch, never back.
    assert los[0] and not los[-1] and np.count_nonzero(np.diff(los.astype(int))) == 1
    np.testing.assert_array_equal(los, model.los_probability(d) > 0.4)


@pytest.mark.parametrize(("model", "sig_los", "sig_nlos"), [(UMi(FC), 4.0, 7.82),
                                                            (UMa(FC), 4.0, 6.0)])  # fmt: skip
def test_shadowing_sigma_by_los_state(model, sig_los, sig_nlos):
    rng = np.random.default_rng(11)
    n = 100_000
    d = np.full(n, 250.0)
    z = rng.standard_normal(n)
    u = np.where(np.arange(n) % 2 == 0, 0.0, 1.0 - 1e-12)  # even: LoS surely, odd: NLoS
    gain, los = model.power_gain(d, u, z)
    assert los[::2].all() and not los[1::2].any()
    gain_db = 10.0 * np.log10(gain)
    for state, sigma in ((True, sig_los), (False, sig_nlos)):
        sel = los == state
        pl = float(model.path_loss_db(250.0, state))
        assert gain_db[sel].std() == pytest.approx(sigma, rel=0.02)
        assert gain_db[sel].mean() == pytest.approx(-pl, abs=0.1)
        # Exactly: gain = 10^((σ_SF·z − PL)/10) (z > 0: a stronger channel).
        np.testing.assert_allclose(gain_db[sel], sigma * z[sel] - pl, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(model.shadowing_sigma_db(np.array([True, False])),
                                  [sig_los, sig_nlos])  # fmt: skip


def test_power_gain_checks_its_inputs():
    model = UMa(FC)
    with pytest.raises(ValueError) as err:
        model.power_gain(np.ones(3), np.ones(3), np.zeros(3))
    assert _one_line(err) == "los_uniform must be in [0, 1), got 1.0"
    with pytest.raises(ValueError) as err:
        model.power_gain(np.ones(3), np.zeros(2), np.zeros(3))
    assert _one_line(err) == "los_uniform must have the shape of distance_2d_m (3,), got (2,)"
    with pytest.raises(ValueError, match="shadow_z must be finite"):
        model.power_gain(np.ones(2), np.zeros(2), np.array([0.0, np.inf]))
    with pytest.raises(ValueError, match="los must be a bool array"):
        model.path_loss_db([100.0], [0.5])


# -- argument checks -------------------------------------------------------------------------
@pytest.mark.parametrize("fc", [0.4, 100.5, -3.5, float("nan")])
def test_carrier_outside_0_5_to_100_ghz_is_one_line_error(fc):
    for build in (
        lambda: UMi(fc),
        lambda: UMa(carrier_ghz=fc),
        lambda: umi_path_loss_db(100.0, carrier_ghz=fc, los=True),
        lambda: uma_path_loss_db(100.0, carrier_ghz=fc, los=True),
        lambda: breakpoint_distance_m(carrier_ghz=fc, h_bs_m=10.0, h_ut_m=1.5),
        lambda: make_path_loss("3gpp_umi", carrier_ghz=fc),
    ):
        with pytest.raises(ValueError) as err:
            build()
        msg = _one_line(err)
        assert msg.startswith("carrier_ghz must be in [0.5, 100], got ")


def test_carrier_range_ends_are_accepted_and_heights_checked():
    assert UMi(0.5).carrier_ghz == 0.5 and UMa(100).carrier_ghz == 100.0
    assert isinstance(UMa(100).carrier_ghz, float)
    with pytest.raises(ValueError) as err:
        UMa(FC, h_ut_m=13.5)
    assert _one_line(err) == "h_ut_m must be in [1.5, 13], got 13.5"
    with pytest.raises(ValueError) as err:
        UMi(FC, h_ut_m=1.0)
    assert _one_line(err) == "h_ut_m must be in [1.5, 22.5], got 1.0"
    with pytest.raises(ValueError) as err:
        UMi(FC, h_bs_m=1.0)
    assert _one_line(err) == "h_bs_m must be > 1, got 1.0"
    with pytest.raises(dataclasses.FrozenInstanceError):
        UMi(FC).carrier_ghz = 2.0  # type: ignore[misc]
    assert UMi(FC) == UMi(3.5, 10.0, 1.5) and UMa(FC).h_bs_m == 25.0


# -- single slope ----------------------------------------------------------------------------
def test_single_slope_equals_the_projects_existing_model():
    rng = np.random.default_rng(3)
    d = rng.uniform(5.0, 500.0, 64)
    z = rng.standard_normal(64)
    model = SingleSlope(1.75, reference_gain_db=-30.0, shadowing_sigma_db=8.0)
    gain, los = model.power_gain(d, rng.random(64), z)
    expected = path_power_gain(d, 1.75) * 10 ** (-30.0 / 10) * 10 ** (8.0 * z / 10)
    np.testing.assert_allclose(gain, expected, rtol=1e-13)
    assert los.all()
    # The same through its path loss in dB: PL = −G_ref + 20·γ·log10(d).
    pl = model.path_loss_db(d, los)
    np.testing.assert_allclose(pl, 30.0 + 35.0 * np.log10(d), rtol=1e-13)
    np.testing.assert_allclose(gain, 10 ** ((8.0 * z - pl) / 10), rtol=1e-12)
    assert (model.shadowing_sigma_db(los) == 8.0).all()
    # Defaults: no reference gain, no shadowing: exactly d^(−2γ).
    g0, _ = SingleSlope(1.0).power_gain(np.array([2.0, 10.0]), np.zeros(2), np.ones(2))
    np.testing.assert_allclose(g0, [0.25, 0.01], rtol=1e-15)
    assert repr(model) == (
        "SingleSlope(exponent=1.75, reference_gain_db=-30.0, shadowing_sigma_db=8.0)"
    )
    with pytest.raises(ValueError) as err:
        SingleSlope(1.0, shadowing_sigma_db=-1.0)
    assert _one_line(err) == "shadowing_sigma_db must be >= 0, got -1.0"


# -- registry --------------------------------------------------------------------------------
def test_registry_names_and_make_path_loss():
    assert PATH_LOSS_MODELS.names()[:3] == ["single_slope", "3gpp_umi", "3gpp_uma"]
    assert channels.PATH_LOSS_MODELS is PATH_LOSS_MODELS
    assert make_path_loss("3gpp_umi", carrier_ghz=3.5) == UMi(3.5)
    assert make_path_loss("3gpp_uma", carrier_ghz=3.5, h_ut_m=10.0) == UMa(3.5, 25.0, 10.0)
    ss = make_path_loss("single_slope", exponent=1.5, shadowing_sigma_db=4.0)
    assert isinstance(ss, SingleSlope) and isinstance(ss, PathLossModel) and ss.sigma_db == 4.0
    with pytest.raises(TypeError):
        PathLossModel()  # type: ignore[abstract]


def test_unknown_name_or_keyword_is_one_line_listing_the_accepted():
    with pytest.raises(UnknownNameError) as err:
        make_path_loss("3gpp_rma", carrier_ghz=3.5)
    assert _one_line(err) == (
        "unknown path-loss model '3gpp_rma'; accepted: 'single_slope', '3gpp_umi', '3gpp_uma'"
    )
    with pytest.raises(ValueError) as err:
        make_path_loss("3gpp_umi", carrier_ghz=3.5, h_ue_m=1.5)
    assert _one_line(err) == (
        "unknown parameter 'h_ue_m' for path-loss model '3gpp_umi'; "
        "accepted: 'carrier_ghz', 'h_bs_m', 'h_ut_m'"
    )
    with pytest.raises(ValueError) as err:
        make_path_loss("single_slope", exponent=1.0, sigma_db=3.0)
    assert _one_line(err) == (
        "unknown parameter 'sigma_db' for path-loss model 'single_slope'; "
        "accepted: 'exponent', 'reference_gain_db', 'shadowing_sigma_db'"
    )
    with pytest.raises(ValueError) as err:
        make_path_loss("3gpp_uma", h_ut_m=1.5)
    assert _one_line(err) == (
        "missing parameter 'carrier_ghz' for path-loss model '3gpp_uma'; "
        "accepted: 'carrier_ghz', 'h_bs_m', 'h_ut_m'"
    )
