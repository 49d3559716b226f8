"""Trace readers: hand-written files with expected arrays written by hand; every error path."""

import json
import math
import pathlib

import numpy as np
import pytest

from channels import (
    read_availability_trace,
    read_compute_trace,
    read_snr_trace,
    snr_trace_linear,
)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _error(fn, *args, match, **kwargs):
    """The one-line ValueError message of fn(*args), which must name the file."""
    with pytest.raises(ValueError, match=match) as exc:
        fn(*args, **kwargs)
    msg = str(exc.value)
    assert "\n" not in msg
    path = args[0]
    if isinstance(path, pathlib.Path):
        assert msg.startswith(f"{path}: "), msg
    return msg


# -- availability: CSV ---------------------------------------------------------------------------
def test_availability_csv(tmp_path):
    p = _write(
        tmp_path,
        "avail.csv",
        "client,start_s,end_s\n2,100,250.5\n0,0,60\n\n2,10,20\n0, 120 ,inf\n",
    )
    got = read_availability_trace(p, 4)
    assert len(got) == 4
    np.testing.assert_array_equal(got[0], [[0.0, 60.0], [120.0, math.inf]])
    np.testing.assert_array_equal(got[1], np.zeros((0, 2)))  # not listed: never available
    np.testing.assert_array_equal(got[2], [[10.0, 20.0], [100.0, 250.5]])  # sorted by start
    assert got[3].shape == (0, 2) and got[0].dtype == np.float64
    assert len(read_availability_trace(str(p), 3)) == 3  # str path


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"empty file; expected the header line 'client,start_s,end_s'"),
        ("client,start,end\n0,0,1\n", r"line 1: header must be exactly 'client,start_s,end_s'"),
        ("client,start_s,end_s\n", r"no availability interval; accepted: at least one row"),
        ("client,start_s,end_s\n0,0,1\n1,2\n", r"line 3: expected 3 fields .*got 2"),
        ("client,start_s,end_s\nx,0,1\n", r"line 2, column 'client': expected an integer id"),
        ("client,start_s,end_s\n1.0,0,1\n", r"line 2, column 'client': expected an integer"),
        ("client,start_s,end_s\n-1,0,1\n", r"line 2, column 'client': expected an integer id"),
        ("client,start_s,end_s\n0,0,1\n3,0,1\n", r"line 3, column 'client': id 3 is out of range"),
        ("client,start_s,end_s\n0,abc,1\n", r"line 2, column 'start_s': expected a number"),
        ("client,start_s,end_s\n0,-5,1\n", r"line 2, column 'start_s': expected a finite time"),
        ("client,start_s,end_s\n0,inf,1\n", r"line 2, column 'start_s': expected a finite time"),
        ("client,start_s,end_s\n0,5,5\n", r"line 2, column 'end_s': expected a time > start_s"),
        ("client,start_s,end_s\n0,5,nan\n", r"line 2, column 'end_s': expected a time > start_s"),
        ("client,start_s,end_s\n0,5,\n", r"line 2, column 'end_s': expected a number, got ''"),
    ],
)
def test_availability_csv_errors(tmp_path, text, match):
    _error(read_availability_trace, _write(tmp_path, "a.csv", text), 3, match=match)


# -- availability: FedScale JSON -----------------------------------------------------------------
def test_availability_fedscale_json(tmp_path):
    trace = {
        "1": {"active": [10, 500], "inactive": [200, 900.5], "finish_time": 1000, "model": "x"},
        "0": {"active": [0], "inactive": [30]},
        "3": {"active": [], "inactive": []},
    }
    p = _write(tmp_path, "behave.json", json.dumps(trace))
    got = read_availability_trace(p, 4)
    np.testing.assert_array_equal(got[0], [[0.0, 30.0]])
    np.testing.assert_array_equal(got[1], [[10.0, 200.0], [500.0, 900.5]])
    assert got[2].shape == (0, 2) and got[3].shape == (0, 2)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"0": {"active": [1]', r"invalid JSON at line 1, column \d+"),
        ("[1, 2]", r"expected a non-empty JSON object .* got a JSON list"),
        ("{}", r"expected a non-empty JSON object .* got an empty object"),
        ('{"a": {"active": [0], "inactive": [1]}}', r"client key 'a': expected an integer id"),
        ('{"5": {"active": [0], "inactive": [1]}}', r"client key '5': id out of range; accepted"),
        ('{"0": {"active": [0]}}', r"client '0': expected an object with lists 'active' and"),
        ('{"0": [0, 1]}', r"client '0': expected an object with lists"),
        ('{"0": {"active": 0, "inactive": [1]}}', r"client '0', field active: expected a list"),
        (
            '{"0": {"active": [0, 5], "inactive": [1]}}',
            r"client '0': 'active' has 2 times but 'inactive' has 1",
        ),
        (
            '{"0": {"active": [0, "5"], "inactive": [1, 6]}}',
            r"client '0', field active\[1\]: expected a number, got '5'",
        ),
        (
            '{"0": {"active": [0, true], "inactive": [1, 6]}}',
            r"client '0', field active\[1\]: expected a number, got True",
        ),
        (
            '{"1": {"active": [0, 7], "inactive": [1, 7]}}',
            r"client '1', field inactive\[1\]: expected a time > active\[1\]=7, got 7",
        ),
        ('{"0": {"active": [-1], "inactive": [1]}}', r"field active\[0\]: expected a finite"),
        ('{"0": {"active": [], "inactive": []}}', r"no availability interval; accepted: at least"),
    ],
)
def test_availability_json_errors(tmp_path, text, match):
    _error(read_availability_trace, _write(tmp_path, "b.json", text), 3, match=match)


def test_availability_file_errors(tmp_path):
    pkl = _write(tmp_path, "client_behave_trace.pkl", "x")
    _error(read_availability_trace, pkl, 3, match=r"unsupported file type '.pkl'; accepted: .csv")
    missing = tmp_path / "missing.csv"
    _error(read_availability_trace, missing, 3, match=r"cannot read the file")
    bad_utf8 = tmp_path / "latin.csv"
    bad_utf8.write_bytes(b"client,start_s,end_s\n0,0,1\xff\n")
    _error(read_availability_trace, bad_utf8, 3, match=r"not UTF-8 text")
    ok = _write(tmp_path, "ok.csv", "client,start_s,end_s\n0,0,1\n")
    _error(read_availability_trace, ok, 0, match=r"n_clients must be >= 1")
    with pytest.raises(ValueError, match=r"path must be a str or os.PathLike"):
        read_availability_trace(b"ok.csv", 3)


# -- compute -------------------------------------------------------------------------------------
def test_compute_csv(tmp_path):
    p = _write(tmp_path, "speed.csv", "client,flops_per_s\n1,2.5e10\n0,1e9\n2,3e12\n")
    got = read_compute_trace(p, 3)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1e9, 2.5e10, 3e12])


def test_compute_fedscale_json_conversion(tmp_path):
    # 50 ms/sample at 1e9 FLOP/sample: 1e9 / 0.05 s = 2e10 FLOP/s;
    # 162 ms/sample: 1e9 / 0.162 = 6.172839506172839e9 FLOP/s.
    trace = {
        "0": {"computation": 50.0, "communication": 5648.1},
        "1": {"computation": 162, "communication": 100.0},
    }
    p = _write(tmp_path, "capacity.json", json.dumps(trace))
    got = read_compute_trace(p, 2, flops_per_sample=1e9)
    np.testing.assert_allclose(got, [2e10, 6.172839506172839e9], rtol=1e-15)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"empty file; expected the header line 'client,flops_per_s'"),
        ("client,speed\n0,1\n", r"line 1: header must be exactly 'client,flops_per_s'"),
        ("client,flops_per_s\n0,1e9\n1,1e9\n0,2e9\n", r"line 4, column 'client': client 0 al"),
        ("client,flops_per_s\n0,1e9\n2,1e9\n", r"no speed for 1 of 3 clients \(1\); accepted"),
        ("client,flops_per_s\n0,1e9\n1,0\n2,1\n", r"line 3, column 'flops_per_s': expected a"),
        ("client,flops_per_s\n0,1e9\n1,nan\n2,1\n", r"line 3, column 'flops_per_s': expected a"),
        ("client,flops_per_s\n0,1e9\n1,1e9\n2,-inf\n", r"line 4, column 'flops_per_s'"),
        ("client,flops_per_s\n0,fast\n", r"line 2, column 'flops_per_s': expected a number"),
        ("client,flops_per_s\n7,1e9\n", r"line 2, column 'client': id 7 is out of range"),
        ("client,flops_per_s\n0,1e9,3\n", r"line 2: expected 2 fields"),
    ],
)
def test_compute_csv_errors(tmp_path, text, match):
    _error(read_compute_trace, _write(tmp_path, "c.csv", text), 3, match=match)


@pytest.mark.parametrize(
    ("text", "kwargs", "match"),
    [
        ('{"0": {"computation": 5}}', {}, r"needs flops_per_sample \(> 0"),
        ('{"0": {"computation": 5}}', {"flops_per_sample": 0.0}, r"flops_per_sample must be > 0"),
        ('{"0": {"communication": 5}}', {"flops_per_sample": 1e9}, r"client '0': expected an"),
        ('{"0": {"computation": 0}}', {"flops_per_sample": 1e9}, r"client '0', field computa"),
        ('{"0": {"computation": "5"}}', {"flops_per_sample": 1e9}, r"expected a number, got '5'"),
        ('{"0": {"computation": 5}}', {"flops_per_sample": 1e9}, r"no speed for 2 of 3 clients"),
        ('{"3": {"computation": 5}}', {"flops_per_sample": 1e9}, r"client key '3': id out of r"),
        ('{"0": {"computation": 1e-320}}', {"flops_per_sample": 1e9}, r"gives inf FLOP/s"),
    ],
)
def test_compute_json_errors(tmp_path, text, kwargs, match):
    _error(read_compute_trace, _write(tmp_path, "d.json", text), 3, match=match, **kwargs)


# -- SNR -----------------------------------------------------------------------------------------
def test_snr_npy_and_csv(tmp_path):
    expected = np.array([[10.0, -3.0, 0.0], [12.5, 20.0, 7.0]])
    p_npy = tmp_path / "snr.npy"
    np.save(p_npy, expected.astype(np.float32))
    got = read_snr_trace(p_npy, 3)
    assert got.dtype == np.float64 and got.shape == (2, 3)
    np.testing.assert_array_equal(got, expected)
    np.save(tmp_path / "int.npy", np.array([[1, 2, 3]], dtype=np.int16))
    np.testing.assert_array_equal(read_snr_trace(tmp_path / "int.npy", 3), [[1.0, 2.0, 3.0]])
    p_csv = _write(tmp_path, "snr.csv", "10,-3,0\n\n12.5, 20 ,7e0\n")
    np.testing.assert_array_equal(read_snr_trace(p_csv, 3), expected)


def test_snr_trace_linear():
    trace = np.array([[10.0, -3.0, 0.0], [20.0, 30.0, -10.0]])
    np.testing.assert_allclose(snr_trace_linear(trace, 1), [100.0, 1000.0, 0.1], rtol=1e-14)
    np.testing.assert_allclose(snr_trace_linear(trace, 0), [10.0, 10**-0.3, 1.0], rtol=1e-14)
    with pytest.raises(ValueError, match=r"round_index 2 is beyond the SNR trace, which has 2 r"):
        snr_trace_linear(trace, 2)
    with pytest.raises(ValueError, match=r"trace_db must be a 2-D"):
        snr_trace_linear(trace[0], 0)


@pytest.mark.parametrize(
    ("array", "match"),
    [
        (np.zeros(3), r"expected a 2-D array \(rounds, clients\), got shape \(3,\)"),
        (np.zeros((2, 3, 1)), r"expected a 2-D array .* got shape \(2, 3, 1\)"),
        (np.zeros((0, 3)), r"empty trace \(0 rounds\)"),
        (np.zeros((2, 4)), r"4 columns, expected n_clients=3"),
        (np.array([[0.0, 1.0, 2.0], [0.0, np.inf, 1.0]]), r"round 1 \(row\), client 1 \(column"),
        (np.array([[0.0, np.nan, 2.0]]), r"round 0 \(row\), client 1 \(column\): expected a fin"),
        (np.ones((1, 3), dtype=bool), r"dtype bool is not accepted"),
        (np.ones((1, 3), dtype=np.complex128), r"dtype complex128 is not accepted"),
        (np.array([[{"a": 1}, 2, 3]], dtype=object), r"not a plain .npy array"),
    ],
)
def test_snr_npy_errors(tmp_path, array, match):
    p = tmp_path / "s.npy"
    np.save(p, array, allow_pickle=True)
    _error(read_snr_trace, p, 3, match=match)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"empty file; accepted: one line of 3 values per round"),
        ("\n\n", r"empty file"),
        ("a,b,c\n1,2,3\n", r"line 1, column 1 \(client 0\): expected a number .*no header"),
        ("1,2,3\n1,2\n", r"line 2: 2 values, expected n_clients=3"),
        ("1,2,3\n1,2,x\n", r"line 2, column 3 \(client 2\): expected a number"),
        ("1,2,3\n1,nan,3\n", r"line 2, column 2 \(client 1\): expected a finite SNR"),
        ("1,2,3\n1,2,-inf\n", r"line 2, column 3 \(client 2\): expected a finite SNR"),
    ],
)
def test_snr_csv_errors(tmp_path, text, match):
    _error(read_snr_trace, _write(tmp_path, "s.csv", text), 3, match=match)


def test_snr_unsupported_and_garbage_npy(tmp_path):
    _error(read_snr_trace, _write(tmp_path, "s.txt", "1,2,3\n"), 3, match=r"accepted: .npy, .csv")
    garbage = _write(tmp_path, "g.npy", "not numpy")
    _error(read_snr_trace, garbage, 3, match=r"not a plain .npy array")
