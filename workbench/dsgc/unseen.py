"""What a run cannot see, said before it runs: a query the lexical encoder reads no word of, and a
graph policy asked to rank scenarios that carry no edges. `workbench evaluate` prints these on
stderr and the explorer shows them under its verdict; both call `input_warnings`, the one rule.

The lexical encoder reads runs of a-z, 0-9 and _ after lowercasing (`encoders.tokenize`): a query
in Cyrillic, Greek, Japanese or Arabic is a zero vector to it, every block then scores 0 and the
ranking is store order. A query most of whose words carry letters outside a-z ('Schäfer',
'Ibáñez') is read in fragments. DSGC on scenarios without edges is similarity-only with a cost
term: without a word it looks like a result about graphs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from workbench.common.encoders import tokenize
from workbench.dsgc.scenario import Scenario

_WORDS = re.compile(r"[^\W_]+")


def lexical_blind(query: str) -> str | None:
    """'none' when the lexical encoder reads no token of the query, 'part' when half or more of
    its words hold a letter outside a-z (it reads them in pieces), else None."""
    if not tokenize(query):
        return "none"
    words = _WORDS.findall(query)
    odd = sum(bool(re.search(r"[^a-zA-Z0-9]", w)) for w in words)
    return "part" if words and 2 * odd >= len(words) else None


def input_warnings(scenarios: Sequence[Scenario], encoder: str, graph_policy: bool) -> list[str]:
    """One line per problem (empty: nothing to say). `graph_policy`: the policy reads edges."""
    out = []
    if encoder == "lexical":
        blind = [(sc.id, lexical_blind(sc.query)) for sc in scenarios]
        none = [i for i, b in blind if b == "none"]
        part = [i for i, b in blind if b == "part"]
        if none:
            out.append(
                f"the lexical encoder reads no word of the query of {_some(none)}: every block "
                "scores 0 there and the ranking is store order (the sentence encoder reads every script)"
            )
        if part:
            out.append(
                f"the lexical encoder reads only a-z and 0-9: most words of the query of "
                f"{_some(part)} are read in pieces (the sentence encoder reads every script)"
            )
    if graph_policy and scenarios and not any(sc.edges for sc in scenarios):
        out.append(
            "no scenario carries edges: DSGC ranks as similarity-only with a cost term (run "
            "`workbench induce` first)"
        )
    return out


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:3])
    return f"{len(ids)} scenario(s) ({shown}{', ...' if len(ids) > 3 else ''})"
