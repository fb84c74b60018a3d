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

    @cached_property
    def _unanchored(self):
        """The handle pattern without a leading word boundary, when it is one sequence that starts
        with one (a leading `\\b` keeps Python's regex engine from skipping ahead to a possible
        first character, which makes a long text several times slower to search); else None."""
        try:
            from re import _parser as sre_parse
        except ImportError:  # pragma: no cover - older Pythons
            import sre_parse
        parsed = sre_parse.parse(self.handle)
        if (
            len(parsed) > 1
            and str(parsed[0][1]).upper() == "AT_BOUNDARY"
            and self.handle.startswith(r"\b")
        ):
            return re.compile(self.handle[2:])
        return None

    def find_handles(self, text: str) -> list[tuple[int, str]]:
        """(position, handle) of every handle reference in a long text, exactly as `finditer`
        with the handle pattern finds them, faster when the pattern starts with `\\b`: the
        unanchored pattern is searched and the word boundary checked by hand (a boundary is
        a change between word and non-word characters, as `re` defines them for str)."""
        full = self._compiled[0]
        group = 1 if full.groups else 0
        fast = self._unanchored
        if fast is None:
            return [(m.start(), m.group(group)) for m in full.finditer(text)]

        def word(c: str) -> bool:
            return c.isalnum() or c == "_"

        out, pos = [], 0
        hits = fast.finditer(text)
        while True:
            for m in hits:
                s = m.start()
                if (s > 0 and word(text[s - 1])) != word(text[s]):
                    out.append((s, m.group(group)))
                else:  # no boundary here: a match may start inside this one, search from s+1
                    pos = s + 1
                    break
            else:
                return out
            hits = fast.finditer(text, pos)

    def scan(self, text: str) -> tuple[frozenset, frozenset, frozenset]:
        """(referenced, defined, tombstoned) handles of one text; a tombstone is not a reference."""
        h, d, t = self._compiled
        tombs = frozenset(t.findall(text))
        refs = frozenset(h.findall(text)) - tombs
        return refs, frozenset(d.findall(text)), tombs


DEFAULT_PATTERNS = Patterns()
