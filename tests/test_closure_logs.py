"""Closure on agent message logs (issue 11): readers, the log check, the closure-safe trimmer, the
side-by-side against langchain-core's real trim_messages, the CLI."""

from __future__ import annotations

import json
import operator
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from workbench.cli import main as workbench_main
from workbench.closure import logs
from workbench.closure.logs import compare, loggen, trim
from workbench.closure.logs.logtypes import Message
from workbench.closure.window.agent import episode_log
from workbench.closure.window.spans import CLOSURE_PATTERNS

P = loggen.REALISTIC_PATTERNS


def _fresh(conv, fmt):
    return json.loads(json.dumps(loggen.render(conv, fmt)))


@pytest.fixture(scope="module")
def convs():
    out = {n: (c, P) for n, c in loggen.HANDWRITTEN.items()}
    out["episode"] = (loggen.from_episode(episode_log(0, 60)), CLOSURE_PATTERNS)
    return out


def test_readers_agree_across_formats(convs):
    for name, (conv, pats) in convs.items():
        seen = []
        for fmt in logs.FORMATS:
            obj = _fresh(conv, fmt)
            log = logs.read(obj)  # detected
            assert log.format == fmt, name
            calls = sorted(c for m in log.messages for c, _ in m.calls)
            answers = sorted(c for m in log.messages for c in m.answers)
            defined = set(log.handles(pats).first_def)
            assert logs.check(log, patterns=pats).closed, (name, fmt)
            seen.append((calls, answers, defined))
        assert all(x == seen[0] for x in seen), name
        assert seen[0][0] and seen[0][2], name  # calls and handle definitions were found


@pytest.mark.parametrize(
    "fmt, mutate, where",
    [
        ("openai", lambda o: o[3].pop("tool_call_id"), "message 3: field 'tool_call_id'"),
        (
            "openai",
            lambda o: o[2]["tool_calls"][0].pop("id"),
            "message 2: field 'tool_calls[0].id'",
        ),
        (
            "anthropic",
            lambda o: o["messages"][1]["content"][0].pop("id"),
            "message 1: field 'content[0].id'",
        ),
        ("anthropic", lambda o: o["messages"][0].update(role="robot"), "message 0: field 'role'"),
        (
            "langchain",
            lambda o: o[3]["data"].pop("tool_call_id"),
            "message 3: field 'data.tool_call_id'",
        ),
    ],
)
def test_bad_log_names_message_and_field(tmp_path, capsys, fmt, mutate, where):
    obj = _fresh(loggen.HANDWRITTEN["sales_export"], fmt)
    mutate(obj)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(logs.LogError, match=where.replace("[", r"\[").replace("]", r"\]")):
        logs.load(path, fmt)
    assert workbench_main(["closure", "check", str(path), "--format", fmt]) == 2
    assert str(path) in capsys.readouterr().err


# --- the round trip, over random logs ------------------------------------------------------------

HANDLES = ["job_7f3a2c", "run_4e19a0", "ORD-20931", "/data/exports/q3.parquet"]


@st.composite
def conversations(draw):
    conv = [("system", "You are an agent.")] if draw(st.booleans()) else []
    conv.append(("user", "Please start."))
    made, k = [], 0
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "create", "use"]))
        k += 1
        if kind == "user":
            conv.append(("user", draw(st.sampled_from(["thanks", "what next?", "go on please"]))))
        elif kind == "assistant":
            conv.append(("assistant", "Working on it, " * draw(st.integers(1, 6))))
        elif kind == "create" or not made:
            h = draw(st.sampled_from(HANDLES))
            key = (
                "path" if h.startswith("/") else draw(st.sampled_from(["id", "job_id", "order_id"]))
            )
            conv.append(("calls", "", [(f"c{k}", "create", {"what": "x"})]))
            conv.append(("results", [(f"c{k}", {key: h, "status": "ok"})]))
            made.append(h)
        else:
            h = draw(st.sampled_from(made))
            n = draw(st.integers(1, 2))
            calls = [(f"c{k}_{j}", "use", {"target": h}) for j in range(n)]
            conv.append(("calls", draw(st.sampled_from(["", "Using it."])), calls))
            echo = draw(st.booleans())  # a status poll's result may echo the handle
            conv.append(
                (
                    "results",
                    [(c, {"job": h, "ok": True} if echo else {"ok": True}) for c, _, _ in calls],
                )
            )
    return conv


def _is_tomb(text) -> bool:
    return isinstance(text, str) and text.startswith('{"evicted_ref"')


def _untomb(raw, fmt):
    """A message with the tombstone lines the trimmer added to a preamble taken out (None for a
    preamble the trimmer created)."""
    data = raw["data"] if fmt == "langchain" else raw
    c = data.get("content")
    if isinstance(c, str) and '"evicted_ref"' in c:
        c = "\n".join(x for x in c.split("\n") if not _is_tomb(x))
    elif isinstance(c, list):
        c = [b for b in c if not (isinstance(b, dict) and _is_tomb(b.get("text")))]
    else:
        return raw
    if not c:
        return None
    data = {**data, "content": c}
    return {**raw, "data": data} if fmt == "langchain" else data


def _units(raws, fmt):
    """What a written log holds, tombstones taken out: its messages, or for Anthropic (whose
    trims merge turns so that they alternate) its content blocks, as a multiset."""
    if fmt != "anthropic":
        return [u for u in (_untomb(r, fmt) for r in raws) if u is not None]
    out = []
    for r in raws:
        c = r["content"]
        for b in [{"type": "text", "text": c}] if isinstance(c, str) else c:
            if not _is_tomb(b.get("text")):
                out.append((r["role"], json.dumps(b, sort_keys=True)))
    return sorted(out)


@given(
    conv=conversations(),
    fmt=st.sampled_from(logs.FORMATS),
    frac=st.floats(0.05, 1.0),
    strategy=st.sampled_from(trim.STRATEGIES),
)
@example(  # found by hypothesis: Anthropic's top-level system alone is over the budget
    conv=[
        ("system", "You are an agent."),
        ("user", "Please start."),
        ("user", "thanks"),
        ("calls", "", [("c2", "create", {"what": "x"})]),
        ("results", [("c2", {"id": "job_7f3a2c", "status": "ok"})]),
        ("user", "thanks"),
        ("user", "thanks"),
        ("calls", "", [("c5", "create", {"what": "x"})]),
        ("results", [("c5", {"id": "job_7f3a2c", "status": "ok"})]),
        ("user", "thanks"),
        ("assistant", "Working on it, Working on it, Working on it, "),
        ("calls", "", [("c8", "create", {"what": "x"})]),
        ("results", [("c8", {"path": "/data/exports/q3.parquet", "status": "ok"})]),
    ],
    fmt="anthropic",
    frac=0.0625,
    strategy="last",
)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_trim_round_trips_and_leaves_no_orphan(conv, fmt, frac, strategy):
    obj = _fresh(conv, fmt)
    log = logs.read(obj, fmt)
    total = sum(logs.approx_tokens(m) for m in log.messages)
    budget = max(int(total * frac), 1)
    t = trim.trim_log(log, budget, patterns=P, strategy=strategy)
    sys_cost = sum(logs.approx_tokens(m) for m in log.messages if m.role == "system")
    if log.system is not None:  # a top-level system, counted as one more message
        sys_cost += logs.approx_tokens(logs.Message(-1, "system", log.system_text()))
    if not t.conversation:  # nothing but the system fits: said (exit 1), and only when the
        human = [m for m in log.messages if m.role == "user"]  # last user turn does not
        assert not t.fits and (not human or sys_cost + logs.approx_tokens(human[-1]) > budget)
        return
    out = json.loads(json.dumps(t.output))
    back = logs.read(out, fmt)  # written in the shape it was read, read again
    assert type(out) is type(obj)
    if isinstance(obj, dict):
        assert set(out) - {"system", "instructions"} == set(obj) - {"system", "instructions"}
    kept_raw = [log.messages[i].raw for i in t.kept]
    assert _units([m.raw for m in back.messages], fmt) == _units(kept_raw, fmt)
    rep = logs.check(back, patterns=P)
    assert rep.closed  # no orphaned call, result or handle: only tombstones
    assert set(rep.tombstoned) == set(t.tombstones)
    assert t.tokens == sum(logs.approx_tokens(m) for m in back.messages) + (
        logs.approx_tokens(logs.Message(-1, "system", back.system_text())) if back.system else 0
    )
    if t.conversation:  # a kept conversation is always within the budget, tombstones included
        assert t.tokens <= budget
    if t.tokens > budget:  # never silent: reported, and only when not even the system fits
        assert not t.fits and sys_cost + 4 * len(t.tombstones) + 8 > budget
    else:
        assert t.fits
    again = trim.trim_log(back, budget, patterns=P, strategy=strategy)
    assert again.report.closed


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_trimmers_running_tombstone_set_is_the_exact_one(conv, fmt, data):
    """The trimmer keeps the would-be tombstones up to date as messages join (so a trim is
    linear); at every step they are exactly what the exact pass over the kept set finds, and a
    kept set with its tombstones checks closed."""
    log = logs.read(_fresh(conv, fmt), fmt)
    h = log.handles(P)
    last, needed = {x: -1 for x in h.pre_defs}, []
    for m in log.messages:
        needed.append([(x, last[x]) for x in h.refs[m.index] if x in last])
        last.update({x: m.index for x in h.defs[m.index]})
    n = len(log.messages)
    order = data.draw(st.permutations(range(n)))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    running = trim._Open(h, needed, lambda x: 1)
    kept: set[int] = set()
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        step = [i for i in order[a:b] if i not in kept]
        exact = trim._dangling(log, h, needed, sorted(kept | set(step)))
        assert running.if_added(step) == (len(exact), len(exact))
        running.add(step)
        kept |= set(step)
        rep = logs.check(log, kept, patterns=P, tombstones=exact)
        assert not rep.orphan_handles


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), frac=st.floats(0.05, 1.0))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_one_handle_asked_is_an_orphan_exactly_where_the_whole_check_says(conv, fmt, frac):
    """`Handles.orphaned_at` (one handle at one message, searched backwards: the guard's test of
    the history's own handles) says what `check` says of every message naming a handle, on a log
    and on a trim of it read back (tombstones in its preamble or its messages)."""
    _asked_as_checked(logs.read(_fresh(conv, fmt), fmt), fmt, frac)


@pytest.mark.parametrize("fmt", logs.FORMATS)
def test_one_handle_asked_minds_the_tombstones_a_trim_wrote(fmt):
    """The same on a long generated log cut to a tenth, whose trims carry tombstones (in the
    preamble, or in a message where the shape has no preamble)."""
    log = logs.read(loggen.render(loggen.long_conversation(60), fmt), fmt)
    assert _asked_as_checked(log, fmt, 0.1) > 0


def _asked_as_checked(log, fmt: str, frac: float) -> int:
    """Assert `orphaned_at` agrees with `check` on `log` and on its trim to `frac` of its tokens,
    read back; the trim's tombstones."""
    total = sum(logs.approx_tokens(m) for m in log.messages)
    cut = trim.trim_log(log, max(int(total * frac), 1), patterns=P)
    back = [logs.read(json.loads(json.dumps(cut.output)), fmt)] if cut.conversation else []
    for one in (log, *back):
        whole = logs.check(one, patterns=P).orphan_handles
        asked = one.handles(P)
        named = {(x, m.index) for m in one.messages for x in one.handles(P).refs[m.index]}
        for x, i in sorted(named, key=lambda p: (p[1], p[0]), reverse=True):  # newest first
            assert asked.orphaned_at(x, i) == (i in whole.get(x, ())), (x, i)
    return len(cut.tombstones)


def test_trim_messages_returns_langchain_objects_too():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import BaseMessage, messages_from_dict

    msgs = messages_from_dict(_fresh(loggen.HANDWRITTEN["training_runs"], "langchain"))
    out = trim.trim_messages(msgs, 150, patterns=P)
    assert out and all(isinstance(m, BaseMessage) for m in out)
    plain = trim.trim_messages(
        _fresh(loggen.HANDWRITTEN["training_runs"], "openai"), 150, patterns=P
    )
    assert isinstance(plain, list) and isinstance(plain[0], dict)


def test_langchain_objects_read_as_their_dumps_do():
    """LangChain objects are read on a short path whose text (content, then each call's
    arguments) is joined on first use; it must be the text the dump's full path reads, for
    dict, string and missing arguments, empty content and parallel calls, in every log."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, ToolMessage, messages_from_dict, messages_to_dict

    extra = [
        AIMessage(
            "checking",
            tool_calls=[
                {"id": "a1", "name": "f", "args": {"job": "job_ef6c", "n": [1, 2]}},
                {"id": "a2", "name": "g", "args": {}},
            ],
        ),
        ToolMessage('{"id": "job_ef6c"}', tool_call_id="a1"),
        ToolMessage("ok", tool_call_id="a2"),
        AIMessage(  # a call whose arguments did not parse is still a call, answered
            "",
            invalid_tool_calls=[
                {
                    "type": "invalid_tool_call",
                    "id": "a3",
                    "name": "f",
                    "args": '{"job": "job_ef6c',
                    "error": "not JSON",
                }
            ],
        ),  # fmt: skip
        ToolMessage("error: bad arguments", tool_call_id="a3", status="error"),
    ]
    logs_ = [extra] + [
        messages_from_dict(_fresh(conv, "langchain")) for conv in loggen.HANDWRITTEN.values()
    ]
    for objs in logs_:
        fast, full = logs.read(objs, "langchain"), logs.read(messages_to_dict(objs), "langchain")
        assert [(m.role, m.text, list(m.calls), list(m.answers)) for m in fast.messages] == [
            (m.role, m.text, list(m.calls), list(m.answers)) for m in full.messages
        ]
    assert "job_ef6c" in logs.read(extra, "langchain").messages[0].text
    assert logs.read(extra, "langchain").messages[3].calls == [("a3", "f")]


def test_langchain_dumpd_entries_read_and_write_as_langchain_does():
    """`langchain_core.load.dumpd` entries (what LangSmith and `dumps` write), as a list or in a
    state body: read as the same messages as their `messages_to_dict` form, counted alike, and a
    trim that needs a tombstone writes it as a `dumpd` SystemMessage langchain-core loads back;
    the body's other keys are kept."""
    pytest.importorskip("langchain_core")
    import warnings

    from langchain_core.load import dumpd, load
    from langchain_core.messages import SystemMessage, messages_from_dict, messages_to_dict

    objs = messages_from_dict(_fresh(loggen.HANDWRITTEN["training_runs"], "langchain"))
    serial = [dumpd(m) for m in objs]
    a, b = logs.read(serial), logs.read(messages_to_dict(objs))
    assert a.format == "langchain"
    assert [(m.role, m.text, list(m.calls), list(m.answers)) for m in a.messages] == [
        (m.role, m.text, list(m.calls), list(m.answers)) for m in b.messages
    ]
    assert [compare.langchain_counter(m) for m in a.messages] == [
        compare.langchain_counter(m) for m in b.messages
    ]
    state = {"messages": serial[1:], "thread_id": "t1"}  # no system message: a tombstone adds one
    t = trim.trim_log(logs.read(state), 150, patterns=P)
    assert t.tombstones and t.report.closed
    assert t.output["thread_id"] == "t1" and set(t.output) == {"messages", "thread_id"}
    first = t.output["messages"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-core's `load` is marked beta
        back = load(first)
    assert isinstance(back, SystemMessage) and "evicted_ref" in back.content
    assert logs.check(logs.read(t.output), patterns=P).closed
    for bad in (["langchain", ["x"]], [], ["langchain", "schema", "Document"]):
        entry = {"lc": 1, "type": "constructor", "id": bad, "kwargs": {"content": "hi"}}
        with pytest.raises(logs.LogError, match="message 0: field 'id'"):
            logs.read([entry], "langchain")


def test_a_responses_continuation_carries_the_stored_calls_answers():
    """A Responses body continuing `previous_response_id` answers calls of the stored response:
    those outputs are no error, and every trim keeps them (the provider waits for them); the
    same items without `previous_response_id` answer no call, and are rejected."""
    body = {
        "model": "m",
        "previous_response_id": "resp_1",
        "input": [
            {"type": "function_call_output", "call_id": "c1", "output": '{"id": "job_aa11"}'},
            {"role": "user", "content": "now poll it"},
            {"type": "function_call", "call_id": "c2", "name": "poll", "arguments": "job_aa11"},
            {"type": "function_call_output", "call_id": "c2", "output": "done"},
        ],
    }
    log = logs.read(body)
    assert log.carried == (0,) and logs.check(log).closed
    for budget in (5, 20, 40, 1000):
        t = trim.trim_log(log, budget)
        assert 0 in t.kept and t.report.closed
    dropped = logs.check(log, [1, 2, 3])  # the stored response's call left unanswered
    assert dropped.orphan_calls == ((0, "c1", "(a call of the stored response)"),)
    # without the stored response, the output answers a call the log does not hold: an orphan
    alone = logs.read({k: v for k, v in body.items() if k != "previous_response_id"})
    assert alone.carried == () and logs.check(alone).orphan_results == ((0, "c1"),)
    for budget in (20, 1000):  # a trim drops it (a provider rejects it), whatever the budget
        assert 0 not in trim.trim_log(alone, budget).kept


def test_a_log_and_its_handles_hold_no_cycle():
    """A log caches its Handles; if they referred back to the log, every log read and dropped
    would wait for the cyclic collector, which then walks all its messages (a fifth of a
    100,000-message trim's time). Dropped, a scanned log is freed at once by reference
    counting, with the collector off."""
    import gc
    import weakref

    log = logs.read(_fresh(loggen.HANDWRITTEN["training_runs"], "openai"))
    log.handles(P).scan_all()
    trim.trim_log(log, 150, patterns=P)
    gone = weakref.ref(log)
    was = gc.isenabled()
    gc.disable()
    try:
        del log
        assert gone() is None
    finally:
        if was:
            gc.enable()


# --- the side-by-side with langchain-core's trim_messages ----------------------------------------


@pytest.fixture(scope="module")
def side():
    pytest.importorskip("langchain_core")
    return compare.side_by_side(compare.test_logs(seeds=range(2), turns=60))


def test_langchain_trim_messages_orphans_handles_and_ours_does_not(side):
    by = compare.orphan_summary(side).to_dict("index")
    ours = side[side.method == "closure-safe (ours)"]
    assert len(ours) == 5 * len(logs.FORMATS) * len(compare.FRACTIONS)
    assert (ours[["orphan_calls", "orphan_results", "orphan_handles"]].to_numpy() == 0).all()
    # a closed window within the budget was found, or the trim said not even the last user turn
    # fits (and kept no conversation)
    assert (ours.closed_fits | ~ours.conversation.astype(bool)).all()
    assert by["langchain (documented)"]["orphan_handles"] > 0
    assert by["langchain (last, include_system)"]["orphan_results"] > 0
    assert by["keep last N"]["runs_with_orphans"] > 0


def test_ours_says_so_when_no_closed_window_fits():
    log = logs.read(_fresh(loggen.HANDWRITTEN["sales_export"], "openai"))
    t = trim.trim_log(log, 10, patterns=P)  # the system message alone is larger
    assert not t.fits and t.over_budget > 0


# --- the command line ----------------------------------------------------------------------------


def test_cli_check_and_trim_a_log(tmp_path, capsys):
    log = _fresh(loggen.HANDWRITTEN["sales_export"], "openai")
    cut = [m for k, m in enumerate(log) if k not in (3, 14)]  # drop two results
    path = tmp_path / "log.json"
    path.write_text(json.dumps(cut))
    args = ["--handle-re", loggen.HANDLE, "--definition-re", loggen.DEFINITION]
    assert workbench_main(["closure", "check", str(path), *args]) == 1
    out = capsys.readouterr().out
    assert "orphaned call: message 2, run_query (id call_q1) has no result" in out
    assert "orphaned handle job_7f3a2c: named by message" in out
    assert workbench_main(["closure", "check", str(path), "--json", *args]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["format"] == "openai" and not rep["closed"]
    assert {o["call_id"] for o in rep["orphan_calls"]} == {"call_q1", "call_e1"}
    full = tmp_path / "full.json"
    full.write_text(json.dumps(log))
    out_path = tmp_path / "trimmed.json"
    assert (
        workbench_main(
            ["closure", "trim", str(full), "--max-tokens", "250", "--out", str(out_path), *args]
        )
        == 0
    )
    trimmed = json.loads(out_path.read_text())
    assert logs.detect(trimmed) == "openai" and len(trimmed) < len(log)
    assert workbench_main(["closure", "check", str(out_path), *args]) == 0


_OPENAI_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    ],
}


@pytest.mark.parametrize(
    "log,line",
    [
        ([], "field 'messages': the log holds no messages"),
        ({"model": "m", "messages": []}, "field 'messages': the log holds no messages"),
        (
            [
                {"role": "user", "content": "go"},
                {**_OPENAI_CALL, "tool_calls": _OPENAI_CALL["tool_calls"] * 2},
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
            ],
            "message 1: field 'tool_calls[1].id': call id 'call_1' (a) is used again",
        ),
        (
            {"messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "again"},
                ]},
            ]},
            "message 2: field 'content[1].tool_use_id': a second result for call id 't1'",
        ),
        (
            [
                {"role": "user", "content": "go"},
                _OPENAI_CALL,
                {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "b", "input": {}}]},
            ],
            "message 3: field 'content[0].type': written in the anthropic format in a log read as openai",
        ),
    ],
)  # fmt: skip
def test_logs_that_are_no_valid_request_are_rejected_in_one_line(tmp_path, capsys, log, line):
    """Empty logs, a call id used twice, a call answered twice and mixed formats: exit 2 and one
    line naming the message and the field (they used to check closed)."""
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    assert workbench_main(["closure", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and line in err[0], err


def test_a_broken_json_log_is_reported_at_its_line_without_format(tmp_path, capsys):
    """A truncated log or a Latin-1 byte, no --format: the JSON reader's own line (not a
    span-window error at line 1), for check and for trim alike."""
    src = (Path(__file__).resolve().parents[1] / "data/logs/training_runs.openai.json").read_text()
    cases = {
        "trunc.json": (src[:500].encode(), "invalid JSON (Unterminated string starting at line"),
        "latin.json": ('[{"role": "user", "content": "café"}]'.encode("latin-1"), "byte 0xe9"),
    }
    for name, (data, want) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        for cmd in (
            ["check", str(path)],
            ["trim", str(path), "--max-tokens", "50", "--out", str(tmp_path / "o.json")],
        ):
            assert workbench_main(["closure", *cmd]) == 2
            err = capsys.readouterr().err
            assert want in err and "at at" not in err and "span" not in err, err


def test_a_trim_keeps_the_last_user_turn_or_says_nothing_fits(tmp_path, capsys):
    """An Anthropic log of one user message and then a tool loop: below its full size the trim
    keeps the user turn first (a valid request starts on it and alternates), and when not even
    that fits it exits 1 saying so (it used to write "messages": [] and exit 0)."""

    def call(n):  # submit, then poll the job the submit returned
        args = {"job": "job_7f3a2c"} if n else {"what": "churn"}
        use = {"type": "tool_use", "id": f"t{n}", "name": "poll" if n else "submit", "input": args}
        return {"role": "assistant", "content": [use]}

    def res(n, body):
        out = {"type": "tool_result", "tool_use_id": f"t{n}", "content": json.dumps(body)}
        return {"role": "user", "content": [out]}

    body = {"model": "m", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Please submit the churn job and tell me when it is done."},
        call(0), res(0, {"id": "job_7f3a2c", "status": "queued"}),
        call(1), res(1, {"status": "running"}), call(2), res(2, {"status": "done"}),
    ]}  # fmt: skip
    path, out = tmp_path / "log.json", tmp_path / "out.json"
    path.write_text(json.dumps(body))
    full = trim.trim_log(logs.load(path), 10**6).tokens
    for budget in (full - 20, full // 2, 25):
        assert (
            workbench_main(
                ["closure", "trim", str(path), "--max-tokens", str(budget), "--out", str(out)]
            )
            == 0
        )
        got = json.loads(out.read_text())
        roles = [m["role"] for m in got["messages"]]
        assert roles and roles[0] == "user" and got["model"] == "m"
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False))  # alternates
    capsys.readouterr()
    assert (
        workbench_main(["closure", "trim", str(path), "--max-tokens", "8", "--out", str(out)]) == 1
    )
    assert "NOTHING FITS" in capsys.readouterr().out


def test_an_openai_request_body_comes_back_a_body(tmp_path):
    """A trimmed OpenAI request body keeps every other key (model, tools, tool_choice, ...) as
    it was; only its messages are trimmed (it came back as a bare message list)."""
    body = {
        "model": "gpt-x",
        "tools": [{"type": "function", "function": {"name": "submit_job", "parameters": {}}}],
        "tool_choice": "auto",
        "messages": [
            {"role": "system", "content": "You run jobs."},
            {"role": "user", "content": "Submit the churn job."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "submit_job", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"id": "job_7f3a2c"}'},
            {"role": "user", "content": "Thanks. " + "More words. " * 30},
        ],
    }  # fmt: skip
    for budget in (10**6, 60):
        out = trim.trim_messages(body, budget)
        assert isinstance(out, dict) and {k: v for k, v in out.items() if k != "messages"} == {
            k: v for k, v in body.items() if k != "messages"
        }
        assert out["messages"] and out["messages"][0]["role"] == "system"


def _words(m) -> int:
    """A counter unlike the default: two tokens a word, five a message."""
    return 2 * len(m.text.split()) + 5


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), frac=st.floats(0.05, 1.0))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_custom_counter_prices_messages_and_tombstones(conv, fmt, frac):
    """The trim's counter prices everything it writes, tombstones too: the output's tokens by
    that counter are what the trim reports, and within the budget whenever a conversation is
    kept (tombstones used to be priced in characters whatever the counter)."""
    log = logs.read(_fresh(conv, fmt), fmt)
    budget = max(int(sum(_words(m) for m in log.messages) * frac), 1)
    t = trim.trim_log(log, budget, patterns=P, counter=_words)
    if not t.conversation:
        return
    back = logs.read(json.loads(json.dumps(t.output)), fmt)
    top = _words(logs.Message(-1, "system", back.system_text())) if back.system else 0
    assert t.tokens == sum(_words(m) for m in back.messages) + top
    assert t.tokens <= budget and logs.check(back, patterns=P).closed


def test_no_tombstone_when_nothing_was_evicted_and_a_later_echo_defines_nothing():
    """A handle that comes back under another key or in prose is defined there (no orphan, no
    tombstone at full budget); a poll whose result echoes the id does not define it for the
    poll: when the submit's result is cut, the handle gets a tombstone."""
    log = [
        {"role": "user", "content": "Retrain the model."},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "submit", {"what": "retrain"})]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"run": "run_5c81d2", "state": "queued"}'},
        {"role": "assistant", "content": None, "tool_calls": [_call("c2", "status", {"run": "run_5c81d2"})]},
        {"role": "tool", "tool_call_id": "c2", "content": "Run run_5c81d2 is at epoch 3."},
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c3", "status", {"run": "run_5c81d2"})]},
        {"role": "tool", "tool_call_id": "c3", "content": "Run run_5c81d2 finished."},
    ]  # fmt: skip
    full = logs.read(log)
    assert logs.check(full).closed
    assert trim.trim_log(full, 10**6).tombstones == ()
    cut = logs.read([log[0], *log[5:]])  # the runs's definitions are gone; only echoes remain
    rep = logs.check(cut)
    assert list(rep.orphan_handles) == ["run_5c81d2"] and rep.orphan_handles["run_5c81d2"] == (2,)
    t = trim.trim_log(full, 60, strategy="last")
    assert t.report.closed and (t.tombstones == ("run_5c81d2",) or 2 in t.kept or 4 in t.kept)


def _call(cid, name, args):
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _tomb_conv():
    """A submit whose result defines a job, filler, then a poll of the job: a tight trim keeps
    the poll and must tombstone the job (its definition does not fit)."""
    return [
        ("system", "You run jobs."),
        ("user", "Submit the churn job."),
        ("calls", "", [("c1", "submit", {"what": "churn"})]),
        ("results", [("c1", {"job_id": "job_7f3a2c", "state": "queued " * 30})]),
        ("assistant", "Queued. " * 20),
        ("user", "Is it done?"),
        ("calls", "", [("c2", "poll", {"job_id": "job_7f3a2c"})]),
        ("results", [("c2", {"state": "done"})]),
    ]


@pytest.mark.parametrize("fmt", ["anthropic-list", "responses-body", "openai", "langchain"])
def test_a_tombstone_goes_where_the_shape_allows(fmt):
    """The tombstone lands in the preamble each shape has: an Anthropic message list (no system
    key) carries it in its first user turn, after any tool_result; a Responses body in its
    instructions; the shape read comes back and checks closed."""
    conv = _tomb_conv()
    if fmt == "anthropic-list":
        obj = _fresh(conv[1:], "anthropic")["messages"]  # the bare list, no system
    elif fmt == "responses-body":
        obj = {
            "model": "m",
            "instructions": "You run jobs.",
            "input": _fresh(conv[1:], "responses"),
        }
    else:
        obj = _fresh(conv, fmt)
    log = logs.read(obj)
    budget = sum(logs.approx_tokens(m) for m in log.messages[-3:]) + 40
    t = trim.trim_log(log, budget)
    assert t.tombstones == ("job_7f3a2c",) and t.fits, t
    out = json.loads(json.dumps(t.output))
    assert type(out) is type(obj)
    back = logs.read(out, log.format)
    assert logs.check(back).closed and logs.check(back).tombstoned == ("job_7f3a2c",)
    if fmt == "anthropic-list":
        first = out[0]
        assert first["role"] == "user" and any(
            '"evicted_ref"' in b.get("text", "") for b in first["content"]
        )
    if fmt == "responses-body":
        assert '"evicted_ref": "job_7f3a2c"' in out["instructions"] and out["model"] == "m"


def test_a_responses_body_with_a_string_input_keeps_it_a_string():
    """The Responses API takes `input` as a string too: a trim that keeps it writes it back as
    the string it was (it came back a one-message list)."""
    body = {"model": "m", "instructions": "Be brief.", "input": "What is 2 + 2?"}
    t = trim.trim_log(logs.read(body), 1000)
    assert t.output == body and t.fits


def test_the_langchain_counter_prices_a_message_as_langchain_counts_it():
    """The counter the side-by-side shares with trim_messages: a LangChain object, its
    messages_to_dict entry and a tombstone preamble (a system message with no raw) each cost
    what count_tokens_approximately says of the LangChain message they stand for."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, SystemMessage, ToolMessage, messages_to_dict
    from langchain_core.messages.utils import count_tokens_approximately

    objs = [
        AIMessage("", tool_calls=[{"id": "c1", "name": "get_job", "args": {"job": "job_ef6c"}}]),
        ToolMessage('{"id": "job_ef6c", "status": "done"}', tool_call_id="c1"),
    ]
    log = logs.read(objs, "langchain")
    dumped = logs.read(messages_to_dict(objs), "langchain")
    for m, d, o in zip(log.messages, dumped.messages, objs, strict=True):
        want = count_tokens_approximately([o])
        assert compare.langchain_counter(m) == compare.langchain_counter(d) == want
    note = Message(0, "system", "evicted: job_ef6c (recoverable)", (), (), None)
    assert compare.langchain_counter(note) == count_tokens_approximately([SystemMessage(note.text)])
    with pytest.raises(TypeError):
        compare.langchain_counter(Message(0, "user", "hi", (), (), None))


# --- issue 33's readers: orphans, roles, refusals by name, server tools, reasoning, a person ---


HELD = Path(__file__).resolve().parents[1] / "data/logs/heldout"


def test_a_front_cut_is_an_orphan_not_an_invalid_log():
    log = logs.load(HELD / "oa_front_cut.json")
    rep = logs.check(log)
    assert [c for _, c in rep.orphan_results] == ["call_parcel_7", "call_parcel_8"]
    assert "orphaned results" not in rep.lines()[0] and "results=2" in rep.lines()[0]
    for budget in (30, 60, 10**6):  # never kept: a provider rejects a result with no call
        t = trim.trim_log(log, budget)
        assert not {1, 2} & set(t.kept) and t.report.closed


def test_the_person_writing_into_a_tool_result_turn_is_kept_at_every_budget():
    body = json.loads((HELD / "an_human_in_tool_turn.json").read_text())
    older = [{"role": "user", "content": f"Earlier question {k} about the weekend rota."} if k % 2 == 0
             else {"role": "assistant", "content": f"Earlier answer {k}: Sam covers Saturday."}
             for k in range(8)]  # fmt: skip
    body["messages"] = older + body["messages"]
    log = logs.read(body)
    n = len(log.messages)
    assert log.messages[n - 1].role == "user" and log.messages[n - 1].answers == ["toolu_01Bolts"]
    need = sum(logs.approx_tokens(m) for m in log.messages[n - 3 :])
    for strategy in trim.STRATEGIES:
        for budget in range(need, need + 40, 7):
            t = trim.trim_log(log, budget, strategy=strategy)
            assert {n - 3, n - 2, n - 1} <= set(t.kept), (strategy, budget)
            assert t.report.closed and t.fits


def test_anthropic_server_tools_pair_in_their_turn_and_define_handles():
    ok = logs.load(HELD / "an_mcp_defines.json")
    assert ok.messages[1].calls[0][0] == "mcptoolu_01Lift" and logs.check(ok).closed
    bad = logs.load(HELD / "an_mcp_unanswered.json")
    assert logs.check(bad).orphan_calls == ((1, "mcptoolu_01Stair", "create_ticket"),)
    assert logs.detect(json.loads((HELD / "an_server_only.json").read_text())) == "anthropic"
    with pytest.raises(logs.LogError, match="belongs in the assistant turn"):
        logs.read([{"role": "user", "content": [
            {"type": "mcp_tool_result", "tool_use_id": "x", "content": "hi"}]}], "anthropic")  # fmt: skip


@pytest.mark.parametrize(
    "name, said",
    [
        ("bedrock_converse", "Bedrock Converse"),
        ("gemini_contents", "Gemini"),
        ("langgraph_checkpoint", "LangGraph checkpoint"),
    ],  # fmt: skip
)
def test_unread_shapes_are_refused_by_name_whatever_format_is_asked(name, said):
    obj = json.loads((HELD / f"{name}.json").read_text())
    for fmt in (None, "anthropic", "openai"):
        with pytest.raises(logs.LogError, match=f"{said}.* is not read"):
            logs.read(obj, fmt)
    msgs = obj.get("messages")  # a Bedrock message list without its body: its blocks say so
    if msgs:
        with pytest.raises(logs.LogError, match="Bedrock"):
            logs.read(msgs)


def test_chat_roles_and_calls_in_additional_kwargs_read_as_langchain_does():
    critic = logs.load(HELD / "lc_chat_critic.json")
    assert critic.messages[3].role == "chat" and logs.check(critic).closed
    old = logs.load(HELD / "lc_kwargs_calls.json")
    assert old.messages[1].calls == [("call_shelf1", "find_item")] and logs.check(old).closed


def test_a_reasoning_item_without_its_item_is_refused_naming_it():
    with pytest.raises(logs.LogError, match="reasoning item must be followed") as e:
        logs.load(HELD / "rs_reasoning_dangling.json")
    assert e.value.index == 1
    fine = [{"role": "user", "content": "q"}, {"type": "reasoning", "id": "rs1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}]  # fmt: skip
    assert logs.check(logs.read(fine)).closed


def test_a_budget_above_the_log_gives_it_back_unchanged():
    src = json.loads((HELD / "oa_done_side_effects.json").read_text())
    log = logs.read(src)
    t = trim.trim_log(log, 10**6)
    assert t.output == src and t.tombstones == () and t.fits
    assert not t.report.closed and t.closed  # the echoed ids stay the input's own orphans


def test_openai_short_path_reads_as_the_full_path():
    """OpenAI chat messages of the usual shapes are read on a short path; every message of every
    stored OpenAI log and of the odd shapes below must read (or fail) exactly as the full path,
    `_openai_message`, reads it."""
    from workbench.closure.logs import readers
    from workbench.closure.logs.detect import detect

    class Text(str):
        pass

    odd = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": None},
        {"role": "user", "content": [{"type": "text", "text": "see job_ef6c"}]},
        {"role": "user", "content": Text("a str subclass")},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}},
            {"id": "c2", "type": "custom", "custom": {"name": "g", "input": "job_ef6c"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "done"},
        {"role": "assistant", "content": "x", "function_call": {"name": "h", "arguments": "{}"}},
        {"role": "function", "name": "h", "content": "42"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c3", "function": {"name": "f", "arguments": None}}]},
        {"role": "tool", "tool_call_id": "c3", "content": ""},
    ]  # fmt: skip
    bad = [
        {"role": ["user"], "content": "x"},
        {"role": "critic", "content": "x"},
        {"role": "tool", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": 7, "function": {"name": "f"}}]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
        {"role": "user", "content": 3},
        "not an object",
    ]  # fmt: skip
    stored = []
    for path in sorted(HELD.parent.rglob("*.json")):  # every stored log, the held-out ones too
        try:  # the corpora hold logs that are no valid JSON or UTF-8 on purpose
            obj = json.loads(path.read_text(encoding="utf-8"))
            if detect(obj) == "openai":
                stored.append(obj["messages"] if isinstance(obj, dict) else obj)
        except (ValueError, logs.LogError):
            continue
    assert len(stored) >= 5
    seen = 0
    for msgs in [odd, *stored]:
        legacy = readers._Legacy()
        full = [readers._openai_message(i, m, legacy) for i, m in enumerate(msgs)]
        short = readers.read_openai(msgs).messages
        assert [(m.role, m.text, list(m.calls), list(m.answers)) for m in short] == [
            (m.role, m.text, list(m.calls), list(m.answers)) for m in full
        ]
        seen += len(msgs)
    for m in bad:
        with pytest.raises(logs.LogError) as full_err:
            readers._openai_message(0, m, readers._Legacy())
        with pytest.raises(logs.LogError) as short_err:
            readers.read_openai([m])
        assert str(short_err.value) == str(full_err.value)
    assert seen > 100


_BLOCK_TYPES = ["text", "input_text", "output_text", "tool_use", "tool_result", "thinking",
                "mcp_tool_result", "image", None]  # fmt: skip
_blocks = st.lists(
    st.one_of(st.text(max_size=3), st.builds(lambda t: {} if t is None else {"type": t},
                                             st.sampled_from(_BLOCK_TYPES))),
    max_size=3,
)  # fmt: skip
_items = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            [
                "message",
                "function_call",
                "function_call_output",
                "reasoning",
                "item_reference",
                "web_search_call",
                "constructor",
                "text",
                3,
            ]
        ),
        "role": st.sampled_from(["user", "assistant", "tool", "function", "developer"]),
        "content": st.one_of(st.none(), st.text(max_size=3), _blocks),
        "tool_calls": st.just([]),
        "tool_call_id": st.just("c"),
        "function_call": st.just({}),
        "data": st.just({}),
        "lc": st.just(1),
    },
)


@settings(max_examples=400, deadline=None)
@given(_items, st.sampled_from(["responses", "openai"]))
def test_the_mixing_check_s_short_path_never_passes_what_the_full_check_refuses(m, fmt):
    """`no_mixing` skips an item its format's short test calls plain: the full test (`dialect`)
    must read every such item as that format's or anyone's."""
    from workbench.closure.logs.detect import _PLAIN, dialect

    if _PLAIN[fmt](m):
        d = dialect(m)
        assert d is None or d[0] == fmt, (m, d)


@pytest.mark.parametrize("fmt", ["openai", "responses", "langchain"])
def test_a_relevance_trim_scanned_as_it_walks_answers_as_one_scanned_whole(fmt):
    # below a quarter of the log's tokens the relevance walk scans only the blocks it tries; at
    # or above, every text in one pass: the answer must not depend on which
    obj = loggen.render(loggen.long_conversation(400), fmt)
    total = sum(logs.approx_tokens(m) for m in logs.read(obj, fmt).messages)
    for frac in (0.03, 0.1, 0.2, 0.24, 0.3, 0.6):
        budget = int(total * frac)
        walked = trim.trim_log(logs.read(obj, fmt), budget, strategy="relevance")
        whole = logs.read(obj, fmt)
        whole.handles(trim.CLOSURE_PATTERNS).scan_all()  # scanned before the trim asks
        once = trim.trim_log(whole, budget, strategy="relevance")
        assert (walked.kept, walked.tombstones, walked.tokens) == (
            once.kept,
            once.tombstones,
            once.tokens,
        ), frac
        assert walked.fits and walked.closed


def test_the_relevance_ranking_keeps_a_bounded_memo_with_the_shared_encoders_bits(monkeypatch):
    from workbench.common.encoders import CachedEncoder, get_encoder

    small = CachedEncoder(trim.RANKER.base)
    small.hold(50)
    monkeypatch.setattr(trim, "RANKER", small)
    shared = get_encoder("lexical")
    before = len(shared._memo)
    conv = loggen.long_conversation(300)
    log = logs.read(loggen.render(conv, "openai"), "openai")
    budget = sum(logs.approx_tokens(m) for m in log.messages) // 5
    first = trim.trim_log(log, budget, strategy="relevance")
    assert 0 < len(small._memo) <= 50  # at most what it holds, however many blocks it ranked
    assert len(shared._memo) == before  # the process-wide memo does not grow by a trim
    again = trim.trim_log(logs.read(loggen.render(conv, "openai"), "openai"), budget,
                          strategy="relevance")  # fmt: skip
    assert (again.kept, again.tombstones) == (first.kept, first.tombstones)
    texts = [m.text for m in log.messages[:200]]
    assert (small(texts) == shared.base.encode(texts)).all()  # the same bits, memo or not


def test_block_prices_are_exact_sums_whatever_the_counter_returns():
    blocks = [range(0, 2), range(2, 3), range(3, 6)]
    block_of = [0, 0, 1, 2, 2, 2]
    assert trim.block_costs([3, 4, 5, 1, 1, 2], block_of, blocks) == [7, 5, 4]
    assert trim.block_costs([0.5, 0.75, 0.25, 0.5, 0.5, 0.125], block_of, blocks) == [
        1.25,
        0.25,
        1.125,
    ]  # summed, not truncated to integers
    big = 10**15 + 1  # integers stay exact up to the sums a log can reach
    assert trim.block_costs([big, 1, 0, 0, 0, 0], block_of, blocks)[0] == big + 1


def _list_form(conv, fmt):
    obj = _fresh(conv, fmt)
    return obj["messages"] if isinstance(obj, dict) else obj  # Anthropic's list, no system


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_part_of_a_log_reads_as_reading_its_items_does(conv, fmt, data):
    """`read_part` (the guard's reading of a request whose items are all the history's) gives what
    `read` gives for those items, in any order, repeated or not: the same messages, the same
    error where the items are no valid request, the same handles (scanned before, in part, or
    not at all) and the same closure report."""
    items = _list_form(conv, fmt)
    log = logs.read(items, fmt)
    n = len(log.messages)
    scanned = data.draw(st.sampled_from(["none", "some", "all"]))
    if scanned == "all":
        log.handles(P).scan_all()
    elif scanned == "some":
        for i in data.draw(st.lists(st.integers(0, n - 1), max_size=n)):
            log.handles(P).at(i)
    kind = data.draw(st.sampled_from(["whole", "front cut", "ordered", "repeats in order", "any"]))
    if kind == "whole":
        pos = list(range(n))
    elif kind == "front cut":  # what a trimmer leaves: the newest messages
        pos = list(range(data.draw(st.integers(0, n - 1)), n))
    elif kind == "ordered":
        pos = sorted(data.draw(st.sets(st.integers(0, n - 1), max_size=n)))
    elif kind == "repeats in order":  # a message twice in a row: its call id used twice
        pos = sorted(data.draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=n + 2)))
    else:
        pos = data.draw(st.lists(st.integers(0, n - 1), max_size=n + 2))
    raw = [log.messages[s].raw for s in pos]
    try:
        want = logs.read(raw, fmt)
    except logs.LogError as e:
        event("no valid request")
        with pytest.raises(logs.LogError) as got:
            logs.read_part(log, pos)
        assert str(got.value) == str(e)
        return
    event(f"read: {kind}, scanned {scanned}")
    part = logs.read_part(log, pos)
    assert part.format == want.format and part.system is None and part.body is None
    assert [(m.index, m.role, m.text, m.calls, m.answers) for m in part.messages] == [
        (m.index, m.role, m.text, m.calls, m.answers) for m in want.messages
    ]
    assert all(a.raw is b.raw for a, b in zip(part.messages, want.messages, strict=True))
    assert logs.check(part, patterns=P).to_dict() == logs.check(want, patterns=P).to_dict()
    hp, hw = part.handles(P), want.handles(P)
    assert [hp.at(i) for i in range(len(pos))] == [hw.at(i) for i in range(len(pos))]
    for x in {x for i in range(len(pos)) for x in hw.at(i)[0]}:
        assert [hp.definer_before(x, i) for i in range(len(pos) + 1)] == [
            hw.definer_before(x, i) for i in range(len(pos) + 1)
        ]


def test_a_part_is_read_again_where_reading_alone_could_differ():
    # a legacy function_call pairs with the next function result by order: a part is read again
    legacy = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "done"},
    ]
    assert logs.read_part(logs.read(legacy, "openai"), [0, 2]) is None
    with pytest.raises(logs.LogError, match="no function_call before it"):
        logs.read(legacy[::2], "openai")
    body = {
        "system": "be brief",
        "messages": _list_form(loggen.HANDWRITTEN["support_ticket"], "anthropic"),
    }
    assert logs.read_part(logs.read(body, "anthropic"), [0]) is None  # a body, its system


def _same_reading(got, want, by_value=False):
    """Two readings of one list: the same messages (each read from the same item or, by value,
    from an equal one), handles and closure report."""
    assert [(m.index, m.role, m.text, m.calls, m.answers) for m in got.messages] == [
        (m.index, m.role, m.text, m.calls, m.answers) for m in want.messages
    ]
    same = operator.eq if by_value else operator.is_
    assert all(same(a.raw, b.raw) for a, b in zip(got.messages, want.messages, strict=True))
    assert logs.check(got, patterns=P).to_dict() == logs.check(want, patterns=P).to_dict()
    hg, hw = got.handles(P), want.handles(P)
    n = len(want.messages)
    assert [hg.at(i) for i in range(n)] == [hw.at(i) for i in range(n)]
    for x in {x for i in range(n) for x in hw.at(i)[0]}:
        assert [hg.definer_before(x, i) for i in range(n + 1)] == [
            hw.definer_before(x, i) for i in range(n + 1)
        ]
        assert [hg.orphaned_at(x, i) for i in range(n)] == [hw.orphaned_at(x, i) for i in range(n)]


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), data=st.data())
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_history_read_as_it_grows_reads_as_reading_it_whole(conv, fmt, data):
    """A guard's `Reading` (the conversation's history kept between calls, only the messages after
    the last history read) gives what reading each history whole gives: the same messages,
    handles (asked of in part, indexed or scanned in full between calls) and report, and None
    where the whole is no valid request (a second result, an order rule the new messages
    break)."""
    from workbench.agents.history import Codec, Reading

    if data.draw(st.booleans()):  # a tombstone a person pasted, somewhere, and a call using it
        k = data.draw(st.integers(1, len(conv)))
        use = [("calls", "", [("c_t", "use", {"target": "job_7e57ab"})]),
               ("results", [("c_t", {"ok": True})])]  # fmt: skip
        conv = [*conv[:k], ("user", json.dumps({"evicted_ref": "job_7e57ab"})), *conv[k:], *use]
    items = _list_form(conv, fmt)
    # by value (the Responses adapter's): each history new dicts, equal to those read before
    by_value = data.draw(st.booleans())
    codec = Codec(fmt, key=id, stub=None, by_value=by_value)
    if data.draw(st.integers(0, 3)) == 0:  # a result answered twice, somewhere
        k = data.draw(st.integers(0, len(items)))
        items = [*items[:k], *[it for it in items if _answers(it, fmt)][:1], *items[k:]]
    n = len(items)
    cuts = sorted(data.draw(st.lists(st.integers(1, n), min_size=1, max_size=5)))
    reading = Reading()
    for c in [*cuts, n]:
        full = json.loads(json.dumps(items[:c])) if by_value else items[:c]
        got = reading(full, codec)
        try:
            want = logs.read(full, fmt)
        except logs.LogError:
            event("no valid request")
            assert got is None
            continue
        how = data.draw(st.sampled_from(["whole", "asked", "indexed", "nothing"]))
        event(f"read, {how}")
        assert reading.prices(got) == [logs.approx_tokens(m) for m in want.messages]
        if how == "whole" or c == n:
            _same_reading(got, want, by_value)  # (which scans every message)
            continue
        hg, hw = got.handles(P), want.handles(P)
        if how == "indexed":
            hg.index_definitions()
        if how != "nothing":  # one handle at a time, as the guard asks: no scan of the whole
            for i in data.draw(st.lists(st.integers(max(c - 6, 0), c - 1), max_size=6)):
                assert hg.at(i) == hw.at(i)
                for x in hw.at(i)[0]:
                    assert hg.definer_before(x, i) == hw.definer_before(x, i)
                    assert hg.orphaned_at(x, i) == hw.orphaned_at(x, i)


def _answers(it, fmt) -> bool:
    if fmt == "anthropic":
        return isinstance(it.get("content"), list) and any(
            b.get("type") == "tool_result" for b in it["content"]
        )
    if fmt == "langchain":
        return it.get("type") == "tool"
    if fmt == "responses":
        return it.get("type", "").endswith("_call_output")
    return it.get("role") == "tool"


def test_a_history_changed_before_its_end_is_read_again():
    """A history that does not start with the one read last (an edit before its end, a message
    whose content is another object now) is read whole again, not grown."""
    from langchain_core.messages import messages_from_dict

    from workbench.agents.for_langchain import CODEC
    from workbench.agents.history import Reading

    msgs = messages_from_dict(loggen.to_langchain(loggen.HANDWRITTEN["support_ticket"]))
    reading = Reading()
    first = reading(msgs[:4], CODEC)
    grown = reading(msgs, CODEC)
    assert len(first.messages) == 4 and len(grown.messages) == len(msgs)  # a new log, grown:
    assert all(a is b for a, b in zip(first.messages, grown.messages[:4], strict=True))  # not read
    msgs[2].content = "the customer wrote again"  # in place, a new content object
    again = reading(msgs, CODEC)
    assert again is not first and again.messages[2].text.startswith("the customer wrote again")
    _same_reading(again, logs.read(msgs, "langchain"))
    cut = msgs[1:]  # the oldest message gone: no longer the history read last
    assert reading(cut, CODEC) is not again
    _same_reading(reading(cut, CODEC), logs.read(cut, "langchain"))


def test_a_history_of_plain_items_is_recognised_by_value_and_read_again_when_one_differs():
    """The Responses adapter's items are dicts a session gives back new on every run: a history
    whose first items equal those read last (new objects) is grown, not read again; one whose
    earlier item differs in value is read whole."""
    from workbench.agents.for_openai_agents import CODEC
    from workbench.agents.history import Reading

    items = loggen.to_responses(loggen.long_conversation(60))
    k = len(loggen.to_responses(loggen.long_conversation(30)))
    reading = Reading()
    first = reading(items[:k], CODEC)
    grown = reading(json.loads(json.dumps(items)), CODEC)  # the same values, new objects
    assert all(a is b for a, b in zip(first.messages, grown.messages[:k], strict=True))
    _same_reading(grown, logs.read(items, "responses"), by_value=True)
    changed = json.loads(json.dumps(items))
    changed[3]["arguments"] = '{"task": "refresh_9"}'
    again = reading(changed, CODEC)
    assert again.messages[3] is not grown.messages[3]  # read again
    _same_reading(again, logs.read(changed, "responses"), by_value=True)


@pytest.mark.parametrize("how", ["indexed", "scanned"])
def test_a_grown_history_answers_for_the_new_turns_as_its_whole_reading(how):
    """The new turns' definitions join an index the earlier turns had (indexed, or every message
    scanned): each handle a new turn names is defined where the whole reading says."""
    from workbench.agents.history import Codec, Reading

    items = loggen.to_openai(loggen.long_conversation(140))
    k = len(loggen.to_openai(loggen.long_conversation(70)))  # whole rounds: a closed history
    reading, codec = Reading(), Codec("openai", key=id, stub=None)
    before = reading(items[:k], codec).handles()
    before.index_definitions() if how == "indexed" else before.scan_all()
    grown, whole = reading(items, codec).handles(), logs.read(items, "openai").handles()
    asked = [(x, i) for i in range(k, len(items)) for x in whole.refs[i]]
    assert [grown.definer_before(x, i) for x, i in asked] == [
        whole.definer_before(x, i) for x, i in asked
    ]
    assert sum(whole.definer_before(x, i) >= k for x, i in asked) > 10  # defined by a new turn


def test_calls_on_one_conversation_at_once_each_get_their_own_history_s_reading():
    """Two agents' calls on one thread at once: each history is read as a whole reading of it
    would be (a reading handed out is never changed; one call at a time takes a history in)."""
    from concurrent.futures import ThreadPoolExecutor

    from workbench.agents.history import Codec, Reading

    items = loggen.to_openai(loggen.long_conversation(700))
    cuts = [len(loggen.to_openai(loggen.long_conversation(n))) for n in range(300, 701, 50)]
    reading, codec = Reading(), Codec("openai", key=id, stub=None)

    def one(c):
        got = reading(items[:c], codec)
        return c, got, reading.prices(got)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: a race, if any, shows
    try:
        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(one, [c for _ in range(3) for c in (cuts + cuts[::-1])]))
    finally:
        sys.setswitchinterval(switch)
    for c, got, prices in done:
        want = logs.read(items[:c], "openai")
        assert [(m.role, m.text, m.calls, m.answers) for m in got.messages] == [
            (m.role, m.text, m.calls, m.answers) for m in want.messages
        ]
        assert prices[:c] == [logs.approx_tokens(m) for m in want.messages]


def test_scanning_every_message_at_once_is_scanning_each_alone():
    """`scan_all` (one regex pass over the joined texts, a message naming one handle on a short
    path) gives each message the (refs, defs, tombs) its own scan gives, and the index of
    definitions in order: on generated logs in every format (one handle a message, several,
    tombstones) and on the hand-written ones."""
    from workbench.closure.logs.logtypes import _scan_one

    found = []
    for seed in range(6):
        conv = loggen.long_conversation(80 + 30 * seed, seed=seed)
        found += [logs.read(loggen.render(conv, fmt), fmt) for fmt in logs.FORMATS]
    for f in sorted(HELD.glob("*.json")):
        try:
            found.append(logs.load(f))
        except (logs.LogError, ValueError):
            pass  # (the ones refused by name, as invalid or as not UTF-8: nothing to scan)
    tomb = json.dumps(trim.tombstone("job_7f3a9c"))
    found.append(logs.read([{"role": "system", "content": f"kept out: {tomb}"},
                            {"role": "user", "content": "poll job_7f3a9c and run_0b1c2d2e"},
                            {"role": "user", "content": f"{tomb} job_7f3a9c"}], "openai"))  # fmt: skip
    for patterns in (P, CLOSURE_PATTERNS):
        singles = 0
        for log in found:
            whole = logs.Log(log.format, log.messages).handles(patterns).scan_all()
            each = logs.Log(log.format, log.messages).handles(patterns)
            alone = [
                _scan_one(each._at, log.messages, patterns, i) for i in range(len(log.messages))
            ]
            assert whole._at == alone, log.key
            defs: dict = {}
            for i, v in enumerate(alone):
                for x in v[1]:
                    defs.setdefault(x, []).append(i)
            assert whole._defs_of == defs
            singles += sum(len(v[0]) + len(v[1]) == 1 and not v[2] for v in alone)
        assert singles > 100  # the short path was taken, and often
