"""Hard edges: every hostile input or option is exit 0, 1 or 2 with one line naming
the file or option, never a traceback; outputs are whole or absent; multi-file outputs are
replaced all together, even when the writer is SIGKILLed between two steps."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from conftest import exported_worked_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench.common.io as wio
from workbench.cli import build_parser, main
from workbench.common.io import InputError, atomic_dir, read_json, read_jsonl, write_jsonl
from workbench.common.options import RANGES, check_number
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.protocols import Protocol
from workbench.dsgc.scenario import Scenario, load_scenarios

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "docs" / "schemas"
WINDOW = ROOT / "data" / "logs" / "window_closed.jsonl"
SQUAD = ROOT / "tests" / "fixtures" / "squad_tiny.json"

SCENARIO = exported_worked_example(seed=3)


def run(argv) -> int:
    """main() in-process; argparse's usage errors (SystemExit) become their exit code."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2


def strict_json(line: str):
    """JSON that may not hold NaN or Infinity (what allow_nan=False writers produce)."""

    def refuse(name):
        raise ValueError(f"{name} in output")

    return json.loads(line, parse_constant=refuse)


def write_lines(path: Path, *objs) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


@pytest.fixture
def scen(tmp_path) -> Path:
    return write_lines(tmp_path / "s.jsonl", SCENARIO, {**SCENARIO, "id": "ext-2"})


def error_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if "error" in x]
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    return lines[0]


# --- options: every range checked at parse time, the option and the range named -------------

BAD_EVALUATE = [
    ("--tau", "0", "finite number in [1e-06"),
    ("--tau", "-0.25", "finite number in [1e-06"),
    ("--tau", "inf", "finite number in [1e-06"),
    ("--lambda", "-1", "finite number in [0,"),
    ("--lambda", "nan", "finite number in [0,"),
    ("--hops", "-3", "integer from 1 to 20"),
    ("--hops", "1000000000", "integer from 1 to 20"),
    ("--delta", "nan", "finite number in [0,"),
    ("--density", "nan", "finite number in [0,"),
    ("--budget-multiplier", "-2", "finite number in (0,"),
    ("--budget-multiplier", "inf", "finite number in (0,"),
    ("--budget-multiplier", "1e308", "finite number in (0,"),
    ("--budget-multiplier", "nan", "finite number in (0,"),
    ("--budget-multiplier", "0", "finite number in (0,"),
]


@pytest.mark.parametrize("option,value,range_text", BAD_EVALUATE)
def test_evaluate_rejects_out_of_range_options(scen, tmp_path, capsys, option, value, range_text):
    out = tmp_path / "r.jsonl"
    assert run(["evaluate", scen, option, value, "--out", out]) == 2
    line = error_line(capsys.readouterr().err)
    assert f"argument {option}:" in line and range_text in line
    assert not out.exists()


BAD_OTHERS = [
    (["closure", "check", WINDOW, "--budget", "0"], "--budget", "integer >= 1"),
    (["closure", "check", WINDOW, "--budget", "-50"], "--budget", "integer >= 1"),
    (["closure", "check", WINDOW, "--handle-re", "("], "--handle-re", "not a valid regular"),
    (
        ["closure", "check", WINDOW, "--definition-re", "(run)_([0-9a-f]+)"],
        "--definition-re",
        "needs 1 capturing group",
    ),
    (["closure", "check", WINDOW, "--floor", "nan"], "--floor", "finite number"),
    (["closure", "simulate", "--turns", "0"], "--turns", "integer from 1"),
    (["closure", "simulate", "--capacity", "0"], "--capacity", "integer >= 1"),
    (["closure", "simulate", "--capacity", "-100"], "--capacity", "integer >= 1"),
    (["closure", "simulate", "--managers", ","], "--managers", "give one or more of"),
    (["closure", "simulate", "--managers", "gate,nosuch"], "--managers", "unknown 'nosuch'"),
    (["recall", "grid", "--boot", "0", "--out", "x"], "--boot", "integer from 1"),
    (["recall", "grid", "--density", "1", "--out", "x"], "--density", "finite number in [0, 1)"),
    (["recall", "sweep", "--Ks", "2,0", "--out", "x"], "--Ks", "each value must be"),
    (["suite", "main", "--encoders", "lexical,nope", "--out", "x"], "--encoders", "unknown"),
    (["generate", "role", "--seeds", "0:1", "--blocks", "-1", "--out", "x"], "--blocks", "from 1"),
]


@pytest.mark.parametrize("argv,option,range_text", BAD_OTHERS)
def test_other_commands_reject_out_of_range_options(
    tmp_path, capsys, monkeypatch, argv, option, range_text
):
    monkeypatch.chdir(tmp_path)
    assert run(argv) == 2
    line = error_line(capsys.readouterr().err)
    assert f"argument {option}:" in line and range_text in line
    assert not (tmp_path / "x").exists()


def test_hops_zero_is_rejected_naming_the_option(scen, tmp_path, capsys):
    """No propagation is lambda = 0 (no-graph DSGC); --hops 0 is a usage error, one line."""
    assert run(["evaluate", scen, "--hops", "0", "--out", tmp_path / "a.jsonl"]) == 2
    line = error_line(capsys.readouterr().err)
    assert "argument --hops:" in line and "integer from 1 to 20" in line
    assert not (tmp_path / "a.jsonl").exists()
    with pytest.raises(ValueError, match="hops must be an integer from 1"):
        PolicySetting("dsgc", hops=0)


def test_a_protocol_file_must_say_what_it_is(tmp_path, capsys):
    """name and description are required (every other field defaults to the main protocol's);
    a file without one is rejected naming the file and the field, and nothing runs."""
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"name": "mine", "templates": ["role"]}))
    assert run(["suite", p, "--out", tmp_path / "out"]) == 2
    line = error_line(capsys.readouterr().err)
    assert "p.json" in line and "description" in line and "missing required field" in line
    assert not (tmp_path / "out").exists()
    p.write_text(json.dumps({"name": "mine", "description": "role only", "templates": ["role"]}))
    assert (
        run(["suite", p, "--seeds", "0:1", "--encoders", "lexical", "--out", tmp_path / "out"]) == 0
    )


def test_the_library_rejects_what_the_command_line_rejects():
    for kw in (
        {"tau": 0},
        {"tau": -0.25},
        {"tau": float("inf")},
        {"lam": float("nan")},
        {"lam": -1},
        {"hops": -1},
        {"hops": 10**9},
        {"hops": 1.5},
        {"delta": float("nan")},
        {"density": -1},
    ):
        for policy in ("dsgc", "similarity"):
            with pytest.raises(ValueError, match="must be"):
                PolicySetting(policy, **kw)
        with pytest.raises(ValueError, match="must be"):
            PolicySetting("dsgc", **kw)
    assert PolicySetting("dsgc", hops=2.0).hops == 2 and isinstance(
        PolicySetting("dsgc", hops=2.0).hops, int
    )
    assert check_number("hops", np.int64(3)) == 3


PROTOCOLS = [
    ({"name": "x", "summary": ["templates"]}, "summary", "must be one of"),
    ({"name": "x", "tau": 0}, "tau", "tau must be"),
    ({"name": "x", "templates": "role"}, "templates", "non-empty list"),
    ({"name": "x", "templates": []}, "templates", "non-empty list"),
    ({"name": "x", "hops": [1e9]}, "hops", "integer from 1 to 20"),
    ({"name": "x", "lambdas": [-1]}, "lambdas", "lambda must be"),
    ({"name": "x", "budget_multipliers": ["nan"]}, "budget_multipliers", "must be"),
    ({"name": "x", "graph_noise": [[0.1]]}, "graph_noise", "pair"),
    ({"name": "x", "graph_noise": [[2.0, 0]]}, "graph_noise", "drop must be"),
    ({"name": "x", "policies": ["foo"]}, "policies", "must be one of"),
    ({"name": "x", "encoders": []}, "encoders", "non-empty list"),
    ({"name": ""}, "name", "non-empty"),
    ({"templates": ["role"]}, "name", "missing"),
]


@pytest.mark.parametrize("body,field,text", PROTOCOLS)
def test_protocol_fields_are_checked_naming_file_and_field(tmp_path, capsys, body, field, text):
    p = write_lines(tmp_path / "p.json", body)
    with pytest.raises(InputError) as e:
        Protocol.load(str(p))
    assert e.value.field == field and text in str(e.value) and str(p) in str(e.value)
    out = tmp_path / "out"
    assert run(["suite", p, "--seeds", "0:1", "--encoders", "lexical", "--out", out]) == 2
    assert f"field '{field}'" in error_line(capsys.readouterr().err) and not out.exists()


# --- files: decoding, depth, numbers, empty inputs -------------------------------------------


def _with_bad_byte(tmp_path: Path, name: str, src: bytes, at_line: int, after: bytes) -> Path:
    lines = src.split(b"\n")
    lines[at_line - 1] = lines[at_line - 1].replace(after, after + b"\xff", 1)
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines))
    return path


def test_decode_errors_name_file_and_line(tmp_path, capsys):
    src = b"".join(json.dumps({**SCENARIO, "id": f"s{i}"}).encode() + b"\n" for i in range(3))
    bad = _with_bad_byte(tmp_path, "ff.jsonl", src, 3, b'"text": "')
    assert run(["evaluate", bad, "--out", tmp_path / "r.jsonl"]) == 2
    line = error_line(capsys.readouterr().err)
    assert "ff.jsonl: line 3: not UTF-8 text: byte 0xff" in line

    u16 = tmp_path / "u16.jsonl"
    u16.write_bytes(src.decode().encode("utf-16"))
    assert run(["evaluate", u16, "--out", tmp_path / "r.jsonl"]) == 2
    assert "u16.jsonl: line 1: the file is UTF-16" in error_line(capsys.readouterr().err)

    lat = tmp_path / "latin1.jsonl"
    lat.write_bytes(src.replace(b"Alice booked", "Zo\xeb booked".encode("latin-1")))
    assert run(["evaluate", lat, "--out", tmp_path / "r.jsonl"]) == 2
    assert "latin1.jsonl: line 1: not UTF-8 text: byte 0xeb" in error_line(capsys.readouterr().err)

    wff = _with_bad_byte(tmp_path, "w.jsonl", WINDOW.read_bytes(), 2, b'"text": "')
    assert run(["closure", "check", wff]) == 2
    assert "w.jsonl: line 2: not UTF-8 text" in error_line(capsys.readouterr().err)

    sq = _with_bad_byte(tmp_path, "sq.json", SQUAD.read_bytes(), 8, b'"')
    with pytest.raises(InputError, match=r"sq.json: line 8: not UTF-8 text"):
        read_json(sq)
    assert not (tmp_path / "r.jsonl").exists()


def test_surrogates_long_numbers_nan_and_depth_are_named_errors(tmp_path, capsys):
    s = json.dumps({**SCENARIO, "query": "\ud800 x"})  # json.dumps escapes it as \ud800
    cases = {
        "surrogate": (s, "field 'query': a string holds a lone surrogate"),
        "digits": (json.dumps(SCENARIO).replace('"seed": 3', '"seed": ' + "9" * 5000), "digits"),
        "nan": (json.dumps(SCENARIO).replace('"seed": 3', '"seed": NaN'), "NaN is not a JSON"),
        "inf": (json.dumps(SCENARIO).replace('"seed": 3', '"seed": 1e999'), "out of range"),
        "deep": (
            json.dumps(SCENARIO)[:-1] + ', "meta": ' + "[" * 2000 + "]" * 2000 + "}",
            "nested deeper than 100 levels",
        ),
        "deep150": (
            json.dumps(SCENARIO)[:-1] + ', "meta": ' + "[" * 150 + "]" * 150 + "}",
            "nested deeper than 100 levels",
        ),
        "bigseed": (json.dumps({**SCENARIO, "seed": 2**70}), "field 'seed': must be a 64-bit"),
    }
    for name, (line, expected) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(line + "\n", errors="surrogatepass")
        assert run(["evaluate", path, "--out", tmp_path / "r.jsonl"]) == 2, name
        msg = error_line(capsys.readouterr().err)
        assert f"{name}.jsonl: line 1:" in msg and expected in msg, msg
    # a bracket inside a string is text, not nesting
    ok = {**SCENARIO, "note": "[" * 500}
    assert run(["evaluate", write_lines(tmp_path / "ok.jsonl", ok), "--out", tmp_path / "r"]) == 0
    deep = "[" * 2000 + "]" * 2000
    recall = ["recall", "grid", "--dense-encoder", "lexical", "--out", tmp_path / "g", "--squad"]
    for cmd in (["closure", "check"], recall):
        path = tmp_path / "deep.json"
        path.write_text(deep if cmd[0] == "recall" else '{"id": "a", "m": ' + deep + "}\n")
        assert run([*cmd, path]) == 2
        assert "deep.json" in error_line(capsys.readouterr().err)


def test_empty_inputs_are_errors(tmp_path, capsys):
    for text in ("", "\n\n  \n"):
        path = tmp_path / "empty.jsonl"
        path.write_text(text)
        assert run(["evaluate", path, "--out", tmp_path / "r.jsonl"]) == 2
        assert "empty.jsonl: the file holds no records" in error_line(capsys.readouterr().err)
        assert run(["closure", "check", path]) == 2
        assert "empty.jsonl: the file holds no records" in error_line(capsys.readouterr().err)
    assert list(read_jsonl(path, allow_empty=True)) == []


# --- the block cost ----------------------------------------------------------------------------


def test_a_declared_cost_is_honoured_and_checked(tmp_path, capsys):
    costs = [5, 7, 11, 1, 2, 3]
    sc = {
        **SCENARIO,
        "blocks": [{**b, "cost": c} for b, c in zip(SCENARIO["blocks"], costs, strict=True)],
    }
    s = Scenario.from_dict(sc)
    assert list(s.costs) == costs and s.chain_mass() == 5 + 7 + 11
    assert s.budget(2.0) == 46 and Scenario.from_dict(s.to_dict()) == s
    out = tmp_path / "r.jsonl"
    assert run(["evaluate", write_lines(tmp_path / "c.jsonl", sc), "--out", out]) == 0
    row = strict_json(out.read_text())
    assert row["budget_tokens"] == 46
    assert row["used_tokens"] == sum(
        c for b, c in zip(sc["blocks"], costs, strict=True) if b["id"] in row["retained_ids"]
    )
    # absent: the word count, as before (and `to_dict` writes no cost)
    plain = Scenario.from_dict(SCENARIO)
    assert list(plain.costs) == [max(len(b["text"].split()), 1) for b in SCENARIO["blocks"]]
    assert "cost" not in plain.to_dict()["blocks"][0]
    for bad in ("abc", 0, -3, 1.5, True, 10**7, [1]):
        sc_bad = {
            **SCENARIO,
            "blocks": [{**SCENARIO["blocks"][0], "cost": bad}, *SCENARIO["blocks"][1:]],
        }
        path = write_lines(tmp_path / "bad.jsonl", sc_bad)
        assert run(["evaluate", path, "--out", out]) == 2
        assert "line 1: field 'blocks[0].cost': must be a positive integer" in error_line(
            capsys.readouterr().err
        )


# --- outputs: named errors, whole or absent ----------------------------------------------------


def test_bad_output_paths_are_usage_errors(scen, tmp_path, capsys, monkeypatch):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("keep\n")
    monkeypatch.chdir(tmp_path)
    cases = [
        (["evaluate", scen, "--out", "adir"], "is a folder"),
        (["evaluate", scen, "--out", ""], "is empty"),
        (["evaluate", scen, "--out", "."], "is a folder"),
        (["evaluate", scen, "--out", "afile/x.jsonl"], "it is a file, not a folder"),
        (["suite", "main", "--seeds", "0:1", "--out", "afile"], "exists and is not a folder"),
        (["suite", "main", "--seeds", "0:1", "--out", "."], "is the current folder"),
        (["closure", "simulate", "--out", "afile"], "exists and is not a folder"),
        (["recall", "grid", "--out", "afile"], "exists and is not a folder"),
    ]
    for argv, text in cases:
        assert run(argv) == 2, argv
        line = error_line(capsys.readouterr().err)
        assert "argument --out:" in line and text in line, line
    assert (tmp_path / "afile").read_text() == "keep\n" and not any((tmp_path / "adir").iterdir())


def test_os_errors_while_writing_name_the_output(scen, tmp_path, capsys, monkeypatch):
    """A read-only folder, a full disk: as root neither can be made for real, so os.replace
    fails the way the kernel would."""
    out = tmp_path / "r.jsonl"
    out.write_text("PREVIOUS\n")

    def denied(src, dst):
        raise PermissionError(13, "Permission denied", str(src), None, str(dst))

    monkeypatch.setattr(os, "replace", denied)
    assert run(["evaluate", scen, "--out", out]) == 2
    assert f"{out}: cannot write: Permission denied" in error_line(capsys.readouterr().err)
    assert out.read_text() == "PREVIOUS\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "s.jsonl"]


def test_json_writers_refuse_nan(tmp_path):
    with pytest.raises(InputError, match="record 2 cannot be written as JSON"):
        write_jsonl([{"a": 1.0}, {"a": float("nan")}], tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


SUITE = ["suite", "main", "--encoders", "lexical"]


def test_a_failing_set_write_leaves_the_old_set(tmp_path, capsys, monkeypatch):
    """The issue's case: summary.csv cannot be written after runs.csv was. Now the folder is
    checked up front, and a failure after the first file still leaves the old pair."""
    out = tmp_path / "sd"
    (out / "summary.csv").mkdir(parents=True)
    (out / "runs.csv").write_text("OLD\n")
    assert run([*SUITE, "--seeds", "0:1", "--out", out]) == 2
    assert "holds subfolders (summary.csv)" in error_line(capsys.readouterr().err)
    assert (out / "runs.csv").read_text() == "OLD\n"
    (out / "summary.csv").rmdir()
    (out / "summary.csv").write_text("OLD\n")
    real = wio.write_csv
    calls = []

    def second_fails(df, path, float_format=None):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(path))
        return real(df, path, float_format=float_format)

    monkeypatch.setattr("workbench.dsgc.runs.write_csv", second_fails)
    assert run([*SUITE, "--seeds", "0:1", "--out", out]) == 2
    assert "No space left on device" in error_line(capsys.readouterr().err)
    assert [(out / n).read_text() for n in ("runs.csv", "summary.csv")] == ["OLD\n", "OLD\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sd"]  # no staging folder left


def test_recall_and_closure_sets_are_written_together(tmp_path, capsys):
    out = tmp_path / "rg"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    argv = ["recall", "grid", "--dense-encoder", "lexical", "--episodes", "8", "--boot", "5"]
    assert run([*argv, "--out", out]) == 0
    names = {"recall_grid.csv", "recall_decomposition.csv", "recall_failures.csv", "notes.txt"}
    assert {p.name for p in out.iterdir()} == names
    assert (out / "notes.txt").read_text() == "mine\n"
    out2 = tmp_path / "cs"
    assert run(["closure", "simulate", "--seeds", "0:1", "--turns", "12", "--out", out2]) == 0
    assert {p.name for p in out2.iterdir()} == {"closure_summary.csv", "closure_timeline.csv"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cs", "rg"]


def test_ctrl_c_exits_130_with_the_old_outputs_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "sd"
    out.mkdir()
    for n in ("runs.csv", "summary.csv"):
        (out / n).write_text("OLD\n")
    real = wio.write_csv

    def interrupted(df, path, float_format=None):
        if path.name == "summary.csv":
            raise KeyboardInterrupt
        return real(df, path, float_format=float_format)

    monkeypatch.setattr("workbench.dsgc.runs.write_csv", interrupted)
    assert run([*SUITE, "--seeds", "0:1", "--out", out]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "workbench suite: interrupted; no output was written in part"
    assert [(out / n).read_text() for n in ("runs.csv", "summary.csv")] == ["OLD\n", "OLD\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sd"]


def _catches_sigint(pid: int) -> bool:
    """Has process `pid` installed a SIGINT handler (Linux: the SigCgt mask in /proc)?"""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # no /proc (or the process is gone): fall back to the plain wait
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def test_ctrl_c_while_loading_is_one_line_and_130(tmp_path):
    """The real command: SIGINT while it loads or runs is one line, not a traceback (after 1 s
    it may still be importing, or already running the suite: either way one line)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "workbench", "suite", "main", "--out", str(tmp_path / "o")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    # Only once the interpreter catches SIGINT (a loaded machine may take over a second to get
    # there; before it, the signal kills the process like any C program's).
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _catches_sigint(p.pid):
        time.sleep(0.02)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130 and b"Traceback" not in err, err
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_an_internal_error_is_one_line_and_exit_70(scen, tmp_path, capsys, monkeypatch):
    def boom(*a, **k):
        raise KeyError("bug")

    monkeypatch.setattr("workbench.cli.load_scenarios", boom)
    assert run(["evaluate", scen, "--out", tmp_path / "r.jsonl"]) == 70
    err = capsys.readouterr().err
    assert "internal error: KeyError" in err and "Traceback" not in err
    monkeypatch.setenv("WORKBENCH_DEBUG", "1")
    with pytest.raises(KeyError):
        main(["evaluate", str(scen), "--out", str(tmp_path / "r.jsonl")])


# --- SIGKILL at every replacement point: always a consistent set ------------------------------


def _suite_in_child(out: Path, crash_at: int, exchange: bool) -> tuple[int, bytes]:
    """Fork; the child runs `workbench suite` in-process with WORKBENCH_TEST_CRASH_AT set.
    Returns (signal that killed it or 0, its stderr)."""
    err = out.parent / "child.err"
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            sys.stderr = open(err, "w", buffering=1)  # noqa: SIM115 (the child exits below)
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
            os.environ[wio.CRASH_ENV] = str(crash_at)
            wio._crash_count = 0
            if not exchange:
                wio._exchange = lambda a, b: False
            code = main([*SUITE, "--seeds", "0:2", "--out", str(out)])
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    assert killed or os.WEXITSTATUS(status) == 0, err.read_text()
    return killed, err.read_bytes()


@pytest.fixture(scope="module")
def suite_sets(tmp_path_factory):
    """The old set (seeds 0:1) and the new set (seeds 0:2), as bytes: every file differs, so a
    mix of the two is neither."""
    base = tmp_path_factory.mktemp("sets")
    sets = []
    for seeds in ("0:1", "0:2"):
        assert main([*SUITE, "--seeds", seeds, "--out", str(base / seeds[-1])]) == 0
        sets.append({n: (base / seeds[-1] / n).read_bytes() for n in ("runs.csv", "summary.csv")})
    assert all(sets[0][n] != sets[1][n] for n in sets[0])
    return sets


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
@pytest.mark.parametrize("existed", [True, False], ids=["over-old-set", "new-folder"])
def test_sigkill_at_every_replacement_point_leaves_a_consistent_set(
    tmp_path, suite_sets, exchange, existed
):
    old, new = suite_sets
    points = []
    for n in range(1, 30):
        out = tmp_path / f"run{n}" / "out"
        out.parent.mkdir()
        if existed:
            out.mkdir()
            for name, data in old.items():
                (out / name).write_bytes(data)
            (out / "notes.txt").write_text("not part of the set\n")
        killed, err = _suite_in_child(out, n, exchange)
        if not killed:
            break
        assert killed == signal.SIGKILL
        points.append(err.decode().strip().splitlines()[-1])
        if out.exists():
            got = {name: (out / name).read_bytes() for name in old}
            assert got in (old, new) if existed else got == new, points[-1]
            if existed:
                assert (out / "notes.txt").read_text() == "not part of the set\n"
        else:
            # absent: only before the first rename of a new folder, or (two-renames) between
            # the two renames, where the old set waits aside and the next write restores it
            assert not existed or not exchange, points[-1]
            if existed:
                with atomic_dir(out) as stage:
                    (stage / "x.txt").write_text("x")
                assert {n: (out / n).read_bytes() for n in old} == old
        # the next write removes what the killed one left beside the folder
        with atomic_dir(out) as stage:
            (stage / "touch.txt").write_text("t")
        assert sorted(p.name for p in out.parent.iterdir()) == ["child.err", "out"]
    else:
        pytest.fail("the writer never finished")
    assert out.exists() and {n: (out / n).read_bytes() for n in old} == new
    want = 7 if existed and exchange else 8 if existed else 6
    assert len(points) == want, points
    assert any("replaced summary.csv" in p for p in points)


def test_the_crash_hook_works_in_the_real_command(tmp_path, suite_sets):
    """One real `workbench` process, killed by the hook right after the staged files are done:
    the previous set stays whole."""
    old, _ = suite_sets
    out = tmp_path / "out"
    out.mkdir()
    for name, data in old.items():
        (out / name).write_bytes(data)
    env = {**os.environ, wio.CRASH_ENV: "6"}
    p = subprocess.run(
        [sys.executable, "-m", "workbench", *SUITE, "--seeds", "0:2", "--out", str(out)],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert b"crash point 6: kept the other files of out" in p.stderr
    assert {n: (out / n).read_bytes() for n in old} == old


# --- the documented formats: JSON Schemas checked against real files -------------------------


def _schema(name):
    shipped = ROOT / "workbench" / "common" / "data" / "schemas" / f"{name}.schema.json"
    return json.loads(
        (shipped if shipped.exists() else SCHEMAS / f"{name}.schema.json").read_text()
    )


def test_outputs_and_inputs_match_their_schemas(tmp_path, suite_sets):
    scen_file = tmp_path / "g.jsonl"
    assert run(["generate", "all", "--seeds", "0:2", "--out", scen_file]) == 0
    v = jsonschema.Draft202012Validator(_schema("scenario"))
    for line in scen_file.read_text().splitlines():
        v.validate(json.loads(line))
    v.validate(SCENARIO | {"blocks": [{**SCENARIO["blocks"][0], "cost": 4}]})
    for bad in ({k: SCENARIO[k] for k in SCENARIO if k != "chain"}, {**SCENARIO, "blocks": []}):
        assert not v.is_valid(bad)
    assert not v.is_valid(SCENARIO | {"blocks": [{**SCENARIO["blocks"][0], "cost": "abc"}]})

    res = jsonschema.Draft202012Validator(_schema("result"))
    for full in ([], ["--full"]):
        out = tmp_path / "r.jsonl"
        assert run(["evaluate", scen_file, *full, "--out", out]) == 0
        for line in out.read_text().splitlines():
            res.validate(strict_json(line))
    assert not res.is_valid({"scenario_id": "x"})

    span = jsonschema.Draft202012Validator(_schema("span"))
    for path in (WINDOW, ROOT / "data" / "logs" / "judge_window.jsonl"):
        for _, obj in read_jsonl(path):
            span.validate(obj)
    assert not span.is_valid({"id": "a", "turn": -1, "role": "user", "text": "x"})
    assert not span.is_valid({"id": "a", "turn": 0, "role": "user", "text": "x", "pinned": 1})

    runs = pd.read_csv(__import__("io").BytesIO(suite_sets[1]["runs.csv"]))
    rv = jsonschema.Draft202012Validator(_schema("suite_runs"))
    for row in runs.to_dict("records"):
        rv.validate(
            {k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in row.items()}
        )
    sv = jsonschema.Draft202012Validator(_schema("suite_summary"))
    text = suite_sets[1]["summary.csv"].decode()
    for row in pd.read_csv(__import__("io").StringIO(text)).to_dict("records"):
        sv.validate(row)
    assert list(csv.reader(text.splitlines()))[0] == [
        "encoder",
        "regime",
        "policy",
        "mean",
        "std",
        "n",
    ]


def test_the_readme_points_to_the_formats():
    readme = (ROOT / "README.md").read_text()
    assert "docs/formats.md" in readme and "DESIGN.md" not in readme
    assert (ROOT / "docs" / "formats.md").is_file()


# --- fuzz: hostile scenario files, window files and option values -----------------------------

HOSTILE = [
    None,
    "",
    " ",
    0,
    -1,
    1.5,
    True,
    [],
    {},
    "x",
    10**30,
    "\ud800",
    [[[[]]]],
    ["a", "b", "c"],
    {"id": "a"},
]


@st.composite
def hostile_json(draw, base: list[dict], required: tuple[str, ...]):
    """A file: a valid list of records, damaged at the JSON level, then maybe at the byte level."""
    recs = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(recs) - 1))
        rec = recs[i]
        kind = draw(st.sampled_from(["drop", "set", "nested", "deep", "dup", "swap", "nonobj"]))
        if not isinstance(rec, dict):
            continue  # an earlier step replaced it
        if kind == "drop":
            rec.pop(draw(st.sampled_from(required)), None)
        elif kind == "set":
            rec[draw(st.sampled_from([*required, "meta", "cost", "seed"]))] = draw(
                st.sampled_from(HOSTILE)
            )
        elif kind == "nested" and isinstance(rec.get("blocks"), list) and rec["blocks"]:
            b = draw(st.integers(0, len(rec["blocks"]) - 1))
            key = draw(st.sampled_from(["id", "text", "kind", "cost"]))
            rec["blocks"][b][key] = draw(st.sampled_from(HOSTILE))
        elif kind == "deep":
            depth = draw(st.sampled_from([50, 101, 150]))
            rec["meta"] = json.loads("[" * depth + "]" * depth)
        elif kind == "dup":
            recs.append(json.loads(json.dumps(rec)))
        elif kind == "swap" and len(recs) > 1:
            recs.reverse()
        elif kind == "nonobj":
            recs[i] = draw(st.sampled_from(HOSTILE))
    text = "".join(json.dumps(r) + "\n" for r in recs)
    data = text.encode("utf-8", "surrogatepass")
    byte_kind = draw(
        st.sampled_from(
            ["none", "none", "insert", "truncate", "bom", "utf16", "empty", "nan", "deep"]
        )
    )
    if byte_kind == "insert":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at:]
    elif byte_kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif byte_kind == "bom":
        data = b"\xef\xbb\xbf" + data
    elif byte_kind == "utf16":
        data = text.encode("utf-16", "surrogatepass")
    elif byte_kind == "empty":
        data = draw(st.sampled_from([b"", b"\n", b"  \n\n"]))
    elif byte_kind == "nan":
        data = data.replace(b"3", b"NaN", 1)
    elif byte_kind == "deep":
        data = data + b"[" * 3000 + b"]" * 3000 + b"\n"
    return data


def _assert_clean(err: str, rc: int, names: list[str]):
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err and "internal error" not in err, err
    for line in err.splitlines():
        if "error" in line:
            assert any(n in line for n in names), line


FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(
    data=hostile_json(
        [SCENARIO, {**SCENARIO, "id": "ext-2"}], ("id", "query", "blocks", "edges", "chain")
    )
)
def test_fuzz_hostile_scenario_files(tmp_path, capfd, data):
    capfd.readouterr()
    path, out = tmp_path / "fuzz.jsonl", tmp_path / "fuzz_out.jsonl"
    path.write_bytes(data)
    out.write_text("PREVIOUS\n")
    rc = run(["evaluate", path, "--out", out])
    _assert_clean(capfd.readouterr().err, rc, ["fuzz.jsonl"])
    if rc == 0:
        rows = [strict_json(x) for x in out.read_text().splitlines()]
        assert len(rows) == len(load_scenarios(path)) and all(
            "full_chain_retained" in r for r in rows
        )
    else:
        assert out.read_text() == "PREVIOUS\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


SPANS = [json.loads(x) for x in WINDOW.read_text().splitlines()]


@FUZZ
@given(
    data=hostile_json(SPANS, ("id", "turn", "role", "text")),
    extra=st.sampled_from(
        [[], ["--budget", "40"], ["--budget", "40", "--manager", "gate"], ["--json"]]
    ),
)
def test_fuzz_hostile_window_files(tmp_path, capfd, data, extra):
    capfd.readouterr()
    path = tmp_path / "wfuzz.jsonl"
    path.write_bytes(data)
    rc = run(["closure", "check", path, *extra])
    _assert_clean(capfd.readouterr().err, rc, ["wfuzz.jsonl"])


VALUES = st.one_of(
    st.sampled_from(
        [
            "0",
            "-0",
            "-1",
            "1",
            "2",
            "0.5",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e308",
            "1e-320",
            "9" * 60,
            "",
            " ",
            "abc",
            "1e9",
            "1_000",
            "0x10",
            "(",
            "[a-",
            ",",
            ",,",
            "(a)(b)",
            "(?P<h>run_[0-9]+)",
            "lexical,",
            "gate,,atomic",
            "3:1",
            "0:2",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**6), 10**12).map(str),
)
RUNNABLE = {  # option -> command prefix (these run for real when the value parses)
    "--tau": "evaluate",
    "--lambda": "evaluate",
    "--delta": "evaluate",
    "--density": "evaluate",  # evaluate's --density; recall's is fuzzed at parse time below
    "--hops": "evaluate",
    "--budget-multiplier": "evaluate",
    "--budget": "check",
    "--floor": "check",
    "--handle-re": "check",
    "--definition-re": "check",
    "--tombstone-re": "check",
}
PARSE_ONLY = {  # option -> (argv prefix, RANGES name or None)
    "--turns": (["closure", "simulate"], "turns"),
    "--capacity": (["closure", "simulate"], "capacity"),
    "--managers": (["closure", "simulate"], None),
    "--K": (["recall", "grid", "--out", "o"], "K"),
    "--boot": (["recall", "grid", "--out", "o"], "boot"),
    "--episodes": (["recall", "grid", "--out", "o"], "episodes"),
    "--seed": (["recall", "grid", "--out", "o"], "seed"),
    "--density": (["recall", "grid", "--out", "o"], "recall_density"),
    "--blocks": (["generate", "role", "--seeds", "0:1", "--out", "o.jsonl"], "blocks"),
    "--encoders": (["suite", "main", "--out", "o"], None),
    "--seeds": (["suite", "main", "--out", "o"], None),
}


@FUZZ
@given(
    option=st.sampled_from([(o, True) for o in RUNNABLE] + [(o, False) for o in PARSE_ONLY]),
    value=VALUES,
)
def test_fuzz_option_values(tmp_path, capfd, monkeypatch, scen_for_fuzz, option, value):
    capfd.readouterr()
    monkeypatch.chdir(tmp_path)
    option, runnable = option
    if runnable:
        out = tmp_path / "ofuzz.jsonl"
        out.write_text("PREVIOUS\n")
        if RUNNABLE[option] == "evaluate":
            argv = ["evaluate", scen_for_fuzz, "--out", out]
        else:
            argv = ["closure", "check", WINDOW]
        rc = run([*argv, f"{option}={value}"])
        err = capfd.readouterr().err
        _assert_clean(err, rc, [option, "ofuzz.jsonl", WINDOW.name])
        if RUNNABLE[option] == "evaluate":
            if rc == 0:
                rows = [strict_json(x) for x in out.read_text().splitlines()]
                assert len(rows) == 2
            else:
                assert out.read_text() == "PREVIOUS\n"
        return
    prefix, knob = PARSE_ONLY[option]
    opt = option
    try:
        args = build_parser().parse_args([str(a) for a in prefix] + [f"{opt}={value}"])
    except SystemExit as e:
        assert e.code == 2
        err = capfd.readouterr().err
        _assert_clean(err, 2, [f"argument {opt}"])
        return
    if knob is not None:
        lo, hi, *_ = RANGES[knob]
        assert lo <= getattr(args, opt.lstrip("-")) <= hi


@pytest.fixture(scope="module")
def scen_for_fuzz(tmp_path_factory):
    path = tmp_path_factory.mktemp("fz") / "s.jsonl"
    return write_lines(path, SCENARIO, {**SCENARIO, "id": "ext-2"})


def test_a_window_that_is_neither_spans_nor_a_log_names_the_file(tmp_path, capsys):
    """Found by the fuzz test: a window holding `0` was taken for an agent log whose error
    named no file."""
    for text in ("0\n", '{"id": "a", "role": "user", "text": "hi"}\n', '{"messages": 5}\n'):
        path = tmp_path / "odd.jsonl"
        path.write_text(text)
        assert run(["closure", "check", path]) == 2
        assert "odd.jsonl" in error_line(capsys.readouterr().err)
