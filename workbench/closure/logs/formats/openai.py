"""OpenAI chat completions: a message list or a request body `{"model", "messages", ...}`.

`assistant.tool_calls[]` of type `function` (`function.name / arguments`) or `custom`
(`custom.name / input`), `tool` messages with `tool_call_id`; the legacy `assistant.function_call`
answered by a `function` message (paired by order); `developer` counts as system. A call's results
come right after it, with only results between. A chat no other format claims reads as this one.
"""

from __future__ import annotations

import json

from workbench.closure.logs.formats.base import (
    ORDER,
    ByOrder,
    LogFormat,
    body_and_list,
    need,
    result_text,
    stub_text,
)
from workbench.closure.logs.logtypes import Log, Messages, err, media_of, text_of

# an OpenAI chat role -> the kind of message it is (a legacy `function` result is a tool result)
KINDS = {"system": "system", "developer": "system", "user": "user",
         "assistant": "assistant", "tool": "tool", "function": "tool"}  # fmt: skip


class OpenAIChat(LogFormat):
    name = "openai"
    precedence = 2
    plain = True
    results_follow_call = True

    def says(self, m):
        if not isinstance(m, dict):
            return None
        if "tool_calls" in m or "tool_call_id" in m or m.get("role") in ("tool", "function"):
            return "tool_calls" if "tool_calls" in m else "role"
        return "function_call" if "function_call" in m else None

    def read(self, obj) -> Log:
        body, messages = body_and_list(obj, self.key)
        order, out = ByOrder(), Messages()
        for i, m in enumerate(messages):
            _message(out, i, m, order)
        return Log(self.name, out, body=body)

    def id_field(self, log, m, k, kind) -> str:
        if kind == "call":
            return "function_call" if m.calls[k][0].startswith(ORDER) else f"tool_calls[{k}].id"
        raw = m.raw if isinstance(m.raw, dict) else {}
        return "name" if raw.get("role") == "function" else "tool_call_id"

    def stub(self, cid, name):
        return {"role": "tool", "tool_call_id": cid, "name": name, "content": stub_text(cid, name)}

    def as_langchain(self, raws):
        from langchain_core.messages import convert_to_messages

        return convert_to_messages(raws)

    def render(self, conv) -> list[dict]:
        out = []
        for step in conv:
            kind = step[0]
            if kind in ("system", "user", "assistant"):
                out.append({"role": kind, "content": step[1]})
            elif kind == "calls":
                calls = [
                    {"id": c, "type": "function",
                     "function": {"name": n, "arguments": json.dumps(a)}}
                    for c, n, a in step[2]
                ]  # fmt: skip
                out.append({"role": "assistant", "content": step[1] or None, "tool_calls": calls})
            else:
                for cid, res in step[1]:
                    content = res if isinstance(res, list) else result_text(res)
                    out.append({"role": "tool", "tool_call_id": cid, "content": content})
        return out


def _message(out: Messages, i: int, m, order: ByOrder) -> None:
    if not isinstance(m, dict):
        raise err("must be an object", i)
    role = need(m, "role", str, i)
    if role not in KINDS:
        raise err(f"unknown role {role!r}", i, "role")
    calls, args = [], []
    for k, tc in enumerate(m.get("tool_calls") or ()):
        cid = need(tc, "id", str, i, f"tool_calls[{k}].id")
        kind = tc.get("type", "function")
        if kind not in ("function", "custom"):
            raise err(f"unknown tool call type {kind!r}", i, f"tool_calls[{k}].type")
        fn = need(tc, kind, dict, i, f"tool_calls[{k}].{kind}")
        name = need(fn, "name", str, i, f"tool_calls[{k}].{kind}.name")
        key = "arguments" if kind == "function" else "input"
        a = fn.get(key) or ""
        if not isinstance(a, str):
            raise err("must be a string", i, f"tool_calls[{k}].{kind}.{key}")
        calls.append((cid, name))
        args.append(a)
    fc = m.get("function_call")
    if isinstance(fc, dict) and role == "assistant":
        calls.append((order.call(i), need(fc, "name", str, i, "function_call.name")))
        args.append(fc.get("arguments") or "")
    answers = ()
    if role == "tool":
        answers = (need(m, "tool_call_id", str, i),)
    elif role == "function":
        need(m, "name", str, i)
        answers = (order.answer(i, "name"),)
    content = m.get("content")
    text = content if isinstance(content, str) else text_of(content, i, "content")
    if args:
        text = "\n".join(x for x in [text, *args] if x)
    out.add(KINDS[role], text, tuple(calls), answers, m, tuple(args), media_of(content))


FORMAT = OpenAIChat()
