"""Reading what a text mentions, with the readers of one table (`READERS`): each reads one kind
of evidence any text carries (an identifier however it is written, a number and what it
measures, a name, a citation, a name the text gives, a content-word pair) into one normalized
form, with where it first appears (`positions`, `mentions`); `workbench.beyond.definitions`
says which of them a block defines, `workbench.beyond.mentions` links blocks by what they share.

What is not a mention: a piece of a longer identifier, a capitalized word that labels a number
(`Year 11`), a word of time in a pair (`last year`), a mixed-case encoding, a JSON object's key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

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
    canon,
    canons,
    cjk_words,
    digits,
    normalize,
    spell_numbers,
)


class Text:
    """One text as the readers read it: its normalized form (`t`, number words as digits), the
    mentions found so far with their first places, and where the identifiers read so far are (a
    piece of one is no mention of its own)."""

    def __init__(self, text: str):
        self.text = text
        self.t = spell_numbers(normalize(text))
        self.found: dict[str, int] = {}
        self.whole: list[tuple[int, int]] = []

    def add(self, mention: str, at: int) -> None:
        """A mention, at its first place in the text."""
        if mention not in self.found or at < self.found[mention]:
            self.found[mention] = at

    def inside(self, span: tuple[int, int]) -> bool:
        """The span is part of a longer identifier ('QX-40' of 'QX-40-118')."""
        return any(a <= span[0] and span[1] <= b and (a, b) != span for a, b in self.whole)

    def goes_on(self, end: int) -> bool:
        """An identifier goes on after this place ('T14-EDU')."""
        return any(a < end < b for a, b in self.whole)

    def piece(self, span: tuple[int, int]) -> bool:
        """A number among others of one identifier ('5530' of 'TRK 5530-1178')."""
        return any(
            a <= span[0] and span[1] <= b and len(re.findall(r"\d+", self.t[a:b])) > 1
            for a, b in self.whole
        )


@dataclass(frozen=True)
class Reader:
    """One row of the table: a reader's name, what it reads and the mention it gives."""

    name: str
    reads: str
    gives: str
    read: Callable[[Text], None]


# --- identifiers -----------------------------------------------------------------------------

# an id whose capitals a space separates from its digits ('TRK 5530-1178' / 'TRK55301178')
_SPACED = re.compile(
    r"\b[A-Z]{1,5}[- ]?\d{2,}(?: \d{2,})+\b(?![.,]\d)|"  # 'NV-883 210', 'MC 40 2291'
    r"\b[A-Z]{1,5} \d[A-Za-z0-9]*(?:[-_/][A-Za-z0-9]+)+(?![\w/-])"
    r"|\b[A-Z]{1,5} \d+[A-Za-z][A-Za-z0-9]*(?![\w/-])"  # 'SKU 550913G'
)


def _spaced(x: Text) -> None:
    for m in _SPACED.finditer(x.t):
        x.whole.append(m.span())
        for c in canons(m.group(0)):
            x.add(f"code:{c}", m.start())


# a string written without spaces whose parts separators join ('FF_LOGIN_V2', '77-3019',
# 'reporting.env', 'cohort-b'); a quoted key of a JSON object and a table's header cell are a
# field's name, not a thing's; a word the language joins with a function word ('call-out') is
# no identifier
_JOINED = re.compile(r"(?<![\w/.-])[A-Za-z0-9]+(?:(?:[-_/]|\.(?=[A-Za-z]))[A-Za-z0-9]+)+(?![\w/-])")
_KEY = re.compile(r'"\s*:')


def table_separator(lines: list[str]) -> str | None:
    """The column separator of text pasted from a sheet: two lines or more, none of them JSON,
    each with as many '|', tabs or commas as the header (a row may have fewer cells)."""
    if len(lines) < 2 or any(line.lstrip().startswith(("{", "[")) for line in lines):
        return None
    for sep in ("\t", "|", ","):
        k = lines[0].count(sep)
        if k and all(0 < line.count(sep) <= k for line in lines[1:] if line.strip()):
            return sep
    return None


def _joined(x: Text) -> None:
    lines = x.t.split("\n")
    header = len(lines[0]) if table_separator(lines) else -1  # a table's header names fields
    for m in _JOINED.finditer(x.t):
        raw = m.group(0)
        if x.inside(m.span()):
            continue
        field = _KEY.match(x.t, m.end()) or m.end() <= header
        word = raw.islower() and not STOP.intersection(raw.split("-"))  # not 'call-out'
        if re.search(r"\d", raw) or (not field and (re.search(r"[_/.]", raw) or word)):
            joined = re.sub(r"[-_/]", "", raw).lower()
            x.whole.append(m.span())
            if joined.isdigit():
                x.add(f"num:{int(joined)}", m.start())
            for c in () if joined.isdigit() else canons(raw):
                x.add(f"code:{c}", m.start())


# letters and digits alternating more than once without separators ('RP9C4', 'ab12cd')
_ALNUM = re.compile(
    r"(?<![\w/-])[A-Za-z]*\d+[A-Za-z]+\d[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])\d+[A-Za-z]+\d+[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])[A-Za-z]+\d+[A-Za-z]+(?![\w/-])"  # 'ST2291F', 't14edu'
)


def _alternating(x: Text) -> None:
    for m in _ALNUM.finditer(x.t):
        letters = re.sub(r"[^A-Za-z]", "", m.group(0))
        if not (letters.isupper() or letters.islower()):
            continue  # mixed case is an encoding ('iVBORw0KGgo'), not an identifier
        x.whole.append(m.span())
        x.add(f"code:{canon(m.group(0))}", m.start())


_CAPSID = re.compile(r"\b[A-Z]{1,3}-[A-Z]{2,5}\b")  # letters only, in capitals: 'G-LRKB'
_HEXID = re.compile(r"\b([a-z]{2,8})[_-]([0-9a-f]{4,})\b", re.I)  # a word joined to hex


def _lettered(x: Text) -> None:
    for m in [*_CAPSID.finditer(x.t), *_HEXID.finditer(x.t)]:
        if not x.inside(m.span()):
            x.add(f"code:{canon(m.group(0))}", m.start())


# letters then digits ('RT-512', 'k0421', 'Q47'; uppercase letters when a space separates them:
# 'RT 512') or digits then letters ('4B')
_CODE = re.compile(
    r"\b([A-Za-z]{1,4})[-_./]?(\d{1,8})\b|\b([A-Z]{1,4}) (\d{1,8})\b|\b(\d{1,6})[-_]?([A-Za-z]{1,2})\b"
)


def _code(x: Text) -> None:
    for m in _CODE.finditer(x.t):
        if x.inside(m.span()):
            continue  # 'QX-40' inside 'QX-40-118' is no code of its own: 'QX-40-181' is another
        if m.group(1):
            letters = m.group(1)
            joined = not re.search(r"[-_./]", m.group(0))
            short = len(m.group(2)) < 3
            if letters.islower() and joined and short and (len(letters) > 2 or letters in STOP):
                continue  # 'is45', 'at10' are not codes; 'A24', 'rt-512', 'k0421', 'shp20417' are
        elif not m.group(3) and m.group(6).lower() in (
            "st",
            "nd",
            "rd",
            "th",
            "am",
            "pm",
            "s",
            "x",
        ):
            continue
        x.add(f"code:{canon(m.group(0))}", m.start())


_CAMEL = re.compile(rf"(?<![^\W_])[{UPPER}][{LOWER}]+(?:[{UPPER}][{LOWER}]+)+(?![^\W_])")


def _camel(x: Text) -> None:
    for m in _CAMEL.finditer(x.t):
        x.add(f"code:{canon(m.group(0))}", m.start())


# in a configuration file (a text of lines): a section's name ('[replica]'), a key that opens a
# section of its own ('cohort-b:') and a setting's one-word value ('DB=replica'); the format's
# own literals name nothing
_SETTING = re.compile(
    r"(?m)^[ \t]*\[([\w.-]+)\][ \t]*$|^[ \t]*[\w.-]+[ \t]*(?:=|:)[ \t]*([\w.-]+)[ \t]*$"
    r"|^[ \t]*([\w.-]+):[ \t]*$"
)
_LITERALS = frozenset("true false yes no on off null none nil".split())


def settings(t: str) -> list[tuple[str, tuple[int, int], bool]]:
    """The sections and one-word values of a configuration file (`t`, normalized), each with its
    span and whether it heads a section; none in a text of one line."""
    out = []
    for m in _SETTING.finditer(t) if "\n" in t.strip() else ():
        k = next(k for k in (1, 2, 3) if m.group(k))
        if m.group(k).casefold() not in _LITERALS and not m.group(k).isdigit():
            out.append((m.group(k), m.span(k), k != 2))
    return out


def _setting(x: Text) -> None:
    for word, (a, _), _ in settings(x.t):
        x.add(f"code:{canon(word)}", a)


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


def _name(x: Text) -> None:
    for m in _NAME.finditer(x.t):  # (a capitalized label before a number names a numbered thing)
        if m.group(0) not in CAPSTOP and not re.match(r"\s+\d", x.t[m.end() :]):
            x.add(f"name:{m.group(0).lower()}", m.start())
    for m in FULLNAME.finditer(x.t):
        words = re.split(r"[ -]", m.group(0))
        while words and words[0] in CAPSTOP:
            words = words[1:]
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
        if _GENITIVE_GAP.sub(" ", x.t[a.end() : b.start()]).strip(" -'’"):
            continue  # not next to each other: 'reads 1.9 metres' holds no term 'reads metres'
        if any(i <= a.start() < j or i <= b.start() < j for i, j in x.whole):
            continue  # no phrase out of an identifier's words ('eng platform')
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
        _spaced,
    ),
    Reader(
        "joined string",
        "a string written without spaces whose parts `-` `_` `/` or `.` join, when it has a "
        "digit, a `_` `/` `.`, or is in lower case (`FF_LOGIN_V2`, `reporting.env`, `cohort-b`); "
        "not a JSON object's key",
        "code (num when all digits)",
        _joined,
    ),
    Reader(
        "alternating id",
        "letters and digits alternating more than once without separators, in one case "
        "(`RP9C4`, `ST2291F`; not a mixed-case encoding)",
        "code",
        _alternating,
    ),
    Reader(
        "lettered id",
        "capitals joined by a hyphen (`G-LRKB`), a word joined to a hex run (`job_7f3a2c`)",
        "code",
        _lettered,
    ),
    Reader(
        "code",
        "letters then digits (`RT-512`, `k0421`, `RT 512`) or digits then one or two letters "
        "(`4B`); not a word run into a short number (`is45`), not an ordinal or a clock time",
        "code",
        _code,
    ),
    Reader(
        "capitalized parts",
        "one word of capitalized parts (`RideSafe`, `FastTrack`)",
        "code",
        _camel,
    ),
    Reader(
        "setting",
        "in a text of several lines: a section header (`[replica]`), a key that opens a section "
        "(`cohort-b:`), a setting's one-word value (`DB=replica`); not `true`, `off`, `null`",
        "code",
        _setting,
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
