"""LangChain messages: `messages_to_dict` output `[{"type", "data"}]` (ai, human, system, tool,
function, chat and their chunk types), `langchain_core.load.dumpd` output `[{"lc": 1, "type":
"constructor", "id": [..., "AIMessage"], "kwargs"}]` (what LangSmith and `dumps` write), either as
a list or as a state `{"messages": [...], ...}` (a LangGraph state), or LangChain message objects.
A call's results come right after it, as the chat models LangChain sends them to require.
"""

from __future__ import annotations

import copy

from workbench.closure.logs.formats.base import ByOrder, LogFormat, append_note, need, result_text
from workbench.closure.logs.logtypes import Log, Messages, err, media_of, text_of

TYPES = {
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
CLASSES = {  # the class a `dumpd` entry names -> the message type it stands for
    "AIMessage": "ai",
    "HumanMessage": "human",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    **{k: k for k in TYPES if k.endswith("Chunk")},
}
CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}


def serialized(d) -> bool:
    """Whether a dict is a `langchain_core.load.dumpd` entry (`{"lc", "type": "constructor", "id",
    "kwargs"}`)."""
    return isinstance(d, dict) and "lc" in d and d.get("type") == "constructor"


def as_dump(raw):
    """A `dumpd` entry as the `messages_to_dict` entry of the message its class and kwargs stand
    for (what `messages_from_dict` reads); anything else unchanged."""
    if serialized(raw):
        return {"type": CLASSES[raw["id"][-1]], "data": raw["kwargs"]}
    return raw


class LangChainMessages(LogFormat):
    name = "langchain"
    title = "LangChain"
    precedence = 0
    objects = True
    results_follow_call = True

    def says(self, m):
        if not isinstance(m, dict):  # a message object: its class or one it derives from
            lc = any(c.__module__.startswith("langchain_core") for c in type(m).__mro__)
            return "type" if lc else None
        return "type" if ("data" in m and "type" in m) or serialized(m) else None

    def check_message(self, m, i) -> None:
        if isinstance(m, dict) and isinstance(m.get("data"), dict):
            _blocks(m["data"], i)
        elif serialized(m) and isinstance(m.get("kwargs"), dict):
            _blocks(m["kwargs"], i, "kwargs.")

    def read(self, obj) -> Log:
        body = None
        if isinstance(obj, dict) and isinstance(obj.get("messages"), list):
            body, obj = obj, obj["messages"]  # a state: its other keys are kept on writing
        if not isinstance(obj, list):
            raise err("a LangChain dump is a list of {type, data} objects")
        order, out = ByOrder(), Messages()
        for i, d in enumerate(obj):
            _message(out, i, d, order)
        return Log(self.name, out, body=body)

    def id_field(self, log, m, k, kind) -> str:
        pre = "kwargs." if serialized(m.raw) else "data."
        return f"{pre}tool_call_id" if kind == "result" else f"{pre}tool_calls[{k}].id"

    def noted(self, body, items, note):
        """The note joined to the leading system message, or in a new one, written as the items
        are: `dumpd` entries, `messages_to_dict` entries or message objects."""
        first = items[0] if items else None
        if serialized(first):
            if first["id"][-1] in ("SystemMessage", "SystemMessageChunk"):
                first = copy.deepcopy(first)
                first["kwargs"]["content"] = append_note(first["kwargs"].get("content"), note)
                return self.join(body, [first, *items[1:]])
            system = ["langchain", "schema", "messages", "SystemMessage"]  # as `dumpd` writes one
            entry = {"lc": 1, "type": "constructor", "id": system}
            return self.join(body, [{**entry, "kwargs": {"content": note, "type": "system"}},
                                    *items])  # fmt: skip
        if isinstance(first, dict):
            if first["type"] in ("system", "SystemMessageChunk"):
                first = copy.deepcopy(first)
                first["data"]["content"] = append_note(first["data"].get("content"), note)
                return self.join(body, [first, *items[1:]])
            new = {"type": "system", "data": {"content": note, "type": "system"}}
            return self.join(body, [new, *items])
        from langchain_core.messages import SystemMessage  # objects in, objects out

        if first is not None and first.type == "system":
            first = first.model_copy(update={"content": append_note(first.content, note)})
            return self.join(body, [first, *items[1:]])
        return self.join(body, [SystemMessage(note), *items])

    def as_langchain(self, raws):
        from langchain_core.messages import messages_from_dict

        return messages_from_dict([as_dump(r) for r in raws])

    def render(self, conv) -> list[dict]:
        """`messages_to_dict` shape, written without langchain-core."""

        def msg(kind, **data):
            base = {"content": "", "additional_kwargs": {}, "response_metadata": {}, "type": kind}
            base.update({"name": None, "id": None})
            base.update(data)
            return {"type": kind, "data": base}

        out = []
        for step in conv:
            kind = step[0]
            if kind == "system":
                out.append(msg("system", content=step[1]))
            elif kind == "user":
                out.append(msg("human", content=step[1]))
            elif kind == "assistant":
                out.append(msg("ai", content=step[1], tool_calls=[], invalid_tool_calls=[]))
            elif kind == "calls":
                calls = [
                    {"name": n, "args": a, "id": c, "type": "tool_call"} for c, n, a in step[2]
                ]
                out.append(msg("ai", content=step[1], tool_calls=calls, invalid_tool_calls=[]))
            else:
                for cid, res in step[1]:
                    content = res if isinstance(res, list) else result_text(res)
                    out.append(msg("tool", content=content, tool_call_id=cid, artifact=None,
                                   status="success"))  # fmt: skip
        return out


def _call(tc, i, where: str):
    """(id, name, arguments) of a LangChain tool call or tool-call chunk, naming what is wrong."""
    if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
        raise err("missing required field" if not isinstance(tc, dict) or "id" not in tc
                  else "must be a str", i, f"{where}.id")  # fmt: skip
    if not isinstance(tc.get("name"), str):
        raise err("missing required field" if "name" not in tc else "must be a str", i,
                  f"{where}.name")  # fmt: skip
    return tc["id"], tc["name"], tc.get("args", {})


def _arg_text(a) -> str:
    return a if isinstance(a, str) else repr(a if a is not None else {})


def _message(out: Messages, i: int, d, order: ByOrder) -> None:
    """One LangChain message, every shape (dumps and objects), naming what is wrong."""
    if serialized(d):
        pre = "kwargs."
        path = need(d, "id", list, i)
        kind = CLASSES.get(path[-1]) if path and isinstance(path[-1], str) else None
        if kind is None:
            raise err(f"not a LangChain message class: {path!r}", i, "id")
        data = need(d, "kwargs", dict, i)
    elif isinstance(d, dict):
        pre = "data."
        kind = need(d, "type", str, i)
        data = need(d, "data", dict, i)
    else:
        pre, kind, data = "", getattr(d, "type", None), getattr(d, "__dict__", None) or {}
        if isinstance(data.get("content"), list):  # another format's blocks mix formats
            _blocks(data, i)
    role = TYPES.get(kind)
    if role is None:
        raise err(f"unknown message type {kind!r}", i, "type")
    if role == "chat":
        r = need(data, "role", str, i, f"{pre}role")
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
            cid, name, a = _call(tc, i, f"{pre}{key}[{k}]")
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
                fn = need(tc, "function", dict, i, f"{where}.function")
                calls.append((need(tc, "id", str, i, f"{where}.id"),
                              need(fn, "name", str, i, f"{where}.function.name")))  # fmt: skip
                a = fn.get("arguments")
                args.append(a if isinstance(a, str) else "")
        fc = extra.get("function_call")
        if isinstance(fc, dict) and not calls:
            where = f"{pre}additional_kwargs.function_call.name"
            calls.append((order.call(i), need(fc, "name", str, i, where)))
            args.append(fc.get("arguments") or "")
    answers = ()
    if role == "tool" and (kind != "chat" or data.get("tool_call_id")):
        answers = (need(data, "tool_call_id", str, i, f"{pre}tool_call_id"),)
    elif role == "function":
        answers, role = (order.answer(i, f"{pre}name"),), "tool"
    if args:
        text = "\n".join(x for x in [text, *map(_arg_text, args)] if x)
    out.add(role, text, tuple(calls), answers, d, tuple(args), media_of(content))


def _blocks(data: dict, i: int, pre: str = "data.") -> None:
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


FORMAT = LangChainMessages()
