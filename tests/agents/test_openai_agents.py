"""workbench.agents in the OpenAI Agents SDK's real loop (`Runner.run_sync` / `Runner.run`), offline
with a scripted model: what the model was sent is what these tests inspect, judged by the judge
written apart from the trimmer."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents")

from agents import Agent as SdkAgent  # noqa: E402
from agents import RunConfig, Runner, function_tool  # noqa: E402
from scripted import ASYNC, TURNS, Script, poll, submit  # noqa: E402

import workbench.agents as wa  # noqa: E402
from workbench.agents.bench import drivers, judge  # noqa: E402
from workbench.closure import logs  # noqa: E402

# --- the OpenAI Agents SDK, sync and async ----------------------------------------------------


class SdkScript(drivers.SdkModel):
    def __init__(self, script):
        self.script, self.inputs = script, []

    async def get_response(self, system_instructions, input, *args, **kwargs):
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        self.inputs.append((system_instructions, list(items)))
        view = drivers._sdk_view(items, system_instructions)
        tool, x = self.script.decide([(v.role, v.text) for v in view])
        n = len(self.inputs)
        if tool is None:
            text = drivers.ResponseOutputText(type="output_text", text=x, annotations=[])
            out = [drivers.ResponseOutputMessage(id=f"m{n}", type="message", role="assistant",
                                                 status="completed", content=[text])]  # fmt: skip
        else:
            out = [drivers.ResponseFunctionToolCall(type="function_call", call_id=f"c{n}",
                                                    id=f"fc{n}", name=tool,
                                                    arguments=json.dumps(x))]  # fmt: skip
        return drivers.SdkResponse(output=out, usage=drivers.Usage(), response_id=None)

    def stream_response(self, *a, **k):
        raise NotImplementedError


def _sdk_run(flt, script, turns=TURNS, aio=False, session=None):
    model = SdkScript(script)
    agent = SdkAgent(name="a", instructions="Run jobs.", model=model,
                     tools=[function_tool(submit), function_tool(poll)])  # fmt: skip
    cfg = RunConfig(call_model_input_filter=flt, tracing_disabled=True)
    history: list = []
    for t in turns:
        given = t if session is not None else [*history, {"role": "user", "content": t}]
        if aio:
            r = drivers.run_sync(Runner.run(agent, given, run_config=cfg, session=session))
        else:
            r = Runner.run_sync(agent, given, run_config=cfg, session=session)
        history = r.to_input_list()
    return model.inputs


def _rs_ok(items, window=None) -> bool:
    return not judge.responses_problems(items, window)


@pytest.mark.parametrize("aio", ASYNC, ids=["run_sync", "run"])
def test_openai_agents_filter_trims_items_closed(aio):
    f = wa.closure_input_filter(max_tokens=260, strategy="relevance")
    sent = _sdk_run(f, Script(), aio=aio)
    assert len(f.records) == len(sent) and any(r.dropped for r in f.records)
    for instructions, items in sent:
        assert _rs_ok(items)
        assert logs.check(logs.read({"input": items, "instructions": instructions})).closed
    assert all(r.tokens_out <= 260 for r in f.records)


@pytest.mark.parametrize("aio", ASYNC, ids=["run_sync", "run"])
def test_openai_agents_guard_wraps_a_filter_that_cuts_calls_off(aio):
    cut = drivers.KeepLastItems(5)
    assert any(not _rs_ok(items) for _, items in _sdk_run(cut, Script(), aio=aio))
    g = wa.ClosureGuard("openai-agents", cut)
    assert all(_rs_ok(items) for _, items in _sdk_run(g, Script(), aio=aio))
    assert any(r.action == "guard: repaired" for r in g.records)


def test_a_guard_given_max_tokens_cuts_a_request_left_over_it_and_says_when_none_fits():
    """A filter that passes a growing history whole leaves requests past the window; given
    `max_tokens`, the guard cuts each one over it with the closure trim: within the budget by the
    judge's count, closed, valid ("guard: trimmed"). With a budget no closed request fits, it
    raises one `NoRoom` (a `ClosureError`) saying so instead of sending it."""
    window = 300
    assert any(not _rs_ok(items, window) for _, items in _sdk_run(None, Script()))
    g = wa.ClosureGuard("openai-agents", max_tokens=window)
    sent = _sdk_run(g, Script())
    assert any(r.action == "guard: trimmed" for r in g.records)
    for instructions, items in sent:
        assert _rs_ok(items, int(window * 1.1))
        rep = logs.check(logs.read({"input": items, "instructions": instructions}, "responses"))
        assert not rep.orphan_results and not rep.orphan_calls
    assert all(r.tokens_out <= window for r in g.records)
    with pytest.raises(wa.NoRoom, match="over max_tokens=5, and no closed request"):
        _sdk_run(wa.ClosureGuard("openai-agents", max_tokens=5), Script())


@pytest.mark.parametrize("aio", ASYNC, ids=["run_sync", "run"])
def test_openai_agents_guard_given_the_session_restores_what_its_limit_cut(aio):
    """A session `limit` cuts the history before any filter runs: the guard sees the definition
    only in the session's store. Without the guard, requests use job ids whose submit result is
    gone; given the session, none does."""
    ids = [json.loads(submit(t))["id"] for t in ("alpha", "beta")]
    turns = [*TURNS[:4], *(f"poll {h}" for h in ids)]  # a person pastes an id shown long ago

    def run(make):
        s = drivers.SQLiteSession("s", session_settings=drivers.SessionSettings(limit=3))
        flt = make(s)
        return _sdk_run(flt, Script(), turns, aio=aio, session=s), flt

    def lost(sent):
        return sum(len(logs.check(logs.read({"input": items, "instructions": ins}))
                       .orphan_handles) for ins, items in sent)  # fmt: skip

    bare, _ = run(lambda s: None)
    seen, g = run(lambda s: wa.ClosureGuard("openai-agents", session=s))
    assert lost(bare) > 0 and lost(seen) == 0
    assert any(r.action == "guard: repaired" and r.restored for r in g.records)
    assert all(_rs_ok(items) for _, items in seen)
    with pytest.raises(TypeError, match="Session"):
        wa.ClosureGuard("openai-agents", session=object())


def test_the_session_store_is_laid_under_the_input_only_where_it_lines_up():
    from workbench.agents.for_openai_agents import with_store

    a, b, c, d = ({"type": "message", "role": "user", "content": x} for x in "abcd")
    assert with_store([a, b, c], [b, c, d]) == [a, b, c, d]  # a limit of 2, then a new item
    assert with_store([a, b, c], [a, b, c]) == [a, b, c]  # no limit
    assert with_store([a, b, c], [d]) == [d]  # nothing of the store: the input alone
    assert with_store([a, b, c], [a, b, d]) == [a, b, d]  # the store's newest is not sent
    assert with_store([a, b, c], [d, b, c]) == [d, b, c]  # a new item before stored ones
    assert with_store([], [a]) == [a]
    assert with_store([a, b, c, a, d], [a, d, c]) == [a, b, c, a, d, c]  # its latest copy
    got = with_store([a, b, c], [dict(b), dict(c)])
    assert got == [a, b, c] and got[1] is not b  # the input's own objects
