"""Frequency-selective NR links and the pf PRB policy: EESM against Sionna's ``EESM`` and its
closed forms, the PF rule against Sionna's ``PFSchedulerSUMIMO``, the PRB-set engine against
the flat slot loop (bit for bit), PF's round robin in closed form, the fast fidelity against
the slot loop (KS), and clients that can never deliver. Needs the nr extra (sionna-no-rt)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from channels.nr_bler import sionna_version
from channels.nr_eesm import SubbandLayout, eesm_beta, eesm_sinr, eesm_sinr_at

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")

N_RB = 51


@pytest.fixture(scope="module")
def grid():
    from channels.nr_bler import pusch_bler_tables

    return pusch_bler_tables(1)


@pytest.fixture(scope="module")
def bank(grid):
    from channels.nr_bank import LinkBank
    from channels.nr_link import link_table

    return LinkBank(lambda n: link_table(grid, n, mcs_table=1, bler_target=0.1), N_RB)


@pytest.fixture(scope="module")
def beta(grid):
    return eesm_beta(grid.eesm_beta, grid.bler.shape[0])


def _exponential(rng, shape):
    return rng.exponential(1.0, shape)


def test_subbands_from_the_coherence_bandwidth():
    assert SubbandLayout.from_coherence(51, None, 30e3) == SubbandLayout(51, 51)
    layout = SubbandLayout.from_coherence(51, 1.0e6, 30e3)  # 1 MHz / 360 kHz -> 3 PRBs
    assert layout.prbs_per_subband == 3 and layout.n_subbands == 17
    assert SubbandLayout.from_coherence(51, 1.0e3, 30e3).prbs_per_subband == 1
    short = SubbandLayout(10, 4)  # subbands of 4, 4, 2 PRBs
    masks = short.contiguous_masks(np.array([3, 5, 2]))
    np.testing.assert_array_equal(masks.sum(axis=1), [3, 5, 2])
    assert not (masks.sum(axis=0) > 1).any()  # side by side, no PRB twice
    np.testing.assert_allclose(short.weights(masks), [[1, 0, 0], [0.2, 0.8, 0], [0, 0, 1]])


def test_eesm_equals_sionnas_on_the_same_resource_elements(grid, beta):
    """Per-subband SINRs spread over the PRBs' 12 subcarriers and 14 symbols: Sionna's EESM of
    those resource elements equals ours of the subbands with PRB-count weights (where Sionna's
    float32 sum does not underflow)."""
    import torch
    from sionna.sys import EESM

    rng = np.random.default_rng(0)
    layout = SubbandLayout(24, 5)  # 5 subbands, the last of 4 PRBs
    users, mcs = 6, rng.integers(0, 28, size=6)
    sinr_db = rng.uniform(-5.0, 25.0, size=(users, layout.n_subbands))
    masks = layout.contiguous_masks(np.array([4, 7, 1, 6, 3, 3]))
    ours = eesm_sinr_at(10 ** (sinr_db / 10), layout.weights(masks), beta[mcs])
    per_prb = np.where(masks, (10 ** (sinr_db / 10))[:, layout.subband_of_prb], 0.0)
    per_re = np.repeat(per_prb, 12, axis=1)  # (users, subcarriers)
    sinr = np.broadcast_to(per_re.T[None, :, :, None], (14, per_re.shape[1], users, 1))
    theirs = EESM(device="cpu")(
        torch.tensor(np.ascontiguousarray(sinr), dtype=torch.float32),
        torch.tensor(mcs, dtype=torch.int32),
        mcs_table_index=1,
    )
    theirs = theirs.numpy()
    # Sionna sums exp(-x / beta) in float32 unshifted: where all of them underflow it returns
    # its 30 dB cap; ours is the exact value, still below the client's best subband
    capped = theirs >= 1e3 * (1 - 1e-6)
    assert capped.sum() <= 2
    np.testing.assert_allclose(ours[~capped], theirs[~capped], rtol=2e-5)
    best = np.where(masks, (10 ** (sinr_db / 10))[:, layout.subband_of_prb], 0.0).max(axis=1)
    assert np.all(ours[capped] <= best[capped])


def test_eesm_closed_forms(beta):
    """Equal SINRs map to themselves; otherwise below the weighted mean and above the minimum;
    a large beta tends to the mean, a small one to the minimum."""
    x, w = np.array([[4.0, 4.0, 4.0]]), np.array([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(eesm_sinr(x, w, beta)[0], 4.0)
    x = np.array([[0.5, 8.0, 30.0]])
    eff = eesm_sinr(x, w, beta)[0]
    assert np.all(eff < (w * x).sum()) and np.all(eff > 0.5)
    np.testing.assert_allclose(eesm_sinr(x, w, np.array([1e6]))[0], (w * x).sum(), rtol=1e-4)
    np.testing.assert_allclose(eesm_sinr(x, w, np.array([1e-3]))[0], 0.5, rtol=1e-2)
    by_hand = -3.0 * math.log(np.sum(w * np.exp(-x / 3.0)))
    np.testing.assert_allclose(eesm_sinr(x, w, np.array([3.0]))[0, 0], by_hand)
    assert eesm_sinr(x, np.zeros((1, 3)), beta)[0, 0] == 0.0  # no PRB, as Sionna's 0


def test_pf_picks_what_sionnas_scheduler_picks():
    """Twenty slots of random achievable rates and last-slot rates: the same PRB owners."""
    import torch
    from sionna.sys import PFSchedulerSUMIMO

    from channels.nr_slots import pf_assign

    users, prbs, beta = 5, 12, 0.9
    sionna = PFSchedulerSUMIMO(users, prbs, 1, beta=beta, device="cpu")
    rng = np.random.default_rng(4)
    past, everyone, free = np.ones(users), np.ones((prbs, users), bool), np.ones(prbs, bool)
    for _ in range(20):
        achieved = rng.uniform(0.0, 50.0, size=users)
        achievable = rng.uniform(0.1, 6.0, size=(prbs, users))
        past = beta * past + (1 - beta) * achieved
        ours = pf_assign(achievable, past, everyone, free)
        theirs = sionna(
            torch.tensor(achieved, dtype=torch.float32),
            torch.tensor(achievable[None], dtype=torch.float32),
        )
        np.testing.assert_array_equal(ours, theirs[0, :, :, 0].int().argmax(dim=-1).numpy())
    held = np.zeros(prbs, bool)
    held[:4] = True  # PRBs a retransmission holds, and a client not eligible anywhere
    eligible = everyone.copy()
    eligible[:, 2] = False
    owners = pf_assign(achievable, past, eligible, ~held)
    assert (owners[:4] == -1).all() and (owners[4:] != 2).all() and (owners[4:] >= 0).all()


def _engine(bank, beta, sinr, bits, seed=0, **kw):
    from channels.nr_harq import LinkAdaptation
    from channels.nr_link import HarqSettings
    from channels.nr_slots import PrbPolicy, prb_slot_uploads

    m = len(sinr)
    return prb_slot_uploads(
        bank,
        np.asarray(sinr, float),
        np.asarray(bits, float),
        [np.random.default_rng([seed, i]) for i in range(m)],
        harq=kw.pop("harq", HarqSettings()),
        adaptation=kw.pop("adaptation", LinkAdaptation()),
        offset_db=np.zeros(m),
        layout=kw.pop("layout", SubbandLayout(N_RB, N_RB)),
        beta=beta,
        policy=kw.pop("policy", PrbPolicy()),
        **kw,
    )


@pytest.mark.parametrize("kind", ["illa", "olla"])
def test_flat_fixed_prbs_are_the_flat_slot_loop_bit_for_bit(bank, beta, kind):
    from channels.nr_harq import LinkAdaptation, slot_uploads
    from channels.nr_link import HarqSettings

    prbs, sinr = np.array([10, 20, 21]), 10 ** (np.array([0.0, 8.0, 15.0]) / 10)
    bits = np.full(3, 2e5)
    flat = slot_uploads(
        [bank.table_of(int(n)) for n in prbs],
        sinr,
        bits,
        [np.random.default_rng([0, i]) for i in range(3)],
        harq=HarqSettings(),
        adaptation=LinkAdaptation(kind),
        offset_db=np.zeros(3),
    )
    sets = _engine(bank, beta, sinr, bits, prbs=prbs, adaptation=LinkAdaptation(kind))
    for name in ("slots", "transmissions", "nacks", "blocks", "mcs_sum", "delivered_bits"):
        np.testing.assert_array_equal(getattr(sets.uploads, name), getattr(flat, name), name)
    np.testing.assert_array_equal(sets.uploads.offset_db, flat.offset_db)
    np.testing.assert_array_equal(sets.prb_slots, prbs * flat.transmissions)


def test_pf_on_a_flat_clean_channel_is_a_round_robin_of_the_whole_carrier(bank, beta):
    """At 30 dB with a BLER target of 1e-12 every block decodes (TBLER 0): PF gives all 51
    PRBs to one client a slot, in turn (equal throughputs: the first; then the one served
    longest ago), so K clients of S blocks each end at slots (S - 1) K + k; with unequal loads
    nothing idles before the last one ends: the last slot is the sum of the blocks."""
    from channels.nr_harq import LinkAdaptation
    from channels.nr_slots import PrbPolicy

    sinr, sure = np.full(4, 1e3), LinkAdaptation("illa", bler_target=1e-12)
    bank.ensure(np.array([N_RB]))
    at = bank.grid.snr_index(np.array([1e3]))
    top = int(bank.illa_at(np.array([N_RB]), np.tile(at, (1, beta.size)), 1e-12)[0])
    assert bank.tbler[N_RB, top, at[0]] == 0.0 and top >= 20
    tbs = bank.tbs[N_RB, top]
    blocks = 7
    pf = {"policy": PrbPolicy("pf"), "adaptation": sure}
    done = _engine(bank, beta, sinr, np.full(4, blocks * tbs - 1.0), **pf)
    np.testing.assert_array_equal(done.uploads.slots, (blocks - 1) * 4 + np.arange(1, 5))
    np.testing.assert_array_equal(done.prb_slots, np.full(4, blocks * N_RB))
    loads = np.array([1, 3, 9, 2])
    done = _engine(bank, beta, sinr, loads * tbs, **pf)
    assert done.uploads.slots.max() == loads.sum()
    np.testing.assert_array_equal(done.uploads.transmissions, loads)


@pytest.mark.parametrize("per_slot", [False, True])
@pytest.mark.parametrize("sinr_db", [5.0, 15.0])
def test_fast_selective_uploads_have_the_slot_loops_distribution(bank, beta, sinr_db, per_slot):
    """300 uploads of 100 kbit on 12 PRBs in subbands of 3 (Rayleigh per subband; four
    uploads side by side a carrier): the slot loop and whole HARQ cycles, KS p > 0.01, the
    means of slots and blocks within 3 s.e."""
    from channels.nr_fast_selective import fast_selective_uploads
    from channels.nr_link import HarqSettings

    m, layout = 4, SubbandLayout(N_RB, 3)
    sinr, bits, prbs = np.full(m, 10 ** (sinr_db / 10)), np.full(m, 1e5), np.full(m, 12)
    kw = {"layout": layout, "prbs": prbs, "draw_gain": _exponential, "per_slot": per_slot}
    slow, fast = [], []
    for seed in range(75):
        slow.append(_engine(bank, beta, sinr, bits, seed=seed, **kw).uploads)
        rngs = [np.random.default_rng([10**6 + seed, i]) for i in range(m)]
        fast.append(
            fast_selective_uploads(
                bank, sinr, bits, rngs, harq=HarqSettings(), bler_target=0.1,
                offset_db=np.zeros(m), beta=beta, **kw,
            ).uploads
        )  # fmt: skip
    a, b = (np.concatenate([u.slots for u in runs]) for runs in (slow, fast))
    assert abs(np.isfinite(a).mean() - np.isfinite(b).mean()) < 0.08  # deep fades (block)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    assert stats.ks_2samp(a, b).pvalue > 0.01
    blocks = [np.concatenate([u.blocks for u in runs]) for runs in (slow, fast)]
    for x, y in ((a, b), blocks):
        se = math.hypot(x.std(), y.std()) / math.sqrt(min(x.size, y.size))
        assert abs(x.mean() - y.mean()) <= 3 * se + 1e-9


def test_frequency_selectivity_costs_rate_and_pf_wins_it_back(bank, beta):
    """Fixed equal PRBs on a selective channel (Rayleigh per subband and slot) need more slots
    than on a channel without fading at the same mean SINR, and PF, which gives each subband
    to the client it suits, needs fewer than fixed PRBs on the same channel (200 rounds of 5
    clients, common random gains)."""
    from channels.nr_slots import PrbPolicy

    layout, m = SubbandLayout(N_RB, 3), 5
    sinr, bits, prbs = np.full(m, 10.0), np.full(m, 1e5), np.full(m, 10)
    flat, selective, pf = [], [], []
    for seed in range(200):
        kw = {"seed": seed, "layout": layout, "draw_gain": _exponential, "per_slot": True}
        flat.append(_engine(bank, beta, sinr, bits, seed=seed, prbs=prbs).uploads.slots.max())
        selective.append(_engine(bank, beta, sinr, bits, prbs=prbs, **kw).uploads.slots.max())
        pf.append(_engine(bank, beta, sinr, bits, policy=PrbPolicy("pf"), **kw).uploads.slots.max())
    assert np.mean(selective) > 1.05 * np.mean(flat)
    assert np.mean(pf) < 0.8 * np.mean(selective)


def test_a_client_that_can_never_deliver_never_arrives_and_the_others_do(bank, beta):
    """Block gains: one client far below the tables on every subband (and, on fixed PRBs, one
    whose EESM sits in its deep fade): infinite slots, in both policies and both fidelities,
    while the others finish."""
    from channels.nr_fast_selective import fast_selective_uploads
    from channels.nr_link import HarqSettings
    from channels.nr_slots import PrbPolicy

    layout = SubbandLayout(N_RB, 17)  # 3 subbands

    def gains(rng, shape):
        return np.array([1.0, 1.0, 1e-4])  # the third subband in a deep fade

    sinr, bits = np.array([1e-3, 10.0, 10.0]), np.full(3, 5e4)
    prbs = np.array([17, 17, 17])  # the third client's PRBs are the faded subband
    kw = {"layout": layout, "draw_gain": gains}
    fixed = _engine(bank, beta, sinr, bits, prbs=prbs, **kw).uploads.slots
    assert math.isinf(fixed[0]) and math.isfinite(fixed[1]) and math.isinf(fixed[2])
    pf = _engine(bank, beta, sinr, bits, policy=PrbPolicy("pf"), **kw).uploads.slots
    assert math.isinf(pf[0]) and np.isfinite(pf[1:]).all()  # pf keeps it off the faded PRBs
    fast = fast_selective_uploads(
        bank,
        sinr,
        bits,
        [np.random.default_rng(i) for i in range(3)],
        harq=HarqSettings(),
        bler_target=0.1,
        offset_db=np.zeros(3),
        beta=beta,
        prbs=prbs,
        **kw,
    ).uploads.slots
    np.testing.assert_array_equal(np.isinf(fast), np.isinf(fixed))
