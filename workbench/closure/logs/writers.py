"""Writing a kept subset of an agent log back in the shape it was read: a list stays a list, a
body keeps every other key, each kept message unchanged except that the typed tombstones join the
system preamble, where the log's format puts them (`LogFormat.noted`)."""

from __future__ import annotations

import json

from workbench.closure.logs.formats import get
from workbench.closure.logs.logtypes import Log


def write(log: Log, kept, tombstones=()):
    """The kept messages in the log's own shape, the typed tombstones (one JSON object a line)
    joined to the system preamble: the system message, the top-level system or instructions, or
    a new system message; an Anthropic list without one carries them in its first user turn."""
    note = "\n".join(json.dumps(t) for t in tombstones)
    raws = log.messages.raw
    return get(log.format).write(log, [raws[i] for i in sorted(kept)], note)
