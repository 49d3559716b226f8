"""FedScale's trace pickles to JSON traces: numpy scalars become numbers, clients are renumbered
in id order, zero-length intervals are dropped and counted, and a pickle naming anything but
plain data and numpy scalars is refused before it runs. Files are written in FedScale's format
(its ``client_behave_trace`` and ``client_device_capacity`` dicts keyed by integer ids)."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

from channels.fedscale import (
    convert_behave_trace,
    convert_device_trace,
    load_trace_pickle,
    trace_kind,
)
from channels.traces import read_availability_trace, read_compute_trace

BEHAVE = {
    # FedScale's ids, not 0-based and not in order; numpy integers as its files hold them
    907: {
        "duration": np.int64(864000),
        "inactive": [np.int64(300), np.int64(900), np.int64(1500)],
        "finish_time": np.int64(2000),
        "active": [np.int64(100), np.int64(900), np.int64(1200)],  # [900, 900) has no length
        "model": "Pixel 3",
    },
    12: {"active": [np.float64(0.5)], "inactive": [np.float64(60.25)]},
    40: {"active": [50, 10], "inactive": [70, 20]},  # out of order
}
DEVICE = OrderedDict(
    [
        (3, {"computation": np.float64(50.0), "communication": np.float64(5648.1)}),
        (1, {"computation": np.int64(162), "communication": 100.0}),
    ]
)


def _pickle(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(data))
    return path


def test_behaviour_trace_converts_to_the_intervals_by_hand(tmp_path):
    trace = load_trace_pickle(_pickle(tmp_path, "client_behave_trace", BEHAVE))
    assert trace_kind(trace, where="f") == "behave"
    done = convert_behave_trace(trace, where="f")
    assert done.data == {
        "0": {"active": [0.5], "inactive": [60.25]},  # id 12
        "1": {"active": [10.0, 50.0], "inactive": [20.0, 70.0]},  # id 40, sorted
        "2": {"active": [100.0, 1200.0], "inactive": [300.0, 1500.0]},  # id 907
    }
    assert (done.clients_in_file, done.intervals, done.dropped_zero_length) == (3, 5, 1)
    path = tmp_path / "behave.json"
    path.write_text(json.dumps(done.data))
    intervals = read_availability_trace(path, 3)
    np.testing.assert_array_equal(intervals[2], [[100.0, 300.0], [1200.0, 1500.0]])
    assert convert_behave_trace(trace, where="f", n_clients=2).data.keys() == {"0", "1"}


def test_device_trace_converts_and_reads_as_flops_by_hand(tmp_path):
    trace = load_trace_pickle(_pickle(tmp_path, "client_device_capacity", DEVICE))
    assert trace_kind(trace, where="f") == "device"
    done = convert_device_trace(trace, where="f")
    assert done.data == {
        "0": {"computation": 162.0, "communication": 100.0},  # id 1
        "1": {"computation": 50.0, "communication": 5648.1},  # id 3
    }
    path = tmp_path / "device.json"
    path.write_text(json.dumps(done.data))
    speed = read_compute_trace(path, 2, flops_per_sample=1e9)
    np.testing.assert_allclose(speed, [1e9 / 0.162, 1e9 / 0.050])


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({1: _RunsCode()}, r"refers to (posix|nt)\.system, which is refused"),
        ({1: np.zeros(3)}, r"refers to numpy\..*_reconstruct, which is refused"),
        ([1, 2], r"expected a non-empty dict keyed by client id, got list"),
    ],
)
def test_anything_but_plain_data_is_refused_before_it_runs(tmp_path, monkeypatch, data, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=match):
        load_trace_pickle(_pickle(tmp_path, "trace", data))
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    ("trace", "match"),
    [
        ({1: {"active": [5], "inactive": [4]}}, r"client 1, interval 0: \[5, 4\) is not an"),
        ({1: {"active": [0, 9], "inactive": [4]}}, r"client 1: 2 active times but 1 inactive"),
        ({1: {"active": [0], "inactive": ["x"]}}, r"client 1, field inactive\[0\]: expected a"),
        ({1: {"active": [3], "inactive": [3]}}, r"no interval of positive length"),
    ],
)
def test_bad_behaviour_traces_are_one_line(trace, match):
    with pytest.raises(ValueError, match=match):
        convert_behave_trace(trace, where="f")


def test_the_command_writes_one_client_per_line_and_refuses_bad_input(tmp_path):
    source = _pickle(tmp_path, "client_behave_trace", BEHAVE)
    out = tmp_path / "behave.json"
    command = [sys.executable, "-m", "wirelessfl", "traces", "convert", "--from", "fedscale"]
    done = subprocess.run(
        [*command, str(source), "--out", str(out), "--clients", "2"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "2 clients (0..1) of 3 in the file, 3 intervals; 0 zero-length intervals" in done.stdout
    assert out.read_text().count("\n") == 4
    assert json.loads(out.read_text())["1"] == {"active": [10.0, 50.0], "inactive": [20.0, 70.0]}
    again = subprocess.run(
        [*command, str(source), "--out", str(out)], capture_output=True, text=True
    )
    assert again.returncode == 2
    assert again.stderr == (
        f"wirelessfl: error: --out: {out} exists; give a new file name (nothing is overwritten)\n"
    )
    too_many = subprocess.run(
        [*command, str(source), "--out", str(tmp_path / "x.json"), "--clients", "9"],
        capture_output=True,
        text=True,
    )
    assert too_many.returncode == 2
    assert too_many.stderr.strip().splitlines() == [
        f"wirelessfl: error: --clients: 9 asked for, but {source} holds 3 clients"
    ]


def _truncated(data: dict) -> bytes:
    whole = pickle.dumps(data)
    return whole[: len(whole) // 2]


#: (id, file bytes, what the one line says the file is)
NOT_PICKLES = [
    ("truncated", lambda: _truncated(DEVICE), "is a truncated pickle ("),
    ("json", lambda: json.dumps({"0": {"active": [1]}}).encode(), "is JSON, not a pickle ("),
    ("gzip", lambda: gzip.compress(pickle.dumps(DEVICE)), "is gzip-compressed, not a pickle; "),
    ("empty", lambda: b"", "is empty (0 bytes), not a pickle"),
    ("text", lambda: b"hello world\n", "is not a readable pickle (UnpicklingError: "),
]


@pytest.mark.parametrize(("make", "what"), [pytest.param(m, w, id=i) for i, m, w in NOT_PICKLES])
def test_a_file_that_is_not_a_whole_pickle_says_what_it_is(tmp_path, make, what):
    """What the file is comes first, and nothing about what a pickle may run."""
    source = tmp_path / "trace.pkl"
    source.write_bytes(make())
    with pytest.raises(ValueError) as err:
        load_trace_pickle(source)
    line = str(err.value)
    assert line.startswith(f"{source}: {what}")
    assert "\n" not in line and "refused" not in line


def test_the_command_says_a_file_is_gzip_in_one_line(tmp_path):
    source = tmp_path / "client_device_capacity.gz"
    source.write_bytes(gzip.compress(pickle.dumps(DEVICE)))
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "wirelessfl", "traces", "convert", "--from", "fedscale"]
    done = subprocess.run(
        [*command, str(source), "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"wirelessfl: error: {source}: is gzip-compressed, not a pickle; decompress it first "
        "(gunzip FILE)\n"
    )
    assert not out.exists()
