"""Closure on agent message logs: the log check, the closure-safe trimmer, the side-by-side against
langchain-core's real trim_messages, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench.cli import main as workbench_main
from workbench.closure import logs
from workbench.closure.logs import compare, loggen, trim
from workbench.closure.logs.logtypes import Message

P = loggen.REALISTIC_PATTERNS


def _fresh(conv, fmt):
    return json.loads(json.dumps(loggen.render(conv, fmt)))


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
    t = trim.trim_log(log, budget, pattern=P, strategy=strategy)
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
    rep = logs.check(back, pattern=P)
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
    again = trim.trim_log(back, budget, pattern=P, strategy=strategy)
    assert again.report.closed


@given(conv=conversations(), fmt=st.sampled_from(logs.FORMATS), data=st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_trimmers_running_tombstone_set_is_the_exact_one(conv, fmt, data):
    """The trim's plan keeps the ids a growing kept set leaves dangling up to date as blocks join
    (so a trim is linear): at every step they are exactly what the exact pass over the kept set
    finds, each priced by the counter, and a kept set with them as tombstones checks closed."""
    log = logs.read(_fresh(conv, fmt), fmt)
    plan = trim.Plan(log, logs.approx_tokens, P)
    own = logs.check(log, pattern=P).orphan_handles
    n = len(plan.blocks)
    order = data.draw(st.permutations(range(n)))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        step = {q for q in order[a:b] if q not in plan.kept}
        price, _ = plan.price(step)
        plan.keep(step)
        exact = plan.dangling_of(plan.messages_kept())
        assert sorted(plan.dangling) == exact
        assert price == plan.kept_cost + sum(trim.tombstone_tokens(x) for x in exact)
        rep = logs.check(log, plan.messages_kept(), pattern=P, tombstones=exact)
        assert set(rep.orphan_handles) <= set(own)  # (a pattern id no message defines: its own)


def test_trim_messages_returns_langchain_objects_too():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import BaseMessage, messages_from_dict

    msgs = messages_from_dict(_fresh(loggen.HANDWRITTEN["training_runs"], "langchain"))
    out = trim.trim_messages(msgs, 150, pattern=P)
    assert out and all(isinstance(m, BaseMessage) for m in out)
    plain = trim.trim_messages(
        _fresh(loggen.HANDWRITTEN["training_runs"], "openai"), 150, pattern=P
    )
    assert isinstance(plain, list) and isinstance(plain[0], dict)


def test_langchain_objects_read_as_their_dumps_do():
    """LangChain objects are read through their fields, without a dump: the text (content, then
    each call's arguments) must be what the dump reads, for dict, string and missing arguments,
    empty content and parallel calls, in every log."""
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
    assert logs.read(extra, "langchain").messages[3].calls == (("a3", "f"),)


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
    t = trim.trim_log(logs.read(state), 150, pattern=P)
    assert t.tombstones and t.report.closed
    assert t.output["thread_id"] == "t1" and set(t.output) == {"messages", "thread_id"}
    first = t.output["messages"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # langchain-core's `load` is marked beta
        back = load(first)
    assert isinstance(back, SystemMessage) and "evicted_ref" in back.content
    assert logs.check(logs.read(t.output), pattern=P).closed
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


def test_a_log_and_its_flow_hold_no_cycle():
    """A log keeps the flow of its ids; if the flow referred back to the log, every log read and
    dropped would wait for the cyclic collector. Dropped, a log whose flow was found is freed at
    once by reference counting, with the collector off."""
    import gc
    import weakref

    log = logs.read(_fresh(loggen.HANDWRITTEN["training_runs"], "openai"))
    log.flow(P)
    trim.trim_log(log, 150, pattern=P)
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
    t = trim.trim_log(log, 10, pattern=P)  # the system message alone is larger
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
    assert "orphaned id job_7f3a2c: used by message" in out
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
    src = (Path(__file__).resolve().parents[2] / "data/logs/training_runs.openai.json").read_text()
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
    t = trim.trim_log(log, budget, pattern=P, counter=_words)
    if not t.conversation:
        return
    back = logs.read(json.loads(json.dumps(t.output)), fmt)
    top = _words(logs.Message(-1, "system", back.system_text())) if back.system else 0
    assert t.tokens == sum(_words(m) for m in back.messages) + top
    assert t.tokens <= budget and logs.check(back, pattern=P).closed


def test_no_tombstone_when_nothing_was_evicted_and_a_later_echo_defines_nothing():
    """An id a call takes from a result under any key, or from prose, is defined there (no
    orphan, no tombstone at full budget); a poll whose result echoes the id does not define it
    for the poll: when the submit's result is cut, the id gets a tombstone."""
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
