"""Agent message logs as closure spans: readers and writers for OpenAI chat-completions message
lists, Anthropic Messages (a request body or its message list) and LangChain `messages_to_dict`
output, and the closure check of a log (orphaned calls, results and handles).

One message is one span (`m0`, `m1`, ...; the turn is the message index), so a trimmed log is a
subset of whole messages and the writer gives each kept message back unchanged. Roles: system and
developer messages -> `system`; user -> `user`; an assistant message with tool calls -> `call`
(its text plus every call's arguments); other assistant text -> `reasoning`; a tool message, or a
user turn carrying `tool_result` blocks -> `result`, depending on the message with its call. The
handle rules are the closure study's (`spans.scan`): handles are found by a configurable pattern,
a result defines the handles its `"id"` / `"<name>_id"` keys hold, a call never defines one, and a
handle the user writes is given by the user.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from workbench.closure.spans import CLOSURE_PATTERNS, Span, SpanIndex
from workbench.common.handles import Patterns
from workbench.common.io import InputError, atomic_write_text, read_json

FORMATS = ("openai", "anthropic", "langchain")
LC_ROLES = {"ai": "assistant", "human": "user", "system": "system", "tool": "tool"}


class LogError(InputError):
    """A malformed agent log; the message names the file, the message index and the field."""

    def __init__(self, message: str, *, path=None, index: int | None = None, field=None):
        where = [str(path)] if path is not None else []
        where += [f"message {index}"] if index is not None else []
        where += [f"field '{field}'"] if field is not None else []
        ValueError.__init__(self, ": ".join([*where, message]))
        self.message, self.path, self.line, self.field, self.index = (
            message,
            path,
            None,
            field,
            index,
        )


@dataclass(repr=False)
class Message:
    """One message of a log, as the closure check sees it (`raw` is the message as read)."""

    index: int
    role: str  # system | user | assistant | tool
    text: str  # what the handle patterns scan: content, call arguments, result content
    calls: list = field(default_factory=list)  # [(call id, tool name)]
    answers: list = field(default_factory=list)  # call ids this message answers
    raw: object = None

    def __repr__(self) -> str:
        return (
            f"Message({self.index}, {self.role}, calls={len(self.calls)}, answers={self.answers})"
        )


@dataclass(repr=False)
class Log:
    """An agent log in one of the three formats."""

    format: str
    messages: list
    system: object = None  # Anthropic: the request body's top-level system
    body: dict | None = None  # a request body (its other keys kept on writing), None for a list

    def __repr__(self) -> str:
        calls = sum(len(m.calls) for m in self.messages)
        return f"Log({self.format}, {len(self.messages)} messages, {calls} tool calls)"

    def spans(self) -> list[Span]:
        """The log as closure spans, one per message (the system preamble first, if any)."""
        call_msg = {cid: m.index for m in self.messages for cid, _ in m.calls}
        out = []
        for m in self.messages:
            role = {"system": "system", "user": "user", "tool": "result"}.get(m.role)
            if role is None:
                role = "call" if m.calls else "reasoning"
            if m.answers and role == "user":
                role = "result"
            deps = sorted(
                {f"m{call_msg[c]}" for c in m.answers if call_msg.get(c, m.index) < m.index}
            )
            out.append(Span(f"m{m.index}", m.index, role, m.text or " ", tuple(deps)))
        if self.format == "anthropic" and self.system is not None:
            # the top-level system is no message: it goes last, so positions stay message indices
            text = _text(self.system, None, "system") or " "
            out.append(Span("system", len(self.messages), "system", text))
        return out


# --- readers ----------------------------------------------------------------------------------


def _err(msg, index=None, fld=None, path=None):
    return LogError(msg, path=path, index=index, field=fld)


def _text(content, index, fld) -> str:
    """The text of a content value: a string, or a list of blocks (text, tool_result, tool_use)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _err(
            f"must be a string or a list of blocks, got {type(content).__name__}", index, fld
        )
    out = []
    for k, b in enumerate(content):
        if isinstance(b, str):
            out.append(b)
        elif isinstance(b, dict):
            if isinstance(b.get("text"), str):
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                out.append(_text(b.get("content"), index, f"{fld}[{k}].content"))
            elif b.get("type") == "tool_use":
                out.append(json.dumps(b.get("input", {})))
        else:
            raise _err("a content block must be an object or a string", index, f"{fld}[{k}]")
    return "\n".join(out)


def _need(obj, key, kind, index, fld=None):
    if not isinstance(obj, dict) or key not in obj:
        raise _err("missing required field", index, fld or key)
    if not isinstance(obj[key], kind):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _err(f"must be a {name}", index, fld or key)
    return obj[key]


def read_openai(messages) -> Log:
    """OpenAI chat completions: `assistant.tool_calls[].id / function.name / function.arguments`,
    `tool` messages with `tool_call_id`; `developer` counts as system."""
    body = messages if isinstance(messages, dict) else None
    if body is not None:
        messages = _need(body, "messages", list, None)
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise _err("must be an object", i)
        role = _need(m, "role", str, i)
        if role not in ("system", "developer", "user", "assistant", "tool"):
            raise _err(f"unknown role {role!r}", i, "role")
        calls, args = [], []
        for k, tc in enumerate(m.get("tool_calls") or []):
            cid = _need(tc, "id", str, i, f"tool_calls[{k}].id")
            fn = _need(tc, "function", dict, i, f"tool_calls[{k}].function")
            name = _need(fn, "name", str, i, f"tool_calls[{k}].function.name")
            a = fn.get("arguments") or ""
            if not isinstance(a, str):
                raise _err("must be a JSON string", i, f"tool_calls[{k}].function.arguments")
            calls.append((cid, name))
            args.append(a)
        answers = [_need(m, "tool_call_id", str, i)] if role == "tool" else []
        text = "\n".join(x for x in [_text(m.get("content"), i, "content"), *args] if x)
        role = "system" if role == "developer" else role
        out.append(Message(i, role, text, calls, answers, m))
    return Log("openai", out, body=body)


def read_anthropic(body) -> Log:
    """Anthropic Messages: a request body `{"system": ..., "messages": [...]}` or the bare list;
    `tool_use` blocks {id, name, input}, `tool_result` blocks {tool_use_id, content}."""
    system, req = None, None
    messages = body
    if isinstance(body, dict):
        req = body
        messages = _need(body, "messages", list, None)
        system = body.get("system")
    out = []
    if system is not None:
        _text(system, None, "system")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise _err("must be an object", i)
        role = _need(m, "role", str, i)
        if role not in ("user", "assistant"):
            raise _err(f"must be 'user' or 'assistant', got {role!r}", i, "role")
        content = _need(m, "content", (str, list), i)
        blocks = content if isinstance(content, list) else []
        calls, answers = [], []
        for k, b in enumerate(blocks):
            if isinstance(b, dict) and b.get("type") == "tool_use":
                calls.append(
                    (
                        _need(b, "id", str, i, f"content[{k}].id"),
                        _need(b, "name", str, i, f"content[{k}].name"),
                    )
                )
            elif isinstance(b, dict) and b.get("type") == "tool_result":
                answers.append(_need(b, "tool_use_id", str, i, f"content[{k}].tool_use_id"))
        out.append(Message(i, role, _text(content, i, "content"), calls, answers, m))
    return Log("anthropic", out, system, req)


def read_langchain(dicts) -> Log:
    """LangChain `messages_to_dict` output: [{"type": "ai" | "human" | "system" | "tool", "data":
    {...}}], `AIMessage.tool_calls [{name, args, id}]`, `ToolMessage.tool_call_id`."""
    out = []
    if not isinstance(dicts, list):
        raise _err("a LangChain dump is a list of {type, data} objects")
    for i, d in enumerate(dicts):
        kind = _need(d, "type", str, i)
        if kind not in LC_ROLES:
            raise _err(f"unknown message type {kind!r}", i, "type")
        data = _need(d, "data", dict, i)
        calls, args = [], []
        for k, tc in enumerate(data.get("tool_calls") or []):
            cid = _need(tc, "id", str, i, f"data.tool_calls[{k}].id")
            calls.append((cid, _need(tc, "name", str, i, f"data.tool_calls[{k}].name")))
            args.append(json.dumps(tc.get("args", {})))
        answers = (
            [_need(data, "tool_call_id", str, i, "data.tool_call_id")] if kind == "tool" else []
        )
        text = "\n".join(x for x in [_text(data.get("content"), i, "data.content"), *args] if x)
        out.append(Message(i, LC_ROLES[kind], text, calls, answers, d))
    return Log("langchain", out)


READERS = {"openai": read_openai, "anthropic": read_anthropic, "langchain": read_langchain}


def detect(obj) -> str:
    """The format of a decoded log: LangChain dicts have {type, data}; Anthropic has tool_use /
    tool_result blocks or a top-level system; OpenAI has tool_calls or tool messages; a plain
    chat without tools reads the same either way (OpenAI)."""
    msgs = obj
    if isinstance(obj, dict):
        if "messages" not in obj:
            raise _err("expected a list of messages or a request body with 'messages'")
        if "system" in obj:
            return "anthropic"
        msgs = obj["messages"]
    if not isinstance(msgs, list):
        raise _err("expected a list of messages")
    first = next((m for m in msgs if isinstance(m, dict)), {})
    if "type" in first and "data" in first:
        return "langchain"
    for m in msgs:
        if not isinstance(m, dict):
            continue
        if (
            m.get("role") == "tool"
            or m.get("tool_calls")
            or m.get("role") in ("system", "developer")
        ):
            return "openai"
        c = m.get("content")
        if isinstance(c, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in c
        ):
            return "anthropic"
    return "openai"


def read(obj, format: str | None = None) -> Log:
    """A decoded log (format detected unless given), checked: no call id is used twice, no
    result answers one call twice, and it does not mix formats."""
    fmt = format or detect(obj)
    if fmt not in READERS:
        raise ValueError(f"unknown log format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt != "anthropic":
        _no_anthropic_blocks(obj)
    log = READERS[fmt](obj)
    _check_ids(log)
    return log


def _no_anthropic_blocks(obj) -> None:
    """An OpenAI or LangChain log that goes on in Anthropic tool blocks mixes two formats."""
    msgs = obj.get("messages", []) if isinstance(obj, dict) else obj
    for i, m in enumerate(msgs if isinstance(msgs, list) else []):
        data = m.get("data", m) if isinstance(m, dict) else {}
        content = data.get("content") if isinstance(data, dict) else None
        for k, b in enumerate(content if isinstance(content, list) else []):
            if isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result"):
                where = "data.content" if data is not m else "content"
                raise _err(
                    f"an Anthropic {b['type']} block in a log read as OpenAI or LangChain: the "
                    "log mixes formats",
                    i,
                    f"{where}[{k}].type",
                )


def _check_ids(log: Log) -> None:
    """A call id used twice and a call answered twice are errors, naming the message."""
    first: dict[str, dict[str, int]] = {"call": {}, "result": {}}  # call id -> message
    for m in log.messages:
        for kind, ids in (("call", [c for c, _ in m.calls]), ("result", m.answers)):
            for k, cid in enumerate(ids):
                if cid in first[kind]:
                    what = (
                        f"call id {cid!r} ({m.calls[k][1]}) is used again"
                        if kind == "call"
                        else f"a second result for call id {cid!r}"
                    )
                    raise _err(
                        f"{what}: message {first[kind][cid]} "
                        f"{'has' if kind == 'call' else 'answers'} it",
                        m.index,
                        _id_field(log.format, m, k, kind),
                    )
                first[kind][cid] = m.index


def _id_field(fmt: str, m: Message, k: int, kind: str) -> str:
    """Where in message `m` its k-th call id (or k-th answered call id) stands."""
    raw = m.raw if isinstance(m.raw, dict) else {}
    if fmt == "anthropic":
        want = "tool_use" if kind == "call" else "tool_result"
        blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
        at = [j for j, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == want]
        return f"content[{at[k] if k < len(at) else k}].{'id' if kind == 'call' else 'tool_use_id'}"
    prefix = "data." if fmt == "langchain" else ""
    return f"{prefix}tool_call_id" if kind == "result" else f"{prefix}tool_calls[{k}].id"


def load(path: str | os.PathLike, format: str | None = None) -> Log:
    """Read a log file; a bad log raises LogError naming the file, the message and the field."""
    obj = read_json(path)  # bytes decoded as UTF-8, depth bounded: errors name file and line
    try:
        log = read(obj, format)
        if not log.messages:  # an empty message list is no request a provider accepts
            raise _err("the log holds no messages", None, "messages")
        return log
    except LogError as e:
        raise LogError(e.message, path=path, index=e.index, field=e.field) from None


# --- writers ----------------------------------------------------------------------------------


def _append_system(content, note: str):
    if isinstance(content, str) and content:
        return content + "\n" + note
    if isinstance(content, list):
        return [*content, {"type": "text", "text": note}]
    return note


def write(log: Log, kept, tombstones=()):
    """The kept messages in the log's own format, each unchanged, with the typed tombstones (one
    JSON object a line) appended to the system preamble (created if there is none)."""
    note = "\n".join(json.dumps(t) for t in tombstones)
    msgs = [log.messages[i].raw for i in sorted(kept)]
    if log.format == "anthropic":
        system = log.system if log.body is not None else None
        if note:
            system = _append_system(system, note)
        if log.body is None and system is None:
            return msgs
        body = dict(log.body or {})
        if system is not None:
            body["system"] = system
        body["messages"] = msgs
        return body
    if log.format == "openai":
        if note and msgs and msgs[0].get("role") in ("system", "developer"):
            msgs = [{**msgs[0], "content": _append_system(msgs[0].get("content"), note)}, *msgs[1:]]
        elif note:
            msgs = [{"role": "system", "content": note}, *msgs]
        # a request body comes back a body: every other key (model, tools, ...) as it was
        return msgs if log.body is None else {**log.body, "messages": msgs}
    if not note:
        return msgs
    if msgs and msgs[0]["type"] == "system":
        first = json.loads(json.dumps(msgs[0]))
        first["data"]["content"] = _append_system(first["data"].get("content"), note)
        return [first, *msgs[1:]]
    return [{"type": "system", "data": {"content": note, "type": "system"}}, *msgs]


def save(obj, path: str | os.PathLike) -> None:
    """Write a log as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


# --- the closure check ------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class LogReport:
    """What a set of kept messages leaves dangling."""

    orphan_results: tuple  # (message index, call id): a result whose call is gone
    orphan_calls: tuple  # (message index, call id, tool name): a call whose result is gone
    orphan_handles: dict  # handle -> message indices naming it, its definition gone
    tombstoned: tuple = ()  # handles a tombstone in the kept messages stands for

    @property
    def closed(self) -> bool:
        return not (self.orphan_results or self.orphan_calls or self.orphan_handles)

    def counts(self) -> dict:
        return {
            "orphan_calls": len(self.orphan_calls),
            "orphan_results": len(self.orphan_results),
            "orphan_handles": len(self.orphan_handles),
        }

    def to_dict(self) -> dict:
        return {
            "closed": self.closed,
            "orphan_calls": [
                {"message": i, "call_id": c, "tool": n} for i, c, n in self.orphan_calls
            ],
            "orphan_results": [{"message": i, "call_id": c} for i, c in self.orphan_results],
            "orphan_handles": [
                {"handle": h, "named_by_messages": list(v)} for h, v in self.orphan_handles.items()
            ],
            "tombstoned": list(self.tombstoned),
        }

    def lines(self) -> list[str]:
        out = [
            f"closure: {'OK' if self.closed else 'FAILED'}  orphaned calls={len(self.orphan_calls)} "
            f"results={len(self.orphan_results)} handles={len(self.orphan_handles)}"
            + (f"  tombstoned={len(self.tombstoned)}" if self.tombstoned else "")
        ]
        for i, c, n in self.orphan_calls:
            out.append(f"orphaned call: message {i}, {n} (id {c}) has no result")
        for i, c in self.orphan_results:
            out.append(f"orphaned result: message {i} answers call id {c}, which is not there")
        for h, v in self.orphan_handles.items():
            out.append(
                f"orphaned handle {h}: named by message {', '.join(map(str, v))}, "
                "its defining message is not there"
            )
        return out

    def __repr__(self) -> str:
        c = self.counts()
        return f"LogReport({'closed' if self.closed else 'OPEN'}, {c})"


def check(
    log: Log, kept=None, patterns: Patterns = CLOSURE_PATTERNS, index: SpanIndex | None = None
):
    """Closure of the kept messages (default: all): orphaned calls, results and handles."""
    n = len(log.messages)
    keep = set(range(n)) if kept is None else {int(i) for i in kept}
    call_in = {cid: m.index for m in log.messages for cid, _ in m.calls if m.index in keep}
    answered = {cid for m in log.messages if m.index in keep for cid in m.answers}
    res = tuple((i, c) for i in sorted(keep) for c in log.messages[i].answers if c not in call_in)
    calls = tuple(
        (i, c, name) for i in sorted(keep) for c, name in log.messages[i].calls if c not in answered
    )
    index = index or SpanIndex(patterns).extend(log.spans())
    rep = index.report(sorted(keep) + list(range(n, len(index))))  # + Anthropic's system
    handles = {h: tuple(int(s[1:]) for s in ids) for h, ids in rep.orphans.items()}
    return LogReport(res, calls, handles, rep.tombstoned)


# --- token counts -----------------------------------------------------------------------------


def approx_tokens(message: Message) -> int:
    """Default token counter, the rule of thumb of langchain-core's count_tokens_approximately:
    ceil(characters / 4) + 3 per message, over the role, the content text, the call names and
    arguments and the answered call ids. Plug in an exact counter (tiktoken, say) instead."""
    chars = len(message.role) + len(message.text)
    chars += sum(len(c) + len(n) for c, n in message.calls) + sum(len(c) for c in message.answers)
    return math.ceil(chars / 4) + 3
