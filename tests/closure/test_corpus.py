"""The hand-written log corpus (data/logs/heldout, four wire formats, written from the providers'
documented formats, not by the generator): every file gets the exit code its row in expected.csv
says, a rejection is one line naming the message and the field, and every trim of a log that
reads keeps its shape, a conversation and closure."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from workbench.agents.bench import judge
from workbench.cli import main as workbench_main
from workbench.closure import logs
from workbench.closure.logs import trim
from workbench.closure.logs.formats.langchain import serialized as lc_serialized

CORPUS = Path(__file__).resolve().parents[2] / "data/logs/heldout"
ROWS = list(csv.DictReader((CORPUS / "expected.csv").open(encoding="utf-8")))
READABLE = [r for r in ROWS if r["exit"] != "2"]


def test_the_corpus_covers_every_format_and_case():
    files = {p.name for p in CORPUS.glob("*.json")}
    assert files == {r["file"] for r in ROWS}
    for fmt in logs.FORMATS:
        cases = {r["case"] for r in ROWS if r["format"] == fmt}
        assert {"complete", "orphaned call", "orphaned handle"} <= cases, fmt
        assert {"order", "mixed formats"} & cases and cases & {"duplicate", "unknown id"}, fmt
    assert {"empty", "malformed"} <= {r["case"] for r in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_check_gives_each_log_its_exit_code(row, capsys):
    path = CORPUS / row["file"]
    assert workbench_main(["closure", "check", str(path)]) == int(row["exit"])
    out, err = capsys.readouterr()
    if row["exit"] == "2":
        lines = err.strip().splitlines()
        assert len(lines) == 1 and row["file"] in lines[0], lines
        if row["case"] == "unread format":  # refused by name, as a whole
            assert f"{row['format'].replace('langgraph', 'LangGraph')}" in lines[0].replace(
                "Bedrock", "bedrock").replace("Gemini", "gemini"), lines  # fmt: skip
            assert "is not read" in lines[0], lines
        elif row["case"] not in ("empty", "malformed"):
            assert "message " in lines[0] and "field '" in lines[0], lines
    else:
        assert f": {row['format']}," in out  # the format was detected
        assert ("closure: OK" in out) == (row["exit"] == "0")


def _orphans(report) -> set:
    return (
        {("result", c) for _, c in report.orphan_results}
        | {("call", c) for _, c, _ in report.orphan_calls}
        | {("handle", h) for h in report.orphan_handles}
    )


@pytest.mark.parametrize("row", READABLE, ids=[r["file"] for r in READABLE])
@pytest.mark.parametrize("strategy", trim.STRATEGIES)
def test_every_trim_keeps_shape_conversation_and_closure(row, strategy, tmp_path, capsys):
    """A trim keeps the log's shape and a conversation, and leaves nothing dangling that the input
    did not: a handle the input names before any message defines it stays the input's own orphan
    (no trim can close it, and no completed call is dropped for it). A budget at or above the
    log's size gives the log back unchanged, less what a provider rejects (a result whose call is
    gone, a call never answered)."""
    path = CORPUS / row["file"]
    source = json.loads(path.read_text(encoding="utf-8"))
    log = logs.load(path)
    own = logs.check(log)
    total = sum(logs.approx_tokens(m) for m in log.messages)
    systems = [m for m in log.messages if m.role == "system"]
    if log.system is not None:  # a top-level system prompt, counted as one more message
        systems.append(logs.Message(-1, "system", log.system_text()))
    # what every request must carry: results the provider waits for, what stands for a compacted
    # prefix
    carried = [log.messages[i] for i in sorted({*log.carried, *log.compactions})]
    fixed = sum(logs.approx_tokens(m) for m in [*systems, *carried])
    whole = total + (logs.approx_tokens(systems[-1]) if log.system is not None else 0)
    talk = any(m.role != "system" for m in log.messages)
    for frac in (0.3, 0.6, 1.0, 2.0):
        budget = max(int(whole * frac), 1)
        out = tmp_path / f"{frac}.json"
        code = workbench_main(
            ["closure", "trim", str(path), "--max-tokens", str(budget), "--strategy", strategy,
             "--out", str(out)]
        )  # fmt: skip
        said = capsys.readouterr().out
        if "NOTHING FITS" in said:  # only under the log's size; nothing written
            assert code == 1 and not out.exists() and frac < 1, said
            continue
        if "OVER BUDGET" in said:  # only when what every request must carry does not fit
            assert code == 1 and carried and fixed > budget
            continue
        trimmed = json.loads(out.read_text(encoding="utf-8"))
        assert type(trimmed) is type(source)
        if isinstance(source, dict):  # a body keeps every other key
            extra = {"system", "instructions"}
            assert {k: v for k, v in trimmed.items() if k not in extra | {log.key}} == {
                k: v for k, v in source.items() if k not in extra | {log.key}
            }
        if frac >= 1 and not (own.orphan_results or own.orphan_calls):
            assert trimmed == source, (frac, said)  # the whole log fits: unchanged
        back = logs.read(trimmed, log.format)
        assert any(m.role != "system" for m in back.messages) == talk
        added = _orphans(logs.check(back)) - _orphans(own)
        assert not added, (frac, added, said)
        if not lc_serialized(source[0] if isinstance(source, list) and source else {}):
            # the judge written apart from the trimmer: no id a kept call passes lost its
            # defining message without a tombstone
            assert judge.orphaned_uses(source, trimmed, log.format) == [], (frac, said)
        assert {k for k, _ in _orphans(logs.check(back))} <= {"handle"}  # nothing rejected
        assert code == 0, said
