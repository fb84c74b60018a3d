"""Which wire format a decoded log is written in, read from its own keys; the shapes no reader
reads, refused by name; and a log that mixes formats."""

from __future__ import annotations

from workbench.closure.logs.logtypes import err
from workbench.closure.logs.readers import ANTHROPIC_CALLS, lc_blocks, lc_serialized


def _anthropic_block(t) -> bool:
    """A content block type only Anthropic writes: calls, results, thinking."""
    return isinstance(t, str) and (
        t in ANTHROPIC_CALLS
        or t.endswith("tool_result")
        or t in ("thinking", "redacted_thinking", "compaction")
    )


def _anthropic_content(c) -> bool:
    """Content blocks only Anthropic writes: text, calls, results or thinking blocks."""
    return isinstance(c, list) and any(
        isinstance(b, dict) and (b.get("type") == "text" or _anthropic_block(b.get("type")))
        for b in c
    )


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


def dialect(m) -> tuple[str, str] | None:
    """(format, field) that a message's own keys say it is written in, or None when it could be
    any (a plain {role, content} chat message)."""
    if not isinstance(m, dict):
        return ("langchain", "type") if type(m).__module__.startswith("langchain_core") else None
    if "data" in m and "type" in m or lc_serialized(m):
        return "langchain", "type"
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
        return "responses", "type"
    if t == "message" and not _anthropic_content(m.get("content")):
        return "responses", "type"  # (an Anthropic response object is a "message" too)
    if "tool_calls" in m or "tool_call_id" in m or m.get("role") in ("tool", "function"):
        return "openai", "tool_calls" if "tool_calls" in m else "role"
    if "function_call" in m:
        return "openai", "function_call"
    c = m.get("content")
    for k, b in enumerate(c if isinstance(c, list) else []):
        if isinstance(b, dict) and _anthropic_block(b.get("type")):
            return "anthropic", f"content[{k}].type"
        if isinstance(b, dict) and b.get("type") in ("input_text", "output_text"):
            return "responses", f"content[{k}].type"
    return None


ANTHROPIC_BODY_KEYS = (
    "system",
    "anthropic_version",
    "stop_sequences",
    "top_k",
    "thinking",
    "mcp_servers",
)


def _server_tool(t: dict) -> bool:
    """An Anthropic server tool: a versioned type (`web_search_20250305`) and a name, no schema."""
    kind = t.get("type")
    return isinstance(kind, str) and kind[-8:].isdigit() and kind[-9:-8] == "_" and "name" in t


def detect(obj) -> str:
    """The format of a decoded log, read from its keys: a body's `input` is the Responses API's;
    `system`, Anthropic-only body keys or tools with `input_schema` are Anthropic's; otherwise the
    first message whose keys say so decides; a plain chat without tools reads as OpenAI."""
    shape = unread(obj)
    if shape is not None:
        raise err(UNREAD[shape[0]], shape[2], shape[1])
    msgs = obj
    if isinstance(obj, dict):
        if "input" in obj and "messages" not in obj:
            return "responses"
        if "messages" not in obj:
            raise err("expected a list of messages or a request body with 'messages' or 'input'")
        tools = obj.get("tools") if isinstance(obj.get("tools"), list) else []
        if any(k in obj for k in ANTHROPIC_BODY_KEYS) or any(
            isinstance(t, dict) and ("input_schema" in t or _server_tool(t)) for t in tools
        ):
            return "anthropic"
        msgs = obj["messages"]
    if not isinstance(msgs, list):
        raise err("expected a list of messages")
    for m in msgs:
        d = dialect(m)
        if d is not None:
            return d[0]
    return "openai"


def no_mixing(obj, fmt: str) -> None:
    """A log read as one format whose message is written in another mixes formats."""
    msgs = (
        obj.get("input" if fmt == "responses" else "messages", []) if isinstance(obj, dict) else obj
    )
    for i, m in enumerate(msgs if isinstance(msgs, list) else []):
        if not isinstance(m, dict):  # a LangChain object is LangChain's, but for its content,
            if fmt != "langchain":  # which the LangChain reader checks (`_lc_message`)
                raise err(f"a LangChain message object in a log read as {fmt}", i)
            continue
        d = dialect(m)
        if fmt == "langchain" and d is None and isinstance(m, dict):
            continue  # the reader names what is missing
        if d is not None and d[0] != fmt:
            raise err(
                f"written in the {d[0]} format in a log read as {fmt}: the log mixes formats",
                i,
                d[1],
            )
        if fmt == "langchain" and isinstance(m.get("data"), dict):
            lc_blocks(m["data"], i)
        elif fmt == "langchain" and lc_serialized(m) and isinstance(m.get("kwargs"), dict):
            lc_blocks(m["kwargs"], i, "kwargs.")
