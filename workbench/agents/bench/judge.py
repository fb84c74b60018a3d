"""What a provider would reject, and which id uses a cut orphaned, judged on the request itself.
Written apart from the trimmer and its readers on purpose (this module imports nothing of
`workbench.closure`): the benchmark's judge must not share the code it judges. Each `*_problems`
function returns the problems it finds (none: the provider would take it).

- OpenAI chat completions (what LangChain sends an OpenAI model, converted by langchain-core's own
  `convert_to_openai_messages`): a `tool` message answers a call of the assistant message right
  before it (only tool messages between); every call of an assistant message is answered before
  the next other message. A call id may come again once its call was answered (OpenAI takes it).
- Anthropic Messages: consecutive turns of one role are one turn (the API merges them); the first
  turn is the user's; a `tool_result` answers a `tool_use` of the assistant turn right before its
  turn, and comes before any other block of that turn; every client `tool_use` is answered there.
- The Responses API (the Agents SDK's input items): a `function_call_output` answers a
  `function_call` earlier in the input; every `function_call` has its output ("No tool output
  found for function call"); a `reasoning` item is followed by the item it reasoned for.
- pydantic-ai's messages, by the rule every provider it maps to shares: a request's tool returns
  answer calls of the response right before it, and every call of a response is answered by the
  request after it.
- Every format: a request over the model's context window is rejected. Tokens are approximate
  (ceil(characters / 4) + 3 a message, over each message's text, call arguments and ids, the rule
  of thumb every trimmer here is given too), counted on the wire shape by this module's own code.

`orphaned_uses` judges a cut against the history it was cut from: an id a kept call passes that
first appeared in an earlier tool result or person's message of the history (the message that
defined it), where that message is not in the request and no tombstone there names the id.
Which values are ids is this module's own rule (`_ids`), not the trimmer's.
"""

from __future__ import annotations

import json
import math
import re


def _approx(texts) -> int:
    return sum(math.ceil(len(t) / 4) + 3 for t in texts)


PICTURE = 85 * 4  # an image, a file or a sound: priced as 85 tokens (as langchain-core prices an
# image), not by the characters that encode it
PICTURES = ("image", "image_url", "input_image", "file", "file_url", "input_file", "document",
            "document_url", "input_audio", "audio", "audio_url", "video", "video_url",
            "input_video")  # fmt: skip


def _txt(v) -> str:
    """The characters of a value the model reads: a string as itself, content parts by their text
    (a picture, a file or a sound by a fixed length), a function by its name and arguments,
    anything else as JSON."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and v.get("type") in PICTURES:
        return " " * PICTURE
    if isinstance(v, list) and all(isinstance(p, dict) and "type" in p for p in v):
        return "".join(str(p["text"]) if "text" in p else _txt(p.get("content", p))
                       if p.get("type") not in PICTURES else " " * PICTURE for p in v)  # fmt: skip
    if isinstance(v, dict) and "name" in v and "arguments" in v:
        return str(v["name"]) + _txt(v["arguments"])
    return json.dumps(v, default=str)


def _window(size: int, window: int | None) -> list[str]:
    if window is not None and size > window:
        return [f"{size} tokens, over the context window of {window}"]
    return []


def chat_problems(body, window: int | None = None) -> list[str]:
    msgs = body.get("messages", []) if isinstance(body, dict) else body
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
    return out + _window(chat_tokens(body), window)


def chat_tokens(msgs) -> int:
    msgs = msgs.get("messages", []) if isinstance(msgs, dict) else msgs
    return _approx(
        str(m.get("role", "")) + _txt(m.get("content"))
        + "".join(_txt(tc.get("function")) for tc in m.get("tool_calls") or [])
        + str(m.get("tool_call_id") or "")
        for m in msgs
    )  # fmt: skip


def langchain_problems(messages, window: int | None = None) -> list[str]:
    from langchain_core.messages import convert_to_openai_messages

    return chat_problems(convert_to_openai_messages(list(messages)), window)


SERVER_BLOCKS = ("server_tool_use", "mcp_tool_use")


def anthropic_problems(body, window: int | None = None) -> list[str]:
    """An Anthropic request body or message list."""
    msgs = body.get("messages", []) if isinstance(body, dict) else body
    turns: list[tuple[str, list]] = []  # (role, blocks), consecutive messages of a role merged
    for m in msgs:
        if m.get("role") == "system":
            continue
        c = m.get("content")
        blocks = [{"type": "text", "text": c}] if isinstance(c, str) else list(c or [])
        if turns and turns[-1][0] == m.get("role"):
            turns[-1][1].extend(blocks)
        else:
            turns.append((m.get("role"), blocks))
    out = []
    if (
        turns
        and turns[0][0] != "user"
        and not any(b.get("type") == "compaction" for b in turns[0][1])
    ):
        out.append("the first turn is not the user's")
    for k, (role, blocks) in enumerate(turns):
        if role != "user":
            continue
        asked = set()
        if k > 0:
            asked = {b.get("id") for b in turns[k - 1][1] if b.get("type") == "tool_use"}
        seen_other = False
        for b in blocks:
            if b.get("type") == "tool_result":
                if seen_other:
                    out.append(f"turn {k}: a tool_result after another block")
                if b.get("tool_use_id") not in asked:
                    out.append(f"turn {k}: a tool_result for {b.get('tool_use_id')!r}, which the "
                               "turn before did not call")  # fmt: skip
                asked.discard(b.get("tool_use_id"))
            else:
                seen_other = True
        if asked:
            out.append(f"turn {k}: tool_use {sorted(asked)} has no tool_result")
    if turns and turns[-1][0] == "assistant":
        left = [b.get("id") for b in turns[-1][1] if b.get("type") == "tool_use"]
        if left:
            out.append(f"the last turn's tool_use {left} has no tool_result")
    return out + _window(anthropic_tokens(body), window)


def _block_text(b) -> str:
    if isinstance(b, str):
        return b
    if b.get("type") in PICTURES:
        return " " * PICTURE
    if b.get("type") == "text":
        return str(b.get("text", ""))
    if "input" in b:
        return str(b.get("name", "")) + json.dumps(b["input"], default=str)
    if b.get("type") == "tool_result":
        c = b.get("content")
        return c if isinstance(c, str) else "".join(map(_block_text, c or []))
    return json.dumps(b, default=str)


def anthropic_tokens(body) -> int:
    msgs = body.get("messages", []) if isinstance(body, dict) else body
    system = body.get("system") if isinstance(body, dict) else None
    texts = (
        [system if isinstance(system, str) else "".join(map(_block_text, system))] if system else []
    )
    for m in msgs:
        c = m.get("content")
        texts.append(
            str(m.get("role")) + (c if isinstance(c, str) else "".join(map(_block_text, c)))
        )
    return _approx(texts)


def responses_problems(body, window: int | None = None) -> list[str]:
    items = body.get("input", []) if isinstance(body, dict) else body
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
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
                or str(nxt.get("type", "")).endswith("_call")
            )
            if not ok:
                out.append(f"item {i}: a reasoning item without the item it reasoned for")
    for cid, i in calls.items():
        if cid not in answered:
            out.append(f"item {i}: no tool output found for function call {cid!r}")
    return out + _window(responses_tokens(body), window)


def responses_tokens(items) -> int:
    if isinstance(items, dict):
        text = items.get("instructions")
        items = items.get("input", [])
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        items = ([{"role": "system", "content": text}] if text else []) + list(items)
    return _approx(
        str(it.get("role") or it.get("type", "")) + _txt(it.get("content"))
        + _txt(it.get("arguments")) + _txt(it.get("output")) + str(it.get("call_id") or "")
        for it in items
    )  # fmt: skip


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
    return out + _window(_approx(texts), window)


PROBLEMS = {"openai": chat_problems, "anthropic": anthropic_problems,
            "responses": responses_problems}  # fmt: skip
TOKENS = {"openai": chat_tokens, "anthropic": anthropic_tokens, "responses": responses_tokens}


# --- id uses a cut orphaned ---------------------------------------------------------------------


# a request body's (list key, top-level system key) in each format, this module's own reading of
# the wire (a LangChain state has no system key)
BODIES = {"openai": ("messages", "instructions"), "anthropic": ("messages", "system"),
          "responses": ("input", "instructions"), "langchain": ("messages", None)}  # fmt: skip


def _items(obj, fmt: str) -> tuple[list, str]:
    """(the message or item list, the top-level system text) of a request in `fmt`."""
    if isinstance(obj, list):
        return obj, ""
    key, system_key = BODIES[fmt]
    items = obj.get(key, [])
    items = [{"role": "user", "content": items}] if isinstance(items, str) else items
    system = obj.get(system_key) if system_key else None
    return items, "\n".join(_strings(system)) if system else ""


LC_DEFINE = ("tool", "human", "system", "function", "ToolMessageChunk", "HumanMessageChunk")


def _calls(it: dict) -> list:
    """The argument values (decoded) of the calls an item makes."""
    out = []
    if isinstance(it.get("data"), dict):  # a LangChain `messages_to_dict` entry
        return [tc.get("args") for tc in it["data"].get("tool_calls") or ()]
    for tc in it.get("tool_calls") or ():
        fn = tc.get("function") or tc.get("custom") or {}
        out.append(fn.get("arguments", fn.get("input")))
    c = it.get("content")
    for b in c if isinstance(c, list) else ():
        if isinstance(b, dict) and b.get("type") in ("tool_use", *SERVER_BLOCKS):
            out.append(b.get("input"))
    if str(it.get("type", "")).endswith("_call") and "call_id" in it:
        out.append(it.get("arguments", it.get("input")))
    decoded = []
    for a in out:
        if isinstance(a, str):
            try:
                a = json.loads(a)
            except ValueError:
                pass
        decoded.append(a)
    return decoded


def _defines(it: dict) -> bool:
    """Does an item hold what a tool, a person or the system wrote (a result, a person's turn)?"""
    if isinstance(it.get("data"), dict):
        return it.get("type") in LC_DEFINE
    if it.get("role") in ("tool", "function", "user", "system", "developer"):
        return True
    return str(it.get("type", "")).endswith("_output")


_SHORT_NUMBER = re.compile(r"[0-9.,+-]{0,4}")
_LOWER_WORDS = re.compile(r"[a-z_-]*")


def _ids(args) -> set[str]:
    """The judge's ids in a call's arguments: every string or number value of four characters or
    more with no white space, that is neither a run of lower-case letters (`economy`, `one_way`)
    nor a number shorter than five digits; in a longer text, the words holding both a letter and a
    digit."""
    out = set()
    stack = [args]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            if len(str(v).replace(".", "")) >= 5:
                out.add(str(v))
        elif isinstance(v, str):
            s = v.strip()
            if not re.search(r"\s", s):
                digits = sum(ch.isdigit() for ch in s)
                if (
                    len(s) >= 4
                    and not _LOWER_WORDS.fullmatch(s)
                    and not (re.fullmatch(r"[0-9.,+-]+", s) and digits < 5)
                ):
                    out.add(s)
            else:
                out.update(w.strip(".,;:!?()[]{}\"'") for w in s.split()
                           if re.search(r"\d", w) and re.search(r"[A-Za-z]", w))  # fmt: skip
    return {x for x in out if len(x) >= 4}


def _strings(v):
    """Every string a value holds (a tombstone is written inside a message's text)."""
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def _holds(text: str, x: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(x)}(?![A-Za-z0-9_])", text) is not None


def orphaned_uses(history, request, fmt: str) -> list[tuple[str, int]]:
    """(id, request position of the call) for each id a request item's call passes that the
    history's item defining it (the first tool result, person's turn or system text holding it,
    before the call) is not in the request for, with no tombstone in the request naming it.
    Request items are matched to history items by their JSON."""
    hist, hist_system = _items(history, fmt)
    req, req_system = _items(request, fmt)
    text = [json.dumps(it, ensure_ascii=False, default=str) for it in hist]
    where: dict[str, list[int]] = {}
    for i, t in enumerate(text):
        where.setdefault(t, []).append(i)
    request_text = "\n".join([req_system, *_strings(req)])
    present, at = set(), []
    for it in req:
        pos = where.get(json.dumps(it, ensure_ascii=False, default=str), [])
        p = next((q for q in pos if q not in present), None)
        at.append(p)
        if p is not None:
            present.add(p)
    out = []
    for k, p in enumerate(at):
        if p is None:
            continue
        for args in _calls(hist[p]):
            for x in sorted(_ids(args)):
                if hist_system and _holds(hist_system, x):
                    continue  # the system prompt defines it
                d = next((j for j in range(p) if _defines(hist[j]) and _holds(text[j], x)), None)
                if d is None or d in present:
                    continue
                if re.search(rf'"evicted_ref"\s*:\s*"{re.escape(x)}"', request_text):
                    continue  # a tombstone stands for it
                out.append((x, k))
    return out
