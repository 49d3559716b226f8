"""Addressable random streams: reproducible, independent, prefix-stable."""

import zlib

import numpy as np
import pytest

from channels import as_client_generators, client_generators, round_generator, stream_id


def _draw(gens, n=8):
    return np.array([g.standard_normal(n) for g in gens])


def test_reproducible_from_seed():
    a = _draw(client_generators(7, range(5), stream="fading", block=2))
    b = _draw(client_generators(7, range(5), stream="fading", block=2))
    np.testing.assert_array_equal(a, b)


def test_prefix_stable_when_clients_added():
    small = _draw(client_generators(3, range(10), stream="fading"))
    large = _draw(client_generators(3, range(1000), stream="fading"))
    np.testing.assert_array_equal(small, large[:10])


def test_addressed_by_client_id_not_position():
    ids = [5, 2, 9]
    a = _draw(client_generators(3, ids, stream="devices"))
    b = _draw(client_generators(3, np.arange(10), stream="devices"))
    np.testing.assert_array_equal(a, b[ids])


def test_streams_blocks_seeds_differ():
    base = _draw(client_generators(1, range(3), stream="fading", block=0))
    for other in (
        client_generators(1, range(3), stream="fading", block=1),
        client_generators(1, range(3), stream="topology", block=0),
        client_generators(2, range(3), stream="fading", block=0),
    ):
        assert not np.any(_draw(other) == base)
    # Different clients are different streams.
    assert not np.any(base[0] == base[1])


def test_stream_id_is_stable_crc32():
    # zlib.crc32 of the UTF-8 name: fixed across processes and Python versions.
    assert stream_id("fading") == zlib.crc32(b"fading")
    assert stream_id("fading") != stream_id("topology")


def test_round_generator():
    a = round_generator(11, stream="selection", round_index=4).random(5)
    b = round_generator(11, stream="selection", round_index=4).random(5)
    c = round_generator(11, stream="selection", round_index=5).random(5)
    d = round_generator(11, stream="faults", round_index=4).random(5)
    np.testing.assert_array_equal(a, b)
    assert not np.any(a == c) and not np.any(a == d)


def test_single_generator_split_is_prefix_stable():
    a = _draw(as_client_generators(np.random.default_rng(5), 3))
    b = _draw(as_client_generators(np.random.default_rng(5), 50))
    np.testing.assert_array_equal(a, b[:3])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: client_generators(-1, [0], stream="x"), "seed"),
        (lambda: client_generators(1.5, [0], stream="x"), "seed"),
        (lambda: client_generators(1, [-1], stream="x"), "client_ids"),
        (lambda: client_generators(1, [0.5], stream="x"), "client_ids"),
        (lambda: client_generators(1, [[0]], stream="x"), "client_ids"),
        (lambda: client_generators(1, [0], stream=""), "stream"),
        (lambda: client_generators(1, [0], stream="x", block=-1), "block"),
        (lambda: round_generator(1, stream="x", round_index=-2), "round_index"),
        (lambda: as_client_generators([np.random.default_rng(0)], 2), "rng"),
        (lambda: as_client_generators([1, 2], 2), "rng"),
        (lambda: as_client_generators(42, 2), "rng"),
        (lambda: as_client_generators(np.random.default_rng(0), 0), "n_clients"),
    ],
)
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()
