"""The `workbench` command: generate, evaluate (also on external files), suite, errors."""

import csv
import json
import subprocess
import sys

import pytest
from conftest import exported_worked_example

from workbench.cli import main

REQUIRED = {
    "scenario_id",
    "template",
    "regime",
    "seed",
    "policy",
    "encoder",
    "budget_tokens",
    "full_chain_retained",
    "prereq_retention",
    "retained_ids",
    "chain_ranks",
    "top_non_chain_id",
    "displaced",
    "margin",
    "eviction_margin",
}


def test_generate_then_evaluate(tmp_path, capsys):
    scen, out = tmp_path / "s.jsonl", tmp_path / "r.jsonl"
    assert (
        main(["generate", "profile", "--seeds", "3:6", "--blocks", "30", "--out", str(scen)]) == 0
    )
    lines = scen.read_text().splitlines()
    assert [json.loads(x)["seed"] for x in lines] == [3, 4, 5]  # half-open A:B
    assert all(len(json.loads(x)["blocks"]) == 30 for x in lines)
    assert (
        main(
            [
                "evaluate",
                str(scen),
                "--encoder",
                "lexical",
                "--policy",
                "dsgc",
                "--budget-multiplier",
                "1.5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 3 and all(REQUIRED <= set(r) for r in rows)
    for r in rows:
        assert r["policy"] == "dsgc" and r["encoder"] == "lexical"
        assert set(r["chain_ranks"]) == {"c1", "c2", "c3"}
        assert r["full_chain_retained"] == (not r["displaced"])
        assert (r["margin"] is None) == (not r["displaced"])


def test_evaluate_an_exported_file_from_another_implementation(tmp_path):
    """Free ids, no template/regime/seed, extra keys: the contract still holds."""
    ext = exported_worked_example(exporter={"name": "other-impl", "version": 3})
    scen = tmp_path / "ext.jsonl"
    scen.write_text(json.dumps(ext) + "\n")
    res = {}
    for policy in ("similarity", "dsgc"):
        out = tmp_path / f"{policy}.jsonl"
        assert main(["evaluate", str(scen), "--policy", policy, "--out", str(out)]) == 0
        res[policy] = json.loads(out.read_text())
    assert res["similarity"]["displaced"] == ["n2"] and res["similarity"]["template"] == ""
    assert res["dsgc"]["full_chain_retained"] is True and res["dsgc"]["seed"] is None


def test_suite_writes_runs_and_summary(tmp_path):
    assert (
        main(["suite", "main", "--seeds", "0:3", "--encoders", "lexical", "--out", str(tmp_path)])
        == 0
    )
    runs = list(csv.DictReader(open(tmp_path / "runs.csv")))
    summ = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert len(runs) == 4 * 3 * 3  # templates x seeds x policies
    assert {r["policy"] for r in summ} == {"similarity", "no-graph", "dsgc"}
    assert all(set(s) >= {"encoder", "regime", "policy", "mean", "std", "n"} for s in summ)


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "x", "query": "q", "blocks": [{"id": "a", "text": ""}], '
        '"edges": [], "chain": ["a"]}\n'
    )
    out = tmp_path / "never.jsonl"
    assert main(["evaluate", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl: line 1: field 'blocks[0].text'" in err and not out.exists()
    assert main(["suite", "nosuch", "--out", str(tmp_path)]) == 2
    assert "known protocols" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["generate", "role", "--seeds", "5:2", "--out", str(out)])


def test_python_dash_m_entry_point(tmp_path):
    out = tmp_path / "g.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "generate", "all", "--seeds", "0:2", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_text().splitlines()) == 8
