"""Closure inside a LangChain v1 agent: `ClosureMiddleware` trims what goes to the model, and
`ClosureGuard` checks what any other context editing left (put it last in `middleware=[...]`).
Both run under `agent.invoke` and `await agent.ainvoke`.

    agent = create_agent(model, tools, middleware=[ClosureMiddleware(max_tokens=6000)])

`wrap_model_call` edits the request only: the state keeps the whole history (so a checkpointed
thread is trimmed again on every call, at the cost of one trim). `persist=True` trims the state
itself in `before_model` (a `RemoveMessage(REMOVE_ALL_MESSAGES)` and the kept messages), so the
checkpoint holds the trimmed thread and the next turn starts from it; what it cut stays in the
middleware's store of the thread (in this process, the 64 threads used last), and when a later
call uses an id whose definition it cut (a model that remembers, or guesses, an id), the
definition is brought back before the next trim. `ClosureGuard` keeps the same store, so what an
editor deleted from the state (a summarizer) can still be restored. Each adapter's `records`
says, per model call, what it kept, dropped, restored and tombstoned.
"""

from __future__ import annotations

import time

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import RemoveMessage, SystemMessage, ToolMessage
from langgraph.config import get_config
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from workbench.agents.core import (
    ClosureError,
    Codec,
    Records,
    guard,
    note,
    settings,
    trim,
    trim_record,
)
from workbench.agents.history import Conversations, Seen
from workbench.closure.logs.formats.base import stub_text


def _key(m):
    """An edited message's original: by its id (a cleared tool result keeps it), else by kind
    and content."""
    f = vars(m)
    if f.get("id"):
        return ("id", f["id"])
    calls = tuple(tc.get("id") for tc in f.get("tool_calls") or ())
    return (m.type, f.get("tool_call_id"), calls, repr(m.content))


def _thread():
    """The LangGraph thread the call runs in (None outside one, or without a thread id)."""
    try:
        return get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # not inside a runnable
        return None


def _store(size: int = 64) -> Conversations:
    """A `Seen` store per thread. A message in the state carries an id (LangGraph's reducer gives
    it one): it is the message, whatever an editor made of its content since (the store keeps
    the first version seen, the original)."""
    return Conversations(size, lambda: Seen(_key, equal=False))


CODEC = Codec(
    "langchain",
    _key,
    lambda cid, name: ToolMessage(stub_text(cid, name), tool_call_id=cid, name=name),
)


def _with_system(system, messages) -> list:
    return [system, *messages] if system is not None else list(messages)


def _split_system(out: list, system):
    """(system message, the rest) of a written message list: a system message the trim wrote or
    extended (its tombstones) becomes the request's system message."""
    if out and getattr(out[0], "type", None) == "system":
        return out[0], out[1:]
    return system, out


def _with_note(system, tombstones) -> SystemMessage:
    """A system message (or a new one) with the typed tombstones written under it."""
    text = note(tombstones)
    if system is None:
        return SystemMessage(text)
    return system.model_copy(update={"content": f"{system.text}\n{text}"})


def _fold(system, messages):
    """A leading system message in the state (the tombstones a persisted trim wrote) joined to the
    request's system message, so the model sees one system prompt."""
    if not messages or getattr(messages[0], "type", None) != "system":
        return system, messages
    extra = messages[0].content
    if system is None:
        return messages[0], messages[1:]
    merged = system.model_copy(update={"content": f"{system.text}\n{extra}"})
    return merged, messages[1:]


class ClosureMiddleware(AgentMiddleware):
    """Trim the model's request to `max_tokens` (approximate tokens, langchain-core's rule of
    thumb) without orphaning a call, a result or an id: see `workbench.closure.logs.trim`.
    `handle_re`: what else counts as an id (`workbench.closure.logs.flow`)."""

    def __init__(self, max_tokens: int, strategy: str = "last", persist: bool = False,
                 handle_re=None):  # fmt: skip
        super().__init__()
        settings(max_tokens, strategy)
        self.max_tokens, self.strategy, self.persist = max_tokens, strategy, persist
        self.handle_re = handle_re
        self.records = Records()
        self._seen = _store()  # persist: what each thread's state held before a trim cut it

    @property
    def name(self) -> str:
        return "ClosureMiddleware"

    def _trim(self, system, messages):
        t0 = time.perf_counter()
        t = trim(_with_system(system, messages), "langchain", self.max_tokens, self.strategy,
                 self.handle_re)  # fmt: skip
        rec = trim_record(t, len(self.records) + 1, time.perf_counter() - t0)
        return t, self.records.add(rec)

    def before_model(self, state, runtime):
        if not self.persist:
            return None
        msgs = list(state["messages"])
        seen = self._seen.get(_thread())
        restored = False
        if seen is not None:
            # the tombstones an earlier trim wrote lead the state; the store keeps the rest
            lead = msgs[:1] if msgs and msgs[0].type == "system" else []
            rest = msgs[len(lead) :]
            if len(seen.merge(rest)) > len(rest):  # an earlier trim cut something: the guard
                g = guard(msgs, [*lead, *seen.items], CODEC, pattern=self.handle_re)
                if g.record.action != "guard: closed":  # what a later call uses, brought back
                    msgs, restored = list(g.items), True
                    if g.tombstones and lead and msgs[0] is lead[0]:
                        msgs[0] = _with_note(lead[0], g.tombstones)
                    elif g.tombstones:
                        msgs.insert(0, _with_note(None, g.tombstones))
        t, _ = self._trim(None, msgs)
        if not restored and len(t.kept) == len(msgs) and not t.tombstones:
            return None  # it fits: the state stays as it is
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *t.output]}

    async def abefore_model(self, state, runtime):
        return self.before_model(state, runtime)

    def _request(self, request):
        if self.persist:  # the state was trimmed before the call; only fold its tombstones
            system, rest = _fold(request.system_message, request.messages)
            if system is not request.system_message:
                return request.override(system_message=system, messages=rest)
            return request
        t, _ = self._trim(request.system_message, request.messages)
        system, rest = _split_system(list(t.output), request.system_message)
        return request.override(system_message=system, messages=rest)

    def wrap_model_call(self, request, handler):
        return handler(self._request(request))

    async def awrap_model_call(self, request, handler):
        return await handler(self._request(request))


class ClosureGuard(AgentMiddleware):
    """Check what goes to the model after every other edit (list it last): an orphan another
    editor left is repaired from the thread's history (the call, the result, the definition or
    the person's last turn brought back; a stand-in result or a tombstone when the history lacks
    it), or, with `mode="raise"`, raises `ClosureError` naming every orphan before the provider
    answers 400. Given `max_tokens`, a request still over it is cut by the closure trim.

    The history is the state's messages and every message the guard saw in the thread before
    (a store per LangGraph `thread_id`, the `conversations` used last kept): what an editor
    deleted from the state itself (`SummarizationMiddleware`, a hook returning `RemoveMessage`)
    is found there. Outside a thread, the state alone."""

    def __init__(self, mode: str = "repair", max_tokens: int | None = None,
                 conversations: int = 64, handle_re=None):  # fmt: skip
        super().__init__()
        settings(max_tokens, mode=mode)
        self.mode, self.max_tokens, self.handle_re = mode, max_tokens, handle_re
        self.records = Records()
        self._seen = _store(conversations)

    @property
    def name(self) -> str:
        return "ClosureGuard"

    def _request(self, request):
        full = list(request.state.get("messages", [])) if request.state else []
        seen = self._seen.get(_thread())
        if seen is not None:  # what an editor cut from the state (a summary) is found here
            full = list(seen.merge(full))
        system = request.system_message  # (priced with the request, as the trim prices it)
        g = guard(_with_system(system, request.messages), _with_system(system, full), CODEC,
                  mode=self.mode, max_tokens=self.max_tokens, call=len(self.records) + 1,
                  pattern=self.handle_re)  # fmt: skip
        self.records.add(g.record)
        if g.record.action == "guard: closed":
            return request
        items = g.items[1:] if system is not None and g.items[:1] == [system] else g.items
        if g.tombstones:
            system = _with_note(system, g.tombstones)
        return request.override(system_message=system, messages=items)

    def wrap_model_call(self, request, handler):
        return handler(self._request(request))

    async def awrap_model_call(self, request, handler):
        return await handler(self._request(request))


__all__ = ["ClosureError", "ClosureGuard", "ClosureMiddleware"]
