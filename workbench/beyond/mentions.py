"""Mention linking: a dependency graph read from what blocks mention (`workbench.beyond.reading`
reads the mentions), not from how a generator phrases them.

Two blocks that share a mention are linked, weighted by how rare the mention is within the
scenario (an inverse document frequency over its blocks): a mention in two blocks of twenty links
them strongly, one in most blocks not at all. A mention the query also names is an anchor, not a
bridge: it counts half (two blocks about the query's subject are not thereby about each other),
and it links two blocks only when both say something else the query asks. What looks shared and
is not is no evidence: a phrase labelling a different identifier in each block, one word of two
different full names. The calibration record (data/calibration/inducer.md) gives every rule's
reason and what it did on every tier.

Direction: an edge points from the dependent to the block it needs. A block that
defines what the pair shares (`definitions.defined`: a definition's head, a table row's key, a
numbered clause, a reference entry, an alias it gives, a tool result's id field) is the
prerequisite ('role'). Otherwise mention order: a block introduces what it names late and builds
on what it names first ("Alice joined bundle K-0421"; "Bundle K-0421 maps to clearance N7"), so of
two blocks sharing a mention the one naming it later is the prerequisite ('order'); since order
alone was wrong on most prose pairs of tier I, the other way is kept too, at TWO_WAY of the
confidence ('two-way'). When the mention sits at about the same place in both (within ORDER_TIE
of the text), the two are facts the answer combines: an edge each way. Text is read in any
script (`words.normalize`); a scenario's aliases and short hashes are resolved across its
blocks (`scenario_positions`). Every edge carries its confidence in (0, 1]; DSGC may weight its
support by it.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

from workbench.beyond.definitions import defined
from workbench.beyond.reading import aliases, mentions, positions
from workbench.beyond.words import (
    CAPSTOP,
    FULLNAME,
    INNER,
    LOWER_RUN,
    STOP,
    WORD,
    canon,
    cjk_words,
    normalize,
    spell_numbers,
)

# --- links ---------------------------------------------------------------------------------------

ANCHOR = 0.5  # a mention the query names counts this much (an anchor, not a bridge)
TERM = 0.5  # a content-word pair counts this much (common phrasing, weaker than a code or name),
# and so does what two numbers measure ('dim:ticket'), counted only between two blocks that also
# name the query's subject (a reading and its limit for the thing asked about; readings of other
# things share the unit too)
# a pair weaker than this is no edge: a bridge mention shared by up to three blocks passes, an
# anchor or a term only when no third block names it (then 0.5), and weaker clues only together
MIN_CONFIDENCE = 0.45
# an opaque id (letters and digits, six or more: `job_ef6c6b8`, `run_10002`) that two blocks share
# is a reference whatever the query names: such a pair is kept even where nothing links it to the
# query (a log's task names none of the ids its tools hand back)
_OPAQUE = re.compile(r"code:(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{6,}$")
MAX_LINKS = 2  # each block keeps at most its two strongest partners (a chain link has two)
ORDER_TIE = 0.1  # a shared mention this close to the same place in both texts gives no order
MAX_HOLDERS = 21  # the most blocks a linking mention may be in (its weight is then 1/20)
# a link is kept only near the query: one of its blocks at most this many links away from a block
# that uses the query's words (one-hop DSGC carries a block's relevance one link)
NEAR = 1


@dataclass(frozen=True)
class Link:
    """One induced edge: (dependent, prerequisite) store positions, its confidence, and the
    mentions the two blocks share."""

    dependent: int
    prerequisite: int
    confidence: float
    shared: tuple[str, ...]
    rule: str = "order"  # the rule of `rules.RULES` that made it: 'role', 'order' or 'two-way'


FALLBACK = "two-way"  # where no role decides: 'order' (mention order alone) or 'two-way'
TWO_WAY = 0.75


def _query_words(query_text: str) -> frozenset[str]:
    return frozenset(w for w in WORD.findall(query_text.casefold()) if w not in STOP)


def common_above(n: int) -> int:
    """In a store of n blocks, a mention or word more blocks than this use is common: no link,
    and no sign of what a block is about."""
    return max(3, min(n // 4, MAX_HOLDERS))


def word_holders(texts) -> dict[str, list[int]]:
    """Each content word (stemmed) of a store, and the blocks that use it, in store order."""
    holders: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        for w in content_stems(t):
            holders.setdefault(w, []).append(i)
    return holders


def query_words_used(texts, query: str, holders=None) -> dict[int, frozenset[str]]:
    """The blocks that use the query's content words (stemmed), each with the words it uses,
    leaving out words common in the store (`common_above`: a speaker's name before every turn of
    theirs, a user named in every line of a log); `holders`: the store's `word_holders`, when
    the caller has them."""
    holders = word_holders(texts) if holders is None else holders
    top = common_above(len(texts))
    out: dict[int, set[str]] = {}
    for w in content_stems(query):
        if len(holders.get(w, ())) <= top:
            for i in holders.get(w, ()):
                out.setdefault(i, set()).add(w)
    return {i: frozenset(ws) for i, ws in out.items()}


def _weights(
    block_mentions: list[frozenset[str]], query: frozenset[str], qwords: frozenset[str]
) -> dict[str, float]:
    """Each mention's weight in (0, 1], by how rare it is within the scenario: 1 / (df - 1) over
    its blocks (1 for a mention two blocks share; none for one in a single block, or in more than
    a quarter of them or than MAX_HOLDERS), halved when the query names it (an anchor); a term (content-word pair) counts TERM as much, a term made of the query's own
    words is the query's topic, not a link (0), and a term with one of them is an anchor too."""
    n = len(block_mentions)
    df: dict[str, int] = {}
    for ms in block_mentions:
        for m in ms:
            df[m] = df.get(m, 0) + 1
    # a mention in more blocks than this weighs at most 1/20: it cannot make a link, and skipping
    # it keeps the pairs per mention bounded (induction stays linear in the store's size)
    top = common_above(n)
    out = {}
    for m, d in df.items():
        if not 2 <= d <= top:
            continue
        anchor = m in query
        if m.startswith("term:"):
            inq = [w in qwords for w in m[5:].split()]
            if all(inq):  # the query's own phrase is its topic, not a link
                continue
            anchor = anchor or any(inq)
        w = 1.0 / (d - 1)  # two blocks: a link of its own; each further block shares it
        kind = TERM if m.startswith(("term:", "dim:")) else 1.0
        out[m] = w * (ANCHOR if anchor else 1.0) * kind
    return out


def scenario_mentions(texts: list[str], query: str) -> tuple[list[frozenset[str]], frozenset[str]]:
    """Each block's mentions and the query's (`scenario_positions`, without the places)."""
    ms, qm, _, _ = scenario_positions(tuple(texts), query)
    return ms, qm


# an abbreviation: three to five capitals written alone, not a code's letters before its number
_ACRONYM = re.compile(r"(?<![\w-])[A-Z]{3,5}(?![\w-])(?![ ]?\d)")
_BARE_CLAUSE = re.compile(r"(?<![\d.])\d+(?:\.\d+)+(?![\d]|\.\d)")
_HEX = re.compile(r"code:(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,40}$")  # a commit hash, short or full


_GAP = r"[\W\d_]+"  # what lies between two words (of letters)


def _phrases(patterns: list[str]) -> re.Pattern:
    """One scan for any of the phrases (each a pattern of words and `_GAP`s): every place one
    starts, overlapping, the phrase in group 1; whole words only; none matches when there are
    none."""
    alternatives = "|".join(patterns) or r"(?!)"
    return re.compile(rf"(?<![^\W\d_])(?=((?:{alternatives})(?![^\W\d_])))")


@lru_cache(maxsize=8)  # link_pairs and mention_links read one scenario in turn
def scenario_positions(texts: tuple[str, ...], query: str):
    """(each block's mentions, the query's, each block's mention -> place in its text), without
    'names' that are common words of the scenario (a capitalized word that also appears in
    lowercase, e.g. a sentence's first word); with the scenario's aliases (a name one block gives,
    'calls him Bart', in every block that says it: 'alias:bart'), an abbreviation of three
    capitals or more where a block spells it out ('CFO' / 'chief financial officer': 'alias:cfo';
    not one more blocks say than `common_above`) and each short hash as the full hash it begins
    when exactly one block holds that (`9f4c2e1` / `9f4c2e1b7a3d05e8`)."""
    texts = tuple(map(normalize, texts))
    query = normalize(query)
    lower = {w for t in (*texts, query) for w in LOWER_RUN.findall(t)}
    drop = {f"name:{w}" for w in lower}
    # names said somewhere inside a sentence; a capitalized word only ever first in its
    # sentence ('Works listed under ...', 'Operators in band K ...') is no name
    inner = set()
    for t in (*texts, query):  # a full name first in its sentence names someone too
        for m in FULLNAME.finditer(t):
            if not any(w in CAPSTOP for w in re.split(r"[ -]", m.group(0))):
                inner.update(re.split(r"[ -]", m.group(0).casefold()))
        for m in INNER.finditer(t):
            words = re.split(r"[ -]", m.group(0).casefold())
            inner.update(words)
            inner.update(
                " ".join(words[i:j])
                for i in range(len(words))
                for j in range(i + 2, len(words) + 1)
            )

    def keep(ms: frozenset[str]) -> frozenset[str]:
        return frozenset(
            m for m in ms if m not in drop and (not m.startswith("name:") or m[5:] in inner)
        )

    pos, defs = [], []
    for t in texts:  # each text's definitions right after its positions: one reading a text
        pos.append(dict(positions(t)))
        defs.append(defined(t))
    defs = tuple(defs)
    given = {a for t in texts for a in aliases(t)}
    heads = {m[9:] for p in pos for m in p if m.startswith("code:sec ") and "." in m}
    # an alias, where another block says it alone (one or two words): one scan of each text for
    # all of them (no pass per alias or clause: induction stays linear in the store)
    said = [a.split(" ") for a in sorted(given) if len(a.split(" ")) <= 2]
    say = _phrases([_GAP.join(map(re.escape, ws)) for ws in said if all(map(WORD.fullmatch, ws))])
    cjk_given = any(cjk_words(a) for a in given)
    for i, t in enumerate(texts):
        n = max(len(t), 1)
        if given:
            for m in say.finditer(t.casefold()):
                a = " ".join(WORD.findall(m.group(1)))
                if f"alias:{a}" not in pos[i]:
                    pos[i][f"alias:{a}"] = m.start() / n
            for w in cjk_words(t) if cjk_given else ():  # Japanese: a run of one script is a word
                if w.group(0) in given and f"alias:{w.group(0)}" not in pos[i]:
                    pos[i][f"alias:{w.group(0)}"] = w.start() / n
        if heads:  # a numbered clause another block cites by its number alone ('overriding 15.1')
            for m in _BARE_CLAUSE.finditer(t):
                if m.group(0) in heads and f"code:sec {m.group(0)}" not in pos[i]:
                    pos[i][f"code:sec {m.group(0)}"] = m.start() / n
    said_by: dict[str, int] = {}  # an abbreviation many blocks say is common: it links nothing
    for t in texts:
        for a in {m.group(0).casefold() for m in _ACRONYM.finditer(t)}:
            said_by[a] = said_by.get(a, 0) + 1
    top = common_above(len(texts))
    acronyms = {a for a, k in said_by.items() if k <= top} - STOP
    if acronyms:  # an abbreviation and the words it abbreviates ('DPO', 'data protection officer')
        spell = _phrases([_GAP.join(rf"{c}[^\W\d_]*" for c in a) for a in sorted(acronyms)])
        spelled: list[dict[str, float]] = []
        for t in texts:
            n, found = max(len(t), 1), {}
            for m in spell.finditer(t.casefold()):
                ws = WORD.findall(m.group(1))
                if not STOP.intersection(ws):
                    found.setdefault("".join(w[0] for w in ws), m.start() / n)
            spelled.append(found)
        expanded = {a for f in spelled for a in f}
        for i, t in enumerate(texts):
            n = max(len(t), 1)
            for m in _ACRONYM.finditer(t):
                if m.group(0).casefold() in expanded:
                    spelled[i].setdefault(m.group(0).casefold(), m.start() / n)
            for a, at in spelled[i].items():
                pos[i].setdefault(f"alias:{a}", at)
    hexes = sorted({m for p in pos for m in p if _HEX.match(m)})
    for p in pos:  # a short hash as the one longer hash it begins (sorted: its range is adjacent)
        for m in [m for m in p if _HEX.match(m)]:
            k = bisect.bisect_right(hexes, m)
            longer = list(itertools.takewhile(lambda h, m=m: h.startswith(m), hexes[k : k + 2]))
            if len(longer) == 1 and longer[0] not in p:
                p[longer[0]] = p.pop(m)
    ms = [keep(frozenset(p)) for p in pos]
    qwords = [w.group(0) for w in WORD.finditer(query.casefold())]
    said = set(qwords) | {" ".join(qwords[k : k + 2]) for k in range(len(qwords))}
    return ms, keep(mentions(query)) | frozenset(f"alias:{a}" for a in given & said), pos, defs


def link_pairs(
    texts: list[str], query: str, asked: dict | None = None
) -> list[tuple[int, int, float, tuple[str, ...]]]:
    """(a, b, confidence, shared mentions) for every linked pair a < b: the shared mentions'
    weights combined as independent evidence (1 - prod(1 - w)), each block keeping at most
    MAX_LINKS partners (the strongest; ties: store order), pairs under MIN_CONFIDENCE dropped,
    and only pairs in a part of the mention graph that reaches the query (links among blocks
    that nothing connects to the query cannot be the query's chain) with a block within NEAR
    links of a block that uses the query's words (`asked`: `query_words_used`, computed when not
    given), or that share an opaque id (`_OPAQUE`: a reference, whatever the query names) or a
    citation (`cite:`)."""
    ms, qm, _, defs = scenario_positions(tuple(texts), query)  # one reading, shared
    texts, query = [normalize(t) for t in texts], normalize(query)
    w = _weights(ms, qm, _query_words(query))
    holders: dict[str, list[int]] = {}
    for i, m in enumerate(ms):
        for x in m:
            if x in w:
                holders.setdefault(x, []).append(i)
    evidence: dict[tuple[int, int], list[str]] = {}
    for x, hs in holders.items():  # an index of mentions: no all-pairs pass over blocks
        for k, a in enumerate(hs):
            for b in hs[k + 1 :]:
                evidence.setdefault((a, b), []).append(x)
    about = _About(texts, query)
    focus = _focus(about, holders, qm, w)
    qwords = _query_words(query)
    scored = []
    for (a, b), xs in evidence.items():
        xs = [
            x
            for x in distinct_names(xs, qm)
            if not _labels_differ(x, texts[a], texts[b]) and not _names_differ(x, ms[a], ms[b])
        ]
        role = bool(defs[a] & set(xs)) != bool(defs[b] & set(xs))
        if xs and all(_anchor(x, qm, qwords) for x in xs) and not about.both(a, b, xs):
            if not role:  # (unless one block defines the subject the other uses)
                continue  # both about the query's subject, one about nothing else the query asks
        c = 1.0 - math.prod(
            1.0 - (focus[x][1] if focus.get(x, (None,))[0] == (a, b) else w[x]) for x in xs
        )
        if c >= MIN_CONFIDENCE:
            scored.append((a, b, c, tuple(sorted(xs)), role))
    # strongest first; at equal confidence, a pair where one block defines what the other uses,
    # then the pair sharing more evidence
    scored.sort(key=lambda p: (-p[2], -p[4], -sum(w[x] for x in p[3]), p[0], p[1]))
    out = strongest([p[:4] for p in scored])
    dist = _distances(ms, qm, out, about)
    asked = query_words_used(texts, query) if asked is None else asked
    near = _steps(sorted(asked), out, len(texts))
    return sorted(
        p
        for p in out
        if (dist[p[0]] < math.inf and min(near[p[0]], near[p[1]]) <= NEAR)
        or any(_OPAQUE.match(x) or x.startswith("cite:") for x in p[3])
    )


def strongest(pairs, most: int = MAX_LINKS) -> list:
    """The pairs (a, b, ...) kept when each block keeps at most `most` partners, taken in the
    order given (strongest first)."""
    count: dict[int, int] = {}
    out = []
    for p in pairs:
        a, b = p[0], p[1]
        if count.get(a, 0) < most and count.get(b, 0) < most:
            count[a] = count.get(a, 0) + 1
            count[b] = count.get(b, 0) + 1
            out.append(p)
    return out


def _steps(seeds, pairs, n: int) -> list[float]:
    """Steps from the seed blocks to each block over the pairs (inf: not connected)."""
    dist = [math.inf] * n
    todo = deque(seeds)
    for i in seeds:
        dist[i] = 0
    nbrs: dict[int, list[int]] = {}
    for a, b, *_ in pairs:
        nbrs.setdefault(a, []).append(b)
        nbrs.setdefault(b, []).append(a)
    while todo:
        i = todo.popleft()
        for j in nbrs.get(i, ()):
            if dist[j] > dist[i] + 1:
                dist[j] = dist[i] + 1
                todo.append(j)
    return dist


def _anchor(x: str, qm: frozenset[str], qwords: frozenset[str]) -> bool:
    """Does the query name this mention (or, for a term, one of its words)?"""
    return x in qm or (x.startswith("term:") and any(w in qwords for w in x[5:].split()))


_LABELLED = r"\s+([A-Za-z#]*[-/]?\d[\w/.-]*|[A-Z]{1,4}[-/]?\d[\w/.-]*)"  # the id after a label


@lru_cache(maxsize=1 << 12)
def _label(term: str) -> re.Pattern:
    words = term.split()
    return re.compile(r"\b" + r"[\s-]+".join(map(re.escape, words)) + _LABELLED, re.I)


def _names_differ(x: str, ma: frozenset[str], mb: frozenset[str]) -> bool:
    """A name word each block says as part of a different full name ('Pier Road' and 'Pier
    Lane', 'Judge Okonjo' and 'Judge Okafor') names two things: no evidence."""
    if not x.startswith("name:") or " " in x:
        return False
    w = x[5:]
    fa = {m for m in ma if m.startswith("name:") and " " in m and w in m[5:].split()}
    fb = {m for m in mb if m.startswith("name:") and " " in m and w in m[5:].split()}
    return bool(fa) and bool(fb) and not fa & fb


def _labels_differ(x: str, a: str, b: str) -> bool:
    """A shared phrase that labels a different identifier in each block ('operator card OC-0613'
    and 'operator card OC-0631', 'signing key SK-58' and 'SK-85') names two things of one kind,
    not one thing: no evidence of a link."""
    if not x.startswith("term:"):
        return False
    label = _label(x[5:])
    ma, mb = label.search(spell_numbers(a)), label.search(spell_numbers(b))
    return bool(ma and mb) and canon(ma.group(1)) != canon(mb.group(1))


def _stem(word: str) -> str:
    """A word without its commonest ending ('rehearses', 'rehearse' -> 'rehears')."""
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=1 << 16)
def content_stems(text: str) -> frozenset[str]:
    """A text's content words, stemmed."""
    t = text.casefold()
    words = {_stem(w) for w in WORD.findall(t) if w not in STOP}
    return frozenset(words | {w.group(0) for w in cjk_words(t)})  # Japanese: its runs


class _About:
    """What each block says of the query: the query's content words (stemmed) it uses."""

    def __init__(self, texts: list[str], query: str):
        self.stems, self.q = [content_stems(t) for t in texts], content_stems(query)

    def beyond(self, i: int, xs) -> int:
        """How many of the query's words block i uses besides those of the mentions xs."""
        own = frozenset().union(*(content_stems(x.split(":", 1)[1]) for x in xs))
        return len((self.stems[i] & self.q) - own)

    def both(self, a: int, b: int, xs) -> bool:
        """Do both blocks say something the query asks besides what they share (a
        pair joined only by the query's subject, one of them about nothing else of the query,
        is a distractor beside a fact, not two facts the answer combines)?"""
        return self.beyond(a, xs) > 0 and self.beyond(b, xs) > 0


def _focus(about: _About, holders, qm, w) -> dict:
    """For a mention the query names that three or more blocks hold (the query's subject, named
    by the facts the answer combines and by distractors alike; or, in any number of blocks, the
    query's own phrase, which alone links nothing): the two holders that say most about the
    query besides it, if two stand out, and the weight the mention has between them: as if they
    alone held it, as one the query names."""
    out = {}
    for x, hs in holders.items():
        if x not in qm or len(hs) < 3:
            continue
        ranked = sorted(((about.beyond(i, [x]), i) for i in hs), reverse=True) + [(0, -1)]
        if ranked[1][0] > ranked[2][0] and ranked[1][0] > 0:
            pair = tuple(sorted((ranked[0][1], ranked[1][1])))
            out[x] = (pair, ANCHOR * (TERM if x.startswith(("term:", "dim:")) else 1.0))
    return out


def distinct_names(xs: list[str], query: frozenset[str]) -> list[str]:
    """The shared mentions as evidence, each clue once: a numbered thing ('sheet#88') that a
    shared code already carries ('ls88', 'k47' beside 'bundle#47') is that code; a bare number
    that a shared numbered thing carries ('2291' of 'invoice 2291') is that thing; a person's or
    a place's words ('tomasz', 'wierzbicki', the pair 'tomasz wierzbicki') are the full name
    when that is shared; what two numbers measure counts only beside a mention of
    the query's subject."""
    nums = {re.sub(r"^[a-z]+", "", x[5:]) for x in xs if x.startswith("code:") and "#" not in x}
    numbered = {x.split("#")[1] for x in xs if "#" in x}
    names = {x[5:] for x in xs if x.startswith("name:")}
    in_full = {w for n in names if " " in n for w in n.split()}
    subject = any(x in query for x in xs if x.startswith(("code:", "name:", "num:", "qty:")))

    def same_as_another(x: str) -> bool:
        if "#" in x and x.split("#")[1] in nums:
            return True
        if x.startswith("num:") and x[4:] in numbered:
            return True
        if x.startswith("name:") and " " not in x and x[5:] in in_full:
            return True
        return x.startswith("term:") and all(w in names for w in x[5:].split())

    return [x for x in xs if not same_as_another(x) and (subject or not x.startswith("dim:"))]


def _distances(ms: list[frozenset[str]], q: frozenset[str], pairs, about=None) -> list[float]:
    """Steps from the query to each block over the linked pairs; a block sharing a mention with
    the query is where the steps start, or, when no block does, a block using one of the query's
    words (`about`: a query no block repeats a phrase of still has blocks about it; inf: not
    connected)."""
    q = frozenset(x for x in q if not x.startswith("dim:"))  # a unit names no subject
    seeds = [i for i, m in enumerate(ms) if m & q]
    if not seeds and about is not None:
        seeds = [i for i in range(len(ms)) if about.beyond(i, ()) > 0]
    return _steps(seeds, pairs, len(ms))


def mention_links(
    texts: list[str], query: str, fallback: str = FALLBACK, asked: dict | None = None
) -> list[Link]:
    """The mention graph of one scenario as directed, confidence-weighted edges, each with the
    rule that decided its direction (`rules.RULES`): of two blocks sharing mentions, the one that
    defines what they share is the prerequisite ('role', `definitions.defined`); else the one naming
    it later in its text, and (`fallback` 'two-way') the other way at TWO_WAY of the confidence
    ('order' / 'two-way'); without an order, an edge each way."""
    pairs = link_pairs(texts, query, asked)
    _, _, pos, defs = scenario_positions(tuple(texts), query)
    out = []
    for a, b, c, xs in pairs:
        da, db = defs[a] & set(xs), defs[b] & set(xs)
        if bool(da) != bool(db):  # one defines what the other uses: it is the prerequisite
            dep, pre = (b, a) if da else (a, b)
            out.append(Link(dep, pre, round(c, 6), xs, "role"))
            continue
        lead = sum(pos[a][x] - pos[b][x] for x in xs) / len(xs)  # > 0: a names them later
        if abs(lead) >= ORDER_TIE:  # mention order: the likelier direction at full confidence
            dep, pre = (b, a) if lead > 0 else (a, b)
            out.append(Link(dep, pre, round(c, 6), xs, "order"))
            if fallback == "two-way":  # and the other way, weaker: the text cannot decide
                out.append(Link(pre, dep, round(c * TWO_WAY, 6), xs, "two-way"))
        else:  # no order: two facts the answer combines, each supports the other
            out.append(Link(a, b, round(c, 6), xs, "two-way"))
            out.append(Link(b, a, round(c, 6), xs, "two-way"))
    return sorted(out, key=lambda e: (e.dependent, e.prerequisite))
