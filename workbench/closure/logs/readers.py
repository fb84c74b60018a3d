"""Agent logs in their wire formats, read as `Message`s and written back in the shape they came in.

Formats (each fixture under tests/fixtures/logs is written from the provider's documented wire
format):

- `openai`: chat completions, a message list or a request body `{"model", "messages", ...}`:
  `assistant.tool_calls[]` of type `function` (`function.name / arguments`) or `custom`
  (`custom.name / input`), `tool` messages with `tool_call_id`; the legacy
  `assistant.function_call` answered by a `function` message; `developer` counts as system.
- `anthropic`: Messages, a request body `{"system"?, "messages", ...}` or its list: `tool_use`
  blocks `{id, name, input}`, `tool_result` blocks `{tool_use_id, content}` in the next user turn.
- `langchain`: `messages_to_dict` output `[{"type", "data"}]` (ai, human, system, tool, function,
  chat and their chunk types), `langchain_core.load.dumpd` output
  `[{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs"}]` (what LangSmith and
  `dumps` write), either as a list or as a state `{"messages": [...], ...}` (a LangGraph
  state), or LangChain message objects.
- `responses`: the OpenAI Responses API, an item list or a request body `{"input", ...}`:
  `message` items, `function_call` / `custom_tool_call` items with `call_id`, their `*_output`
  items, `reasoning` items; any other `*_call` item with a `call_id` pairs with its `*_call_output`.

`workbench.closure.logs.rules` checks what makes a log no valid request, each as one error naming
the message and the field: a call id used twice, a second result for a call, a result for an id no call has, a result
before its call, the provider's order rules (OpenAI: a call's results right after it; Anthropic:
a user turn first, turns alternating, every `tool_result` in the user turn right after its
`tool_use`, before any other block of that turn), and a log that mixes formats.
"""

from __future__ import annotations

import json

from workbench.closure.logs.logtypes import Log, Message, err, text_of

FORMATS = ("openai", "anthropic", "langchain", "responses")
LC_TYPES = {
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "human": "user",
    "HumanMessageChunk": "user",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "function",
    "FunctionMessageChunk": "function",
    "chat": "chat",
    "ChatMessageChunk": "chat",
}
LC_CLASSES = {  # the class a `dumpd` entry names -> the message type it stands for
    "AIMessage": "ai",
    "HumanMessage": "human",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    **{k: k for k in LC_TYPES if k.endswith("Chunk")},
}


def lc_serialized(d) -> bool:
    """Whether a dict is a `langchain_core.load.dumpd` entry (`{"lc", "type": "constructor", "id",
    "kwargs"}`)."""
    return isinstance(d, dict) and "lc" in d and d.get("type") == "constructor"


CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}
RESPONSES_MESSAGE_ROLES = ("user", "assistant", "system", "developer")


def _need(obj, key, kind, index, fld=None):
    if not isinstance(obj, dict) or key not in obj:
        raise err("missing required field", index, fld or key)
    if not isinstance(obj[key], kind):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise err(f"must be a {name}", index, fld or key)
    return obj[key]


def _body(obj, key):
    """(body or None, the message list) of a request body or a bare list."""
    if isinstance(obj, dict):
        return obj, _need(obj, key, list, None)
    if not isinstance(obj, list):
        raise err(f"expected a list of messages or a request body with '{key}'")
    return None, obj


LEGACY = "function_call@"  # the ids `_Legacy` gives, which pair by order


class _Legacy:
    """Calls without ids (OpenAI's legacy `function_call`): each gets the id `function_call@i`
    and is answered by the next function result."""

    def __init__(self):
        self.open: list[str] = []
        self.used = False

    def call(self, i: int) -> str:
        self.used = True
        cid = f"{LEGACY}{i}"
        self.open.append(cid)
        return cid

    def answer(self, i: int, fld: str) -> str:
        if not self.open:
            raise err(
                "a function result with no function_call before it (a result for an unknown call)",
                i,
                fld,
            )
        return self.open.pop(0)


# an OpenAI chat role -> the kind of message it is (a legacy `function` result is a tool result)
OPENAI_KINDS = {"system": "system", "developer": "system", "user": "user",
                "assistant": "assistant", "tool": "tool", "function": "tool"}  # fmt: skip


def read_openai(obj) -> Log:
    """OpenAI chat completions (a list or a request body); the common shapes on a short path that
    reads them as the full path does (`_openai_message`, which names what is wrong)."""
    body, messages = _body(obj, "messages")
    out, legacy = [], _Legacy()
    append = out.append
    none = ()  # one shared empty tuple for no calls / no answers
    for i, m in enumerate(messages):
        if type(m) is dict and "function_call" not in m:
            role, content = m.get("role"), m.get("content")
            # a legacy function result is paired by order (`_Legacy`): the full path's
            kind = OPENAI_KINDS.get(role) if type(role) is str and role != "function" else None
            if kind is not None and (content is None or type(content) is str):
                tcs = m.get("tool_calls")
                if kind == "tool":
                    cid = m.get("tool_call_id")
                    if type(cid) is str and not tcs:
                        append(Message(i, "tool", content or "", none, [cid], m))
                        continue
                elif not tcs:
                    append(Message(i, kind, content or "", none, none, m))
                    continue
                else:
                    short = _openai_short_calls(tcs)
                    if short is not None:
                        calls, args = short
                        text = "\n".join(x for x in [content, *args] if x)
                        append(Message(i, kind, text, calls, none, m))
                        continue
        append(_openai_message(i, m, legacy))
    return Log("openai", out, body=body, by_order=legacy.used)


def _openai_short_calls(tcs):
    """(calls, argument texts) of well-formed `function` tool calls, else None."""
    if type(tcs) is not list:
        return None
    calls, args = [], []
    for tc in tcs:
        if type(tc) is not dict:
            return None
        cid, fn = tc.get("id"), tc.get("function")
        if type(cid) is not str or type(fn) is not dict or tc.get("type", "function") != "function":
            return None
        name, a = fn.get("name"), fn.get("arguments") or ""
        if type(name) is not str or type(a) is not str:
            return None
        calls.append((cid, name))
        args.append(a)
    return calls, args


def _openai_message(i: int, m, legacy: _Legacy) -> Message:
    """One OpenAI chat message, every shape, naming what is wrong."""
    if not isinstance(m, dict):
        raise err("must be an object", i)
    role = _need(m, "role", str, i)
    if role not in OPENAI_KINDS:
        raise err(f"unknown role {role!r}", i, "role")
    calls, args = [], []
    for k, tc in enumerate(m.get("tool_calls") or []):
        cid = _need(tc, "id", str, i, f"tool_calls[{k}].id")
        kind = tc.get("type", "function")
        if kind not in ("function", "custom"):
            raise err(f"unknown tool call type {kind!r}", i, f"tool_calls[{k}].type")
        fn = _need(tc, kind, dict, i, f"tool_calls[{k}].{kind}")
        name = _need(fn, "name", str, i, f"tool_calls[{k}].{kind}.name")
        key = "arguments" if kind == "function" else "input"
        a = fn.get(key) or ""
        if not isinstance(a, str):
            raise err("must be a string", i, f"tool_calls[{k}].{kind}.{key}")
        calls.append((cid, name))
        args.append(a)
    if isinstance(m.get("function_call"), dict) and role == "assistant":
        fc = m["function_call"]
        calls.append((legacy.call(i), _need(fc, "name", str, i, "function_call.name")))
        args.append(fc.get("arguments") or "")
    answers = []
    if role == "tool":
        answers = [_need(m, "tool_call_id", str, i)]
    elif role == "function":
        _need(m, "name", str, i)
        answers = [legacy.answer(i, "name")]
    text = "\n".join(x for x in [text_of(m.get("content"), i, "content"), *args] if x)
    return Message(i, OPENAI_KINDS[role], text, calls, answers, m)


# Anthropic blocks that are calls: a client `tool_use` (its `tool_result` in the next user turn),
# and the server-run `server_tool_use` / `mcp_tool_use`, answered in the same assistant turn by a
# `*_tool_result` (`web_search_tool_result`, `mcp_tool_result`, ...)
ANTHROPIC_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")


def read_anthropic(obj) -> Log:
    """Anthropic Messages (a request body or its message list)."""
    body, messages = _body(obj, "messages")
    system = body.get("system") if body is not None else None
    if system is not None:
        text_of(system, None, "system")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise err("must be an object", i)
        role = _need(m, "role", str, i)
        if role not in ("user", "assistant"):
            raise err(f"must be 'user' or 'assistant', got {role!r}", i, "role")
        content = _need(m, "content", (str, list), i)
        calls, answers, said = [], [], False
        for k, b in enumerate(content if isinstance(content, list) else []):
            t = b.get("type") if isinstance(b, dict) else None
            if t in ANTHROPIC_CALLS:
                calls.append(
                    (
                        _need(b, "id", str, i, f"content[{k}].id"),
                        _need(b, "name", str, i, f"content[{k}].name"),
                    )
                )
            elif isinstance(t, str) and t.endswith("tool_result"):
                if t != "tool_result" and role != "assistant":
                    raise err(f"a {t} block belongs in the assistant turn", i, f"content[{k}].type")
                answers.append(_need(b, "tool_use_id", str, i, f"content[{k}].tool_use_id"))
            elif role == "user" and t == "text" and b.get("text", "").strip():
                said = True  # a person's words beside the results: the person's turn
        if isinstance(content, str) and content.strip():
            said = True
        # a user turn of tool results only is a tool message; one where the person also writes
        # is the person's turn (its results still pair with the call before it); an assistant
        # turn holding what a server-run tool returned defines handles, as a result does
        kind = role
        if answers and (role == "assistant" or not said):
            kind = "tool"
        out.append(Message(i, kind, text_of(content, i, "content"), calls, answers, m))
    return Log("anthropic", out, system, body)


def _lc_call(tc, i, where: str):
    """(id, name, argument text) of a LangChain tool call or tool-call chunk (the slow path,
    which names what is wrong)."""
    if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
        raise err("missing required field" if not isinstance(tc, dict) or "id" not in tc
                  else "must be a str", i, f"{where}.id")  # fmt: skip
    if not isinstance(tc.get("name"), str):
        raise err("missing required field" if "name" not in tc else "must be a str", i,
                  f"{where}.name")  # fmt: skip
    a = tc.get("args", {})
    return tc["id"], tc["name"], a if isinstance(a, str) else repr(a)


def read_langchain(dicts) -> Log:
    """LangChain `messages_to_dict` output, or LangChain message objects (read through their
    fields, without a dump: one pass, no copy; the common shapes on a short path)."""
    body = None
    if isinstance(dicts, dict) and isinstance(dicts.get("messages"), list):
        body, dicts = dicts, dicts["messages"]  # a state: its other keys are kept on writing
    if not isinstance(dicts, list):
        raise err("a LangChain dump is a list of {type, data} objects")
    out, legacy = [], _Legacy()
    append = out.append
    none = ()  # one shared empty tuple for no calls / no answers: fewer objects for the collector
    for i, d in enumerate(dicts):
        data = None if type(d) is dict else getattr(d, "__dict__", None)
        if data is not None:  # an object: the short path when its shape is the usual one
            kind, content = data.get("type"), data.get("content")
            if type(content) is str:
                if kind == "tool":
                    cid = data.get("tool_call_id")
                    if type(cid) is str:
                        append(Message(i, "tool", content, none, (cid,), d))
                        continue
                elif kind == "human" or kind == "system":
                    append(
                        Message(i, "user" if kind == "human" else "system", content, none, none, d)
                    )
                    continue
                elif (
                    kind == "ai"
                    and not data.get("additional_kwargs")
                    and not data.get("invalid_tool_calls")
                ):
                    tcs = data.get("tool_calls")
                    if not tcs:
                        append(Message(i, "assistant", content, none, none, d))
                        continue
                    calls = _lc_short_calls(tcs)
                    if calls is not None:  # the text (content, arguments) is joined when used
                        append(Message(i, "assistant", (content, tcs), calls, none, d))
                        continue
        append(_lc_message(i, d, legacy))
    return Log("langchain", out, body=body, by_order=legacy.used)


def _lc_short_calls(tcs):
    """The (id, name) calls of an AI message whose tool calls are well-formed dicts, else None."""
    calls = []
    for tc in tcs:
        if type(tc) is not dict:
            return None
        cid, name = tc.get("id"), tc.get("name")
        if type(cid) is not str or type(name) is not str:
            return None
        calls.append((cid, name))
    return calls


def _lc_message(i: int, d, legacy: _Legacy) -> Message:
    """One LangChain message, every shape (dumps and objects), naming what is wrong."""
    if lc_serialized(d):
        pre = "kwargs."
        path = _need(d, "id", list, i)
        kind = LC_CLASSES.get(path[-1]) if path and isinstance(path[-1], str) else None
        if kind is None:
            raise err(f"not a LangChain message class: {path!r}", i, "id")
        data = _need(d, "kwargs", dict, i)
    elif isinstance(d, dict):
        pre = "data."
        kind = _need(d, "type", str, i)
        data = _need(d, "data", dict, i)
    else:
        pre, kind, data = "", getattr(d, "type", None), getattr(d, "__dict__", None) or {}
        if isinstance(data.get("content"), list):  # another format's blocks mix formats
            lc_blocks(data, i)
    role = LC_TYPES.get(kind)
    if role is None:
        raise err(f"unknown message type {kind!r}", i, "type")
    if role == "chat":
        r = _need(data, "role", str, i, f"{pre}role")
        # a ChatMessage may carry any speaker ("critic"): a message like a person's, which no
        # call answers and which is no system prompt
        role = CHAT_ROLES.get(r, "chat")
    calls, parts = [], []
    content = data.get("content")
    if isinstance(content, str):
        if content:
            parts.append(content)
    else:
        parts.append(text_of(content, i, f"{pre}content"))
    if role == "assistant":
        tcs = data.get("tool_calls") or []
        key = "tool_calls"
        if not tcs and data.get("tool_call_chunks"):
            tcs, key = data["tool_call_chunks"], "tool_call_chunks"
        for k, tc in enumerate(tcs):
            cid, name, a = _lc_call(tc, i, f"{pre}{key}[{k}]")
            calls.append((cid, name))
            parts.append(a)
        # a call whose arguments did not parse is still a call the model made: the provider
        # wants it answered (an agent answers it with an error), so it pairs like the others
        for tc in data.get("invalid_tool_calls") or []:
            if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                name = tc.get("name")
                calls.append((tc["id"], name if isinstance(name, str) else "invalid_tool_call"))
                parts.append(tc.get("args") if isinstance(tc.get("args"), str) else "")
        extra = data.get("additional_kwargs") or {}
        if not calls and isinstance(extra.get("tool_calls"), list):
            # an older dump: the calls only in OpenAI's shape, where langchain-core reads them
            for k, tc in enumerate(extra["tool_calls"]):
                where = f"{pre}additional_kwargs.tool_calls[{k}]"
                fn = _need(tc, "function", dict, i, f"{where}.function")
                calls.append((_need(tc, "id", str, i, f"{where}.id"),
                              _need(fn, "name", str, i, f"{where}.function.name")))  # fmt: skip
                a = fn.get("arguments")
                parts.append(a if isinstance(a, str) else "")
        fc = extra.get("function_call")
        if isinstance(fc, dict) and not calls:
            where = f"{pre}additional_kwargs.function_call.name"
            calls.append((legacy.call(i), _need(fc, "name", str, i, where)))
            parts.append(fc.get("arguments") or "")
    answers = []
    if role == "tool" and (kind != "chat" or data.get("tool_call_id")):
        answers = [_need(data, "tool_call_id", str, i, f"{pre}tool_call_id")]
    elif role == "function":
        answers, role = [legacy.answer(i, f"{pre}name")], "tool"
    text = parts[0] if len(parts) == 1 else "\n".join(x for x in parts if x)
    return Message(i, role, text, calls, answers, d)


def read_responses(obj) -> Log:
    """The OpenAI Responses API: an input item list or a request body `{"input", ...}` (a string
    input is one user message)."""
    body, items = obj, obj
    if isinstance(obj, dict):
        items = obj.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        elif not isinstance(items, list):
            raise err(
                "missing required field" if "input" not in obj else "must be a list or a string",
                None,
                "input",
            )
    else:
        body = None
    system = body.get("instructions") if body is not None else None
    if system is not None and not isinstance(system, str):
        raise err("must be a string", None, "instructions")
    out = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise err("must be an object", i)
        kind = it.get("type", "message")
        if not isinstance(kind, str):
            raise err("must be a string", i, "type")
        calls, answers = [], []
        if kind == "message":
            role = _need(it, "role", str, i)
            if role not in RESPONSES_MESSAGE_ROLES:
                raise err(f"unknown role {role!r}", i, "role")
            text = text_of(_need(it, "content", (str, list), i), i, "content")
            role = "system" if role == "developer" else role
        elif kind == "reasoning":
            role = "assistant"
            text = "\n".join(
                text_of(it.get(k) or [], i, k) for k in ("summary", "content") if it.get(k)
            )
        elif kind.endswith("_call_output"):
            role = "tool"
            answers = [_need(it, "call_id", str, i)]
            out_val = it.get("output", "")
            if isinstance(out_val, dict):  # an object (a computer_call's screenshot): its JSON
                text = json.dumps(out_val, ensure_ascii=False)
            else:
                text = out_val if isinstance(out_val, str) else text_of(out_val, i, "output")
        elif kind.endswith("_call") and "call_id" not in it and (inline := _inline_output(it)):
            # a call the server ran, its output in the same item (mcp_call, file_search_call,
            # code_interpreter_call): what it returned defines handles, as a result does
            role, text = "tool", inline
        elif kind.endswith("_call"):
            role = "assistant"
            text = ""
            if "call_id" in it:
                name = it.get("name") if isinstance(it.get("name"), str) else kind
                if kind in ("function_call", "custom_tool_call"):
                    name = _need(it, "name", str, i)
                calls = [(_need(it, "call_id", str, i), name)]
                a = it.get("arguments", it.get("input", ""))
                text = a if isinstance(a, str) else json.dumps(a)
        else:  # other items (web search results, item references ...): carried, not paired
            role, text = "assistant", ""
        out.append(Message(i, role, text, calls, answers, it))
    carried = ()
    if body is not None and (body.get("previous_response_id") or body.get("conversation")):
        # a continuation: its outputs may answer calls of the stored response, not of this input
        called = {cid for m in out for cid, _ in m.calls}
        carried = tuple(m.index for m in out if m.answers and m.answers[0] not in called)
    return Log("responses", out, system, body, key="input", carried=carried)


def _inline_output(it: dict) -> str:
    """The text of what a server-run call item returned (`output`, `outputs`, `results`), or ""."""
    parts = []
    for k in ("output", "outputs", "results"):
        v = it.get(k)
        if isinstance(v, str):
            parts.append(v)
        elif v:
            parts.append(json.dumps(v, ensure_ascii=False))
    return "\n".join(parts)


READERS = {
    "openai": read_openai,
    "anthropic": read_anthropic,
    "langchain": read_langchain,
    "responses": read_responses,
}


def lc_blocks(data: dict, i: int, pre: str = "data.") -> None:
    """LangChain keeps an Anthropic model's `tool_use` blocks in the AI message's content beside
    its `tool_calls`: that is LangChain's own shape. A `tool_result` block, or a `tool_use` the
    message's tool_calls do not hold, is another format's."""
    ids = {
        tc.get("id")
        for key in ("tool_calls", "invalid_tool_calls")
        for tc in data.get(key) or []
        if isinstance(tc, dict)
    }
    c = data.get("content")
    for k, b in enumerate(c if isinstance(c, list) else []):
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_result" or b.get("type") == "tool_use" and b.get("id") not in ids:
            raise err(
                f"an Anthropic {b['type']} block in a LangChain message: the log mixes formats",
                i,
                f"{pre}content[{k}].type",
            )
