"""The OpenAI Responses API: an input item list or a request body `{"input", ...}`.

`message` items, `function_call` / `custom_tool_call` items with `call_id`, their `*_output`
items, `reasoning` items (each followed by the item it reasoned for); any other `*_call` item with
a `call_id` pairs with the `*_output` item of that `call_id` (`tool_search_call` with
`tool_search_output`); an item the server executed (`"execution": "server"`) needs no output;
calls and outputs whose `call_id` is null pair by order; a `compaction` item stands for what it
replaced; a string input is one user message. A body's `instructions` are its system prompt.
"""

from __future__ import annotations

import json

from workbench.closure.logs.formats.anthropic import own_content
from workbench.closure.logs.formats.base import (
    ByOrder,
    LogFormat,
    append_note,
    need,
    result_text,
    stub_text,
)
from workbench.closure.logs.logtypes import Log, Messages, err, media_of, text_of

ROLES = ("user", "assistant", "system", "developer")


class ResponsesInput(LogFormat):
    name = "responses"
    key = "input"
    system_key = "instructions"
    precedence = 1
    text_part = "input_text"

    def says(self, m):
        if not isinstance(m, dict):
            return None
        t = m.get("type")
        if (
            isinstance(t, str)
            and t != "message"
            and (
                t in ("reasoning", "item_reference", "compaction")
                or t.endswith("_call")
                or t.endswith("_output")
            )
        ):
            return "type"
        if t == "message" and not own_content(m.get("content")):
            return "type"  # (an Anthropic response object is a "message" too)
        c = m.get("content")
        for k, b in enumerate(c if isinstance(c, list) else []):
            if isinstance(b, dict) and b.get("type") in ("input_text", "output_text"):
                return f"content[{k}].type"
        return None

    def says_body(self, obj) -> bool:
        return "input" in obj and "messages" not in obj

    def read(self, obj) -> Log:
        return _read(obj)

    def turn_rules(self, log) -> None:
        """A `reasoning` item is sent with the item it reasoned for (a call, or the assistant's
        message) right after it: the API rejects one followed by anything else."""
        msgs = log.messages
        for k, raw in enumerate(msgs.raw):
            if not (isinstance(raw, dict) and raw.get("type") == "reasoning"):
                continue
            nxt = msgs[k + 1] if k + 1 < len(msgs) else None
            if nxt is not None and nxt.role == "assistant" and not nxt.answers:
                continue
            what = "nothing" if nxt is None else f"message {nxt.index} ({nxt.role})"
            raise err(
                f"a reasoning item must be followed by the item it reasoned for (a call or the "
                f"assistant's message); {what} follows it",
                k,
                "type",
            )

    def noted(self, body, items, note):
        """The note appended to the body's `instructions` where it has them, else joined to the
        first system message of the input (or a new one)."""
        if body is not None and isinstance(body.get("instructions"), str):
            return {
                **body,
                "instructions": append_note(body["instructions"], note),
                self.key: items,
            }
        return super().noted(body, items, note)

    def write(self, log, items, note):
        out = super().write(log, items, note)
        given = log.body.get(self.key) if log.body is not None else None
        if isinstance(given, str) and len(items) == 1 and items[0] is log.messages.raw[0]:
            if out.get(self.key) is items:  # a string input, all there is, stays a string
                out[self.key] = given
        return out

    def stub(self, cid, name):
        return {"type": "function_call_output", "call_id": cid, "output": stub_text(cid, name)}

    def item_key(self, it):
        """A call or an output by its call id and type (a trimmed output keeps them), an item
        with an id by it, anything else by its content."""
        if it.get("call_id"):
            return ("call", it.get("type"), it["call_id"])
        if it.get("id"):
            return ("id", it["id"])
        return super().item_key(it)

    def render(self, conv) -> list[dict]:
        out = []

        def parts(kind, text):
            return [{"type": kind, "text": text}]

        for step in conv:
            kind = step[0]
            if kind == "system":
                out.append({"type": "message", "role": "system", "content": step[1]})
            elif kind == "user":
                out.append({"type": "message", "role": "user",
                            "content": parts("input_text", step[1])})  # fmt: skip
            elif kind == "assistant" or kind == "calls" and step[1]:
                text = parts("output_text", step[1])
                out.append({"type": "message", "role": "assistant", "content": text})
            if kind == "calls":
                out += [
                    {"type": "function_call", "call_id": c, "name": n, "arguments": json.dumps(a)}
                    for c, n, a in step[2]
                ]
            elif kind == "results":
                for cid, res in step[1]:
                    output = (
                        [{"type": "input_text", "text": b["text"]} for b in res]
                        if isinstance(res, list)
                        else result_text(res)
                    )
                    out.append({"type": "function_call_output", "call_id": cid, "output": output})
        return out


def _read(obj) -> Log:
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
            role = need(it, "role", str, i)
            if role not in ROLES:
                raise err(f"unknown role {role!r}", i, "role")
            text = text_of(need(it, "content", (str, list), i), i, "content")
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
                    name = need(it, "name", str, i)
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


FORMAT = ResponsesInput()
