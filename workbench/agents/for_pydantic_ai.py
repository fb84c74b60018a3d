"""Closure inside a pydantic-ai v2 agent: `ClosureHistory` trims what goes to the model, and
`ClosureGuard` checks what any history processor or capability before it left (list it last).

    agent = Agent(model, tools=[...], capabilities=[ClosureHistory(max_tokens=6000)])

pydantic-ai's messages are requests (system prompt, user prompt, tool-return and retry parts) and
responses (text and tool-call parts). They are read as OpenAI chat messages, one a part (a
response is one assistant message with its calls), which the closure readers know; the kept parts
go back into the messages they came from. The trim edits the request only (`request_context`);
`ctx.messages`, the run's history, stays whole, and the guard repairs from it. Each capability's
`records` says, per model call, what it kept, dropped, restored and tombstoned.
"""

from __future__ import annotations

import dataclasses
import operator
import time
from dataclasses import dataclass, field

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    CompactionPart,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from workbench.agents.core import (
    ClosureError,
    Records,
    guard,
    note,
    settings,
    trim,
    trim_record,
    wire,
)
from workbench.agents.history import Conversations, Seen


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "\n".join(x if isinstance(x, str) else repr(x) for x in content)
    return repr(content)


def _args(p: ToolCallPart) -> str:
    """A call's arguments as JSON text (a string is already that: no parse and dump again)."""
    return p.args if isinstance(p.args, str) else p.args_as_json_str()


def _tool_text(p: ToolReturnPart) -> str:
    """A tool return's text as the model is shown it (a string returned successfully is itself:
    no call into pydantic-ai's content split for the common case)."""
    c = p.content
    if type(c) is str and p.outcome == "success":
        return c
    return p.model_response_str()


def _response(m: ModelResponse) -> dict:
    """A response as one assistant message with its calls; a response holding a compaction as a
    system message (it stands for what it replaced, so it is kept as the system prompt is)."""
    texts, calls, role = [], [], "assistant"
    for p in m.parts:
        if isinstance(p, CompactionPart):
            role = "system"
            texts.append(p.content or "[a compaction of the conversation before it]")
        elif isinstance(p, TextPart):
            texts.append(p.content)
        elif isinstance(p, ToolCallPart):
            calls.append(
                {"id": p.tool_call_id, "type": "function",
                 "function": {"name": p.tool_name, "arguments": _args(p)}}
            )  # fmt: skip
    d = {"role": role, "content": "\n".join(texts)}
    if calls:
        d["tool_calls"] = calls
    return d


def _part(p) -> dict:
    """A request part as one OpenAI chat message: a tool return (or a tool's retry prompt) as a
    tool message, the person's words (or a retry no call pairs) as a user message, anything else
    (system prompts, instructions, settings, a compaction) as a system message, which the trim
    keeps."""
    if isinstance(p, ToolReturnPart):
        return {"role": "tool", "tool_call_id": p.tool_call_id, "content": _tool_text(p)}
    if isinstance(p, RetryPromptPart) and p.tool_name is not None:
        return {"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response()}
    if isinstance(p, RetryPromptPart | RetryFeedbackPart):
        return {"role": "user", "content": p.model_response()}
    if isinstance(p, UserPromptPart):
        return {"role": "user", "content": _text(p.content)}
    if isinstance(p, SystemPromptPart | CompactionPart):
        return {"role": "system", "content": p.content or ""}
    return {"role": "system", "content": repr(p)}


def explode(messages, known=None) -> tuple[list[dict], list[tuple]]:
    """(OpenAI chat dicts, each one's source: (message index, part index or None)): a request's
    parts one message each, a response one assistant message. `known`: another explosion
    (`_dicts_of`) whose dicts stand for the same message objects, taken as they are."""
    out, src = [], []
    for k, m in enumerate(messages):
        span = known[2].get(id(m)) if known else None
        if span is None:
            dicts, at = _explode_one(m)
        else:
            dicts, at = known[0][span], [j for _, j in known[1][span]]
        out.extend(dicts)
        src.extend((k, j) for j in at)
    return out, src


def _dicts_of(messages, dicts: list, src: list) -> tuple:
    """An explosion of `messages` (dicts, sources) and where each message's dicts stand in it
    (id(message) -> a slice): a request that holds the same message objects reads as the same
    dicts, which the guard finds by identity."""
    first: dict[int, int] = {}
    end: dict[int, int] = {}
    for i, (k, _) in enumerate(src):
        first.setdefault(id(messages[k]), i)
        end[id(messages[k])] = i + 1
    return dicts, src, {m: slice(a, end[m]) for m, a in first.items()}


def _explode_one(m) -> tuple[list[dict], list]:
    """One message's dicts, and the part each came from (None: the whole response)."""
    if isinstance(m, ModelResponse):
        return [_response(m)], [None]
    return [_part(p) for p in m.parts], list(range(len(m.parts)))


def rebuild(messages, dicts: list[dict], src_of: dict) -> list:
    """pydantic-ai messages from the kept dicts: a kept dict's part from its source message, a new
    dict (a tombstone note, a stand-in result) as a new part; consecutive request parts form one
    request (a cut may make two requests adjacent)."""
    out: list = []
    parts: list = []
    base: ModelRequest | None = None

    def flush():
        nonlocal parts, base
        if (
            parts
            and base is not None
            and len(parts) == len(base.parts)
            and all(map(operator.is_, parts, base.parts))
        ):
            out.append(base)  # every part of the request, in order: the request itself
        elif parts:
            req = base if base is not None else ModelRequest(parts=[])
            out.append(dataclasses.replace(req, parts=parts))
        parts, base = [], None

    for d in dicts:
        where = src_of.get(id(d))
        if where is not None and where[1] is None:  # a whole response
            flush()
            out.append(messages[where[0]])
            continue
        if where is not None:
            m = messages[where[0]]
            if base is None:
                base = m
            parts.append(m.parts[where[1]])
        elif d["role"] == "system":
            parts.append(SystemPromptPart(d["content"]))
        elif d["role"] == "tool":
            name = d.get("name", "tool")
            parts.append(
                ToolReturnPart(tool_name=name, content=d["content"], tool_call_id=d["tool_call_id"])
            )
        else:
            parts.append(UserPromptPart(d["content"]))
    flush()
    return out


CODEC = wire("openai")  # the request parts as OpenAI chat dicts


@dataclass
class ClosureHistory(AbstractCapability):
    """Trim the model's request to `max_tokens` (approximate tokens) without orphaning a tool
    call, a tool return or an id. `handle_re`: what else counts as an id
    (`workbench.closure.logs.flow`)."""

    max_tokens: int = 8000
    strategy: str = "last"
    handle_re: str | None = None
    records: Records = field(default_factory=Records, compare=False)

    def __post_init__(self):
        settings(self.max_tokens, self.strategy)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def before_model_request(self, ctx, request_context):
        t0 = time.perf_counter()
        msgs = list(request_context.messages)
        dicts, src = explode(msgs)
        t = trim(dicts, "openai", self.max_tokens, self.strategy, self.handle_re)
        out = [dicts[i] for i in t.kept]
        if t.tombstones:
            out.insert(0, {"role": "system", "content": note(t.tombstones)})
        src_of = {id(d): s for d, s in zip(dicts, src, strict=True)}
        request_context.messages = rebuild(msgs, out, src_of)
        self.records.add(trim_record(t, len(self.records) + 1, time.perf_counter() - t0))
        return request_context


def seen_key(m) -> tuple:
    """A pydantic-ai message read back from storage is known by its kind, its timestamp and its
    first part's (a request may carry none of its own), then equality (not by its run:
    pydantic-ai stamps that on a response after the hooks saw it)."""
    parts = getattr(m, "parts", None) or ()
    first = getattr(parts[0], "timestamp", None) if parts else None
    return (getattr(m, "kind", None), getattr(m, "timestamp", None), first)


@dataclass
class ClosureGuard(AbstractCapability):
    """Check what goes to the model after every other capability and history processor (list it
    last): an orphan they left is repaired from the conversation's history, or, with
    `mode="raise"`, raises `ClosureError` naming every orphan.

    The history is every message the guard has seen in the conversation (`Seen`, one per
    `conversation_id`, the `conversations` most recently used kept), so a definition a history
    processor deleted from the run's own history is still found; a run without a
    `conversation_id` repairs from the run's history alone."""

    mode: str = "repair"
    max_tokens: int | None = None
    conversations: int = 64
    handle_re: str | None = None
    records: Records = field(default_factory=Records, compare=False)
    _seen: Conversations = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        settings(self.max_tokens, mode=self.mode)
        self._seen = Conversations(self.conversations, lambda: Seen(seen_key))

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    def _store(self, ctx) -> Seen | None:
        return self._seen.get(getattr(ctx, "conversation_id", None))

    async def after_model_request(self, ctx, *, request_context, response):
        seen = self._store(ctx)
        if seen is not None:
            seen.merge([*(ctx.messages or ()), response])
        return response

    async def before_model_request(self, ctx, request_context):
        msgs = list(request_context.messages)
        full_msgs = list(ctx.messages) if ctx.messages else msgs
        seen = self._store(ctx)
        if seen is not None:
            full_msgs = list(seen.merge(full_msgs))
        full, fsrc = explode(full_msgs)
        edited, esrc = explode(msgs, _dicts_of(full_msgs, full, fsrc))
        g = guard(edited, full, CODEC, mode=self.mode, max_tokens=self.max_tokens,
                  call=len(self.records) + 1, pattern=self.handle_re)  # fmt: skip
        self.records.add(g.record)
        if g.record.action == "guard: closed":
            return request_context
        items = list(g.items)
        if g.tombstones:
            items.insert(0, {"role": "system", "content": note(g.tombstones)})
        # parts from the request or from the history: rebuild over both message lists (a dict
        # the two share is the history's)
        both, shift = msgs + full_msgs, len(msgs)
        where = {id(d): s for d, s in zip(edited, esrc, strict=True)}
        where.update({id(d): (k + shift, j) for d, (k, j) in zip(full, fsrc, strict=True)})
        request_context.messages = rebuild(both, items, where)
        return request_context


__all__ = ["ClosureError", "ClosureGuard", "ClosureHistory", "Seen", "explode", "rebuild"]
