"""A catalogue of bad scenario inputs: each one gets one ``wirelessfl: error:`` line, exit 2.

Every case runs ``wirelessfl run`` in-process and checks: exit status 2, exactly one non-empty
stderr line starting with ``wirelessfl: error:``, no traceback, a fragment naming the key or
file, nothing written, and an answer in under 2 s. The good inputs next to them (``{}``, a
normal file, a byte-order mark, merge keys) are loaded with ``load_scenario``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from wirelessfl import cli
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR

TIME_LIMIT_S = 2.0  # CPU seconds of this process (wall time varies with the machine's load)


def _laughs(levels: int = 9, width: int = 9) -> str:
    """~1 KB of YAML expanding to width**levels strings ("billion laughs")."""
    lines = ["a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_map(depth: int) -> str:
    return "{a: " * depth + "1" + "}" * depth


# (id, file name, file content (bytes or str), fragment expected in the error line)
BAD_FILES = [
    (
        "binary",
        "bin.yaml",
        b"\x7fELF\x02\x01\x01" + bytes(range(128, 256)),
        "bin.yaml is not a text file (UTF-8)",
    ),
    (
        "latin-1",
        "latin.yaml",
        "name: caf\xe9\n".encode("latin-1"),
        "latin.yaml is not a text file (UTF-8)",
    ),
    ("nul-byte", "nul.yaml", b"rounds: 3\x00\n", "nul.yaml: not valid YAML"),
    ("empty", "empty.yaml", "", "empty.yaml is empty"),
    ("only-comments", "comments.yaml", "# nothing here\n\n   # nor here\n", "write {} in it"),
    ("only-document-marker", "marker.yaml", "---\n", "marker.yaml is empty"),
    ("null-document", "null.yaml", "null\n", "null.yaml is empty"),
    ("empty-toml", "empty.toml", "# comment only\n", "empty.toml is empty"),
    ("top-level-list", "list.yaml", "- 1\n- 2\n", "list.yaml must hold a table of settings"),
    ("top-level-scalar", "scalar.yaml", "hello\n", "scalar.yaml must hold a table of settings"),
    ("duplicate-key", "dup.yaml", "rounds: 3\nrounds: 4\n", "duplicate key rounds (lines 1 and 2)"),
    (
        "duplicate-nested-key",
        "dupnest.yaml",
        "channel:\n  fading:\n    model: rayleigh\n    model: rician\n",
        "duplicate key channel.fading.model (lines 3 and 4)",
    ),
    (
        "duplicate-flow-key",
        "dupflow.yaml",
        "channel: {d_min_m: 1, d_min_m: 2}\n",
        "duplicate key channel.d_min_m",
    ),
    ("duplicate-toml-key", "dup.toml", "rounds = 3\nrounds = 4\n", "dup.toml: not valid TOML"),
    ("billion-laughs", "laughs.yaml", _laughs(), "expands to more than 100,000 values"),
    ("recursive-alias", "rec.yaml", "a: &a [*a]\n", "recursive alias"),
    ("recursive-alias-map", "recmap.yaml", "name: &n {x: *n}\n", "recursive alias"),
    (
        "deep-list",
        "deep.yaml",
        "name: " + _nested_list(10_000) + "\n",
        "nested deeper than 100 levels",
    ),
    (
        "deep-map",
        "deepmap.yaml",
        "name: " + _nested_map(10_000) + "\n",
        "nested deeper than 100 levels",
    ),
    (
        "deep-block-map",
        "deepblock.yaml",
        "".join(" " * i + "a:\n" for i in range(300)),
        "nested deeper than 100 levels",
    ),
    (
        "deep-through-aliases",
        "deepalias.yaml",
        "a: &a " + _nested_list(70) + "\nb: " + "[" * 70 + "*a" + "]" * 70 + "\n",
        "nested deeper than 100 levels once its aliases are expanded",
    ),
    (
        "too-many-values",
        "many.yaml",
        "name: [" + ",".join(["1"] * 150_000) + "]\n",
        "holds more than 100,000 values",
    ),
    (
        "deep-toml",
        "deep.toml",
        "a = " + _nested_list(10_000) + "\n",
        "deep.toml: nested deeper than 100",
    ),
    ("deep-toml-150", "deep150.toml", "a = " + _nested_list(150) + "\n", "nested deeper than 100"),
    ("unbalanced", "unbal.yaml", "controller: {V: [1,\n", "unbal.yaml: not valid YAML"),
    ("tab-indent", "tab.yaml", "channel:\n\tbandwidth_hz: 1\n", "tab.yaml: not valid YAML"),
    ("two-documents", "two.yaml", "rounds: 1\n---\nrounds: 2\n", "two.yaml: not valid YAML"),
    (
        "python-tag",
        "py.yaml",
        "name: !!python/object/apply:os.system ['echo hi']\n",
        "could not determine a constructor",
    ),
    ("list-as-key", "listkey.yaml", "{[1, 2]: 3}\n", "a key is a list; keys must be names"),
    ("table-as-key", "mapkey.yaml", "? {a: 1}\n: 2\n", "a key is a table; keys must be names"),
    ("number-as-key", "numkey.yaml", "1: 2\n", "key 1: keys are names (strings)"),
    ("undefined-alias", "undef.yaml", "name: *nothing\n", "found undefined alias"),
    (
        "huge-int-literal",
        "bigint.yaml",
        "seed: " + "9" * 5000 + "\n",
        "bigint.yaml: not valid YAML",
    ),
    ("bad-timestamp", "ts.yaml", "name: !!timestamp yesterday\n", "ts.yaml: not valid YAML"),
    ("unknown-key", "unknown.yaml", "n_clientz: 3\n", "n_clientz: unknown key"),
    ("rounds-inf", "inf.yaml", "rounds: .inf\n", "rounds: expected an integer, got inf"),
    (
        "seed-float-huge",
        "seed.yaml",
        "seed: 1.0e+30\n",
        "seed: must be >= 0 and <= 9223372036854775807",
    ),
    (
        "date-in-options",
        "date.yaml",
        "learner: {dataset_options: {a: 2001-01-01}}\n",
        "learner.dataset_options.a: expected plain data",
    ),
    (
        "set-in-options",
        "set.yaml",
        "learner: {partition_options: {a: !!set {x}}}\n",
        "learner.partition_options.a: expected plain data",
    ),
]


# (id, --set values after "--set rounds=1", fragment expected)
BAD_SETS = [
    ("unbalanced-value", ["controller.V=[1,"], "--set controller.V: not valid YAML"),
    ("unbalanced-table", ["channel={bandwidth_hz: 1"], "--set channel: not valid YAML"),
    ("no-equals", ["rounds"], "--set: expected KEY=VALUE"),
    ("empty-key", ["=3"], "the key before '=' is empty"),
    ("double-dot", ["a..b=1"], "--set a..b: empty name between dots"),
    ("leading-dot", [".x=1"], "--set .x: empty name between dots"),
    ("trailing-dot", ["x.=1"], "--set x.: empty name between dots"),
    ("space-in-key", ["con troller.V=1"], "'con troller' is not a key name"),
    ("newline-in-key", ["a\nb=1"], "is not a key name"),
    ("through-a-value", ["rounds.x=1"], "--set rounds.x: rounds is not a table"),
    ("unknown-key", ["controller.VV=1"], "controller.VV: unknown key"),
    ("rounds-1e400", ["rounds=1e400"], "rounds: expected an integer, got inf"),
    ("rounds-nan", ["rounds=.nan"], "rounds: expected an integer, got nan"),
    ("rounds-bool", ["rounds=true"], "rounds: expected an integer, got True"),
    ("rounds-string", ["rounds=abc"], "rounds: expected an integer, got 'abc'"),
    ("rounds-fraction", ["rounds=2.5"], "rounds: expected an integer, got 2.5"),
    ("rounds-over-limit", ["rounds=1e9"], "rounds: must be >= 1 and <= 10000000"),
    ("V-bool", ["controller.V=yes"], "controller.V: expected a number, got True"),
    ("V-inf", ["controller.V=.inf"], "controller.V: expected a finite number"),
    ("V-1e400", ["controller.V=1e400"], "controller.V: expected a finite number"),
    ("V-400-digit-int", ["controller.V=1" + "0" * 400], "controller.V: expected a finite number"),
    ("V-list", ["controller.V=[1, 2]"], "controller.V: expected a number, got [1, 2]"),
    ("bandwidth-negative-zero", ["channel.bandwidth_hz=-0.0"], "channel.bandwidth_hz: must be > 0"),
    ("seed-10**30", ["seed=1" + "0" * 30], "seed: must be >= 0 and <= 9223372036854775807"),
    ("seed-negative", ["seed=-1"], "seed: must be >= 0"),
    ("n_clients-1e12", ["n_clients=1e12"], "n_clients: must be >= 1 and <= 1000000"),
    ("n_clients-1e20", ["n_clients=1e20"], "n_clients: must be >= 1 and <= 1000000, got 1e+20"),
    ("n_clients-string", ["n_clients=twelve"], "n_clients: expected an integer, got 'twelve'"),
    (
        "fading-block-budget",
        ["n_clients=1000000"],
        "n_clients x channel.block_rounds = 1,000,000 x 128",
    ),
    (
        "block-rounds-budget",
        ["channel.block_rounds=1e8"],
        "exceeds the 4 GiB limit on one fading block",
    ),
    (
        "tx-power-5000-dBm",
        ["channel.tx_power_dbm=5000"],
        "channel.tx_power_dbm: must be >= -300.0 and <= 300.0",
    ),
    ("mean-snr-1e300-dB", ["channel.mean_snr_db=1e300"], "channel.mean_snr_db: must be >= -300.0"),
    (
        "shadowing-1e300-dB",
        ["channel.shadowing_sigma_db=1e300"],
        "channel.shadowing_sigma_db: must be >= 0.0 and <= 100.0",
    ),
    ("flops-1e-300", ["devices.flops_per_s=1e-300"], "devices.flops_per_s: must be >= 1.0"),
    ("lognormal-sigma-1e300", ["devices.sigma=1e300"], "devices.sigma: must be >= 0.0 and <= 10.0"),
    (
        "listed-too-few",
        ["devices.kind=listed", "devices.per_client_flops_per_s=[1e9, 1e9, 1e9]"],
        "devices.per_client_flops_per_s: has 3 values for n_clients = 100",
    ),
    (
        "listed-none",
        ["devices.kind=listed"],
        "devices.per_client_flops_per_s: has 0 values for n_clients = 100",
    ),
    (
        "listed-zero",
        ["devices.kind=listed", "devices.per_client_flops_per_s=[1e9, 0]"],
        "devices.per_client_flops_per_s[1]: must be >= 1.0, got 0",
    ),
    (
        "listed-negative",
        ["devices.per_client_flops_per_s=[-5]"],
        "devices.per_client_flops_per_s[0]: must be >= 1.0, got -5.0",
    ),
    (
        "listed-inf",
        ["devices.kind=listed", "devices.per_client_flops_per_s=[1e9, .inf]"],
        "devices.per_client_flops_per_s[1]: expected a finite number",
    ),
    (
        "listed-nan",
        ["devices.kind=listed", "devices.per_client_flops_per_s=[.nan]"],
        "devices.per_client_flops_per_s[0]: expected a finite number",
    ),
    (
        "listed-string",
        ["devices.kind=listed", "devices.per_client_flops_per_s=fast"],
        "devices.per_client_flops_per_s: expected a list",
    ),
    ("r_max-huge", ["controller.r_max=1e9"], "controller.r_max: must be >= 1 and <= 65536"),
    ("eval_every-1e30", ["eval_every=1e30"], "eval_every: expected a 64-bit integer"),
    ("E-2**63", [f"constants.E={2**63}"], "constants.E: expected a 64-bit integer"),
    (
        "layer-one-side",
        ["learner.shape.layer_shapes=[[1]]"],
        "learner.shape.layer_shapes[0]: expected a pair [d, l]",
    ),
    (
        "layer-three-sides",
        ["learner.shape.layer_shapes=[[1, 2, 3]]"],
        "layer_shapes[0]: expected a pair",
    ),
    (
        "layer-zero",
        ["learner.shape.layer_shapes=[[0, 5]]"],
        "layer_shapes[0]: layer sizes must be integers in [1, 1,000,000]",
    ),
    (
        "layer-negative",
        ["learner.shape.layer_shapes=[[-1, 2]]"],
        "layer_shapes[0]: layer sizes must be integers",
    ),
    (
        "layer-huge",
        ["learner.shape.layer_shapes=[[1e30, 2]]"],
        "layer_shapes[0]: layer sizes must be integers",
    ),
    (
        "layer-none",
        ["learner.shape.layer_shapes=[]"],
        "learner.shape.layer_shapes: expected at least one",
    ),
    (
        "layer-garbage",
        ["learner.shape.layer_shapes=[[[1]], {a: 2}]"],
        "layer_shapes[0][0]: expected an integer",
    ),
    (
        "layer-table",
        ["learner.shape.layer_shapes={a: 1}"],
        "learner.shape.layer_shapes: expected a list",
    ),
    (
        "too-many-layers",
        ["learner.shape.layer_shapes=[" + ",".join(["[1,1]"] * 10_001) + "]"],
        "at most 10,000 adapted layers",
    ),
    (
        "options-int-key",
        ["learner.dataset_options={1: 2}"],
        "learner.dataset_options: keys are names",
    ),
    (
        "options-list-key",
        ["learner.dataset_options={[1, 2]: 3}"],
        "line 1, column 2: a key under learner.dataset_options is a list",
    ),
    (
        "options-table-key",
        ["learner.partition_options={? {a: 1} : 2}"],
        "a key under learner.partition_options is a table",
    ),
    (
        "options-bad-name",
        ["learner.dataset_options={max-train: 3}"],
        "option names are Python names",
    ),
    (
        "options-nan",
        ["learner.dataset_options={max_train: .nan}"],
        "learner.dataset_options.max_train: expected a finite number",
    ),
    (
        "options-binary",
        ["learner.partition_options={a: !!binary aGk=}"],
        "learner.partition_options.a: expected plain data",
    ),
    (
        "options-duplicate",
        ["learner.dataset_options={a: 1, a: 2}"],
        "duplicate key learner.dataset_options.a (line 1, columns 2 and 8)",
    ),
    (
        "options-not-table",
        ["learner.dataset_options=[1]"],
        "learner.dataset_options: expected a table",
    ),
    (
        "fading-params-int-key",
        ["channel.fading.params={1: 2}"],
        "channel.fading.params: keys are names",
    ),
    (
        "fading-params-builtin",
        ["channel.fading.params={k: 2}"],
        "channel.fading.params: only for a user-registered",
    ),
    (
        "fading-params-scalar",
        ["channel.fading.params=3"],
        "channel.fading.params: expected a table",
    ),
    (
        "laughs-in-set",
        ["name=" + _laughs().replace("\n", ", ").join("{}")],
        "--set name: expands to more than 100,000",
    ),
    ("recursive-in-set", ["name=&a [*a]"], "--set name: line 1, column 1: an alias"),
    ("deep-in-set", ["name=" + _nested_list(300)], "--set name: nested deeper than 100 levels"),
    ("python-tag-in-set", ["name=!!python/name:os.system"], "--set name: not valid YAML"),
    ("section-as-value", ["channel=3"], "channel: expected a table of settings, got 3"),
    (
        "long-string-shortened",
        ["controller.name=" + "x" * 10_000],
        "controller.name: must be one of",
    ),
]


@pytest.fixture(scope="module", autouse=True)
def _warm_imports():
    """Import what ``wirelessfl run`` imports once, so timings measure the answer alone."""
    import wirelessfl.sim.runner  # noqa: F401

    load_scenario("paper")


def _run_cli(argv: list[str], capsys) -> tuple[int, str, float]:
    capsys.readouterr()
    t0 = time.process_time()
    code = cli.main(argv)
    elapsed = time.process_time() - t0
    return code, capsys.readouterr().err, elapsed


def _assert_one_line(code: int, err: str, elapsed: float, fragment: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("wirelessfl: error: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert len(lines[0]) < 600, lines[0]
    assert elapsed < TIME_LIMIT_S, f"{elapsed:.2f} s"


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [pytest.param(n, c, f, id=i) for i, n, c, f in BAD_FILES],
)
def test_bad_scenario_file_gets_one_line(tmp_path, capsys, name, content, fragment):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    code, err, elapsed = _run_cli(["run", str(path), "--out", str(out), "--quiet"], capsys)
    _assert_one_line(code, err, elapsed, fragment)
    assert not out.exists()


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [pytest.param(s, f, id=i) for i, s, f in BAD_SETS],
)
def test_bad_override_gets_one_line(tmp_path, capsys, sets, fragment):
    out = tmp_path / "out"
    argv = ["run", "paper", "--out", str(out), "--quiet", "--set", "rounds=1"]
    for item in sets:
        argv += ["--set", item]
    code, err, elapsed = _run_cli(argv, capsys)
    _assert_one_line(code, err, elapsed, fragment)
    assert not out.exists()


#: (id, shipped scenario, --set items, the whole error line): refused when the scenario is
#: read, not after the models are built or the run has started
REFUSED_AT_LOAD = [
    (
        "stage-h2tune",
        "h2tune/hybrid",
        ["compression.sparsifier=topk"],
        "compression.sparsifier: algorithm 'h2tune' cannot take a compression stage (its shared "
        "tensors are averaged whole, not as sparse LoRA updates); use sparsifier: none",
    ),
    (
        "quantiser-h2tune",
        "h2tune/hybrid",
        ["quantize.bits=4"],
        "quantize.bits: algorithm 'h2tune' cannot take a quantiser stage (its shared tensors "
        "are averaged whole, not as sparse LoRA updates); leave it null",
    ),
    (
        "buffer-above-n-clients",
        "network_only",
        ["n_clients=10", "n_scheduled=3", "server.mode=buffered", "server.buffer_size=11"],
        "server.buffer_size: must be <= n_clients (10), got 11 (a client whose update waits in "
        "the buffer is dispatched again only after the aggregation, so at most n_clients updates "
        "fill it)",
    ),
]


@pytest.mark.parametrize(
    ("scenario", "sets", "line"),
    [pytest.param(sc, s, line, id=i) for i, sc, s, line in REFUSED_AT_LOAD],
)
def test_what_the_run_cannot_take_is_refused_at_load(tmp_path, capsys, scenario, sets, line):
    out = tmp_path / "out"
    argv = ["run", scenario, "--out", str(out), "--quiet"]
    for item in sets:
        argv += ["--set", item]
    code, err, elapsed = _run_cli(argv, capsys)
    _assert_one_line(code, err, elapsed, line)
    assert err.strip() == f"wirelessfl: error: {line}"
    assert not out.exists()


def test_a_buffer_of_every_client_runs(tmp_path):
    """M = N fills: the clients in flight refill the slots until every client has arrived."""
    from wirelessfl.sim import run_scenario

    sets = ["rounds=2", "n_clients=10", "n_scheduled=3", "server.mode=buffered"]
    sc = load_scenario("network_only", [*sets, "server.buffer_size=10"])
    rounds = run_scenario(sc, tmp_path / "out").rounds
    assert list(rounds["n_arrived"]) == [10, 10]


def test_directory_missing_and_oversized_files(tmp_path, capsys):
    out = str(tmp_path / "out")
    folder = tmp_path / "a_folder"
    folder.mkdir()
    code, err, elapsed = _run_cli(["run", str(folder), "--out", out, "--quiet"], capsys)
    _assert_one_line(code, err, elapsed, "a_folder is a directory")
    code, err, elapsed = _run_cli(["run", str(tmp_path / "nope.yaml"), "--out", out], capsys)
    _assert_one_line(code, err, elapsed, "no file")
    code, err, elapsed = _run_cli(["run", "x" * 300, "--out", out, "--quiet"], capsys)
    _assert_one_line(code, err, elapsed, "no file")
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * 110_000)
    code, err, elapsed = _run_cli(["run", str(big), "--out", out, "--quiet"], capsys)
    _assert_one_line(code, err, elapsed, "big.yaml is larger than 1024 KiB")


def test_unreadable_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "secret.yaml"
    path.write_text("rounds: 1\n")
    real_open = Path.open

    def refusing_open(self, *args, **kwargs):  # tests may run as root: chmod 000 is no bar
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    code, err, elapsed = _run_cli(["run", str(path), "--out", str(tmp_path / "o")], capsys)
    _assert_one_line(code, err, elapsed, "secret.yaml cannot be read: Permission denied")


# ---- the good inputs next to them ---------------------------------------------------------


def _load_file(tmp_path: Path, name: str, content: str | bytes, overrides=None):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    t0 = time.process_time()
    scenario = load_scenario(path, overrides)
    assert time.process_time() - t0 < TIME_LIMIT_S
    return scenario


def test_braces_mean_all_defaults(tmp_path):
    sc = _load_file(tmp_path, "defaults.yaml", "{}\n")
    assert sc.n_clients == 100 and sc.rounds == 1000
    assert _load_file(tmp_path, "defaults2.yaml", "# every default\n{}\n").rounds == 1000


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param(
            "small.yaml", "name: small\nn_clients: 20\nn_scheduled: 5\nrounds: 7\n", id="yaml"
        ),
        pytest.param(
            "small.yml", "name: small\nn_clients: 20\nn_scheduled: 5\nrounds: 7\n", id="yml"
        ),
        pytest.param(
            "small.toml", 'name = "small"\nn_clients = 20\nn_scheduled = 5\nrounds = 7\n', id="toml"
        ),
        pytest.param(
            "bom.yaml",
            "\ufeffname: small\nn_clients: 20\nn_scheduled: 5\nrounds: 7\n".encode(),
            id="utf8-bom",
        ),
        pytest.param(
            "anchors.yaml",
            "name: small\nn_clients: 20\nn_scheduled: 5\nrounds: 7\n"
            "learner:\n  shape:\n    layer_shapes: [&l [64, 64], *l, *l]\n",
            id="anchors",
        ),
        pytest.param(
            "merge_keys.yaml",
            "name: small\nn_clients: 20\nn_scheduled: 5\nrounds: 7\n"
            "controller: {name: fixed, rank: 4, r_max: 16}\n"
            "constants: {<<: {S: 2.0, H: 3.0}, H: 1.5}\n",
            id="merge-keys",
        ),
    ],
)
def test_good_files_load(tmp_path, name, content):
    sc = _load_file(tmp_path, name, content)
    assert sc.name == "small" and sc.n_clients == 20 and sc.rounds == 7


def test_merge_keys_keep_the_explicit_value(tmp_path):
    sc = _load_file(tmp_path, "merge.yaml", "constants: {<<: {S: 2.0, H: 3.0}, H: 1.5}\n")
    assert sc.constants.S == 2.0 and sc.constants.H == 1.5


def test_good_overrides_load(tmp_path):
    sc = load_scenario(
        "paper",
        [
            "controller.V=-0.0",
            "name=a=b",
            "rounds=1e3",
            "n_clients=1000000",
            "channel.block_rounds=1",
            "seed=9223372036854775807",
            "learner.shape.layer_shapes=[[1000000, 1], [1, 1]]",
            "learner.dataset_options={max_train: 100, note: '1e3'}",
        ],
    )
    assert sc.controller.V == 0.0 and str(sc.controller.V) == "0.0"  # not -0.0
    assert sc.name == "a=b" and sc.rounds == 1000 and sc.n_clients == 1_000_000
    assert sc.seed == 2**63 - 1
    assert sc.learner.given("dataset_options") == {"max_train": 100, "note": 1000.0}


def test_a_file_of_10000_layers_loads_in_time(tmp_path):
    pairs = ", ".join(["[768, 768]"] * 10_000)
    sc = _load_file(tmp_path, "wide.yaml", f"learner:\n  shape:\n    layer_shapes: [{pairs}]\n")
    assert len(sc.learner.shape.layer_shapes) == 10_000


@pytest.mark.parametrize("name", ["default", "paper", "network_only", "instruct"])
def test_shipped_scenarios_load(name):
    load_scenario(name)


@pytest.mark.parametrize(
    "path", sorted((SCENARIO_DIR / "paper").glob("*.yaml")), ids=lambda p: p.stem
)
def test_paper_scenarios_load(path):
    load_scenario(path)


LISTED = sorted(p for p in SCENARIO_DIR.rglob("*.yaml") if "kind: listed" in p.read_text())


@pytest.mark.parametrize("path", LISTED, ids=lambda p: p.stem)
def test_a_header_names_only_the_listed_device_speeds(path):
    """The FLOP/s a shipped scenario's header comment gives (numbers like 1e10) are speeds
    of its ``devices.per_client_flops_per_s``."""
    header = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    named = {float(x) for x in re.findall(r"\b\d(?:\.\d+)?e\d+\b", " ".join(header))}
    assert named, f"{path.name}: its header gives no device speed"
    assert named <= set(load_scenario(path).devices.per_client_flops_per_s)


def test_listed_device_speeds_set_each_clients_compute_time(tmp_path):
    """``devices.kind: listed``: client i computes at per_client_flops_per_s[i] FLOP/s."""
    from wirelessfl.sim import run_scenario

    speeds = [1.0e12, 1.0e11, 4.0e12, 1.0e11]
    sc = _load_file(
        tmp_path,
        "listed.yaml",
        "name: listed\nn_clients: 4\nn_scheduled: 4\nrounds: 3\neval_every: 3\n"
        "channel: {mean_snr_db: 10.0}\n"
        f"devices: {{kind: listed, per_client_flops_per_s: {speeds}}}\n"
        "learner: {kind: surrogate, shape: {layer_shapes: [[64, 64]]}}\n"
        "output: {clients: true}\n",
    )
    assert sc.devices.per_client_flops_per_s == speeds
    res = run_scenario(sc, tmp_path / "out")
    assert res.config["devices"]["per_client_flops_per_s"] == speeds
    cl = res.clients
    assert len(cl) == 12 and (cl.status == "arrived").all() and (cl.compute_s > 0).all()
    for _, g in cl.groupby("round"):
        by_client = g.set_index("client").compute_s.sort_index()
        # the same FLOPs for every client of a round: compute time x speed is constant
        flops = by_client.to_numpy() * speeds
        np.testing.assert_allclose(flops, flops[0], rtol=1e-12)
        assert by_client[1] == pytest.approx(10.0 * by_client[0], rel=1e-12)  # 10x slower
        assert by_client[2] == pytest.approx(by_client[0] / 4.0, rel=1e-12)
