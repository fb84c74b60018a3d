"""The words of a text, before any mention is read from it: one form of the text in any script
(`normalize`), number words as digits (`spell_numbers`), a language's function words (`STOP`),
words and names in any alphabet, and the one form of a code or a number however it is written
(`canon`, `canons`, `digits`), and one text as the readers of `workbench.beyond.reading` read it
(`Text`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# --- every script: one form of a text before anything is read from it ----------------------------

# characters that are not there for a reader: soft hyphen, zero-width space / joiners, word joiner,
# byte-order mark, Mongolian vowel separator; a no-break or narrow space is a space (NFKC makes it
# one), a no-break or figure hyphen is a hyphen
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff\u180e"))
_INVISIBLE.update({ord(c): "-" for c in "\u2010\u2011\u2012\u2212"})


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # kana and kanji
_HAS_CJK = re.compile(f"[{_CJK}]")
# a Latin code or a number written against Japanese text ('注文8812は') stands apart from it
_CJK_EDGE = re.compile(f"(?<=[{_CJK}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{_CJK}])")


@lru_cache(maxsize=1 << 16)
def normalize(text: str) -> str:
    """The text as it is read: NFKC (full-width letters, ligatures and compatibility spaces to
    their plain forms), invisible characters dropped, hyphen variants as '-', a space between
    Japanese text and a Latin code or number written against it. Letters keep their diacritics
    and script."""
    t = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return _CJK_EDGE.sub(" ", t) if _HAS_CJK.search(t) else t


def _letters(category: str) -> str:
    """A character class body of every BMP letter of a Unicode category ('Lu', 'Ll')."""
    out, start, prev = [], None, None
    for cp in range(0x10000):
        hit = unicodedata.category(chr(cp)) == category
        if hit and start is None:
            start = cp
        if not hit and start is not None:
            out.append((start, prev))
            start = None
        prev = cp
    if start is not None:
        out.append((start, prev))
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in out)


UPPER = _letters("Lu")  # an upper-case letter of any script ('A', 'Ö', 'Ж')
LOWER = _letters("Ll")  # a lower-case letter of any script
LETTER_RUN = r"[^\W\d_]+"  # a word of letters, any script

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
            return m.group(0)  # part of an identifier: 'TEN-6613'
        return _number_value(words)

    return _NUMWORD.sub(sub, text)


# --- words ---------------------------------------------------------------------------------------

STOP = frozenset(
    """a an the and or but if of to in on at by for from with without into onto under over as is
    are was were be been being has have had do does did can could may might must shall should will
    would this that these those it its their there here what which who whom whose when where why
    how all any each every some no not only also just than then so such very more most less least
    before after again per via about above below between up down out off new old same other our
    your my his her we they you i he she them us me him
    der die das den dem des ein eine einen einem einer eines und oder ist sind war im am um zu zum
    zur von vom mit für auf aus bei nach über wird werden hat haben nicht auch noch schon sich sie
    er wir ihr ab wer wie wann darf dort hinein seit sagt
    el la los las lo un una unos unas y o del al en con por para que se es son su sus le les este
    esta ese esa según mientras qué quién cuánto cuándo dónde""".split()
)  # English, and the function words of German and Spanish (tier I; a capitalized article is no name)
CALENDAR = (
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May "
    "June July August September October November December Easter Christmas Hanukkah Diwali Eid "
    "Ramadan Passover Thanksgiving"  # holidays too
).split()
# words of time and frequency: a pair with one ('last year', 'next week', 'monday mornings')
# dates a block but names no entity of a chain (data/calibration/inducer.md)
WHEN = frozenset(
    """today tonight tomorrow yesterday ago last next later earlier soon since until year years
    month months week weeks day days daily weekly monthly yearly annual annually morning mornings
    evening evenings night nights hour hours minute minutes season""".split()
)
CAPSTOP = frozenset(s.capitalize() for s in STOP) | {"Please", "Yes", "No", "Ok", "Okay"}
CAPSTOP |= frozenset(CALENDAR)  # calendar words name no entity of a chain, nor do their short forms
CAPSTOP |= frozenset(
    "Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split()
)
# titles and the clock name no one in particular ('Frau Schäfer', '6:00 Uhr'; tier I)
CAPSTOP |= {"Frau", "Herr", "Uhr", "Señor", "Señora", "Don", "Doña", "Mrs", "Miss"}
MONTHS = frozenset(m.lower() for m in CALENDAR[7:])
WORD = re.compile(LETTER_RUN)  # a word, any script (read from a case-folded text)
LOWER_RUN = re.compile(
    rf"[{LOWER}]+"
)  # letters in lower case: a word as a sentence's middle says it
# capitalized words inside a sentence (after a word, a number or a comma and a space)
INNER = re.compile(rf"(?<=[\w,;:'’)] )[{UPPER}][{LOWER}]{{2,}}(?:[ -][{UPPER}][{LOWER}]{{2,}})*")
# two or more capitalized words in a row name one thing ('Tomasz Wierzbicki', 'Dunmore Road')
FULLNAME = re.compile(
    rf"(?<![^\W\d_])[{UPPER}][{LOWER}]{{2,}}(?:[ -][{UPPER}][{LOWER}]{{2,}})+(?![^\W\d_])"
)

# Japanese writes no spaces: its words are the runs of one script (kanji, katakana) between kana
# particles
KANA_NAME = "\u30a1-\u30fa\u30fc\u30fb"  # katakana, the long-vowel mark and the middle dot
KATAKANA = frozenset(chr(c) for c in range(0x30A1, 0x30FB))
_CJK_WORD = re.compile(rf"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[{KANA_NAME}]{{2,}}")


def cjk_words(t: str) -> list[re.Match]:
    """The kanji and katakana runs of a text (a lone kanji is a run too), in order."""
    return list(_CJK_WORD.finditer(t))


# --- one form of a code or a number ----------------------------------------------------------


def canon(raw: str) -> str:
    """One code however it is written: lowercase, no separators, no leading zeros in a run of
    digits ('OC-0613', 'oc613' and 'OC 613' are 'oc613'; 'QX-40-118' is 'qx40118')."""
    joined = re.sub(r"[^a-z0-9]", "", raw.lower())
    return re.sub(r"(?<![0-9])0+(?=[0-9])", "", joined)


def canons(raw: str) -> set[str]:
    """The code's forms: `canon`, and, when a group after a separator is zero-padded, the form
    without those zeros ('TH/2019/0447' is also 'th2019447', as 'th-2019-447' writes it: the
    joined form alone keeps the zeros of a group that follows digits)."""
    return {canon(raw), canon(re.sub(r"(?<=[-_/. ])0+(?=[0-9])", "", raw))}


def digits(s: str) -> str:
    """A number however its locale groups it: '4,500', '4.500' and '4500' are '4500'; '38,50'
    and '38.50' are '38.5' (a comma or point before one or two digits is the decimal mark)."""
    if re.fullmatch(r"\d{1,3}(?:\.\d{3})+(?:,\d{1,2})?", s):  # 84.000 / 1.250,50: German, Spanish
        s = s.replace(".", "").replace(",", ".")
    elif re.fullmatch(r"\d+,\d{1,2}", s):  # 38,50
        s = s.replace(",", ".")
    s = s.replace(",", "")
    if re.fullmatch(r"\d+\.\d+", s):
        s = s.rstrip("0").rstrip(".")
    return str(int(s)) if s.isdigit() else s


class Text:
    """One text as the readers read it: its normalized form (`t`, number words as digits), the
    mentions found so far with their first places, and where the identifiers read so far are (a
    piece of one is no mention of its own)."""

    def __init__(self, text: str):
        self.text = text
        self.t = spell_numbers(normalize(text))
        self.found: dict[str, int] = {}
        self.whole: list[tuple[int, int]] = []
        self.labels: list[tuple[int, int]] = []  # who speaks ('Maeve (14:02):')

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

    def labelled(self, at: int) -> bool:
        """The place is in a speaker's label."""
        return any(a <= at < b for a, b in self.labels)

    def piece(self, span: tuple[int, int]) -> bool:
        """A number among others of one identifier ('5530' of 'TRK 5530-1178')."""
        return any(
            a <= span[0] and span[1] <= b and len(re.findall(r"\d+", self.t[a:b])) > 1
            for a, b in self.whole
        )
