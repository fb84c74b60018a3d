"""Which wire format a decoded log is written in, asked of the registered formats
(`workbench.closure.logs.formats`); the shapes no reader reads, refused by name; and a log that
mixes formats."""

from __future__ import annotations

from workbench.closure.logs.formats import by_precedence, get
from workbench.closure.logs.logtypes import err

# shapes a reader is asked for and does not read, refused by name (read as another format, a
# Bedrock body looks closed while a call is unanswered); each name and what to pass instead
UNREAD = {
    "bedrock": "a Bedrock Converse body (toolUse / toolResult blocks) is not read; pass the "
    "Anthropic Messages, OpenAI or LangChain form of the conversation",
    "gemini": "a Gemini generateContent body (contents / parts, functionCall / functionResponse) "
    "is not read; pass the OpenAI, Anthropic or LangChain form of the conversation",
    "langgraph": "a LangGraph checkpoint is not read; pass its channel_values.messages (a "
    "LangChain message list) or the state's messages",
}


def _bedrock_block(b) -> bool:
    """A Bedrock Converse content block: a single key (toolUse, toolResult, text, ...) and no
    `type`, which every Anthropic block has."""
    return (
        isinstance(b, dict)
        and "type" not in b
        and bool(
            {"toolUse", "toolResult", "reasoningContent", "cachePoint"} & b.keys()
            or (b.keys() == {"text"} and isinstance(b["text"], str))
        )
    )


def unread(obj) -> tuple[str, str | None, int | None] | None:
    """(name, field, message) of a shape no reader reads, or None."""
    if isinstance(obj, dict):
        if "channel_values" in obj and "channel_versions" in obj:
            return "langgraph", "channel_values", None
        if isinstance(obj.get("contents"), list) and "messages" not in obj:
            return "gemini", "contents", None
        if "toolConfig" in obj or "modelId" in obj and "messages" in obj:
            return "bedrock", "toolConfig" if "toolConfig" in obj else "modelId", None
    msgs = obj.get("messages") if isinstance(obj, dict) else obj
    for i, m in enumerate(msgs if isinstance(msgs, list) else []):
        if not isinstance(m, dict):
            continue
        c = m.get("content")
        if not isinstance(c, list):  # no blocks: a Gemini turn, or nothing unread
            if isinstance(m.get("parts"), list) and m.get("role") in ("user", "model"):
                return "gemini", "parts", i
            continue
        for k, b in enumerate(c):
            if _bedrock_block(b):
                return "bedrock", f"content[{k}]", i
        if isinstance(m.get("parts"), list) and m.get("role") in ("user", "model"):
            return "gemini", "parts", i
    return None


def dialect(m, order=None) -> tuple[str, str] | None:
    """(format, field) that a message's own keys say it is written in, or None when it could be
    any (a plain {role, content} chat message); the formats are asked in their precedence
    (`order`: `by_precedence()`, given once for a whole log)."""
    for f in order or by_precedence():
        fld = f.says(m)
        if fld is not None:
            return f.name, fld
    return None


def detect(obj) -> str:
    """The format of a decoded log, read from its keys: a body the formats' own body keys claim
    (`input` for the Responses API; `system`, Anthropic-only keys or tools with `input_schema`
    for Anthropic), else the first message whose keys say so; a plain chat without tools reads
    as the plain format (OpenAI)."""
    shape = unread(obj)
    if shape is not None:
        raise err(UNREAD[shape[0]], shape[2], shape[1])
    msgs, order = obj, by_precedence()
    if isinstance(obj, dict):
        for f in order:
            if f.says_body(obj):
                return f.name
        if "messages" not in obj:
            raise err("expected a list of messages or a request body with 'messages' or 'input'")
        msgs = obj["messages"]
    if not isinstance(msgs, list):
        raise err("expected a list of messages")
    for m in msgs:
        d = dialect(m, order)
        if d is not None:
            return d[0]
    return next(f.name for f in order if f.plain)


def no_mixing(obj, fmt: str) -> None:
    """A log read as one format whose message is written in another mixes formats."""
    f, order = get(fmt), by_precedence()
    msgs = f.split(obj)[1] if isinstance(obj, dict) else obj
    for i, m in enumerate(msgs if isinstance(msgs, list) else []):
        d = dialect(m, order)
        if not isinstance(m, dict):  # an object: a format that reads objects reads it (and checks
            if not f.objects:  # its content); another format names what it was given
                what = (get(d[0]).title or d[0]) if d is not None else type(m).__name__
                raise err(f"a {what} message object in a log read as {fmt}", i)
            continue
        if d is not None and d[0] != fmt:
            raise err(
                f"written in the {d[0]} format in a log read as {fmt}: the log mixes formats",
                i,
                d[1],
            )
        if d is not None:
            f.check_message(m, i)
