"""The AirComp reproductions (``wirelessfl reproduce aircomp-*``): every grid point valid, and
short network-only runs whose summaries agree with n / B, with FDMA's equal-delay time and with
the run tables."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.results import load
from wirelessfl.study.aircomp_figures import uplink_label
from wirelessfl.study.paired import MIN_SEEDS
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce

#: a network-only learner for the default study's end-to-end check (its scenario trains for real)
SURROGATE = 'learner={"kind":"surrogate","shape":{"layer_shapes":[[64,64],[64,32]]}}'


def _network_only_study(name: str, out) -> dict:
    """Reproduction ``name`` with the surrogate learner, 2 rounds evaluated each, one seed."""
    return reproduce(name, out_dir=out, overrides=[SURROGATE, "rounds=2", "eval_every=1"], seeds=1)


def _assert_growth(table, growth, k_large_by_sweep: dict[str, int]) -> None:
    """``growth.csv``'s row of each sweep: its largest K and D^t there over D^t at K = 5."""
    for sweep, k_large in k_large_by_sweep.items():
        delays = table[table.sweep == sweep].set_index("n_scheduled").mean_delay_s
        assert growth.loc[sweep, "k_large"] == k_large
        assert growth.loc[sweep, "delay_ratio"] == pytest.approx(delays[k_large] / delays[5])


def _equal_delay_mean_s(sent, bandwidth_hz: float) -> float:
    """FDMA's equal-delay upload time under the band noise rule, mean over rounds [s]:
    sum_k bits_k / (B log2(1 + SNR_k)) over each round's arrived clients ``sent``."""
    per_round_s = [
        float(np.sum(q.bits / (bandwidth_hz * np.log2(1.0 + 10.0 ** (q.snr_db / 10.0)))))
        for _, q in sent.groupby("round")
    ]
    return float(np.mean(per_round_s))


def test_the_reproductions_are_listed_and_pair_with_aircomp():
    names = [name for name in REPRODUCTIONS if name.startswith("aircomp-")]
    assert names == [
        "aircomp-latency-k",
        "aircomp-latency-snr",
        "aircomp-digits",
        "aircomp-default",
        "aircomp-default-snr",
        "aircomp-default-full",
        "aircomp-minilm",
        "aircomp-minilm-snr",
        "aircomp-minilm-50",
    ]
    digits = REPRODUCTIONS["aircomp-digits"]
    assert digits.reference.value == {"channel.uplink": "fdma"} and digits.seeds >= 3
    for name in names[:2]:
        spec = REPRODUCTIONS[name]
        assert spec.seeds >= 5 and spec.reference.value == {"channel.uplink": "aircomp"}
        assert set(spec.sweeps) == {
            "aircomp",
            "fdma_dense",
            "fdma_dense_4bit",
            "fdma_soft",
            "fdma_topk",
            "fdma_topk_4bit",
        }


def test_latency_study_runs_and_agrees_with_the_tables(tmp_path):
    result = reproduce("aircomp-latency-k", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"]
    assert len(table) == 24 and table.finished.all()
    air = table[table.sweep == "aircomp"]
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        sent = run.clients[run.clients.status == "arrived"]
        if row["sweep"] == "aircomp":  # n / B: the dense values over 1 MHz, whatever K
            assert row["mean_delay_s"] == pytest.approx((sent.bits / 32 / 1.0e6).max())
            assert row["mean_aircomp_mse"] == pytest.approx(run.rounds.aircomp_mse.mean())
        else:
            assert math.isnan(row["mean_aircomp_mse"])
            assert row["mean_delay_s"] > air.mean_delay_s.max()
    assert air.mean_delay_s.nunique() == 1
    assert all(p.exists() and p.stat().st_size > 0 for p in result["figures"])


def test_compressed_fdma_uploads_take_their_share_of_the_dense_time(tmp_path):
    """FDMA's equal-delay shares make D^t proportional to the bits sent (same channel draws
    at the same K and seed): top-k and SOFT send ceil(O n_l) values of 32 bits per adapted
    module l, the quantised runs b bits per value plus one 32-bit scale per module; the sparse
    ones also send their index, per module the smaller of a bitmask (n_l bits) and a list of
    ceil(log2 n_l)-bit coordinates."""
    result = reproduce("aircomp-latency-k", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"].set_index(["sweep", "n_scheduled"])
    modules, per_module = 24, 8 * (768 + 768)  # rank 8 on 24 modules of 768 x 768
    kept = math.ceil(0.1 * per_module)
    sparse = modules * kept
    index = modules * min(per_module, kept * math.ceil(math.log2(per_module)))
    assert index == 294_912  # the bitmask: 1,229 coordinates of 14 bits would take 17,206
    bits = {
        "fdma_dense": 32 * modules * per_module,
        "fdma_dense_4bit": 4 * modules * per_module + 32 * modules,
        "fdma_soft": 32 * sparse + index,
        "fdma_topk": 32 * sparse + index,
        "fdma_topk_4bit": 4 * sparse + 32 * modules + index,
    }
    labels = {
        "fdma_dense": "FDMA fedit",
        "fdma_dense_4bit": "FDMA fedit (b = 4)",
        "fdma_soft": "FDMA soft (O = 0.1, index)",
        "fdma_topk": "FDMA fedit_topk (O = 0.1, index)",
        "fdma_topk_4bit": "FDMA fedit_topk (O = 0.1, index, b = 4)",
    }
    for sweep, sent_bits in bits.items():
        run = load(result["folder"] / sweep / table.loc[(sweep, 5), "run"])
        assert (run.clients.bits == sent_bits).all(), sweep
        assert uplink_label(run) == labels[sweep]  # the figures say what each upload sends
        for k in (5, 10, 20, 50):
            ratio = (
                table.loc[(sweep, k), "mean_delay_s"] / table.loc[("fdma_dense", k), "mean_delay_s"]
            )
            assert ratio == pytest.approx(sent_bits / bits["fdma_dense"], rel=1e-9), (sweep, k)


def test_fdma_energy_floor_is_the_vanishing_power_limit(tmp_path):
    """mean_energy_floor_j against an independent evaluation of each round's energy at a tiny
    power factor a: client k spends a p_k D^t with D^t = sum_j bits_j / (B log2(1 + a SNR_j)),
    whose a = 1 value is the simulated upload time and energy."""
    result = reproduce("aircomp-latency-snr", out_dir=tmp_path, overrides=["rounds=2"], seeds=1)
    table = result["summary"]
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        energy_j = run.clients.transmit_energy_j.groupby(run.clients["round"]).mean()
        assert row["mean_client_transmit_energy_j"] == pytest.approx(energy_j.mean())
        if row["sweep"] == "aircomp":
            assert math.isnan(row["mean_energy_floor_j"])
            continue
        floors = []
        for _, sent in run.clients.groupby("round"):
            snr = 10.0 ** (sent.snr_db.to_numpy() / 10.0)
            power_w, bits = sent.tx_power_w.to_numpy(), sent.bits.to_numpy()

            def delay_s(a, snr=snr, bits=bits):
                return float(np.sum(bits * np.log(2.0) / (1.0e6 * np.log1p(a * snr))))

            assert delay_s(1.0) == pytest.approx(sent.upload_s.max(), rel=1e-9)
            assert sent.transmit_energy_j.to_numpy() == pytest.approx(power_w * delay_s(1.0))
            floors.append(float(np.mean(1e-9 * power_w * delay_s(1e-9))))
        assert row["mean_energy_floor_j"] == pytest.approx(np.mean(floors), rel=1e-6)
        assert row["mean_energy_floor_j"] < row["mean_client_transmit_energy_j"]


def test_the_energy_floor_of_a_run_with_no_arrival_yet_is_nan(tmp_path):
    """A study table over a run that has written no round yet (unfinished, its clients.csv
    empty) has no floor to report: NaN, not an error."""
    from wirelessfl.study.aircomp_figures import fdma_energy_floor_j

    result = reproduce("aircomp-latency-snr", out_dir=tmp_path, overrides=["rounds=1"], seeds=1)
    row = result["summary"].query("sweep != 'aircomp'").iloc[0]
    run = load(result["folder"] / row["sweep"] / row["run"])
    assert math.isfinite(fdma_energy_floor_j(run))
    empty = replace(run, clients=run.clients.iloc[:0])
    assert math.isnan(fdma_energy_floor_j(empty))


def test_default_study_runs_every_uplink_at_every_k():
    """AirComp, FDMA dense, SOFT, dense 4-bit and top-k at every K; each FDMA run paired with
    AirComp on time, final accuracy and time to target; the real default task with room for
    K = 50 and one Dirichlet split per seed (the uplink does not enter it)."""
    spec = REPRODUCTIONS["aircomp-default"]
    ks = {name: grid["n_scheduled"] for name, grid in spec.sweeps.items()}
    every_k = [5, 10, 20, 50]
    assert ks == dict.fromkeys(
        ["aircomp", "fdma_dense", "fdma_soft", "fdma_dense_4bit", "fdma_topk"], every_k
    )
    assert spec.seeds >= 3 and spec.target_accuracy is not None
    assert spec.reference.value == {"channel.uplink": "aircomp"}
    assert spec.reference.metrics == ("mean_delay_s", "final_accuracy", "time_to_target_s")
    air = load_scenario(SCENARIO_DIR / spec.scenario, ["n_scheduled=50"])
    fdma = load_scenario(SCENARIO_DIR / spec.scenario, ["n_scheduled=50", "channel.uplink=fdma"])
    assert air.n_clients >= 50 and air.channel.mean_snr_db == 10.0
    assert (air.learner.model, air.learner.dataset) == ("efficientnet_lite0", "mnist5k")
    assert air.learner.partition == fdma.learner.partition == "dirichlet"
    assert air.learner.partition_options == fdma.learner.partition_options
    assert air.controller.name == "fixed" and air.channel.aircomp.policy == "optimal"


def test_full_length_default_study_is_the_cut_one_at_the_default_length():
    """``aircomp-default-full``: AirComp against FDMA dense at every K over the default task's
    40 rounds of 5 local steps (scenarios/default.yaml), everything else as ``aircomp-default``,
    with the results standard's seed count."""
    spec = REPRODUCTIONS["aircomp-default-full"]
    cut = REPRODUCTIONS["aircomp-default"]
    assert spec.sweeps == {name: cut.sweeps[name] for name in ("aircomp", "fdma_dense")}
    assert spec.seeds >= MIN_SEEDS and spec.reference.value == cut.reference.value
    assert spec.reference.metrics == cut.reference.metrics
    full = load_scenario(SCENARIO_DIR / spec.scenario)
    short = load_scenario(SCENARIO_DIR / cut.scenario)
    default = load_scenario(SCENARIO_DIR / "default.yaml")
    assert (full.rounds, full.learner.local_steps) == (default.rounds, default.learner.local_steps)
    assert (short.rounds, short.learner.local_steps) == (8, 3)
    for section in ("channel", "devices", "controller"):
        assert getattr(full, section) == getattr(short, section), section
    assert replace(full.learner, local_steps=3) == short.learner
    # constants.E is the local steps (the bound's E)
    assert (full.constants.E, short.constants.E) == (5, 3)
    same_length = {"rounds": 8, "learner": short.learner, "constants": short.constants}
    assert replace(full, name=short.name, **same_length) == short


@pytest.mark.parametrize(
    ("name", "k_study", "k"),
    [("aircomp-default-snr", "aircomp-default", 10), ("aircomp-minilm-snr", "aircomp-minilm", 5)],
)
def test_snr_study_is_the_k_study_at_one_k_over_three_snrs(name, k_study, k):
    """``aircomp-default-snr`` and ``aircomp-minilm-snr``: AirComp and FDMA dense at one K
    and 0, 10, 20 dB on their K study's scenario, FDMA paired with AirComp at each SNR over
    the results standard's seed count; their 10 dB points are the K study's runs at that K."""
    spec = REPRODUCTIONS[name]
    by_k = REPRODUCTIONS[k_study]
    assert spec.scenario == by_k.scenario and set(spec.sweeps) == {"aircomp", "fdma_dense"}
    assert spec.seeds >= MIN_SEEDS and spec.reference.value == {"channel.uplink": "aircomp"}
    assert spec.reference.metrics == ("mean_delay_s", "final_accuracy", "time_to_target_s")
    for uplink, grid in spec.sweeps.items():
        assert grid["channel.mean_snr_db"] == [0.0, 10.0, 20.0] and grid["n_scheduled"] == [k]
        at_10_db = {**grid, "channel.mean_snr_db": [10.0]}
        in_k_study = {**by_k.sweeps[uplink], "n_scheduled": [k]}
        assert _scenario(spec.scenario, at_10_db) == _scenario(by_k.scenario, in_k_study)


def _scenario(path: str, grid: dict[str, list]):
    """The scenario at ``path`` with one-value ``grid`` applied as overrides."""
    assert all(len(values) == 1 for values in grid.values())
    return load_scenario(SCENARIO_DIR / path, [f"{k}={v[0]}" for k, v in grid.items()])


def test_default_snr_study_shifts_every_snr_and_pairs_fdma_at_each(tmp_path):
    """Network-only (the surrogate), 2 rounds, one seed: 6 runs; every FDMA run's clients see
    the 0 dB run's fades shifted by the mean SNR, so its D^t is the closed form of those SNRs
    and falls as the SNR rises; AirComp's D^t does not move and its MSE falls; FDMA paired
    with AirComp at each SNR; ``by_snr.csv`` is the summary's mean per SNR; figures per SNR."""
    result = _network_only_study("aircomp-default-snr", tmp_path)
    table = result["summary"]
    assert len(table) == 6 and table.finished.all()
    fdma = table[table.sweep == "fdma_dense"].sort_values("channel.mean_snr_db")
    runs = [load(result["folder"] / "fdma_dense" / name) for name in fdma.run]
    base = runs[0].clients
    for snr_db, run, delay_s in zip((0.0, 10.0, 20.0), runs, fdma.mean_delay_s, strict=True):
        sent = run.clients[run.clients.status == "arrived"]
        assert list(run.clients.client) == list(base.client)
        np.testing.assert_allclose(run.clients.snr_db, base.snr_db + snr_db, atol=1e-9)
        assert delay_s == pytest.approx(_equal_delay_mean_s(sent, 10.0e6), rel=1e-9)
    assert fdma.mean_delay_s.is_monotonic_decreasing and fdma.mean_delay_s.is_unique
    air = table[table.sweep == "aircomp"].sort_values("channel.mean_snr_db")
    assert air.mean_delay_s.nunique() == 1
    assert air.mean_aircomp_mse.is_monotonic_decreasing and air.mean_aircomp_mse.is_unique
    paired = result["paired"]
    assert set(paired.method) == {"channel.uplink=fdma"}
    assert len(paired.context.unique()) == 3
    by_snr = result["tables"]["by_snr"].set_index(["sweep", "channel.mean_snr_db"])
    for _, row in table.iterrows():
        means = by_snr.loc[(row["sweep"], row["channel.mean_snr_db"])]
        assert means.mean_delay_s_mean == pytest.approx(row["mean_delay_s"])
        assert means.seeds == 1
    names = {p.name for p in result["figures"]}
    assert "aircomp_default_snr_latency_vs_snr.png" in names
    for snr in (0, 10, 20):
        assert {
            f"aircomp_default_snr_snr{snr}.png",
            f"aircomp_default_snr_snr{snr}_time.png",
        } <= names


def test_default_study_runs_and_its_times_are_the_closed_forms(tmp_path):
    """Network-only (the surrogate), 2 rounds, one seed: AirComp's D^t is n / B at every K,
    FDMA's is sum_k bits_k / (B log2(1 + SNR_k)) (equal-delay shares, band noise) from each
    round's clients; every K gets its accuracy figures."""
    result = _network_only_study("aircomp-default", tmp_path)
    table = result["summary"]
    assert len(table) == 20 and table.finished.all()
    bandwidth_hz = 10.0e6
    for _, row in table.iterrows():
        run = load(result["folder"] / row["sweep"] / row["run"])
        sent = run.clients[run.clients.status == "arrived"]
        assert len(sent) == 2 * row["n_scheduled"]
        if row["sweep"] == "aircomp":
            assert row["mean_delay_s"] == pytest.approx((sent.bits / 32 / bandwidth_hz).max())
            continue
        assert row["mean_delay_s"] == pytest.approx(
            _equal_delay_mean_s(sent, bandwidth_hz), rel=1e-9
        )
    air = table[table.sweep == "aircomp"]
    assert air.mean_delay_s.nunique() == 1
    paired = result["paired"]
    dense = paired[paired.method == "channel.uplink=fdma"]
    assert set(dense.metric) >= {"mean_delay_s", "final_accuracy"}
    assert sorted(dense.context.unique()) == sorted(f"n_scheduled={k}" for k in (5, 10, 20, 50))
    growth = result["tables"]["growth"].set_index("sweep")
    _assert_growth(table, growth, {"aircomp": 50, "fdma_dense": 50, "fdma_topk": 50})
    assert growth.loc["aircomp", "delay_ratio"] == 1.0
    by_k = result["tables"]["by_k"]
    assert len(by_k) == 20 and (by_k.seeds == 1).all()
    names = {p.name for p in result["figures"]}
    assert "aircomp_default_latency_vs_k.png" in names
    for k in (5, 10, 20, 50):
        assert {f"aircomp_default_k{k}.png", f"aircomp_default_k{k}_time.png"} <= names
    assert all(p.stat().st_size > 0 for p in result["figures"])


def test_minilm_study_pairs_every_fdma_upload_with_aircomp_on_the_fslora_task():
    """AirComp, FDMA dense and the compressed FDMA uploads at K = 5, 10, 20 (K = 20 of 20:
    full participation), each FDMA upload paired with AirComp on time, final accuracy
    and time to target over the results standard's seed count, on MiniLM / Rotten Tomatoes,
    the FSLoRA scenario's task and split."""
    spec = REPRODUCTIONS["aircomp-minilm"]
    ks = {name: grid["n_scheduled"] for name, grid in spec.sweeps.items()}
    assert set(ks) == {"aircomp", "fdma_dense", "fdma_soft", "fdma_topk", "fdma_dense_4bit"}
    assert all(k == [5, 10, 20] for k in ks.values())
    assert spec.sweeps["fdma_soft"]["controller.sparsification"] == [0.1]
    assert spec.sweeps["fdma_topk"]["compression.ratio"] == [0.1]
    assert spec.sweeps["fdma_dense_4bit"]["quantize.bits"] == [4]
    assert spec.seeds >= MIN_SEEDS and spec.reference.value == {"channel.uplink": "aircomp"}
    assert spec.reference.metrics == ("mean_delay_s", "final_accuracy", "time_to_target_s")
    assert "quantize.bits" in spec.reference.keys
    air = load_scenario(SCENARIO_DIR / spec.scenario, [])
    fslora = load_scenario(SCENARIO_DIR / "fslora/minilm_rotten_tomatoes.yaml", [])
    assert (air.learner.model, air.learner.dataset) == ("minilm", "rotten_tomatoes")
    assert air.n_clients == fslora.n_clients and air.learner.partition == fslora.learner.partition
    assert air.learner.dataset_options == fslora.learner.dataset_options
    assert air.algorithm.name == "fedit" and air.channel.aircomp.policy == "optimal"
    assert air.n_clients == 20 == max(ks["aircomp"])


def test_minilm_study_draws_each_k_and_pairs_every_upload_at_every_k(tmp_path):
    """Network-only (the surrogate), 2 rounds, one seed: 15 runs; every FDMA upload against
    AirComp at every K; growth rows for every uplink, each D^t at
    its largest K over D^t(5) from the summary; a latency figure and accuracy figures per K."""
    result = _network_only_study("aircomp-minilm", tmp_path)
    table = result["summary"]
    assert len(table) == 15 and table.finished.all()
    paired = result["paired"]
    contexts = {method: sorted(rows.context.unique()) for method, rows in paired.groupby("method")}
    assert len(contexts) == 4
    assert all(c == sorted(f"n_scheduled={k}" for k in (5, 10, 20)) for c in contexts.values())
    growth = result["tables"]["growth"].set_index("sweep")
    assert sorted(growth.index) == sorted(REPRODUCTIONS["aircomp-minilm"].sweeps)
    _assert_growth(table, growth, {name: 20 for name in growth.index})
    assert growth.loc["aircomp", "delay_ratio"] == 1.0
    names = {p.name for p in result["figures"]}
    assert "aircomp_minilm_latency_vs_k.png" in names
    for k in (5, 10, 20):
        assert {f"aircomp_minilm_k{k}.png", f"aircomp_minilm_k{k}_time.png"} <= names


def test_minilm_50_study_is_the_minilm_task_split_over_50_clients():
    """``aircomp-minilm-50``: minilm.yaml's task and settings with N = 50 instead of 20 (its
    name aside), the 20-client study's five uploads at K = 5 and 50, each FDMA upload paired with
    AirComp on time, final accuracy and time to target over the results standard's seed count."""
    spec = REPRODUCTIONS["aircomp-minilm-50"]
    twenty_spec = REPRODUCTIONS["aircomp-minilm"]
    assert set(spec.sweeps) == set(twenty_spec.sweeps)
    for name, grid in spec.sweeps.items():
        assert grid == {**twenty_spec.sweeps[name], "n_scheduled": [5, 50]}
    assert spec.seeds >= MIN_SEEDS and spec.reference.value == {"channel.uplink": "aircomp"}
    assert spec.reference.metrics == ("mean_delay_s", "final_accuracy", "time_to_target_s")
    assert "quantize.bits" in spec.reference.keys
    fifty = load_scenario(SCENARIO_DIR / spec.scenario, [])
    twenty = load_scenario(SCENARIO_DIR / REPRODUCTIONS["aircomp-minilm"].scenario, [])
    assert (fifty.n_clients, twenty.n_clients) == (50, 20)
    same = replace(fifty, n_clients=twenty.n_clients, name=twenty.name)
    assert same == twenty


def test_minilm_50_study_pairs_every_upload_with_aircomp_at_k_5_and_50(tmp_path):
    """Network-only (the surrogate), 2 rounds, one seed: 10 runs; each of the four FDMA uploads
    against AirComp at K = 5 and 50; growth rows D^t(50) / D^t(5); a latency figure and accuracy
    figures per K."""
    result = _network_only_study("aircomp-minilm-50", tmp_path)
    table = result["summary"]
    assert len(table) == 10 and table.finished.all()
    paired = result["paired"]
    contexts = {method: sorted(rows.context.unique()) for method, rows in paired.groupby("method")}
    assert len(contexts) == 4
    assert all(c == ["n_scheduled=5", "n_scheduled=50"] for c in contexts.values())
    growth = result["tables"]["growth"].set_index("sweep")
    _assert_growth(table, growth, {name: 50 for name in growth.index})
    assert sorted(growth.index) == sorted(REPRODUCTIONS["aircomp-minilm-50"].sweeps)
    assert growth.loc["aircomp", "delay_ratio"] == 1.0
    assert (growth.drop(index="aircomp").delay_ratio > 1.0).all()
    names = {p.name for p in result["figures"]}
    assert "aircomp_minilm_50_latency_vs_k.png" in names
    for k in (5, 50):
        assert {f"aircomp_minilm_50_k{k}.png", f"aircomp_minilm_50_k{k}_time.png"} <= names
