"""Agent message logs as closure spans: read a log in its wire format (OpenAI chat completions,
the OpenAI Responses API, Anthropic Messages, LangChain), check its order-aware closure (orphaned
calls, results and handles) and write a kept subset back in the shape it was read.

The model (messages, the handle rules, the check) is in `workbench.closure.logs.logtypes`; the wire
formats in `readers`, the provider rules in `rules`, writing in `writers`. This module is the
front door.
"""

from __future__ import annotations

import csv
import json
import operator
import os
from pathlib import Path

from workbench.closure.logs.detect import UNREAD, detect, no_mixing, unread
from workbench.closure.logs.logtypes import (
    Handles,
    Log,
    LogError,
    LogReport,
    Message,
    approx_tokens,
    check,
    err,
)
from workbench.closure.logs.readers import FORMATS, READERS
from workbench.closure.logs.rules import check_rules
from workbench.closure.logs.writers import write
from workbench.common.io import atomic_write_text, paused_gc, read_json

__all__ = [
    "FORMATS",
    "Handles",
    "Log",
    "LogError",
    "LogReport",
    "Message",
    "approx_tokens",
    "check",
    "detect",
    "load",
    "read",
    "read_more",
    "read_part",
    "save",
    "write",
]


def read(obj, format: str | None = None) -> Log:
    """A decoded log (format detected unless given), checked: no call id used twice, no call
    answered twice or before it is made, no result for an unknown id, the provider's order rules,
    one format throughout, at least one message."""
    shape = unread(obj)  # refused by name, whatever format was asked for
    if shape is not None:
        raise err(UNREAD[shape[0]], shape[2], shape[1])
    fmt = format or detect(obj)
    if fmt not in READERS:
        raise ValueError(f"unknown log format {fmt!r}; choose one of {', '.join(FORMATS)}")
    with paused_gc():  # many small objects: the collector's passes would cost as much again
        no_mixing(obj, fmt)
        log = READERS[fmt](obj)
    if not log.messages:  # an empty message list is no request a provider accepts
        raise err("the log holds no messages", None, log.key)
    check_rules(log)
    return log


def read_part(log: Log, positions) -> Log | None:
    """What `read` gives for the raw items of `log`'s messages at `positions` (any order), as a
    message list, taken from `log` without reading them again: a list's readers read each item
    by itself, so each message stays as it was read (re-indexed) with its handle scan, and only
    the rules that span items are checked again (`check_rules`: a part can break an order rule,
    and raises as `read` would). None where reading the items could come out otherwise: a body
    (a system prompt, a continuation's carried results) or a legacy `function_call`, which is
    paired by order; read the items then."""
    if not _by_item(log):
        return None
    positions = list(positions)
    out = _renumbered([log.messages[s] for s in positions])
    if not out:
        raise err("the log holds no messages", None, log.key)
    part = Log(log.format, out, key=log.key)
    check_rules(part, in_order_part=all(map(operator.lt, positions, positions[1:])))
    for patterns, h in log._handles.items():
        part._handles[patterns] = h.part(part, positions)
    return part


def read_more(log: Log, items: list) -> Log | None:
    """What `read` gives for `log`'s items and then `items` (a conversation's next turns), as a
    message list, without reading `log`'s again: a new log whose first messages are `log`'s (with
    their handle scans), the order rules checked over the whole (raising as `read` would); `log`
    stays as it was. None where reading the whole could come out otherwise (as for `read_part`),
    or where `items` alone are no valid request: read the whole then."""
    if not _by_item(log):
        return None
    try:
        more = read(items, log.format)
    except LogError:
        return None  # (a result whose call came earlier is no error: an orphan alone)
    if more.by_order:
        return None
    grown = Log(log.format, [*log.messages, *_renumbered(more.messages, len(log.messages))],
                key=log.key)  # fmt: skip
    check_rules(grown)
    for patterns, h in log._handles.items():
        grown._handles[patterns] = h.grown(grown)
    return grown


def _by_item(log: Log) -> bool:
    """Whether reading `log`'s items, each by itself, gives its messages: a list, nothing carried,
    no legacy call paired by order."""
    return log.body is None and log.system is None and not log.carried and not log.by_order


def _renumbered(msgs: list, start: int = 0) -> list:
    """The messages as read, numbered from `start` (their text and handles are their own)."""
    return [
        Message(start + k, m.role, m._text, m.calls, m.answers, m.raw) for k, m in enumerate(msgs)
    ]


def load(path: str | os.PathLike, format: str | None = None) -> Log:
    """Read a log file; a bad log raises LogError naming the file, the message and the field."""
    with paused_gc():  # a long log is many small objects
        obj = read_json(path)  # bytes decoded as UTF-8, depth bounded: errors name file and line
    try:
        return read(obj, format)
    except LogError as e:
        raise LogError(e.message, path=path, index=e.index, field=e.field) from None


def save(obj, path: str | os.PathLike) -> None:
    """Write a log as indented JSON, atomically."""
    atomic_write_text(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def heldout_logs(folder) -> list[tuple[str, Log]]:
    """(file name, log) of the complete logs (expected exit 0) of a hand-written corpus folder
    (its `expected.csv`), in that file's order."""
    folder = Path(folder)
    with (folder / "expected.csv").open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["exit"] == "0"]
    return [(r["file"], load(folder / r["file"])) for r in rows]
