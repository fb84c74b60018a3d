"""Ids by how values flow (`workbench.closure.logs.flow`) and logs read as providers answer them:
which values count, where an id is defined, what a cut leaves dangling, and the shapes providers
accept that a spec page might refuse (reused call ids, merged turns, paused server tools,
compactions, tool-search pairs, null call ids). Fixtures written here, in several voices."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from workbench.agents.bench import judge
from workbench.cli import main as workbench_main
from workbench.closure import logs
from workbench.closure.logs import flow, trim
from workbench.common.io import InputError


def _call(cid, name, args):
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _clinic():
    """A clinic's scheduling assistant: the ids are a patient number the person types, an
    appointment code and a room a result returns, a date, a practitioner's name."""
    return [
        {"role": "system", "content": "You book appointments at the Westbank clinic."},
        {"role": "user", "content": "Hello, I'm patient P-20417-B and need to move my appointment."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("c1", "find_appointments", {"patient": "P-20417-B"})]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(
            {"appointments": [{"code": "APPT9XK2", "with": "Dr Adaeze Nwosu", "room": "R3.14",
                               "date": "2025-04-02"}]})},
        {"role": "assistant", "content": "You have APPT9XK2 on 2 April with Dr Nwosu. When instead?"},
        {"role": "user", "content": "Any morning the week after."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("c2", "free_slots", {"practitioner": "Adaeze Nwosu", "week_of": "2025-04-07"})]},
        {"role": "tool", "tool_call_id": "c2", "content": "slot S-0409-0930 (Wed 09:30), slot S-0410-0800 (Thu 08:00)"},
        {"role": "user", "content": "Thursday please."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("c3", "move", {"appointment": "APPT9XK2", "slot": "S-0410-0800", "patient": "P-20417-B"})]},
        {"role": "tool", "tool_call_id": "c3", "content": "moved; confirmation 55812093 sent by text"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "token, whole, counts",
    [
        ("JG7FMM", False, True), ("AQLBTL", False, True), ("mia_li_3668", False, True),
        ("order-123", False, True), ("2024-05-20", False, True), ("test.txt", False, True),
        ("12390", False, True), ("https://x.example/a", False, True), ("PotatoLand", False, True),
        ("Amelia", True, True), ("Amelia", False, False), ("However", False, False),
        ("JFK", False, False), ("economy", False, False), ("one_way", False, False),
        ("basic-economy", False, False), ("1166", False, False), ("2", False, False),
        ("12.50", False, False),
    ],
)  # fmt: skip
def test_which_values_count_as_ids(token, whole, counts):
    assert flow.is_id(token, whole=whole) is counts


def test_a_call_takes_an_id_from_the_message_where_it_first_appeared():
    log = logs.read(_clinic())
    f = log.flow("")  # value flow alone
    assert dict(f.uses[2]) == {"P-20417-B": 1}  # the person typed it
    assert dict(f.uses[9]) == {"APPT9XK2": 3, "S-0410-0800": 7, "P-20417-B": 1}
    assert f.uses[6] == ()  # a name in free text, a date no earlier message holds: no flow
    assert f.ids == {"P-20417-B", "APPT9XK2", "S-0410-0800"}
    rep = logs.check(log, pattern="")
    assert rep.closed and (rep.ids, rep.uses) == (3, 4)


def test_a_cut_that_drops_a_definition_orphans_the_id_and_a_tombstone_stands_for_it():
    log = logs.read(_clinic())
    kept = [0, 8, 9, 10]  # the move, without the results its ids came from
    rep = logs.check(log, kept, pattern="")
    assert rep.orphan_handles == {"APPT9XK2": (9,), "S-0410-0800": (9,), "P-20417-B": (9,)}
    told = logs.check(log, kept, pattern="", tombstones=("APPT9XK2", "S-0410-0800", "P-20417-B"))
    assert told.closed
    for frac in (0.25, 0.5, 0.75):
        total = sum(logs.approx_tokens(m) for m in log.messages)
        t = trim.trim_log(log, int(total * frac), pattern="")
        assert t.report.closed and t.fits
        assert judge.orphaned_uses(_clinic(), t.output, "openai") == []


def test_a_later_echo_is_no_definition_and_the_first_appearance_is():
    """A value that first appears after the call that passes it is no flow into that call; the
    definition of a value is its first appearance, not a later echo of it."""
    log = logs.read([
        {"role": "user", "content": "Check on the export."},
        {"role": "assistant", "content": None, "tool_calls": [_call("a", "status", {"ref": "EXP-7731"})]},
        {"role": "tool", "tool_call_id": "a", "content": "EXP-7731 is running"},
        {"role": "tool", "tool_call_id": "a2", "content": "EXP-7731 again"},
    ], "openai")  # fmt: skip
    assert log.flow("").uses[1] == ()
    echoed = logs.read(_clinic() + [
        {"role": "assistant", "content": None, "tool_calls": [_call("c4", "status", {"a": "APPT9XK2"})]},
        {"role": "tool", "tool_call_id": "c4", "content": "APPT9XK2 confirmed"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c5", "remind", {"a": "APPT9XK2"})]},
        {"role": "tool", "tool_call_id": "c5", "content": "ok"},
    ])  # fmt: skip
    assert dict(echoed.flow("").uses[13]) == {"APPT9XK2": 3}  # not 12, the echo


def test_the_pattern_is_an_addition_and_empty_turns_it_off():
    msgs = [
        {"role": "user", "content": "Poll it."},
        {"role": "assistant", "content": None, "tool_calls": [_call("p", "poll", {"job": "job_5c81d2"})]},
        {"role": "tool", "tool_call_id": "p", "content": "done"},
    ]  # fmt: skip
    log = logs.read(msgs)
    assert list(logs.check(log).orphan_handles) == ["job_5c81d2"]  # the note's pattern: a guess
    assert logs.check(log, pattern="").closed  # value flow alone: no earlier message, no flow
    assert list(logs.check(log, pattern=r"\bjob_[0-9a-f]+\b").orphan_handles) == ["job_5c81d2"]


def test_a_call_id_used_again_once_answered_is_another_call_with_a_warning():
    msgs = [
        {"role": "user", "content": "Ping the two mirrors."},
        {"role": "assistant", "content": None, "tool_calls": [_call("k", "ping", {"h": "eu"})]},
        {"role": "tool", "tool_call_id": "k", "content": "up"},
        {"role": "assistant", "content": None, "tool_calls": [_call("k", "ping", {"h": "us"})]},
        {"role": "tool", "tool_call_id": "k", "content": "down"},
    ]  # fmt: skip
    log = logs.read(msgs)
    assert [m.calls for m in log.messages][1::2] == [(("k", "ping"),), (("k#2", "ping"),)]
    assert log.messages[4].answers == ("k#2",) and len(log.warnings) == 1
    assert "used again at message 3" in log.warnings[0]
    assert logs.check(log).closed and logs.check(log, [0, 3, 4]).closed
    assert logs.check(log, [0, 1, 3, 4]).orphan_calls == ((1, "k", "ping"),)
    t = trim.trim_log(log, 10**6)
    assert t.output == msgs  # written as read: the ids as the model sent them
    again = [*msgs[:3], msgs[3]]  # used again while it waits: refused
    again[2] = {"role": "user", "content": "hurry"}
    with pytest.raises(logs.LogError, match="used again: message 1 has it, and its call has no"):
        logs.read(again)


def test_anthropic_turns_of_one_role_are_one_turn():
    body = {"messages": [
        {"role": "user", "content": "Hi."},
        {"role": "user", "content": "List the open tickets."},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "list", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "#12, #19"}]},
    ]}  # fmt: skip
    log = logs.read(body, "anthropic")
    assert logs.check(log).closed
    assert trim.trim_log(log, 10**6).output == body  # no turn merged on writing: the API does
    bad = {"messages": [*body["messages"][:4], {"role": "user", "content": "Thanks."},
                        body["messages"][4]]}  # fmt: skip
    with pytest.raises(logs.LogError, match="tool_result after another block"):
        logs.read(bad, "anthropic")


def test_a_server_tool_paused_in_the_last_turn_is_not_open_and_elsewhere_it_is():
    turn = {
        "role": "assistant",
        "content": [
            {
                "type": "server_tool_use",
                "id": "s1",
                "name": "web_search",
                "input": {"query": "tides"},
            }
        ],
    }
    paused = logs.read({"messages": [{"role": "user", "content": "Tides?"}, turn]}, "anthropic")
    assert logs.check(paused).closed and paused.server == {"s1"}
    t = trim.trim_log(paused, 10**6)
    assert len(t.kept) == 2  # sent back as it stands
    later = logs.read({"messages": [{"role": "user", "content": "Tides?"}, turn,
                                    {"role": "user", "content": "Well?"}]}, "anthropic")  # fmt: skip
    assert logs.check(later).orphan_calls == ((1, "s1", "web_search"),)


def test_a_compaction_stands_for_what_it_replaced():
    rs = logs.read([
        {"type": "compaction", "id": "cmp", "encrypted_content": "opaque"},
        {"role": "user", "content": "Is it done?"},
        {"type": "function_call", "call_id": "f", "name": "poll", "arguments": '{"job": "job_9c1d04"}'},
        {"type": "function_call_output", "call_id": "f", "output": "done"},
    ], "responses")  # fmt: skip
    assert rs.compactions == (0,) and logs.check(rs).closed
    assert not logs.check(rs, [1, 2, 3]).closed  # without it, the pattern's id is a guess
    for budget in (1, 30):  # what stands for the prefix is kept as the system prompt is
        assert 0 in trim.trim_log(rs, budget).kept
    an = logs.read({"messages": [
        {"role": "assistant", "content": [{"type": "compaction", "content": "Opened ticket TCK-5520."}]},
        {"role": "user", "content": "Close it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "close", "input": {"t": "TCK-5520"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "closed"}]},
    ]}, "anthropic")  # fmt: skip
    assert dict(an.flow("").uses[2]) == {"TCK-5520": 0}  # the summary defines it


def test_responses_tool_search_pairs_server_calls_and_null_ids():
    items = [
        {"role": "user", "content": "Rate?"},
        {"type": "tool_search_call", "call_id": "ts", "execution": "client", "arguments": {}},
        {"type": "tool_search_output", "call_id": "ts", "execution": "client", "tools": []},
        {"type": "tool_search_call", "call_id": "sv", "execution": "server", "arguments": {}},
        {"type": "tool_search_call", "call_id": None, "execution": "server", "arguments": {}},
        {"type": "tool_search_output", "call_id": None, "execution": "server", "tools": []},
    ]
    log = logs.read(items, "responses")
    assert logs.check(log).closed
    blocks = trim.blocks_of(log)
    assert [list(b) for b in blocks] == [[0], [1, 2], [3], [4, 5]]  # pairs kept together
    assert logs.check(log, [0, 1]).orphan_calls == ((1, "ts", "tool_search_call"),)
    assert trim.trim_log(log, 10**6).output == items


def test_every_unlimited_trim_of_a_real_shaped_log_is_the_log():
    corpus = Path(__file__).resolve().parents[2] / "data/logs/heldout"
    for path in sorted(corpus.glob("*.json")):
        try:
            log = logs.load(path)
        except InputError:  # (the corpus holds logs no provider takes, on purpose)
            continue
        rep = logs.check(log)
        if rep.orphan_results or rep.orphan_calls:
            continue  # what a provider rejects is dropped, whatever the budget
        source = json.loads(path.read_text(encoding="utf-8"))
        assert trim.trim_log(log, 10**7).output == source, path.name


def test_the_cli_says_what_it_followed_and_warns_of_reused_ids(tmp_path, capsys):
    path = tmp_path / "clinic.json"
    path.write_text(json.dumps(_clinic()))
    assert workbench_main(["closure", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ids followed: 3 taken by later calls from earlier messages, 4 uses" in out
    assert workbench_main(["closure", "check", str(path), "--json", "--handle-re", ""]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ids"] == 3 and rep["warnings"] == []


def test_the_judge_is_written_apart_from_the_trimmer():
    """The benchmark's judge imports nothing of `workbench.closure`: it cannot share the code it
    judges; and it finds what a keep-last cut orphans."""
    src = Path(judge.__file__).read_text(encoding="utf-8")
    imported = {
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import | ast.ImportFrom)
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }  # fmt: skip
    assert not {m for m in imported if m and m.startswith("workbench")}
    cut = [_clinic()[0], *_clinic()[8:]]
    lost = judge.orphaned_uses(_clinic(), cut, "openai")
    assert {x for x, _ in lost} == {"APPT9XK2", "S-0410-0800", "P-20417-B"}
    assert judge.chat_problems(cut) == []
    assert judge.chat_problems(_clinic()[3:]) != []  # a result before any call: rejected
