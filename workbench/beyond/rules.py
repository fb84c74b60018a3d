"""The mention inducer's rules, as one table: each a kind of evidence a text carries that one
block needs another, what it matches, how it directs the edge and how sure it is.

The shared-mention rules (`role`, `order`, `two-way`) read what two blocks mention
(`workbench.beyond.reading`) and link them by the mentions they share (`workbench.beyond.mentions`).
The `rare-word` rule links, among the blocks that use words of the query, two that share a word
few blocks of the store use: in a long store (a conversation of hundreds of turns) the facts an
answer combines are often joined by nothing else ('the transom is off' and 'a rotten transom'),
and a store under sixty-four blocks has no word that rare. Each rule gives a confidence in
(0, 1], and a block keeps only its few strongest partners under each, so a wrong link carries
only a fraction of its dependent's relevance, to few blocks. The history of every variant tried
is in data/calibration/inducer.md and data/calibration/conversations.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from workbench.beyond.mentions import (
    ANCHOR,
    FALLBACK,
    MAX_HOLDERS,
    MAX_LINKS,
    MIN_CONFIDENCE,
    NEAR,
    TWO_WAY,
    Link,
    mention_links,
    query_words_used,
    strongest,
    word_holders,
)


@dataclass(frozen=True)
class Rule:
    """One row of the table: a rule's name, what it matches, how it directs an edge and how
    sure an edge of it is."""

    name: str
    matches: str
    direction: str
    confidence: str


WORD = 0.5  # a shared rare word counts this much of a shared code or name
WORD_SHARE = 32  # 'rare': used by at most one block in this many of the store (and two at least)

RULES: tuple[Rule, ...] = (
    Rule(
        "role",
        "two blocks share a mention (a code in any style, a name, a number with its unit, a "
        "content-word pair) and one of them defines it: a definition's head, a table row's key, "
        "a numbered clause, a reference entry, an alias it gives, a tool result's id field",
        "the block that uses it depends on the block that defines it",
        "the shared mentions' rarity in the store (1 / (holders - 1) each, half for one the "
        f"query names), combined as independent evidence; at least {MIN_CONFIDENCE}; each block "
        f"keeps its {MAX_LINKS} strongest, and a pair only within {NEAR} link of a block that "
        "uses the query's words",
    ),
    Rule(
        "order",
        "two blocks share a mention, neither defines it, and one names it later in its text",
        "the block naming it first depends on the block naming it later (which introduces it)",
        "as role",
    ),
    Rule(
        "two-way",
        "as order, read the other way (the text cannot decide), or a mention at the same place "
        "in both blocks (two facts the answer combines)",
        "each way",
        f"{TWO_WAY} of order's for the other way; as role for a mention at the same place",
    ),
    Rule(
        "rare-word",
        "two blocks that both use words of the query (not one common in the store) and that no "
        "shared mention links share a content word (stemmed) at most one block in "
        f"{WORD_SHARE} of the store uses (so only in a store of {2 * WORD_SHARE} blocks or more, "
        f"and {MAX_HOLDERS} blocks at most)",
        "each way: a shared word does not say who needs whom",
        f"{WORD} / (holders - 1) a word, {ANCHOR} of that for a word of the query, combined as "
        f"independent evidence; each block keeps its {MAX_LINKS} strongest",
    ),
)
NAMES = tuple(r.name for r in RULES)


def word_cap(n: int) -> int:
    """The most blocks of a store of `n` a rare word may be used by (under two: a store under
    2 * WORD_SHARE blocks has no word that rare, and the rule links nothing)."""
    return min(n // WORD_SHARE, MAX_HOLDERS)


def rare_word_links(
    texts: Sequence[str], query: str, taken=frozenset(), holders=None, about=None
) -> list[Link]:
    """The `rare-word` rule on one store: links both ways between blocks that use words of the
    query and share rare words (a word of the query counting ANCHOR as much: two blocks about the
    query's subject are not thereby about each other), strongest first, each block in at most
    MAX_LINKS of them, none between two blocks in `taken` (pairs a shared mention links)."""
    cap = word_cap(len(texts))
    if cap < 2:
        return []
    holders = word_holders(texts) if holders is None else holders
    about = query_words_used(texts, query, holders) if about is None else about
    evidence: dict[tuple[int, int], list[str]] = {}
    for w, hs in holders.items():
        if not 2 <= len(hs) <= cap:
            continue
        users = [i for i in hs if i in about]
        for k, a in enumerate(users):
            for b in users[k + 1 :]:
                if (a, b) not in taken:
                    evidence.setdefault((a, b), []).append(w)
    scored = []
    for (a, b), ws in evidence.items():
        c = 1.0 - math.prod(
            1.0 - WORD * (ANCHOR if w in about[a] else 1.0) / (len(holders[w]) - 1) for w in ws
        )
        scored.append((a, b, round(c, 6), tuple(f"word:{w}" for w in sorted(ws))))
    scored.sort(key=lambda p: (-p[2], p[0], p[1]))
    out = []
    for a, b, c, shared in strongest(scored):
        out += [Link(a, b, c, shared, "rare-word"), Link(b, a, c, shared, "rare-word")]
    return out


def links(texts: Sequence[str], query: str, fallback: str = FALLBACK) -> list[Link]:
    """Every rule of the table on one store: the shared-mention links, then the rare-word links
    between blocks no shared mention links; sorted by (dependent, prerequisite)."""
    holders = word_holders(texts)
    about = query_words_used(texts, query, holders)
    found = mention_links(list(texts), query, fallback, about)
    taken = frozenset(
        (min(x.dependent, x.prerequisite), max(x.dependent, x.prerequisite)) for x in found
    )
    found += rare_word_links(texts, query, taken, holders, about)
    return sorted(found, key=lambda e: (e.dependent, e.prerequisite))
