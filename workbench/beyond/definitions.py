"""What a block defines, of what it mentions (`workbench.beyond.reading`): a definition's head,
a schedule or table row's key cell, a numbered heading, a reference entry, an alias it gives, a
tool result's id field, a section its file heads. The block that defines a mention is the one a
block using it needs (`workbench.beyond.mentions`, rule `role`).
"""

from __future__ import annotations

import re
from functools import lru_cache

from workbench.beyond.identifiers import settings, table_separator
from workbench.beyond.reading import ENTRY, HEADING, aliases, positions
from workbench.beyond.words import normalize, spell_numbers

# its head: before ': ', ' = ', ' means ', a table cell or tab, within the first 60 characters
_HEAD = re.compile(
    r"^\s*[\"“„«'‘]?([^\n]{1,60}?)[\"”“»'’]?\s*(?::\s|:(?=[\u3040-\u9fff])|\s=\s|\s*\|\s*|\t"
    r"|\s+(?:means|bezeichnet|significa|refers to)\b)"
)
_ID_KEY = re.compile(r'"(?:id|[a-z]+_id|handle)"\s*:\s*"([^"]+)"')
_REPLY = re.compile(r"^\s*(?:re|aw|fw|fwd)\s*:|^\s*>", re.I)  # a reply or a quote defines nothing


@lru_cache(maxsize=1 << 16)
def defined(text: str) -> frozenset[str]:
    """The mentions a block defines (a definition's head, a schedule or table row's key cell, a
    numbered heading, a reference entry, an alias it gives, a tool result's id field, a section
    its file heads): the block another one that uses them needs."""
    t = spell_numbers(normalize(text))
    n = max(len(t), 1)
    spans = []
    if not _REPLY.match(t):
        if h := _HEAD.match(t):
            spans.append(h.span(1))
        if h := HEADING.match(t):
            spans.append(h.span(1))
    lines = t.split("\n")
    sep = table_separator(lines)
    if sep:  # a table: each row's key cell
        at = len(lines[0]) + 1
        for line in lines[1:]:
            cell = re.match(rf"\s*([^{re.escape(sep)}]+)", line)
            if cell:
                spans.append((at + cell.start(1), at + cell.end(1)))
            at += len(line) + 1
    for m in _ID_KEY.finditer(t):  # a tool result's own id: '"run_id": "run_4e19a0"'
        spans.append(m.span(1))
    spans += [span for _, span, heads in settings(t) if heads]
    pos = positions(text)
    out = {m for m, p in pos.items() if any(a <= round(p * n) < b for a, b in spans)}
    e = ENTRY.match(t)
    if e and e.group(1):
        out.add(f"cite:{e.group(1)}")
    if e and e.group(2):
        out.add(f"cite:{e.group(2).casefold()}{e.group(3)}")
    out.update(f"alias:{a}" for a in aliases(text))
    return frozenset(out)
