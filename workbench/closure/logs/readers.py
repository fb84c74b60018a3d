"""Agent logs in their wire formats, read as `Message`s and written back in the shape they came in.

Formats (each fixture under tests/fixtures/logs is written from the provider's documented wire
format, and `../shared/reallogs` holds requests real providers answered):

- `openai`: chat completions, a message list or a request body `{"model", "messages", ...}`:
  `assistant.tool_calls[]` of type `function` (`function.name / arguments`) or `custom`
  (`custom.name / input`), `tool` messages with `tool_call_id`; the legacy
  `assistant.function_call` answered by a `function` message; `developer` counts as system.
- `anthropic`: Messages, a request body `{"system"?, "messages", ...}` or its list: `tool_use`
  blocks `{id, name, input}`, `tool_result` blocks `{tool_use_id, content}` in the next user turn;
  server tools (`server_tool_use`, `mcp_tool_use`) answered in the assistant's own turn, or not at
  all in a turn the server paused (the last one); a `system` turn among the messages; a
  `compaction` block, which stands for the turns it replaced.
- `langchain`: `messages_to_dict` output `[{"type", "data"}]` (ai, human, system, tool, function,
  chat and their chunk types), `langchain_core.load.dumpd` output
  `[{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs"}]` (what LangSmith and
  `dumps` write), either as a list or as a state `{"messages": [...], ...}` (a LangGraph
  state), or LangChain message objects.
- `responses`: the OpenAI Responses API, an item list or a request body `{"input", ...}`:
  `message` items, `function_call` / `custom_tool_call` items with `call_id`, their `*_output`
  items, `reasoning` items; any other `*_call` item with a `call_id` pairs with the `*_output`
  item of that `call_id` (`tool_search_call` with `tool_search_output`); an item the server
  executed (`"execution": "server"`) needs no output; calls and outputs whose `call_id` is null
  pair by order; a `compaction` item stands for what it replaced.

`workbench.closure.logs.rules` pairs the calls and results (a call id used again after its call
was answered is another call) and checks what makes a log no valid request.
"""

from __future__ import annotations

import json

from workbench.closure.logs.logtypes import Log, Messages, err, media_of, text_of

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


ORDER = "@"  # the ids `ByOrder` gives (a wire id never starts with it), which pair by order


class ByOrder:
    """Calls without ids (OpenAI's legacy `function_call`, a Responses item whose `call_id` is
    null): each gets the id `@kind:i` and is answered by the next result of its kind."""

    def __init__(self):
        self.open: dict[str, list[str]] = {}

    def call(self, i: int, kind: str = "function") -> str:
        cid = f"{ORDER}{kind}:{i}"
        self.open.setdefault(kind, []).append(cid)
        return cid

    def answer(self, i: int, fld: str, kind: str = "function", required: bool = True):
        """The oldest open call of `kind`; with none, an error if the result needs one, else
        None (a result that stands alone)."""
        waiting = self.open.get(kind)
        if waiting:
            return waiting.pop(0)
        if required:
            raise err(
                "a function result with no function_call before it (a result for an unknown call)",
                i,
                fld,
            )
        return None


# an OpenAI chat role -> the kind of message it is (a legacy `function` result is a tool result)
OPENAI_KINDS = {"system": "system", "developer": "system", "user": "user",
                "assistant": "assistant", "tool": "tool", "function": "tool"}  # fmt: skip


def read_openai(obj) -> Log:
    """OpenAI chat completions (a list or a request body)."""
    body, messages = _body(obj, "messages")
    order, out = ByOrder(), Messages()
    for i, m in enumerate(messages):
        _openai_message(out, i, m, order)
    return Log("openai", out, body=body)


def _openai_message(out: Messages, i: int, m, order: ByOrder) -> None:
    if not isinstance(m, dict):
        raise err("must be an object", i)
    role = _need(m, "role", str, i)
    if role not in OPENAI_KINDS:
        raise err(f"unknown role {role!r}", i, "role")
    calls, args = [], []
    for k, tc in enumerate(m.get("tool_calls") or ()):
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
    fc = m.get("function_call")
    if isinstance(fc, dict) and role == "assistant":
        calls.append((order.call(i), _need(fc, "name", str, i, "function_call.name")))
        args.append(fc.get("arguments") or "")
    answers = ()
    if role == "tool":
        answers = (_need(m, "tool_call_id", str, i),)
    elif role == "function":
        _need(m, "name", str, i)
        answers = (order.answer(i, "name"),)
    content = m.get("content")
    text = content if isinstance(content, str) else text_of(content, i, "content")
    if args:
        text = "\n".join(x for x in [text, *args] if x)
    out.add(OPENAI_KINDS[role], text, tuple(calls), answers, m, tuple(args), media_of(content))


# Anthropic blocks that are calls: a client `tool_use` (its `tool_result` in the next user turn),
# and the server-run `server_tool_use` / `mcp_tool_use`, answered in the same assistant turn by a
# `*_tool_result` (`web_search_tool_result`, `mcp_tool_result`, ...)
ANTHROPIC_CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")
ANTHROPIC_ROLES = ("user", "assistant", "system")


def read_anthropic(obj) -> Log:
    """Anthropic Messages (a request body or its message list)."""
    body, messages = _body(obj, "messages")
    system = body.get("system") if body is not None else None
    if system is not None:
        text_of(system, None, "system")
    out, compactions, server = Messages(), [], []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise err("must be an object", i)
        role = _need(m, "role", str, i)
        if role not in ANTHROPIC_ROLES:
            raise err(f"must be 'user', 'assistant' or 'system', got {role!r}", i, "role")
        content = _need(m, "content", (str, list), i)
        calls, args, answers, said = [], [], [], False
        for k, b in enumerate(content if isinstance(content, list) else ()):
            t = b.get("type") if isinstance(b, dict) else None
            if t in ANTHROPIC_CALLS:
                cid = _need(b, "id", str, i, f"content[{k}].id")
                calls.append((cid, _need(b, "name", str, i, f"content[{k}].name")))
                args.append(b.get("input", {}))
                if t != "tool_use":
                    server.append((i, cid))
            elif isinstance(t, str) and t.endswith("tool_result"):
                if t != "tool_result" and role != "assistant":
                    raise err(f"a {t} block belongs in the assistant turn", i, f"content[{k}].type")
                answers.append(_need(b, "tool_use_id", str, i, f"content[{k}].tool_use_id"))
            elif t == "compaction":
                compactions.append(i)
            elif role == "user" and t == "text" and b.get("text", "").strip():
                said = True  # a person's words beside the results: the person's turn
        if isinstance(content, str) and content.strip():
            said = True
        # a user turn of tool results only is a tool message; one where the person also writes
        # is the person's turn (its results still pair with the call before it); in an assistant
        # turn, what a server-run tool returned defines ids, as a result does
        kind, given = role, None
        if role == "assistant" and (answers or compactions[-1:] == [i]):
            # what the server's tools returned, and what a compaction says of the turns it
            # replaced: they define ids, as a result does
            given = text_of([b for b in content if isinstance(b, dict) and (
                str(b.get("type")).endswith("tool_result") or b.get("type") == "compaction")],
                i, "content")  # fmt: skip
        elif answers and not said:
            kind = "tool"
        out.add(kind, text_of(content, i, "content"), tuple(calls), tuple(answers), m,
                tuple(args), media_of(content), given)  # fmt: skip
    # a server tool the last turn calls and does not answer: the server paused the turn, and
    # the request that sends it back lets the server go on (no result is the client's to send)
    last = len(out) - 1
    done = set(out.answers[last]) if out else set()
    paused = frozenset(c for i, c in server if i == last and c not in done)
    return Log("anthropic", out, system, body, server=paused, compactions=tuple(compactions))


def _lc_call(tc, i, where: str):
    """(id, name, arguments) of a LangChain tool call or tool-call chunk, naming what is wrong."""
    if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
        raise err("missing required field" if not isinstance(tc, dict) or "id" not in tc
                  else "must be a str", i, f"{where}.id")  # fmt: skip
    if not isinstance(tc.get("name"), str):
        raise err("missing required field" if "name" not in tc else "must be a str", i,
                  f"{where}.name")  # fmt: skip
    return tc["id"], tc["name"], tc.get("args", {})


def read_langchain(dicts) -> Log:
    """LangChain `messages_to_dict` output, `dumpd` entries, or LangChain message objects (read
    through their fields, without a dump)."""
    body = None
    if isinstance(dicts, dict) and isinstance(dicts.get("messages"), list):
        body, dicts = dicts, dicts["messages"]  # a state: its other keys are kept on writing
    if not isinstance(dicts, list):
        raise err("a LangChain dump is a list of {type, data} objects")
    order, out = ByOrder(), Messages()
    for i, d in enumerate(dicts):
        _lc_message(out, i, d, order)
    return Log("langchain", out, body=body)


def _arg_text(a) -> str:
    return a if isinstance(a, str) else repr(a if a is not None else {})


def _lc_message(out: Messages, i: int, d, order: ByOrder) -> None:
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
    calls, args = [], []
    content = data.get("content")
    text = content if isinstance(content, str) else text_of(content, i, f"{pre}content")
    if role == "assistant":
        tcs = data.get("tool_calls") or []
        key = "tool_calls"
        if not tcs and data.get("tool_call_chunks"):
            tcs, key = data["tool_call_chunks"], "tool_call_chunks"
        for k, tc in enumerate(tcs):
            cid, name, a = _lc_call(tc, i, f"{pre}{key}[{k}]")
            calls.append((cid, name))
            args.append(a)
        # a call whose arguments did not parse is still a call the model made: the provider
        # wants it answered (an agent answers it with an error), so it pairs like the others
        for tc in data.get("invalid_tool_calls") or []:
            if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                name = tc.get("name")
                calls.append((tc["id"], name if isinstance(name, str) else "invalid_tool_call"))
                args.append(tc.get("args") if isinstance(tc.get("args"), str) else "")
        extra = data.get("additional_kwargs") or {}
        if not calls and isinstance(extra.get("tool_calls"), list):
            # an older dump: the calls only in OpenAI's shape, where langchain-core reads them
            for k, tc in enumerate(extra["tool_calls"]):
                where = f"{pre}additional_kwargs.tool_calls[{k}]"
                fn = _need(tc, "function", dict, i, f"{where}.function")
                calls.append((_need(tc, "id", str, i, f"{where}.id"),
                              _need(fn, "name", str, i, f"{where}.function.name")))  # fmt: skip
                a = fn.get("arguments")
                args.append(a if isinstance(a, str) else "")
        fc = extra.get("function_call")
        if isinstance(fc, dict) and not calls:
            where = f"{pre}additional_kwargs.function_call.name"
            calls.append((order.call(i), _need(fc, "name", str, i, where)))
            args.append(fc.get("arguments") or "")
    answers = ()
    if role == "tool" and (kind != "chat" or data.get("tool_call_id")):
        answers = (_need(data, "tool_call_id", str, i, f"{pre}tool_call_id"),)
    elif role == "function":
        answers, role = (order.answer(i, f"{pre}name"),), "tool"
    if args:
        text = "\n".join(x for x in [text, *map(_arg_text, args)] if x)
    out.add(role, text, tuple(calls), answers, d, tuple(args), media_of(content))


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
    out, order, server, compactions = Messages(), ByOrder(), [], []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise err("must be an object", i)
        kind = it.get("type", "message")
        if not isinstance(kind, str):
            raise err("must be a string", i, "type")
        calls, args, answers = [], [], []
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
        elif kind == "compaction":  # stands for the items it replaced, as a system note would
            role, text = "system", ""
            compactions.append(i)
        elif kind.endswith("_output") and "call_id" in it:
            role = "tool"
            cid = it["call_id"]
            if cid is None:  # paired by order with the call of its kind
                of = kind.removesuffix("_output").removesuffix("_call")
                cid = order.answer(i, "call_id", of, required=False)
            elif not isinstance(cid, str):
                raise err("must be a string or null", i, "call_id")
            answers = (cid,) if cid is not None else ()
            out_val = it.get("output", it.get("tools", ""))
            if isinstance(out_val, dict | list) and not _parts(out_val):
                text = json.dumps(out_val, ensure_ascii=False)  # (a screenshot, a tool list)
            else:
                text = out_val if isinstance(out_val, str) else text_of(out_val, i, "output")
        elif kind.endswith("_call") and "call_id" not in it and (inline := _inline_output(it)):
            # a call the server ran, its output in the same item (mcp_call, file_search_call,
            # code_interpreter_call): what it returned defines ids, as a result does
            role, text = "tool", inline
        elif kind.endswith("_call"):
            role = "assistant"
            text = ""
            if "call_id" in it:
                name = it.get("name") if isinstance(it.get("name"), str) else kind
                if kind in ("function_call", "custom_tool_call"):
                    name = _need(it, "name", str, i)
                cid = it["call_id"]
                if cid is None:
                    cid = order.call(i, kind.removesuffix("_call"))
                elif not isinstance(cid, str):
                    raise err("must be a string or null", i, "call_id")
                if it.get("execution") == "server":
                    server.append(cid)  # the server ran it: no output is the client's to send
                calls = [(cid, name)]
                a = it.get("arguments", it.get("input", ""))
                args = [a]
                text = a if isinstance(a, str) else json.dumps(a, ensure_ascii=False)
        else:  # other items (web search results, item references ...): carried, not paired
            role, text = "assistant", ""
        out.add(role, text, tuple(calls), tuple(answers), it, tuple(args),
                media_of(it.get("content", it.get("output"))))  # fmt: skip
    carried = ()
    if body is not None and (body.get("previous_response_id") or body.get("conversation")):
        # a continuation: its outputs may answer calls of the stored response, not of this input
        called = {cid for calls in out.calls for cid, _ in calls}
        carried = tuple(k for k, a in enumerate(out.answers) if a and a[0] not in called)
    return Log("responses", out, system, body, key="input", carried=carried,
               server=frozenset(server), compactions=tuple(compactions))  # fmt: skip


def _parts(v) -> bool:
    """Is `v` a list of content parts (each an object with a `type`)?"""
    return isinstance(v, list) and all(isinstance(p, dict) and "type" in p for p in v)


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
