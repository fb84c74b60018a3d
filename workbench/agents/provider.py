"""What a provider would reject, checked on the request a model actually received, written apart
from the trimmer and its readers on purpose: the benchmark's judge must not share the code it
judges. Each function returns the problems it finds (none: the provider would take it).

- OpenAI chat completions (what LangChain sends an OpenAI model, converted by langchain-core's own
  `convert_to_openai_messages`): a `tool` message answers a call of the assistant message right
  before it (only tool messages between); every call of an assistant message is answered before
  the next other message.
- The Responses API (the Agents SDK's input items): a `function_call_output` answers a
  `function_call` earlier in the input; every `function_call` has its output ("No tool output
  found for function call"); a `reasoning` item is followed by the item it reasoned for.
- pydantic-ai's messages, by the rule every provider it maps to shares: a request's tool returns
  answer calls of the response right before it, and every call of a response is answered by the
  request after it.
- Every format: a request over the model's context window is rejected. Tokens are approximate
  (ceil(characters / 4) + 3 a message, over each message's text, call arguments and ids, the rule
  of thumb every trimmer here is given too), counted on the wire shape by this module's own code.
"""

from __future__ import annotations

import json
import math


def _approx(texts) -> int:
    return sum(math.ceil(len(t) / 4) + 3 for t in texts)


def _txt(v) -> str:
    """The characters of a value the model reads: a string as itself, content parts by their text,
    a function by its name and arguments, anything else as JSON."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(p, dict) and "text" in p for p in v):
        return "".join(str(p["text"]) for p in v)
    if isinstance(v, dict) and "name" in v and "arguments" in v:
        return str(v["name"]) + _txt(v["arguments"])
    return json.dumps(v, default=str)


def chat_problems(msgs: list[dict], window: int | None = None) -> list[str]:
    out, pending = [], None
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "tool":
            cid = m.get("tool_call_id")
            if pending is None or cid not in pending:
                out.append(f"message {i}: a tool result for {cid!r}, which the message before it "
                           "did not call")  # fmt: skip
            else:
                pending.discard(cid)
            continue
        if pending:
            out.append(f"message {i}: calls {sorted(pending)} have no result before it")
        pending = None
        if role == "assistant" and m.get("tool_calls"):
            pending = {tc.get("id") for tc in m["tool_calls"]}
    if pending:
        out.append(f"calls {sorted(pending)} have no result")
    if window is not None:
        size = _approx(
            str(m.get("role", "")) + _txt(m.get("content"))
            + "".join(_txt(tc.get("function")) for tc in m.get("tool_calls") or [])
            + str(m.get("tool_call_id") or "")
            for m in msgs
        )  # fmt: skip
        if size > window:
            out.append(f"{size} tokens, over the context window of {window}")
    return out


def langchain_problems(messages, window: int | None = None) -> list[str]:
    from langchain_core.messages import convert_to_openai_messages

    return chat_problems(convert_to_openai_messages(list(messages)), window)


def responses_problems(items: list[dict], window: int | None = None) -> list[str]:
    out, calls, answered = [], {}, set()
    for i, it in enumerate(items):
        kind = it.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            calls[it.get("call_id")] = i
        elif kind in ("function_call_output", "custom_tool_call_output"):
            cid = it.get("call_id")
            if cid not in calls:
                out.append(f"item {i}: no tool call found for output with call_id {cid!r}")
            answered.add(cid)
        elif kind == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else None
            ok = nxt is not None and (
                nxt.get("type") in ("function_call", "custom_tool_call", "reasoning")
                or nxt.get("type", "message") == "message"
                and nxt.get("role") == "assistant"
            )
            if not ok:
                out.append(f"item {i}: a reasoning item without the item it reasoned for")
    for cid, i in calls.items():
        if cid not in answered:
            out.append(f"item {i}: no tool output found for function call {cid!r}")
    if window is not None:
        size = _approx(
            str(it.get("role") or it.get("type", "")) + _txt(it.get("content"))
            + _txt(it.get("arguments")) + _txt(it.get("output")) + str(it.get("call_id") or "")
            for it in items
        )  # fmt: skip
        if size > window:
            out.append(f"{size} tokens, over the context window of {window}")
    return out


def pydantic_problems(messages, window: int | None = None) -> list[str]:
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, ToolCallPart, ToolReturnPart

    out, before = [], set()
    texts = []
    for i, m in enumerate(messages):
        texts.extend(_txt(getattr(p, "content", None)) + _txt(getattr(p, "args", None))
                     for p in m.parts)  # fmt: skip
        if isinstance(m, ModelResponse):
            if before:
                out.append(f"message {i}: calls {sorted(before)} have no result before it")
            before = {p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart)}
            continue
        returns = [p.tool_call_id for p in m.parts
                   if isinstance(p, ToolReturnPart)
                   or isinstance(p, RetryPromptPart) and p.tool_name is not None]  # fmt: skip
        for cid in returns:
            if cid not in before:
                out.append(f"message {i}: a tool return for {cid!r}, which the response before "
                           "it did not call")  # fmt: skip
        missing = before - set(returns)
        if missing:
            out.append(f"message {i}: calls {sorted(missing)} have no result")
        before = set()
    if before:
        out.append(f"calls {sorted(before)} have no result")
    if window is not None and _approx(texts) > window:
        out.append(f"{_approx(texts)} tokens, over the context window of {window}")
    return out
