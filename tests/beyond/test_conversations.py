"""Conversations in LoCoMo's format: the reader's repairs, warnings and errors, the scenarios it
makes, the hand-written corpus, and the study."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from workbench.beyond import conversations as C
from workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
DIRTY = ROOT / "tests" / "fixtures" / "conversations" / "dirty.json"
HANDWRITTEN = ROOT / "data" / "conversations" / "handwritten.json"
HELDOUT = ROOT / "data" / "conversations" / "heldout.json"


def _write(tmp_path, samples) -> Path:
    p = tmp_path / "conv.json"
    p.write_text(json.dumps(samples), encoding="utf-8")
    return p


def test_evidence_written_several_ways_is_read_and_said():
    r = C.read_conversations(DIRTY)
    by_id = {sc.id: sc for sc in r.scenarios}
    assert sorted(by_id) == ["ferry/q0", "ferry/q1"]  # q2 has one turn, q3-q5 name no turn
    assert by_id["ferry/q0"].chain == ("D1:3", "D2:1")  # 'D1:3; D2:01': split, zero dropped
    assert by_id["ferry/q1"].chain == ("D1:1", "D2:2")  # 'D1:1 D2:2': split on the space
    assert r.fewer == 1 and r.questions == 6 and r.turns == 6 and r.samples == 1
    said = "\n".join(r.repairs)
    assert "'D1:3; D2:01' read as 2 ids" in said and "'D2:01' read as 'D2:1'" in said
    assert "sample ferry, question 0" in said and "'D1:1 D2:2' read as 2 ids" in said


def test_evidence_naming_no_turn_leaves_the_question_out_with_a_warning():
    r = C.read_conversations(DIRTY)
    assert len(r.warnings) == 3
    w3, w4, w5 = r.warnings
    assert w3.startswith("sample ferry, question 3 ('Where did Lidia stop?')") and "'D:11:26'" in w3
    assert "question 4" in w4 and "'D'" in w4
    assert "question 5" in w5 and "'D2:19'" in w5  # session 2 has three turns
    assert all(w.endswith("question left out") for w in r.warnings)


def test_a_question_scenario_holds_every_turn_and_the_right_graph():
    sc = C.read_conversations(DIRTY, min_evidence=1).scenarios[0]
    assert sc.ids == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert sc.texts[0] == "Lidia: The ferry to Skye was cancelled, so I drove round by the bridge."
    assert sc.texts[2].endswith("[shares a photo: a photo of a bottle on a car seat]")
    assert set(sc.edges) == {("D1:3", "D2:1"), ("D2:1", "D1:3")}
    assert [b.kind for b in sc.blocks].count("chain") == 2
    assert sc.metadata["session_dates"] == {
        "D1": "8:02 am on 5 May, 2024",
        "D2": "6:30 pm on 19 May, 2024",
    }
    dated = C.read_conversations(DIRTY, dates=True).scenarios[0]
    assert (
        dated.texts[3]
        == "[6:30 pm on 19 May, 2024] Osman: Hamid loved the bottle. He says it tastes of peat smoke."
    )
    one = C.read_conversations(DIRTY, min_evidence=1)
    assert [s.id for s in one.scenarios] == ["ferry/q0", "ferry/q1", "ferry/q2"]
    assert one.scenarios[2].edges == ()


@pytest.mark.parametrize(
    "break_it, field",
    [
        (lambda s: s.pop("qa"), "field 'qa'"),
        (
            lambda s: s["conversation"]["session_2"][1].pop("dia_id"),
            "field 'conversation.session_2[1].dia_id'",
        ),
        (lambda s: s["conversation"].update(session_2="none"), "field 'conversation.session_2'"),
        (lambda s: s["qa"][1].pop("question"), "field 'qa[1].question'"),
        (lambda s: s.pop("conversation"), "field 'conversation'"),
    ],
)
def test_a_sample_not_in_the_format_is_an_error_naming_sample_and_field(tmp_path, break_it, field):
    sample = json.loads(DIRTY.read_text())[0]
    bad = copy.deepcopy(sample)
    break_it(bad)
    path = _write(tmp_path, [sample | {"sample_id": "fine"}, bad])
    with pytest.raises(C.ConversationError) as e:
        C.read_conversations(path)
    assert str(path) in str(e.value) and "sample ferry" in str(e.value) and field in str(e.value)


def test_the_cli_writes_scenarios_and_says_what_it_repaired(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["conversations", str(DIRTY), "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "1 conversations, 6 turns, 6 questions: 2 kept" in cap.out
    assert cap.err.count("workbench conversations: warning: sample ferry, question") == 3
    assert "workbench conversations: repaired: sample ferry, question 0" in cap.err
    assert len(out.read_text().splitlines()) == 2


def test_the_cli_refuses_a_file_that_is_not_a_list_of_samples(tmp_path, capsys):
    path = _write(tmp_path, {"conversation": {}})
    assert main(["conversations", str(path), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "list of samples" in err[0]
    assert not (tmp_path / "x.jsonl").exists()


def test_the_handwritten_conversations_are_long_and_their_evidence_reads_clean():
    r = C.read_conversations(HANDWRITTEN)
    samples = json.loads(HANDWRITTEN.read_text(encoding="utf-8"))
    assert len(samples) >= 3
    for s in samples:
        sessions = [
            k for k in s["conversation"] if k.startswith("session_") and not k.endswith("date_time")
        ]
        assert len(sessions) >= 10
        assert sum(len(s["conversation"][k]) for k in sessions) >= 150
    assert r.warnings == [] and r.repairs == []
    held = C.read_conversations(HELDOUT)
    assert held.warnings == [] and held.repairs == [] and len(held.scenarios) == held.questions
    assert len(r.scenarios) >= 60 and all(len(sc.chain) >= 2 for sc in r.scenarios)
    assert len({sc.metadata["conversation"] for sc in r.scenarios}) == len(samples)


def test_the_study_runs_every_arm_and_scores_the_induced_graph_against_the_right_one(tmp_path):
    sc = C.read_conversations(HANDWRITTEN).scenarios[:12]
    runs = C.study_runs(sc, ["lexical"], [4.0, 16.0])
    assert set(runs.arm) == set(C.ARMS)
    assert len(runs) == 12 * 2 * len(C.ARMS)
    table = C.study_table(runs)
    right = table[table.arm == "DSGC, right graph"].set_index("budget_multiplier")
    sim = table[table.arm == "similarity-only"].set_index("budget_multiplier")
    assert (right.kept >= sim.kept).all() and right.lost.sum() == 0  # the upper bound
    won = runs.pivot_table(index=["budget_multiplier", "question"], columns="arm", values="kept")
    for m, r in right.iterrows():
        w = won.loc[m]
        assert r.won == int((w["DSGC, right graph"] > w["similarity-only"]).sum())
    b = C.bar(table, multipliers=(16.0,))
    assert list(b.columns) == [
        "encoder",
        "budget_multiplier",
        "won",
        "lost",
        "share_of_right_gain",
        "met",
    ]
