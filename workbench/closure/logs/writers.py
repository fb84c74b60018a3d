"""Writing a kept subset of an agent log back in the shape it was read: a list stays a list, a
body keeps every other key, each kept message unchanged except that the typed tombstones join the
system preamble (Anthropic turns a cut makes adjacent stay apart: the API merges them)."""

from __future__ import annotations

import copy
import json

from workbench.closure.logs.logtypes import Log
from workbench.closure.logs.readers import lc_serialized


def _append(content, note: str, part: str = "text"):
    """Content (a string or a list of parts) with the note appended as text."""
    if isinstance(content, str) and content:
        return content + "\n" + note
    if isinstance(content, list):
        return [*content, {"type": part, "text": note}]
    return note


def note_in_user_turn(msg: dict, note: str) -> dict:
    """An Anthropic user turn with the note as a text block after its tool_result blocks."""
    c = msg["content"]
    blocks = [{"type": "text", "text": c}] if isinstance(c, str) else list(c)
    at = 1 + max(
        (j for j, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "tool_result"),
        default=-1,
    )
    return {**msg, "content": [*blocks[:at], {"type": "text", "text": note}, *blocks[at:]]}


def write(log: Log, kept, tombstones=()):
    """The kept messages in the log's own shape (a list stays a list, a body keeps every other
    key), each unchanged except that the typed tombstones (one JSON object a line) join the
    system preamble: the system message, the top-level system or instructions, or a new system
    message; an Anthropic list without one carries them in its first user turn."""
    note = "\n".join(json.dumps(t) for t in tombstones)
    raws = log.messages.raw
    msgs = [raws[i] for i in sorted(kept)]
    fmt = log.format
    if fmt == "anthropic":
        if log.body is None:
            if note and msgs:
                msgs[0] = note_in_user_turn(msgs[0], note)
            return msgs
        body = dict(log.body)
        if note:
            body["system"] = _append(log.system, note)
        body["messages"] = msgs
        return body
    if fmt == "langchain":
        out = _write_langchain(msgs, note)
        return out if log.body is None else {**log.body, log.key: out}
    if note:
        first = msgs[0] if msgs else None
        sysroles = ("system", "developer")
        if fmt == "responses" and log.body is not None and isinstance(log.system, str):
            return {
                **log.body,
                "instructions": _append(log.system, note),
                "input": _input(log, msgs),
            }
        if (
            isinstance(first, dict)
            and first.get("role") in sysroles
            and first.get("type", "message") == "message"
        ):
            part = "input_text" if fmt == "responses" else "text"
            msgs = [{**first, "content": _append(first.get("content"), note, part)}, *msgs[1:]]
        else:
            msgs = [{"role": "system", "content": note}, *msgs]
    if log.body is None:
        return msgs
    return {**log.body, log.key: _input(log, msgs) if fmt == "responses" else msgs}


def _input(log: Log, msgs: list):
    """A Responses body's input as it was: a string input (read as one user message) stays a
    string while that message is all there is."""
    given = log.body.get("input")
    if isinstance(given, str) and len(msgs) == 1 and msgs[0] is log.messages.raw[0]:
        return given
    return msgs


def _write_langchain(msgs: list, note: str) -> list:
    if not note:
        return msgs
    first = msgs[0] if msgs else None
    if lc_serialized(first):  # `dumpd` entries in, a `dumpd` entry out
        if first["id"][-1] in ("SystemMessage", "SystemMessageChunk"):
            first = copy.deepcopy(first)
            first["kwargs"]["content"] = _append(first["kwargs"].get("content"), note)
            return [first, *msgs[1:]]
        system = ["langchain", "schema", "messages", "SystemMessage"]  # as `dumpd` writes one
        entry = {"lc": 1, "type": "constructor", "id": system}
        return [{**entry, "kwargs": {"content": note, "type": "system"}}, *msgs]
    if isinstance(first, dict):
        if first["type"] in ("system", "SystemMessageChunk"):
            first = copy.deepcopy(first)
            first["data"]["content"] = _append(first["data"].get("content"), note)
            return [first, *msgs[1:]]
        return [{"type": "system", "data": {"content": note, "type": "system"}}, *msgs]
    from langchain_core.messages import SystemMessage  # objects in, objects out

    if first is not None and first.type == "system":
        return [first.model_copy(update={"content": _append(first.content, note)}), *msgs[1:]]
    return [SystemMessage(note), *msgs]
