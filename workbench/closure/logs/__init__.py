"""Agent message logs as closure spans: read a log in its wire format (OpenAI chat completions,
the OpenAI Responses API, Anthropic Messages, LangChain), check its order-aware closure (orphaned
calls, results and ids) and write a kept subset back in the shape it was read.

The model (messages, the check) is in `workbench.closure.logs.logtypes`; which ids a call takes
from earlier messages in `flow`; each wire format, one object, in `formats` (how it is detected,
read, ordered and written); pairing in `rules`, writing in `writers`, the trim in `trim`. This
module is the front door.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from workbench.closure.logs.detect import UNREAD, detect, no_mixing, unread
from workbench.closure.logs.formats import FORMATS, get
from workbench.closure.logs.logtypes import (
    Log,
    LogError,
    LogReport,
    Message,
    approx_tokens,
    check,
    err,
)
from workbench.closure.logs.rules import settle
from workbench.closure.logs.writers import write
from workbench.common.io import atomic_write_text, read_json

__all__ = [
    "FORMATS",
    "Log",
    "LogError",
    "LogReport",
    "Message",
    "approx_tokens",
    "check",
    "detect",
    "load",
    "read",
    "save",
    "write",
]


def read(obj, format: str | None = None, cut: bool = False) -> Log:
    """A decoded log (format detected unless given), its calls paired with their results: no call
    id used again while its call waits for a result, no call answered twice or before it is made,
    the provider's order rules, one format throughout, at least one message. What a provider
    accepts is read (a call id used again once answered, consecutive Anthropic turns), with a
    warning where a reader might not expect it (`Log.warnings`). `cut=True` reads a cut another
    editor made, for a repair to mend: the rules a cut can break are not checked (an Anthropic
    request starting on the assistant's turn; a result whose call was cut, its id used again
    later, is an orphan)."""
    shape = unread(obj)  # refused by name, whatever format was asked for
    if shape is not None:
        raise err(UNREAD[shape[0]], shape[2], shape[1])
    fmt = format or detect(obj)
    reader = get(fmt)  # ValueError naming the formats
    no_mixing(obj, fmt)
    log = reader.read(obj)
    if not log.messages:  # an empty message list is no request a provider accepts
        raise err("the log holds no messages", None, log.key)
    settle(log, cut)
    return log


def load(path: str | os.PathLike, format: str | None = None) -> Log:
    """Read a log file; a bad log raises LogError naming the file, the message and the field."""
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
