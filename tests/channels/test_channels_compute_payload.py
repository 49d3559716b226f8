"""Device speeds, training FLOPs and payload sizes against hand values."""

import numpy as np
import pytest

from channels import (
    DEVICE_CLASSES,
    DeviceProfile,
    SparsePayload,
    compute_delay_s,
    index_overhead_bits,
    lora_param_count,
    lora_training_flops,
    params_per_rank,
    payload_bits,
    sparse_payload_bits,
)

VIT_QV = [(768, 768)] * 24  # q and v projections of 12 ViT-Base blocks


def test_device_classes_plausible():
    assert set(DEVICE_CLASSES) >= {
        "low_end_phone",
        "flagship_phone",
        "laptop_cpu",
        "edge_gpu_jetson",
        "desktop_gpu",
    }
    vals = [DEVICE_CLASSES[k] for k in ("low_end_phone", "flagship_phone", "laptop_cpu")]
    assert vals == sorted(vals)
    assert all(1e9 <= v <= 1e15 for v in DEVICE_CLASSES.values())


def test_device_profile_fixed_and_lognormal():
    np.testing.assert_array_equal(DeviceProfile("fixed", flops_per_s=5e9).draw(0, 3), 5e9)
    prof = DeviceProfile("lognormal", median_flops_per_s=1e11, sigma=0.5)
    v = prof.draw(1, 20000)
    assert np.median(v) == pytest.approx(1e11, rel=0.03)
    assert np.std(np.log(v)) == pytest.approx(0.5, rel=0.03)
    np.testing.assert_array_equal(prof.draw(1, 10), v[:10])


def test_device_profile_classes():
    prof = DeviceProfile("classes", classes={"flagship_phone": 0.75, "desktop_gpu": 0.25})
    v = prof.draw(2, 20000)
    assert set(np.unique(v)) == {1e11, 3e13}
    assert np.mean(v == 3e13) == pytest.approx(0.25, abs=0.015)
    np.testing.assert_array_equal(prof.draw(2, 7), v[:7])


def test_device_profile_listed():
    prof = DeviceProfile("listed", per_client_flops_per_s=[1e9, 2.5e10, 3e13])
    v = prof.draw(0, 3)
    assert v.dtype == np.float64
    np.testing.assert_array_equal(v, [1e9, 2.5e10, 3e13])
    np.testing.assert_array_equal(prof.draw(7, 3), v)  # the seed plays no part
    prof_int = DeviceProfile("listed", per_client_flops_per_s=(10, 20))
    np.testing.assert_array_equal(prof_int.draw(0, 2), [10.0, 20.0])


@pytest.mark.parametrize("n_clients", [2, 4])
def test_device_profile_listed_wrong_length(n_clients):
    prof = DeviceProfile("listed", per_client_flops_per_s=[1e9, 2e9, 3e9])
    with pytest.raises(ValueError) as err:
        prof.draw(0, n_clients)
    assert str(err.value) == f"per_client_flops_per_s has 3 values for {n_clients} clients"


@pytest.mark.parametrize(
    "values",
    [None, [], [1e9, 0.0], [1e9, -2e9], [np.inf], [1e9, np.nan], [[1e9, 2e9]], "fast", ["x"]],
    ids=["none", "empty", "zero", "negative", "inf", "nan", "nested", "string", "names"],
)
def test_device_profile_listed_bad_values(values):
    with pytest.raises(ValueError) as err:
        DeviceProfile("listed", per_client_flops_per_s=values)
    assert str(err.value).startswith("per_client_flops_per_s ")
    assert "\n" not in str(err.value)


def test_compute_delay():
    assert compute_delay_s(2e12, 1e12) == pytest.approx(2.0)
    np.testing.assert_allclose(compute_delay_s(1e10, np.array([1e10, 2e10])), [1.0, 0.5])


def test_lora_training_flops_hand_value():
    # L = 8·(768+768)·24 = 294912; tokens = 4·16 = 64; 3 steps.
    # total = 3·64·(4·1e6 + 6·294912) = 3·64·5769472 = 1107738624.
    got = lora_training_flops(VIT_QV, 8, batch_size=4, steps=3, seq_len=16, base_params=1_000_000)
    assert got == pytest.approx(1107738624.0)
    assert lora_training_flops(VIT_QV, 8, batch_size=1, steps=0) == 0.0


def test_param_counts():
    assert params_per_rank(VIT_QV) == 24 * 1536
    assert lora_param_count(VIT_QV, 8) == 294912
    assert lora_param_count([(10, 20), (5, 5)], 3) == 3 * 40
    np.testing.assert_array_equal(lora_param_count([(10, 20)], np.array([1, 2])), [30, 60])


def test_payload_bits():
    assert payload_bits(294912, 32) == 9437184
    assert payload_bits(10, 2.5) == 25
    assert payload_bits(3, 2.5) == 8  # ceil(7.5)
    np.testing.assert_array_equal(payload_bits(np.array([0, 1, 2]), 16), [0, 16, 32])


def test_index_overhead():
    # Dense: no index.
    assert index_overhead_bits(1000, 1000) == 0
    # Coordinate list: 10 · ceil(log2 1000) = 100 < bitmask 1000.
    assert index_overhead_bits(10, 1000) == 100
    # Bitmask: 500 · 10 = 5000 > 1000.
    assert index_overhead_bits(500, 1000) == 1000
    # Powers of two: ceil(log2 1024) = 10; ceil(log2 1025) = 11.
    assert index_overhead_bits(3, 1024) == 30
    assert index_overhead_bits(3, 1025) == 33
    assert index_overhead_bits(0, 1000) == 0
    np.testing.assert_array_equal(
        index_overhead_bits(np.array([1, 999, 1000]), 1000), [10, 1000, 0]
    )


def test_sparse_payload():
    p = sparse_payload_bits(10, 1000, 32)
    assert p == SparsePayload(value_bits=320, index_bits=100, total_bits=420)
    arr = sparse_payload_bits(np.array([10, 1000]), 1000, 16)
    np.testing.assert_array_equal(arr.total_bits, [160 + 100, 16000])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: DeviceProfile("gpu"), "kind"),
        (lambda: DeviceProfile("fixed"), "flops_per_s"),
        (lambda: DeviceProfile("fixed", flops_per_s=-1.0), "flops_per_s"),
        (lambda: DeviceProfile("classes", classes={"toaster": 1.0}), "classes"),
        (lambda: DeviceProfile("classes", classes={"laptop_cpu": 0.5}), "classes"),
        (lambda: DeviceProfile("classes", classes={"laptop_cpu": -0.5}), "classes"),
        (lambda: DeviceProfile("lognormal", median_flops_per_s=1e9, sigma=-1.0), "sigma"),
        (lambda: DeviceProfile("lognormal", median_flops_per_s=0.0, sigma=1.0), "median"),
        (lambda: compute_delay_s(-1.0, 1e9), "flops"),
        (lambda: compute_delay_s(1.0, 0.0), "flops_per_s"),
        (lambda: lora_training_flops(VIT_QV, 0, batch_size=1, steps=1), "rank"),
        (lambda: lora_training_flops(VIT_QV, 4, batch_size=0, steps=1), "batch_size"),
        (lambda: lora_training_flops(VIT_QV, 4, batch_size=1, steps=-1), "steps"),
        (lambda: lora_training_flops([], 4, batch_size=1, steps=1), "layer_shapes"),
        (lambda: lora_param_count([(10, 0)], 4), "layer_shapes"),
        (lambda: lora_param_count([(10, 5, 3)], 4), "layer_shapes"),
        (lambda: payload_bits(-1, 32), "n_values"),
        (lambda: payload_bits(10, 0), "bits_per_value"),
        (lambda: index_overhead_bits(11, 10), "n_kept"),
        (lambda: index_overhead_bits(1, 0), "n_total"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_scalar_and_array_paths_agree():
    """Python-int arguments take a scalar path; it must give the array path's numbers."""
    for n in range(1, 200):
        kept = np.arange(n + 1)
        arrays = index_overhead_bits(kept, np.full(n + 1, n))
        assert [index_overhead_bits(int(k), n) for k in kept] == arrays.tolist()
    assert payload_bits(7, 32) == int(payload_bits(np.int64(7), 32.0)) == 224
    with pytest.raises(ValueError):
        index_overhead_bits(5, 4)
    with pytest.raises(ValueError):
        payload_bits(-1, 32)
