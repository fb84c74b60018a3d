"""Reading what a text mentions, with the readers of one table (`READERS`): each reads one kind
of evidence any text carries (an identifier however it is written, a number and what it
measures, a name, a citation, a name the text gives, a content-word pair) into one normalized
form, with where it first appears (`positions`, `mentions`); `workbench.beyond.definitions`
says which of them a block defines, `workbench.beyond.mentions` links blocks by what they share.

What is not a mention: a piece of a longer identifier, a capitalized word that labels a number
(`Year 11`), a word of time in a pair (`last year`), a mixed-case encoding, a key (a field's name
in JSON, a config line or a table's header), a date, a speaker's label.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from workbench.beyond.identifiers import (
    read_alternating,
    read_capitalized,
    read_codes,
    read_dates,
    read_joined,
    read_lettered,
    read_settings,
    read_spaced,
)
from workbench.beyond.words import (
    CALENDAR,
    CAPSTOP,
    FULLNAME,
    KANA_NAME,
    KATAKANA,
    LOWER,
    MONTHS,
    STOP,
    UPPER,
    WHEN,
    WORD,
    Text,
    cjk_words,
    digits,
    normalize,
)


@dataclass(frozen=True)
class Reader:
    """One row of the table: a reader's name, what it reads and the mention it gives."""

    name: str
    reads: str
    gives: str
    read: Callable[[Text], None]


# --- numbers ---------------------------------------------------------------------------------

_UNIT_WORDS = {
    "dollars": "usd", "dollar": "usd", "usd": "usd", "$": "usd", "euros": "eur", "eur": "eur",
    "kilopascals": "kpa", "kpa": "kpa", "percent": "pct", "%": "pct", "gb": "gb", "mb": "mb",
    "ms": "ms", "seconds": "s", "minutes": "min", "hours": "h", "days": "d", "kg": "kg",
}  # fmt: skip
_UNIT_AFTER = re.compile(
    r"\s*(?:" + "|".join(map(re.escape, sorted(_UNIT_WORDS, key=len, reverse=True))) + r")\b", re.I
)
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp"}
_AMOUNT = r"\d{1,3}(?:[.,]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?"
# money: '$4,500', '€ 4.10', '84.000 €', '38,50 €' (a sign before or after the amount)
_MONEY = re.compile(rf"([$€£])\s?({_AMOUNT})(?![\d.,]*\d)|(?<![\d.,])({_AMOUNT})\s?([€£])")
_QUANTITY = re.compile(
    r"\b(\d[\d,]*(?:\.\d+)?)\s*(" + "|".join(map(re.escape, _UNIT_WORDS)) + r")\b", re.I
)
# a number and the word after it: what the number counts or measures, when that word is a unit,
# a month or a plural ('412 tickets', '58 percent', '3 March', '$950' is 'usd'; not '6 read')
_COUNTED = re.compile(r"(?:\$\s?\d[\d,]*(?:\.\d+)?()|\b\d[\d,]*(?:\.\d+)?\s*(%|[A-Za-z]{2,}))")


def _quantity(x: Text) -> None:
    for m in _MONEY.finditer(x.t):
        sign, amount = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        x.add(f"qty:{digits(amount)}{_CURRENCY[sign]}", m.start())
    for m in _QUANTITY.finditer(x.t):
        x.add(f"qty:{digits(m.group(1))}{_UNIT_WORDS[m.group(2).lower()]}", m.start())


def _measure(x: Text) -> None:
    for m in _COUNTED.finditer(x.t):  # a value and its limit share what they measure
        unit = "$" if m.group(1) is not None else m.group(2).lower()
        if unit in _UNIT_WORDS or unit in MONTHS or unit.endswith("s") and len(unit) > 3:
            x.add(f"dim:{_UNIT_WORDS.get(unit) or unit.rstrip('s')}", m.start())


_DOTTED = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![.,]?\d)")  # thousands by points


def _number(x: Text) -> None:
    grouped = [m.span() for m in _DOTTED.finditer(x.t)]  # '84.000': one number, not 84 and 0
    for m in _DOTTED.finditer(x.t):
        if not x.piece(m.span()):
            x.add(f"num:{digits(m.group(0))}", m.start())
    for m in re.finditer(r"\b\d[\d,]{2,}\b", x.t):  # bare numbers of three digits or more
        if any(a <= m.start() < b for a, b in grouped):
            continue
        if not x.piece(m.span()):
            x.add(f"num:{digits(m.group(0))}", m.start())


# the word before a number names what it numbers ('Unit 3' / 'unit three'); with a code's
# letters between, the two words before it do ('loading sheet LS-88' / 'Loading sheet 88', but
# not 'clearance level V6' / 'parking level six'); a number with a unit after it is a quantity
_NUMBERED = re.compile(
    r"\b(?:([A-Za-z]{3,})\s+)?([A-Za-z]{3,})\s+([A-Za-z]{1,4}[-_./]?)?(\d{1,4})\b(?![.,]\d)"
)


def _numbered(x: Text) -> None:
    for m in _NUMBERED.finditer(x.t):
        first, label, letters, n = m.group(1), m.group(2).lower(), m.group(3), int(m.group(4))
        unit = _UNIT_AFTER.match(x.t, m.end())
        if label in STOP or unit or x.piece(m.span(4)) or x.goes_on(m.end(4)):
            continue
        if not letters:
            x.add(f"code:{label}#{n}", m.start(2))
        if first and first.lower() not in STOP:
            x.add(f"code:{first.lower()} {label}#{n}", m.start())


# --- names -----------------------------------------------------------------------------------

_NAME = re.compile(rf"(?<![^\W\d_])[{UPPER}][{LOWER}]{{2,}}(?![^\W\d_])")  # 'Marek', 'Жуков'
# a lone capital after a lowercase word names something: 'bundle M', 'plan B' (not 'S/450',
# 'H. Brandt')
_LETTER = re.compile(r"(?<=[a-z] )([A-Z])\b(?![.'’/_-]\w)(?!\.\s+[A-Z])")
_HANDLE = re.compile(r"(?<![\w@])@([^\W\d_][\w.-]*\w)")


# who wrote or says a block, in its label: '[00:03:12] Odile:', 'Maeve (14:02):', 'From: Gideon
# Marsh', 'On 2 Nov, Carys wrote:' (the label names who speaks, not what is spoken of; a name
# and a colon alone may head a record about that person: 'Bram: 31 hit points')
_WHO = rf"((?:[{UPPER}][{LOWER}]+[ \t]?){{1,3}})"
_SPEAKER = re.compile(
    rf"(?m)^[> \t]*From:[ \t]*{_WHO}"
    rf"|^[> \t]*\[[^\]\n]*\d[^\]\n]*\][ \t]*{_WHO}[ \t]*:"  # after a time in brackets
    rf"|^[> \t]*{_WHO}[ \t]*\([^)\n]*\d[^)\n]*\)[ \t]*:"  # before a time in parentheses
    rf"|{_WHO}[ \t]+wrote:"
)


def _speaker(x: Text) -> None:
    for m in _SPEAKER.finditer(x.t):
        k = next(k for k in (1, 2, 3, 4) if m.group(k))
        x.labels.append((m.start(k), m.end(k) + len(" wrote") * (k == 4)))


def _name(x: Text) -> None:
    for m in _NAME.finditer(x.t):  # (a capitalized label before a number names a numbered thing)
        if x.labelled(m.start()):
            continue
        if m.group(0) not in CAPSTOP and not re.match(r"\s+\d", x.t[m.end() :]):
            x.add(f"name:{m.group(0).lower()}", m.start())
    for m in FULLNAME.finditer(x.t):
        words = re.split(r"[ -]", m.group(0))
        while words and words[0] in CAPSTOP:
            words = words[1:]
        if x.labelled(m.start()):
            continue
        if len(words) > 1 and not any(w in CAPSTOP for w in words):
            x.add(f"name:{' '.join(words).lower()}", m.start() + m.group(0).index(words[0]))
    for m in _HANDLE.finditer(x.t):
        x.add(f"name:{m.group(1).casefold()}", m.start())


def _letter(x: Text) -> None:
    for m in _LETTER.finditer(x.t):
        if m.group(1) not in ("I", "A"):
            x.add(f"code:{m.group(1).lower()}", m.start())


# --- citations and sections ------------------------------------------------------------------

_CITE_NUM = re.compile(r"\[(\d{1,3}(?:\s*[,–-]\s*\d{1,3})*)\]")  # '[7]', '[3, 12]', '[4-6]'
_SURNAME = rf"[{UPPER}][{LOWER}'’-]+"
# 'Haddad et al. (2023)', 'Haddad and Lutz (2019)', 'Sato (2021)', '(Brandt, 2018)', 'Brandt, 2018a'
_CITE_AY = re.compile(
    rf"(?<![^\W\d_])({_SURNAME})(?:\s+et\s+al\.?|\s+(?:and|&|und|y)\s+{_SURNAME})?"
    rf"(?:,\s*|\s+\()((?:19|20)\d\d)[a-z]?\b(?![.,]\d)"
)
# a reference-list entry: '[7] Okonkwo, A. & ...', 'Haddad, R., Meier, J. and ... (2023).'
ENTRY = re.compile(
    rf"^\s*(?:\[(\d{{1,3}})\]\s*)?(?:({_SURNAME}),\s+(?:[{UPPER}]\.\s*)+.*?\(((?:19|20)\d\d)[a-z]?\))?"
)
# a numbered clause or section, as a heading ('7.2 Emergency ...', 'Clause 4.1.') or named
_SECTION = re.compile(
    r"\b(?:clause|section|article|§|klausel|abschnitt|cláusula|artículo|apartado)\s*(\d+(?:\.\d+)+|\d+)\b",
    re.I,
)
HEADING = re.compile(
    r"^\s*(?:(?:clause|section|article|§|klausel|cláusula|artículo)\s*)?(\d+(?:\.\d+)+)\.?\s", re.I
)


def _citation(x: Text) -> None:
    for m in _CITE_NUM.finditer(x.t):
        for k in re.findall(r"\d+", m.group(1)):
            x.add(f"cite:{int(k)}", m.start())
    for m in _CITE_AY.finditer(x.t):
        if m.group(1) not in CAPSTOP and m.group(1) not in CALENDAR:
            x.add(f"cite:{m.group(1).casefold()}{m.group(2)}", m.start())
    e = ENTRY.match(x.t)
    if e and e.group(2):
        x.add(f"cite:{e.group(2).casefold()}{e.group(3)}", e.start(2))


def _section(x: Text) -> None:
    for m in _SECTION.finditer(x.t):
        x.add(f"code:sec {m.group(1)}", m.start())
    if h := HEADING.match(x.t):
        x.add(f"code:sec {h.group(1)}", h.start(1))


# --- names a text gives ----------------------------------------------------------------------

# a name given once for what the sentence names ('... (known to everyone as the northern depot)',
# 'the party calls him Bart', 'her crew have called her Red', 'X, i.e. Y', 'genannt', 'alias')
_ALIAS = re.compile(  # the phrase in any case; the name: capitalized words, or lowercase ones
    r"(?i:\bknown(?:\s+to\s+\w+(?:\s+\w+)?)?\s+as|\balso\s+called|\bnicknamed|\ba\.?k\.?a\.?"
    r"|\balias|\bi\.\s?e\.,?|\bcall(?:s|ed)?\s+(?:him|her|them|it)|\bgenannt|\bconocid[oa]s?\s+como"
    r"|\bllamad[oa]s?)\s+(?i:the\s+|el\s+|la\s+|der\s+|die\s+|das\s+)?[\"“„«'‘]?"
    rf"([{UPPER}][{LOWER}]+(?:\s+[{UPPER}][{LOWER}]+)?|[{LOWER}]+(?:\s+[{LOWER}]+)?)(?![^\W\d_])"
)
# Japanese: '通称ケン', '愛称は「ミドリ」'
_CJK_ALIAS = re.compile(
    rf"(?:通称|愛称|あだ名)(?:は|が)?[「『]?([{KANA_NAME}]{{2,}}|[\u4e00-\u9fff]{{2,}})"
)
# a short span in quotation marks (one to three words of letters): a name the writer marks
_QUOTED = re.compile(
    r"(?:(?<=^)|(?<=[\s(]))(?:'|\"|“|„|«|‘)([^\W\d_]+(?:[ -][^\W\d_]+){0,2})(?:'|\"|”|“|»|’)(?![^\W\d_])"
)


@lru_cache(maxsize=1 << 16)
def aliases(text: str) -> dict[str, int]:
    """The names a text gives something once for later use ('bart', 'northern depot', a name in
    quotation marks), with where (in the normalized text)."""
    t = normalize(text)
    out: dict[str, int] = {}
    for m in _ALIAS.finditer(t):
        words = [w for w in m.group(1).split() if w.casefold() not in STOP]
        if words and len(" ".join(words)) >= 3:
            out.setdefault(" ".join(words).casefold(), m.start(1))
    for m in _CJK_ALIAS.finditer(t):
        out.setdefault(m.group(1).strip("・"), m.start(1))
    for m in _QUOTED.finditer(t):
        if t[t.rfind("\n", 0, m.start()) + 1 :].lstrip().startswith(("{", "[")):
            continue  # on a line of JSON (or a printed dict), quotes are syntax
        words = [w for w in m.group(1).split() if w.casefold() not in STOP]
        if words and len(" ".join(words)) >= 3:
            out.setdefault(" ".join(words).casefold(), m.start(1))
    return out


def _alias(x: Text) -> None:
    for a, at in aliases(x.text).items():
        x.add(f"alias:{a}", at)


# --- content-word pairs ----------------------------------------------------------------------

# 'jefe de compras', 'Kosten der Stelle': a term across one genitive article (not English 'of')
_GENITIVE = frozenset("de del der des du di da".split())
_GENITIVE_GAP = re.compile(r"(?i)(?<=\s)(?:de|del|der|des|du|di|da)(?=\s)")


def _term(x: Text) -> None:
    words = [w for w in WORD.finditer(x.t) if w.group(0).casefold() not in _GENITIVE]
    for a, b in zip(words, words[1:], strict=False):
        u, v = a.group(0).casefold(), b.group(0).casefold()
        gap = x.t[a.end() : b.start()]
        if gap != " " and _GENITIVE_GAP.sub(" ", gap).strip(" -'’"):
            continue  # not next to each other: 'reads 1.9 metres' holds no term 'reads metres'
        if any(i <= a.start() < j or i <= b.start() < j for i, j in x.whole):
            continue  # no phrase out of an identifier's words ('eng platform')
        if x.labels and (x.labelled(a.start()) or x.labelled(b.start())):
            continue  # nor out of a speaker's label ('Carys wrote')
        if u not in STOP and v not in STOP and len(u) > 2 and len(v) > 2:
            if u not in WHEN and v not in WHEN:
                x.add(f"term:{u} {v}", a.start())


_CJK_LETTER = re.compile(r"(?<=[\u3400-\u4dbf\u4e00-\u9fff\u30a1-\u30fa] )([A-Z])\b(?![.'’/_-]\w)")


def _japanese(x: Text) -> None:
    for m in _CJK_LETTER.finditer(x.t):  # a letter that names a thing after Japanese ('料金表C')
        x.add(f"code:{m.group(1).lower()}", m.start(1))
    runs = cjk_words(x.t)
    for k, r in enumerate(runs):
        if r.group(0)[0] in KATAKANA:
            for part in {r.group(0), *r.group(0).split("・")}:
                if len(part.strip("ー")) >= 2:
                    x.add(f"name:{part}", r.start())
        nxt = runs[k + 1].group(0) if k + 1 < len(runs) else ""
        if nxt and x.t[r.end() : runs[k + 1].start()] in ("", "の") and len(r.group(0) + nxt) >= 3:
            x.add(f"term:{r.group(0)} {nxt}", r.start())  # ('倉庫の鍵'; not two lone kanji)


# --- the table -------------------------------------------------------------------------------

READERS: tuple[Reader, ...] = (
    Reader(
        "spaced id",
        "an id whose capital prefix a space separates from its digit groups (`TRK 5530-1178`, "
        "`NV-883 210`, `SKU 550913G`), as its form without spaces",
        "code",
        read_spaced,
    ),
    Reader(
        "date",
        "an ISO date or date-time (`2026-11-30`, `2026-11-30T04:12:07Z`): it says when, and no "
        "piece of it is read",
        "nothing",
        read_dates,
    ),
    Reader(
        "joined string",
        "a string written without spaces whose parts `-` `_` `/` or `.` join, when it has a "
        "digit, a `_` `/` `.`, or is in lower case (`FF_LOGIN_V2`, `reporting.env`, `cohort-b`); "
        'without a digit, not a key (`"job_id":`, `pool_size: 20`, `max_heap=2g`), a table\'s '
        "header cell or a word joined with a function word (`call-out`)",
        "code (num when all digits)",
        read_joined,
    ),
    Reader(
        "alternating id",
        "letters and digits alternating more than once without separators, in one case "
        "(`RP9C4`, `ST2291F`; not a mixed-case encoding)",
        "code",
        read_alternating,
    ),
    Reader(
        "lettered id",
        "capitals joined by a hyphen (`G-LRKB`), a word joined to a hex run (`job_7f3a2c`)",
        "code",
        read_lettered,
    ),
    Reader(
        "code",
        "letters then digits (`RT-512`, `k0421`, `RT 512`) or digits then one or two letters "
        "(`4B`); not a word run into a short number (`is45`), not an ordinal or a clock time",
        "code",
        read_codes,
    ),
    Reader(
        "capitalized parts",
        "one word of capitalized parts (`RideSafe`, `FastTrack`)",
        "code",
        read_capitalized,
    ),
    Reader(
        "setting",
        "in a text of several lines: a section header (`[replica]`), a key that opens a section "
        "(`cohort-b:`), a setting's one-word value (`DB=replica`); not `true`, `off`, `null`",
        "code",
        read_settings,
    ),
    Reader(
        "quantity",
        "money with its sign in any locale (`$4,500`, `84.000 €`, `38,50 €`), a number with a "
        "unit word (`4500 dollars`, `250 kPa`)",
        "qty",
        _quantity,
    ),
    Reader(
        "measure",
        "what a number counts or measures: the unit, month or plural after it (`412 tickets`, "
        "`3 March`)",
        "dim",
        _measure,
    ),
    Reader(
        "number",
        "a number of three digits or more, grouped in any locale (`4,500`, `84.000`); not one of "
        "an identifier's numbers",
        "num",
        _number,
    ),
    Reader(
        "numbered thing",
        "the word (or two) before a number, as what it numbers (`Unit 3` / `unit three`, "
        "`loading sheet LS-88` / `Loading sheet 88`); not before a unit",
        "code",
        _numbered,
    ),
    Reader(
        "speaker",
        "who speaks or wrote, in a block's label (`[00:03:12] Odile:`, `Maeve (14:02):`, `From: "
        "Gideon Marsh`, `Carys wrote:`): no name or pair is read there",
        "nothing",
        _speaker,
    ),
    Reader(
        "name",
        "a capitalized word in any script (`Marek`, `Жуков`), a full name as one (`Tomasz "
        "Wierzbicki`), a handle (`@sam`); not a function word, a calendar word or a label "
        "before a number",
        "name",
        _name,
    ),
    Reader(
        "letter",
        "a lone capital after a lowercase word (`plan B`, `bundle M`); not `I`, `A` or an initial",
        "code",
        _letter,
    ),
    Reader(
        "citation",
        "a numbered citation (`[7]`, `[3, 12]`), an author and year (`Haddad et al. (2023)`), "
        "a reference entry's author and year",
        "cite",
        _citation,
    ),
    Reader(
        "section",
        "a numbered clause or section, named (`Clause 4.1`, `§ 12`) or heading a block (`7.2 ...`)",
        "code",
        _section,
    ),
    Reader(
        "given name",
        "a name a text gives (`known as the northern depot`, `calls him Bart`, `i.e.`, `通称ケン`) "
        "or marks with quotation marks (`the 'wallet' rotation`, `„Blau“`); not on a JSON line",
        "alias",
        _alias,
    ),
    Reader(
        "content-word pair",
        "two content words next to each other, across one genitive article (`relay profile`, "
        "`jefe de compras`); not a word of time, not out of an identifier's words",
        "term",
        _term,
    ),
    Reader(
        "Japanese",
        "katakana runs as names, two runs joined by `の` as a pair (`倉庫の鍵`), a capital after "
        "Japanese text (`料金表C`)",
        "name, term, code",
        _japanese,
    ),
)


@lru_cache(maxsize=1 << 16)
def positions(text: str) -> dict[str, float]:
    """Each mention of a text with where it first appears (0 = the start, 1 = the end): every
    reader of `READERS`, in order."""
    x = Text(text)
    for r in READERS:
        r.read(x)
    n = max(len(x.t), 1)
    return {m: at / n for m, at in x.found.items()}


def mentions(text: str) -> frozenset[str]:
    """The normalized mentions of a text: 'code:rt512', 'name:marek', 'qty:4500usd',
    'num:512', 'term:relay profile'."""
    return frozenset(positions(text))
