"""Handles: the identifiers one text defines and another names (a job id, a ticket, a profile).

The same rules find tool-call bindings for the closure gate (seed 002) and can induce a DSGC
graph from text alone: a block that names a handle depends on the block that defines it.
Defaults are the closure note's patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

HANDLE_RE = r"\b(?:run|job|sess|doc)_[0-9a-f]{4,}\b"
DEFINITION_RE = r'"id"\s*:\s*"((?:run|job|sess|doc)_[0-9a-f]{4,})"'
TOMBSTONE_RE = r'"evicted_ref"\s*:\s*"((?:run|job|sess|doc)_[0-9a-f]{4,})"'


@dataclass(frozen=True)
class Patterns:
    """The regexes that find handle references, handle definitions and tombstones in span text."""

    handle: str = HANDLE_RE
    definition: str = DEFINITION_RE  # group 1 is the handle
    tombstone: str = TOMBSTONE_RE  # group 1 is the handle

    @cached_property
    def _compiled(self):
        return re.compile(self.handle), re.compile(self.definition), re.compile(self.tombstone)

    def scan(self, text: str) -> tuple[frozenset, frozenset, frozenset]:
        """(referenced, defined, tombstoned) handles of one text; a tombstone is not a reference."""
        h, d, t = self._compiled
        tombs = frozenset(t.findall(text))
        refs = frozenset(h.findall(text)) - tombs
        return refs, frozenset(d.findall(text)), tombs


DEFAULT_PATTERNS = Patterns()
