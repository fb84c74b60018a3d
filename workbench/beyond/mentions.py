"""Mention linking: a dependency graph read from what blocks mention, not from how a generator
phrases them.

A block's *mentions* are the rare things it names: codes and ids (`K-0421`, `k0421`, `RT 512`,
`job_7f3a2c`, in any casing or separator style, and a code spelled in words: `R T five twelve`),
proper names (`Marek`, `Lisbon`), numbers with units (`$4,500`, `4500 dollars`) and content-word
pairs (`relay profile`). Two blocks that share a mention are linked, weighted by how rare the
mention is within the scenario (an inverse document frequency over its blocks): a mention in
two blocks of twenty links them strongly, one in most blocks not at all. A mention the query
also names is an anchor, not a bridge: it counts half (two blocks about the query's subject are
not thereby about each other).

Direction (mention order first, the query second): an edge points from the dependent to the
block it needs. A block introduces what it names late and builds on what it names first ("Alice
joined bundle K-0421"; "Bundle K-0421 maps to clearance N7"): of two blocks sharing a mention,
the one that names it later in its text introduced it and is the prerequisite. When the mention
sits at about the same place in both (within ORDER_TIE of the text), the text gives no order:
the two are facts the answer combines, and each supports the other (an edge each way). Every
edge carries its confidence in (0, 1]; DSGC may weight its support by it.
"""

from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache

# --- number words ------------------------------------------------------------------------------

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_UNITS["oh"] = 0
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_SCALES = {"hundred": 100, "thousand": 1000}
_NUMWORD = re.compile(
    r"\b(?:" + "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True)) + r")"
    r"(?:[\s-]+(?:"
    + "|".join(sorted([*_UNITS, *_TENS, *_SCALES], key=len, reverse=True))
    + r"))*\b",
    re.I,
)


def _number_value(words: list[str]) -> str:
    """Digits for a run of number words: digit by digit when every word is a single digit
    ('four two one' -> '421', 'oh seven' -> '07'), else the value ('forty-seven' -> '47',
    'five hundred twelve' -> '512'; 'five twelve', two numbers said in a row, -> '512')."""
    if len(words) > 1 and all(w in _UNITS and _UNITS[w] < 10 for w in words):
        return "".join(str(_UNITS[w]) for w in words)
    parts, total, current = [], 0, None
    for w in words:
        if w in _SCALES:
            current = (current or 1) * _SCALES[w]
            if _SCALES[w] == 1000:
                total, current = total + current, None
            continue
        v = _UNITS.get(w, _TENS.get(w))
        if current is not None and (current % 100 == 0 and current >= 100):
            current += v  # 'five hundred' + 'twelve'
        elif current is not None and current % 10 == 0 and current >= 20 and v < 10:
            current += v  # 'forty' + 'seven'
        elif current is not None:
            parts.append(str(total + current))  # two numbers said in a row: 'five twelve'
            total, current = 0, v
        else:
            current = v
    if current is not None or total:
        parts.append(str(total + (current or 0)))
    return "".join(parts)


def spell_numbers(text: str) -> str:
    """The text with runs of number words written as digits ('ticket five twelve' -> 'ticket 512')."""

    def sub(m: re.Match) -> str:
        words = [w.lower() for w in re.split(r"[\s-]+", m.group(0)) if w]
        if len(words) == 1 and words[0] in ("one", "oh"):
            return m.group(0)  # 'one' and 'oh' alone are words, not numbers
        return _number_value(words)

    return _NUMWORD.sub(sub, text)


# --- mentions ------------------------------------------------------------------------------------

_STOP = frozenset(
    """a an the and or but if of to in on at by for from with without into onto under over as is
    are was were be been being has have had do does did can could may might must shall should will
    would this that these those it its their there here what which who whom whose when where why
    how all any each every some no not only also just than then so such very more most less least
    before after again per via about above below between up down out off new old same other our
    your my his her we they you i he she them us me""".split()
)
_CALENDAR = (
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May "
    "June July August September October November December"
).split()
# words of time and frequency: a pair with one ('last year', 'next week', 'monday mornings')
# dates a block but names no entity of a chain (variant 14, data/calibration/inducer.md)
_WHEN = frozenset(
    """today tonight tomorrow yesterday ago last next later earlier soon since until year years
    month months week weeks day days daily weekly monthly yearly annual annually morning mornings
    evening evenings night nights hour hours minute minutes season""".split()
)
_CAPSTOP = frozenset(s.capitalize() for s in _STOP) | {"Please", "Yes", "No", "Ok", "Okay"}
_CAPSTOP |= frozenset(_CALENDAR)  # calendar words name no entity of a chain
# a code: letters then digits ('RT-512', 'k0421', 'Q47'; uppercase letters when a space
# separates them: 'RT 512'), digits then letters ('4B'), or a word joined to hex ('job_7f3a2c')
_CODE = re.compile(
    r"\b([A-Za-z]{1,4})[-_./]?(\d{1,8})\b|\b([A-Z]{1,4}) (\d{1,8})\b|\b(\d{1,6})[-_]?([A-Za-z]{1,2})\b"
)
_CAPSID = re.compile(r"\b[A-Z]{1,3}-[A-Z]{2,5}\b")  # letters only, in capitals: 'G-LRKB', 'MP-AUR'
_HEXID = re.compile(r"\b([a-z]{2,8})[_-]([0-9a-f]{4,})\b", re.I)
# a compound identifier: parts joined by - _ / with a digit somewhere ('FF_LOGIN_V2',
# 'ff-login-v2', '77-3019'), or a lowercase path ('rel/stellar'): written without separators
_COMPOUND = re.compile(r"(?<![\w/-])[A-Za-z0-9]+(?:[-_/][A-Za-z0-9]+)+(?![\w/-])")
_UNIT_WORDS = {
    "dollars": "usd", "dollar": "usd", "usd": "usd", "$": "usd", "euros": "eur", "eur": "eur",
    "kilopascals": "kpa", "kpa": "kpa", "percent": "pct", "%": "pct", "gb": "gb", "mb": "mb",
    "ms": "ms", "seconds": "s", "minutes": "min", "hours": "h", "days": "d", "kg": "kg",
}  # fmt: skip
_UNIT_AFTER = re.compile(
    r"\s*(?:" + "|".join(map(re.escape, sorted(_UNIT_WORDS, key=len, reverse=True))) + r")\b", re.I
)
_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_QUANTITY = re.compile(
    r"\b(\d[\d,]*(?:\.\d+)?)\s*(" + "|".join(map(re.escape, _UNIT_WORDS)) + r")\b", re.I
)
_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
# a number and the word after it: what the number counts or measures, when that word is a unit,
# a month or a plural ('412 tickets', '58 percent', '3 March', '$950' is 'usd'; not '6 read')
_COUNTED = re.compile(r"(?:\$\s?\d[\d,]*(?:\.\d+)?()|\b\d[\d,]*(?:\.\d+)?\s*(%|[A-Za-z]{2,}))")
_MONTHS = frozenset(m.lower() for m in _CALENDAR[7:])
# a numbered thing: the word before a number names what it numbers ('Unit 3' / 'unit three');
# with a code's letters between, the two words before it do ('loading sheet LS-88' / 'Loading
# sheet 88', but not 'clearance level V6' / 'parking level six'); a number with a unit after it
# is a quantity instead
_NUMBERED = re.compile(
    r"\b(?:([A-Za-z]{3,})\s+)?([A-Za-z]{3,})\s+([A-Za-z]{1,4}[-_./]?)?(\d{1,4})\b(?![.,]\d)"
)
# a lone capital after a lowercase word names something: 'bundle M', 'clearance N', 'plan B'
_LETTER = re.compile(r"(?<=[a-z] )([A-Z])\b(?![.'’/_-]\w)")  # not the letter of 'S/450'
_WORD = re.compile(r"[a-z]+")


def _digits(s: str) -> str:
    s = s.replace(",", "")
    return str(int(float(s))) if re.fullmatch(r"\d+(?:\.0+)?", s) else s


def mentions(text: str) -> frozenset[str]:
    """The normalized mentions of a text: 'code:rt512', 'name:marek', 'qty:4500usd',
    'num:512', 'term:relay profile'."""
    return frozenset(positions(text))


@lru_cache(maxsize=1 << 16)
def positions(text: str) -> dict[str, float]:
    """Each mention of a text with where it first appears (0 = the start, 1 = the end)."""
    t = spell_numbers(text)
    found: dict[str, int] = {}

    def add(m: str, at: int) -> None:  # a mention, at its first place in the text
        if m not in found or at < found[m]:
            found[m] = at

    for m in _COMPOUND.finditer(t):
        raw = m.group(0)
        if re.search(r"\d", raw) or ("/" in raw and raw.islower()):
            joined = re.sub(r"[-_/]", "", raw).lower()
            add(("num:" + str(int(joined))) if joined.isdigit() else f"code:{joined}", m.start())
    for m in _CAPSID.finditer(t):
        add(f"code:{m.group(0).replace('-', '').lower()}", m.start())
    for m in _HEXID.finditer(t):
        add(f"code:{m.group(1).lower()}{m.group(2).lower()}", m.start())
    for m in _CODE.finditer(t):
        if m.group(1):
            letters, digits = m.group(1), m.group(2)
            joined = not re.search(r"[-_./]", m.group(0))
            if letters.islower() and joined and (len(letters) > 2 or letters in _STOP):
                continue  # 'is45', 'at10' are not codes; 'A24', 'rt-512', 'k0421' are
        elif m.group(3):
            letters, digits = m.group(3), m.group(4)
        else:
            letters, digits = m.group(6), m.group(5)
            if letters.lower() in ("st", "nd", "rd", "th", "am", "pm", "s", "x"):
                continue
        add(f"code:{letters.lower()}{int(digits)}", m.start())
    for m in _MONEY.finditer(t):
        add(f"qty:{_digits(m.group(1))}usd", m.start())
    for m in _QUANTITY.finditer(t):
        add(f"qty:{_digits(m.group(1))}{_UNIT_WORDS[m.group(2).lower()]}", m.start())
    for m in _COUNTED.finditer(t):  # what a number measures: a value and its limit share it
        unit = "$" if m.group(1) is not None else m.group(2).lower()
        if unit in _UNIT_WORDS or unit in _MONTHS or unit.endswith("s") and len(unit) > 3:
            add(f"dim:{_UNIT_WORDS.get(unit) or unit.rstrip('s')}", m.start())
    for m in re.finditer(r"\b\d[\d,]{2,}\b", t):  # bare numbers of three digits or more
        add(f"num:{_digits(m.group(0))}", m.start())
    for m in _NUMBERED.finditer(t):
        first, label, letters, n = m.group(1), m.group(2).lower(), m.group(3), int(m.group(4))
        if label in _STOP or _UNIT_AFTER.match(t, m.end()):
            continue
        if not letters:
            add(f"code:{label}#{n}", m.start(2))
        if first and first.lower() not in _STOP:
            add(f"code:{first.lower()} {label}#{n}", m.start())
    for m in _NAME.finditer(t):
        if m.group(0) not in _CAPSTOP:
            add(f"name:{m.group(0).lower()}", m.start())
    for m in _LETTER.finditer(t):
        if m.group(1) not in ("I", "A"):
            add(f"code:{m.group(1).lower()}", m.start())
    words = list(re.finditer(r"[a-z]+", t.lower()))
    for a, b in zip(words, words[1:], strict=False):
        x, y = a.group(0), b.group(0)
        if t[a.end() : b.start()].strip(" -"):
            continue  # not next to each other: 'reads 1.9 metres' holds no term 'reads metres'
        if x not in _STOP and y not in _STOP and len(x) > 2 and len(y) > 2:
            if x not in _WHEN and y not in _WHEN:
                add(f"term:{x} {y}", a.start())
    n = max(len(t), 1)
    return {m: at / n for m, at in found.items()}


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


@dataclass(frozen=True)
class Link:
    """One induced edge: (dependent, prerequisite) store positions, its confidence, and the
    mentions the two blocks share."""

    dependent: int
    prerequisite: int
    confidence: float
    shared: tuple[str, ...]


def _query_words(query_text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(query_text.lower()) if w not in _STOP)


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
    top = max(3, min(n // 4, MAX_HOLDERS))
    out = {}
    for m, d in df.items():
        if not 2 <= d <= top:
            continue
        anchor = m in query
        if m.startswith("term:"):
            inq = [w in qwords for w in m[5:].split()]
            if all(inq):
                continue
            anchor = anchor or any(inq)
        w = 1.0 / (d - 1)  # two blocks: a link of its own; each further block shares it
        kind = TERM if m.startswith(("term:", "dim:")) else 1.0
        out[m] = w * (ANCHOR if anchor else 1.0) * kind
    return out


def _scenario_mentions(texts: list[str], query: str) -> tuple[list[frozenset[str]], frozenset[str]]:
    """Each block's mentions and the query's, without 'names' that are common words of the
    scenario (a capitalized word that also appears in lowercase, e.g. a sentence's first word)."""
    lower = {w for t in (*texts, query) for w in _WORD.findall(t)}
    drop = {f"name:{w}" for w in lower}

    def keep(ms: frozenset[str]) -> frozenset[str]:
        return frozenset(m for m in ms if m not in drop)

    return [keep(mentions(t)) for t in texts], keep(mentions(query))


def link_pairs(texts: list[str], query: str) -> list[tuple[int, int, float, tuple[str, ...]]]:
    """(a, b, confidence, shared mentions) for every linked pair a < b: the shared mentions'
    weights combined as independent evidence (1 - prod(1 - w)), each block keeping at most
    MAX_LINKS partners (the strongest; ties: store order), pairs under MIN_CONFIDENCE dropped,
    and only pairs in a part of the mention graph that reaches the query (links among blocks
    that nothing connects to the query cannot be the query's chain) or that share an opaque id
    (`_OPAQUE`: a reference, whatever the query names)."""
    ms, qm = _scenario_mentions(texts, query)
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
    scored = []
    for (a, b), xs in evidence.items():
        xs = _distinct(xs, qm)
        miss = 1.0
        for x in xs:
            miss *= 1.0 - w[x]
        c = 1.0 - miss
        if c >= MIN_CONFIDENCE:
            scored.append((a, b, c, tuple(sorted(xs))))
    # strongest first; at equal confidence (two certain links), the pair sharing more evidence
    scored.sort(key=lambda p: (-p[2], -sum(w[x] for x in p[3]), p[0], p[1]))
    links: dict[int, int] = {}
    out = []
    for a, b, c, xs in scored:
        if links.get(a, 0) < MAX_LINKS and links.get(b, 0) < MAX_LINKS:
            links[a] = links.get(a, 0) + 1
            links[b] = links.get(b, 0) + 1
            out.append((a, b, c, xs))
    dist = _distances(ms, qm, out)
    return sorted(p for p in out if dist[p[0]] < math.inf or any(map(_OPAQUE.match, p[3])))


def _distinct(xs: list[str], query: frozenset[str]) -> list[str]:
    """The shared mentions as evidence: a numbered thing ('sheet#88') that a shared code already
    carries ('ls88', 'k47' beside 'bundle#47') is the same clue, counted once; what two numbers
    measure counts only beside a mention of the query's subject."""
    nums = {re.sub(r"^[a-z]+", "", x[5:]) for x in xs if x.startswith("code:") and "#" not in x}
    subject = any(x in query for x in xs if x.startswith(("code:", "name:", "num:", "qty:")))
    return [
        x
        for x in xs
        if ("#" not in x or x.split("#")[1] not in nums) and (subject or not x.startswith("dim:"))
    ]


def _distances(ms: list[frozenset[str]], q: frozenset[str], pairs) -> list[float]:
    """Steps from the query to each block over the linked pairs; a block sharing a mention with
    the query is one step away (inf: not connected)."""
    dist = [math.inf] * len(ms)
    todo = deque()
    q = frozenset(x for x in q if not x.startswith("dim:"))  # a unit names no subject
    for i, m in enumerate(ms):
        if m & q:
            dist[i] = 1
            todo.append(i)
    nbrs: dict[int, list[int]] = {}
    for a, b, _, _ in pairs:
        nbrs.setdefault(a, []).append(b)
        nbrs.setdefault(b, []).append(a)
    while todo:
        i = todo.popleft()
        for j in nbrs.get(i, ()):
            if dist[j] > dist[i] + 1:
                dist[j] = dist[i] + 1
                todo.append(j)
    return dist


def mention_links(texts: list[str], query: str) -> list[Link]:
    """The mention graph of one scenario as directed, confidence-weighted edges: of two blocks
    sharing mentions, the one naming them later in its text is the prerequisite; without an
    order, an edge each way."""
    pairs = link_pairs(texts, query)
    out = []
    for a, b, c, xs in pairs:
        pa, pb = positions(texts[a]), positions(texts[b])
        lead = sum(pa[x] - pb[x] for x in xs) / len(xs)  # > 0: a names them later
        if abs(lead) >= ORDER_TIE:
            dep, pre = (b, a) if lead > 0 else (a, b)
            out.append(Link(dep, pre, round(c, 6), xs))
        else:  # no order: two facts the answer combines, each supports the other
            out.append(Link(a, b, round(c, 6), xs))
            out.append(Link(b, a, round(c, 6), xs))
    return sorted(out, key=lambda e: (e.dependent, e.prerequisite))
