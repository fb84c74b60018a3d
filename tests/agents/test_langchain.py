"""workbench.agents in LangChain's real agent loop (`create_agent`, `invoke` / `ainvoke`), offline
with its own test double for the model: what the model was sent is what these tests inspect,
judged by the judge written apart from the trimmer."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import AgentMiddleware  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage  # noqa: E402
from langchain_core.messages import trim_messages as lc_trim  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from scripted import ASYNC, TURNS, Remembering, Script, poll, submit  # noqa: E402

import workbench.agents as wa  # noqa: E402
from workbench.agents.bench import drivers, judge  # noqa: E402
from workbench.agents.core import ClosureError  # noqa: E402
from workbench.closure import logs  # noqa: E402

# --- LangChain, sync and async --------------------------------------------------------------------


def _lc_agent(middleware, script):
    def respond(messages):
        texts = [({"human": "user", "ai": "assistant"}.get(m.type, m.type), str(m.content)
                  + "".join(json.dumps(tc["args"]) for tc in getattr(m, "tool_calls", []) or []))
                 for m in messages]  # fmt: skip
        script.lc.append(list(messages))
        tool, x = script.decide(texts)
        if tool is None:
            return AIMessage(x)
        return AIMessage(
            "", tool_calls=[{"id": f"c{len(script.requests)}", "name": tool, "args": x}]
        )

    script.lc = []
    model = drivers.ScriptedChat(messages=iter(()), respond=respond)
    tools = [StructuredTool.from_function(f) for f in (submit, poll)]
    return create_agent(model, tools, system_prompt="Run jobs.", middleware=middleware,
                        checkpointer=InMemorySaver())  # fmt: skip


def _lc_run(agent, turns=TURNS, thread="t", aio=False):
    cfg = {"configurable": {"thread_id": thread}}

    async def run_all():
        for t in turns:
            await agent.ainvoke({"messages": [HumanMessage(t)]}, cfg)

    if aio:
        asyncio.run(run_all())
    else:
        for t in turns:
            agent.invoke({"messages": [HumanMessage(t)]}, cfg)
    return agent.get_state(cfg).values["messages"]


def _lc_ok(sent) -> bool:
    return not judge.langchain_problems(sent)


def _closed(sent) -> bool:
    return logs.check(logs.read(list(sent), "langchain")).closed


@pytest.mark.parametrize("aio", ASYNC, ids=["invoke", "ainvoke"])
def test_langchain_middleware_trims_every_request_closed_and_keeps_the_id(aio):
    mw = wa.ClosureMiddleware(max_tokens=260, strategy="relevance")
    s = Script()
    state = _lc_run(_lc_agent([mw], s), TURNS, aio=aio)
    assert len(mw.records) == len(s.lc) and all(r.tokens_out <= 260 for r in mw.records)
    assert any(r.dropped for r in mw.records)  # it did trim
    assert all(_lc_ok(sent) and _closed(sent) for sent in s.lc)
    polled = [m for m in state if m.type == "ai" and m.tool_calls
              and m.tool_calls[0]["name"] == "poll"]  # fmt: skip
    assert polled[0].tool_calls[0]["args"]["job_id"] == json.loads(submit("alpha"))["id"]
    assert len(state) > 20  # request-only: the thread keeps everything


@pytest.mark.parametrize("aio", ASYNC, ids=["invoke", "ainvoke"])
def test_langchain_persist_brings_back_a_definition_it_cut_when_a_later_call_uses_it(aio):
    """A persisted trim cuts alpha's submit from the checkpoint; the model then uses alpha's job
    anyway. The next request holds alpha's submit result again (from what the middleware saw of
    the thread) or a tombstone for it, never the id without either."""
    mw = wa.ClosureMiddleware(max_tokens=260, persist=True)
    s = Remembering()
    state = _lc_run(_lc_agent([mw], s), TURNS, aio=aio)
    alpha = json.loads(submit("alpha"))["id"]
    polled = next(k for k, sent in enumerate(s.lc)
                  if any(m.type == "ai" and alpha in json.dumps(m.tool_calls) for m in sent))  # fmt: skip
    assert all(_closed(sent) and _lc_ok(sent) for sent in s.lc)
    after = s.lc[polled]
    defined = any(m.type == "tool" and m.name == "submit" and alpha in str(m.content)
                  for m in after)  # fmt: skip
    assert defined or f'"evicted_ref": "{alpha}"' in str(after[0].content)
    assert len(state) < 20  # the trimmed thread in the checkpoint


class ForgetEarly(AgentMiddleware):
    """A user's hook that deletes all but the newest messages from the state (as a summarizer
    does), so the state no longer holds what an earlier result defined."""

    def before_model(self, state, runtime):
        msgs = state["messages"]
        if len(msgs) > 8:
            return {"messages": [RemoveMessage(id=m.id) for m in msgs[:-3]]}
        return None

    async def abefore_model(self, state, runtime):
        return self.before_model(state, runtime)


@pytest.mark.parametrize("aio", ASYNC, ids=["invoke", "ainvoke"])
def test_langchain_guard_restores_a_definition_an_editor_deleted_from_the_state(aio):
    s = Remembering()
    _lc_run(_lc_agent([ForgetEarly()], s), TURNS, aio=aio)
    assert not all(_closed(sent) for sent in s.lc)  # the hook alone: an id without definition
    g = wa.ClosureGuard("langchain")
    s = Remembering()
    _lc_run(_lc_agent([ForgetEarly(), g], s), TURNS, aio=aio)
    assert all(_closed(sent) and _lc_ok(sent) for sent in s.lc)
    alpha = json.loads(submit("alpha"))["id"]
    assert any(m.type == "tool" and m.name == "submit" and alpha in str(m.content)
               for sent in s.lc[-3:] for m in sent)  # fmt: skip
    assert any(r.action == "guard: repaired" and r.restored for r in g.records)


class Cut(AgentMiddleware):
    """A user's own context edit (`_cut`), sync and async."""

    def wrap_model_call(self, request, handler):
        return handler(self._cut(request))

    async def awrap_model_call(self, request, handler):
        return await handler(self._cut(request))


class DropFirstCall(Cut):
    """A user's hook that cuts the oldest messages, leaving a result whose call is gone."""

    def _cut(self, request):
        msgs = request.messages
        k = next((i for i, m in enumerate(msgs) if m.type == "tool"), None)
        if k is not None and len(msgs) > 6:
            msgs = msgs[k:]  # starts on an orphaned tool result
        return request.override(messages=msgs)


@pytest.mark.parametrize("aio", ASYNC, ids=["invoke", "ainvoke"])
def test_langchain_guard_repairs_a_foreign_cut_and_raise_mode_names_the_orphan(aio):
    s = Script()
    _lc_run(_lc_agent([DropFirstCall()], s), TURNS[:3], aio=aio)
    assert any(not _lc_ok(sent) for sent in s.lc)  # what the hook alone sends
    g = wa.ClosureGuard("langchain")
    s = Script()
    _lc_run(_lc_agent([DropFirstCall(), g], s), TURNS[:3], aio=aio)
    assert all(_lc_ok(sent) for sent in s.lc)
    assert any(r.action == "guard: repaired" and r.restored for r in g.records)
    strict = wa.ClosureGuard("langchain", mode="raise")
    with pytest.raises(ClosureError, match="its call is not in the request") as e:
        _lc_run(_lc_agent([DropFirstCall(), strict], Script()), TURNS[:3], aio=aio)
    assert e.value.orphans


class PlainTrim(Cut):
    """langchain-core's `trim_messages` with plain `strategy="last"`, to a budget that holds the
    newest call and its result and not the turn a person wrote before them: a request of tool
    traffic alone."""

    def _cut(self, request):
        msgs = request.messages
        if msgs and msgs[-1].type == "tool":
            budget = count_tokens_approximately(msgs[-2:])
            msgs = lc_trim(msgs, max_tokens=budget, strategy="last",
                           token_counter=count_tokens_approximately)  # fmt: skip
        return request.override(messages=msgs)


@pytest.mark.parametrize("aio", ASYNC, ids=["invoke", "ainvoke"])
def test_the_guard_behind_a_plain_trim_restores_the_last_turn_a_person_wrote(aio):
    """Behind a plain `trim_messages` cut that left no turn a person wrote (and results whose
    calls are gone), the guard brings the person's last turn back from the history, and what
    it needs, instead of raising; every request is one a provider takes."""
    s = Script()
    _lc_run(_lc_agent([PlainTrim()], s), TURNS[:3], aio=aio)
    assert any(not any(m.type == "human" for m in sent) for sent in s.lc)  # the cut alone
    g = wa.ClosureGuard("langchain", max_tokens=400)
    s = Script()
    _lc_run(_lc_agent([PlainTrim(), g], s), TURNS[:3], aio=aio)
    assert all(_lc_ok(sent) and any(m.type == "human" for m in sent) for sent in s.lc)
    assert any("no turn a person wrote" in " ".join(r.orphans) for r in g.records)
