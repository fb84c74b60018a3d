"""Reading what a text mentions: the codes and ids, names, numbers with units and content-word
pairs a block names, each in one normalized form however it is written (`positions`,
`mentions`). `workbench.beyond.mentions` links blocks by what they share.

Codes and ids in any casing or separator style (`K-0421`, `k0421`, `RT 512`, `job_7f3a2c`,
`TRK 5530-1178` / `TRK55301178`), a code spelled in words (`R T five twelve`), proper names
(`Marek`, `Lisbon`; a full name as one), numbers with units (`$4,500`, `4500 dollars`), what a
number measures (`412 tickets`), numbered things (`Unit 3` / `unit three`) and content-word pairs
(`relay profile`). What is not a mention: a piece of a longer identifier, a capitalized word
that labels a number (`Year 11`), a word of time in a pair (`last year`), a mixed-case encoding.
"""

from __future__ import annotations

import re
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
        if m.group(0).isupper() or re.match(r"[-_/]?\d", text[m.end() :]):
            return m.group(0)  # part of an identifier: 'TEN-6613' (variant 20)
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
    "June July August September October November December Easter Christmas Hanukkah Diwali Eid "
    "Ramadan Passover Thanksgiving"  # holidays too (variant 19)
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
# ... after a prefix in capitals and a space ('TRK 5530-1178', which 'TRK55301178' writes whole)
_SPACED = re.compile(
    r"\b[A-Z]{1,5} \d[A-Za-z0-9]*(?:[-_/][A-Za-z0-9]+)+(?![\w/-])"
    r"|\b[A-Z]{1,5} \d+[A-Za-z][A-Za-z0-9]*(?![\w/-])"  # 'SKU 550913G' (variant 21)
)
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


# a token that alternates letters and digits more than once, without separators ('RP9C4',
# 'ab12cd'): an identifier as some systems print one (variant 15, data/calibration/inducer.md)
_ALNUM = re.compile(
    r"(?<![\w/-])[A-Za-z]*\d+[A-Za-z]+\d[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])\d+[A-Za-z]+\d+[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])[A-Za-z]+\d+[A-Za-z]+(?![\w/-])"  # 'ST2291F', 't14edu' (variant 20)
)
# capitalized words inside a sentence (after a word, a number or a comma and a space)
_INNER = re.compile(r"(?<=[\w,;:'’)] )[A-Z][a-z]{2,}(?:[ -][A-Z][a-z]{2,})*")
# two or more capitalized words in a row name one thing ('Tomasz Wierzbicki', 'Dunmore Road')
_FULLNAME = re.compile(r"\b[A-Z][a-z]{2,}(?:[ -][A-Z][a-z]{2,})+\b")


def _canon(raw: str) -> str:
    """One code however it is written: lowercase, no separators, no leading zeros in a run of
    digits ('OC-0613', 'oc613' and 'OC 613' are 'oc613'; 'QX-40-118' is 'qx40118')."""
    joined = re.sub(r"[^a-z0-9]", "", raw.lower())
    return re.sub(r"(?<![0-9])0+(?=[0-9])", "", joined)


def _canons(raw: str) -> set[str]:
    """The code's forms: `_canon`, and, when a group after a separator is zero-padded, the form
    without those zeros ('TH/2019/0447' is also 'th2019447', as 'th-2019-447' writes it; variant
    21: the joined form alone kept the zeros of a group that follows digits)."""
    return {_canon(raw), _canon(re.sub(r"(?<=[-_/. ])0+(?=[0-9])", "", raw))}


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

    whole: list[tuple[int, int]] = []  # where each compound identifier is (its parts are not codes)

    def inside(span: tuple[int, int]) -> bool:
        return any(a <= span[0] and span[1] <= b and (a, b) != span for a, b in whole)

    def goes_on(end: int) -> bool:  # an identifier that goes on after this place ('T14-EDU')
        return any(a < end < b for a, b in whole)

    def piece(span: tuple[int, int]) -> bool:  # a number among others of one identifier
        return any(
            a <= span[0] and span[1] <= b and len(re.findall(r"\d+", t[a:b])) > 1 for a, b in whole
        )

    for m in _SPACED.finditer(t):
        whole.append(m.span())
        for c in _canons(m.group(0)):
            add(f"code:{c}", m.start())
    for m in _COMPOUND.finditer(t):
        raw = m.group(0)
        if inside(m.span()):
            continue
        if re.search(r"\d", raw) or ("/" in raw and raw.islower()):
            joined = re.sub(r"[-_/]", "", raw).lower()
            whole.append(m.span())
            if joined.isdigit():
                add(f"num:{int(joined)}", m.start())
            for c in () if joined.isdigit() else _canons(raw):
                add(f"code:{c}", m.start())
    for m in _ALNUM.finditer(t):
        letters = re.sub(r"[^A-Za-z]", "", m.group(0))
        if not (letters.isupper() or letters.islower()):
            continue  # mixed case is an encoding ('iVBORw0KGgo'), not an identifier (variant 20)
        whole.append(m.span())
        add(f"code:{_canon(m.group(0))}", m.start())
    for m in _CAPSID.finditer(t):
        if not inside(m.span()):
            add(f"code:{_canon(m.group(0))}", m.start())
    for m in _HEXID.finditer(t):
        if not inside(m.span()):
            add(f"code:{_canon(m.group(0))}", m.start())
    for m in _CODE.finditer(t):
        if inside(m.span()):
            continue  # 'QX-40' inside 'QX-40-118' is no code of its own: 'QX-40-181' is another
        if m.group(1):
            letters = m.group(1)
            joined = not re.search(r"[-_./]", m.group(0))
            short = len(m.group(2)) < 3
            if letters.islower() and joined and short and (len(letters) > 2 or letters in _STOP):
                continue  # 'is45', 'at10' are not codes; 'A24', 'rt-512', 'k0421', 'shp20417' are
        elif m.group(3):
            letters = m.group(3)
        else:
            letters = m.group(6)
            if letters.lower() in ("st", "nd", "rd", "th", "am", "pm", "s", "x"):
                continue
        add(f"code:{_canon(m.group(0))}", m.start())
    for m in _MONEY.finditer(t):
        add(f"qty:{_digits(m.group(1))}usd", m.start())
    for m in _QUANTITY.finditer(t):
        add(f"qty:{_digits(m.group(1))}{_UNIT_WORDS[m.group(2).lower()]}", m.start())
    for m in _COUNTED.finditer(t):  # what a number measures: a value and its limit share it
        unit = "$" if m.group(1) is not None else m.group(2).lower()
        if unit in _UNIT_WORDS or unit in _MONTHS or unit.endswith("s") and len(unit) > 3:
            add(f"dim:{_UNIT_WORDS.get(unit) or unit.rstrip('s')}", m.start())
    for m in re.finditer(r"\b\d[\d,]{2,}\b", t):  # bare numbers of three digits or more
        if not piece(m.span()):  # not one of an identifier's numbers ('5530' of 'TRK 5530-1178')
            add(f"num:{_digits(m.group(0))}", m.start())
    for m in _NUMBERED.finditer(t):
        first, label, letters, n = m.group(1), m.group(2).lower(), m.group(3), int(m.group(4))
        if label in _STOP or _UNIT_AFTER.match(t, m.end()) or piece(m.span(4)) or goes_on(m.end(4)):
            continue
        if not letters:
            add(f"code:{label}#{n}", m.start(2))
        if first and first.lower() not in _STOP:
            add(f"code:{first.lower()} {label}#{n}", m.start())
    for m in _NAME.finditer(t):  # (a capitalized label before a number names a numbered thing)
        if m.group(0) not in _CAPSTOP and not re.match(r"\s+\d", t[m.end() :]):
            add(f"name:{m.group(0).lower()}", m.start())
    for m in _FULLNAME.finditer(t):
        words = re.split(r"[ -]", m.group(0))
        while words and words[0] in _CAPSTOP:
            words = words[1:]
        if len(words) > 1 and not any(w in _CAPSTOP for w in words):
            add(f"name:{' '.join(words).lower()}", m.start() + m.group(0).index(words[0]))
    for m in _LETTER.finditer(t):
        if m.group(1) not in ("I", "A"):
            add(f"code:{m.group(1).lower()}", m.start())
    words = list(re.finditer(r"[a-z]+", t.lower()))
    for a, b in zip(words, words[1:], strict=False):
        x, y = a.group(0), b.group(0)
        if t[a.end() : b.start()].strip(" -'’"):
            continue  # not next to each other: 'reads 1.9 metres' holds no term 'reads metres'
        if any(i <= a.start() < j or i <= b.start() < j for i, j in whole):
            continue  # no phrase out of an identifier's words ('eng platform', variant 21)
        if x not in _STOP and y not in _STOP and len(x) > 2 and len(y) > 2:
            if x not in _WHEN and y not in _WHEN:
                add(f"term:{x} {y}", a.start())
    n = max(len(t), 1)
    return {m: at / n for m, at in found.items()}
