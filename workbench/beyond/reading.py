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


_UP = _letters("Lu")  # an upper-case letter of any script ('A', 'Ö', 'Ж')
_LO = _letters("Ll")  # a lower-case letter of any script
_LETTER_RUN = r"[^\W\d_]+"  # a word of letters, any script

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


# --- mentions ------------------------------------------------------------------------------------

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
_CALENDAR = (
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May "
    "June July August September October November December Easter Christmas Hanukkah Diwali Eid "
    "Ramadan Passover Thanksgiving"  # holidays too
).split()
# words of time and frequency: a pair with one ('last year', 'next week', 'monday mornings')
# dates a block but names no entity of a chain (data/calibration/inducer.md)
_WHEN = frozenset(
    """today tonight tomorrow yesterday ago last next later earlier soon since until year years
    month months week weeks day days daily weekly monthly yearly annual annually morning mornings
    evening evenings night nights hour hours minute minutes season""".split()
)
CAPSTOP = frozenset(s.capitalize() for s in STOP) | {"Please", "Yes", "No", "Ok", "Okay"}
CAPSTOP |= frozenset(_CALENDAR)  # calendar words name no entity of a chain
# titles and the clock name no one in particular ('Frau Schäfer', '6:00 Uhr'; tier I)
CAPSTOP |= {"Frau", "Herr", "Uhr", "Señor", "Señora", "Don", "Doña", "Mrs", "Miss"}
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
    r"\b[A-Z]{1,5}[- ]?\d{2,}(?: \d{2,})+\b(?![.,]\d)|"  # 'NV-883 210', 'MC 40 2291'
    r"\b[A-Z]{1,5} \d[A-Za-z0-9]*(?:[-_/][A-Za-z0-9]+)+(?![\w/-])"
    r"|\b[A-Z]{1,5} \d+[A-Za-z][A-Za-z0-9]*(?![\w/-])"  # 'SKU 550913G'
)
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
_NAME = re.compile(rf"(?<![^\W\d_])[{_UP}][{_LO}]{{2,}}(?![^\W\d_])")  # 'Marek', 'Jördis', 'Жуков'
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
_LETTER = re.compile(
    r"(?<=[a-z] )([A-Z])\b(?![.'’/_-]\w)(?!\.\s+[A-Z])"
)  # not 'S/450', 'H. Brandt'
# 'jefe de compras', 'Kosten der Stelle': a term across one genitive article (not English 'of')
_GENITIVE = frozenset("de del der des du di da".split())
_GENITIVE_GAP = re.compile(r"(?i)(?<=\s)(?:de|del|der|des|du|di|da)(?=\s)")
WORD = re.compile(_LETTER_RUN)  # a word, any script (read from a case-folded text)
LOWER_RUN = re.compile(rf"[{_LO}]+")  # letters in lower case: a word as a sentence's middle says it


# a token that alternates letters and digits more than once, without separators ('RP9C4',
# 'ab12cd'): an identifier as some systems print one (data/calibration/inducer.md)
_ALNUM = re.compile(
    r"(?<![\w/-])[A-Za-z]*\d+[A-Za-z]+\d[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])\d+[A-Za-z]+\d+[A-Za-z0-9]*(?![\w/-])|"
    r"(?<![\w/-])[A-Za-z]+\d+[A-Za-z]+(?![\w/-])"  # 'ST2291F', 't14edu'
)
# capitalized words inside a sentence (after a word, a number or a comma and a space)
INNER = re.compile(rf"(?<=[\w,;:'’)] )[{_UP}][{_LO}]{{2,}}(?:[ -][{_UP}][{_LO}]{{2,}})*")
# two or more capitalized words in a row name one thing ('Tomasz Wierzbicki', 'Dunmore Road')
FULLNAME = re.compile(
    rf"(?<![^\W\d_])[{_UP}][{_LO}]{{2,}}(?:[ -][{_UP}][{_LO}]{{2,}})+(?![^\W\d_])"
)


def canon(raw: str) -> str:
    """One code however it is written: lowercase, no separators, no leading zeros in a run of
    digits ('OC-0613', 'oc613' and 'OC 613' are 'oc613'; 'QX-40-118' is 'qx40118')."""
    joined = re.sub(r"[^a-z0-9]", "", raw.lower())
    return re.sub(r"(?<![0-9])0+(?=[0-9])", "", joined)


def _canons(raw: str) -> set[str]:
    """The code's forms: `canon`, and, when a group after a separator is zero-padded, the form
    without those zeros ('TH/2019/0447' is also 'th2019447', as 'th-2019-447' writes it: the
    joined form alone keeps the zeros of a group that follows digits)."""
    return {canon(raw), canon(re.sub(r"(?<=[-_/. ])0+(?=[0-9])", "", raw))}


def _digits(s: str) -> str:
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


# --- citations, sections and aliases ------------------------------------------------------------

_CITE_NUM = re.compile(r"\[(\d{1,3}(?:\s*[,–-]\s*\d{1,3})*)\]")  # '[7]', '[3, 12]', '[4-6]'
_SURNAME = rf"[{_UP}][{_LO}'’-]+"
# 'Haddad et al. (2023)', 'Haddad and Lutz (2019)', 'Sato (2021)', '(Brandt, 2018)', 'Brandt, 2018a'
_CITE_AY = re.compile(
    rf"(?<![^\W\d_])({_SURNAME})(?:\s+et\s+al\.?|\s+(?:and|&|und|y)\s+{_SURNAME})?"
    rf"(?:,\s*|\s+\()((?:19|20)\d\d)[a-z]?\b(?![.,]\d)"
)
# a reference-list entry: '[7] Okonkwo, A. & ...', 'Haddad, R., Meier, J. and ... (2023).'
_ENTRY = re.compile(
    rf"^\s*(?:\[(\d{{1,3}})\]\s*)?(?:({_SURNAME}),\s+(?:[{_UP}]\.\s*)+.*?\(((?:19|20)\d\d)[a-z]?\))?"
)
# a numbered clause or section, as a heading ('7.2 Emergency ...', 'Clause 4.1.') or named
_SECTION = re.compile(
    r"\b(?:clause|section|article|§|klausel|abschnitt|cláusula|artículo|apartado)\s*(\d+(?:\.\d+)+|\d+)\b",
    re.I,
)
_HEADING = re.compile(
    r"^\s*(?:(?:clause|section|article|§|klausel|cláusula|artículo)\s*)?(\d+(?:\.\d+)+)\.?\s", re.I
)
# a name given once for what the sentence names ('... (known to everyone as the northern depot)',
# 'the party calls him Bart', 'her crew have called her Red', 'X, i.e. Y', 'genannt', 'alias')
_ALIAS = re.compile(  # the phrase in any case; the name: capitalized words, or lowercase ones
    r"(?i:\bknown(?:\s+to\s+\w+(?:\s+\w+)?)?\s+as|\balso\s+called|\bnicknamed|\ba\.?k\.?a\.?"
    r"|\balias|\bi\.\s?e\.,?|\bcall(?:s|ed)?\s+(?:him|her|them|it)|\bgenannt|\bconocid[oa]s?\s+como"
    r"|\bllamad[oa]s?)\s+(?i:the\s+|el\s+|la\s+|der\s+|die\s+|das\s+)?[\"“„«'‘]?"
    rf"([{_UP}][{_LO}]+(?:\s+[{_UP}][{_LO}]+)?|[{_LO}]+(?:\s+[{_LO}]+)?)(?![^\W\d_])"
)


# Japanese writes no spaces: its words are the runs of one script (kanji, katakana) between kana
# particles; a katakana run is a name or a loanword, 'の' joins a phrase ('倉庫の鍵'); a name given
# once: '通称ケン', '愛称は「ミドリ」'. (Chinese, all hanzi, is one run a clause: left unread.)
_KANA_NAME = "\u30a1-\u30fa\u30fc\u30fb"  # katakana, the long-vowel mark and the middle dot
_CJK_WORD = re.compile(rf"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[{_KANA_NAME}]{{2,}}")
_CJK_ALIAS = re.compile(
    rf"(?:通称|愛称|あだ名)(?:は|が)?[「『]?([{_KANA_NAME}]{{2,}}|[\u4e00-\u9fff]{{2,}})"
)


_CJK_LETTER = re.compile(r"(?<=[\u3400-\u4dbf\u4e00-\u9fff\u30a1-\u30fa] )([A-Z])\b(?![.'’/_-]\w)")
_KATAKANA = frozenset(chr(c) for c in range(0x30A1, 0x30FB))


def cjk_words(t: str) -> list[re.Match]:
    """The kanji and katakana runs of a text (`_CJK_WORD`; a lone kanji is a run too), in
    order."""
    return list(_CJK_WORD.finditer(t))


@lru_cache(maxsize=1 << 16)
def aliases(text: str) -> dict[str, int]:
    """The names a text gives something once for later use ('bart', 'northern depot'), with
    where (in the normalized text)."""
    t = normalize(text)
    out: dict[str, int] = {}
    for m in _ALIAS.finditer(t):
        words = [w for w in m.group(1).split() if w.casefold() not in STOP]
        if words and len(" ".join(words)) >= 3:
            out.setdefault(" ".join(words).casefold(), m.start(1))
    for m in _CJK_ALIAS.finditer(t):
        out.setdefault(m.group(1).strip("・"), m.start(1))
    return out


# what a block defines: its head (before ': ', ' = ', ' means ', a table cell or tab, within
# the first 60 characters), each table row's first cell after a header row, its numbered heading,
# its reference entry (`_ENTRY`) and the aliases it gives (`aliases`)
_HEAD = re.compile(
    r"^\s*[\"“„«'‘]?([^\n]{1,60}?)[\"”“»'’]?\s*(?::\s|:(?=[\u3040-\u9fff])|\s=\s|\s*\|\s*|\t"
    r"|\s+(?:means|bezeichnet|significa|refers to)\b)"
)
_ID_KEY = re.compile(r'"(?:id|[a-z]+_id|handle)"\s*:\s*"([^"]+)"')


def _table(lines: list[str]) -> str | None:
    """The column separator of text pasted from a sheet: two lines or more, none of them JSON,
    each with as many '|', tabs or commas as the header (a row may have fewer cells)."""
    if len(lines) < 2 or any(line.lstrip().startswith(("{", "[")) for line in lines):
        return None
    for sep in ("\t", "|", ","):
        k = lines[0].count(sep)
        if k and all(0 < line.count(sep) <= k for line in lines[1:] if line.strip()):
            return sep
    return None


_DOTTED = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![.,]?\d)")  # thousands by points
_REPLY = re.compile(r"^\s*(?:re|aw|fw|fwd)\s*:|^\s*>", re.I)  # a reply or a quote defines nothing


@lru_cache(maxsize=1 << 16)
def defined(text: str) -> frozenset[str]:
    """The mentions a block defines (a definition, a schedule or table row, a reference entry, a
    numbered clause, an alias it introduces): the block another one that uses them needs."""
    t = spell_numbers(normalize(text))
    n = max(len(t), 1)
    spans = []
    if not _REPLY.match(t):
        if h := _HEAD.match(t):
            spans.append(h.span(1))
        if h := _HEADING.match(t):
            spans.append(h.span(1))
    lines = t.split("\n")
    sep = _table(lines)
    if sep:  # a table: each row's key cell
        at = len(lines[0]) + 1
        for line in lines[1:]:
            cell = re.match(rf"\s*([^{re.escape(sep)}]+)", line)
            if cell:
                spans.append((at + cell.start(1), at + cell.end(1)))
            at += len(line) + 1
    for m in _ID_KEY.finditer(t):  # a tool result's own id: '"run_id": "run_4e19a0"'
        spans.append(m.span(1))
    pos = positions(text)
    out = {m for m, p in pos.items() if any(a <= round(p * n) < b for a, b in spans)}
    e = _ENTRY.match(t)
    if e and e.group(1):
        out.add(f"cite:{e.group(1)}")
    if e and e.group(2):
        out.add(f"cite:{e.group(2).casefold()}{e.group(3)}")
    out.update(f"alias:{a}" for a in aliases(text))
    return frozenset(out)


def mentions(text: str) -> frozenset[str]:
    """The normalized mentions of a text: 'code:rt512', 'name:marek', 'qty:4500usd',
    'num:512', 'term:relay profile'."""
    return frozenset(positions(text))


@lru_cache(maxsize=1 << 16)
def positions(text: str) -> dict[str, float]:
    """Each mention of a text with where it first appears (0 = the start, 1 = the end)."""
    t = spell_numbers(normalize(text))
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
            continue  # mixed case is an encoding ('iVBORw0KGgo'), not an identifier
        whole.append(m.span())
        add(f"code:{canon(m.group(0))}", m.start())
    for m in _CAPSID.finditer(t):
        if not inside(m.span()):
            add(f"code:{canon(m.group(0))}", m.start())
    for m in _HEXID.finditer(t):
        if not inside(m.span()):
            add(f"code:{canon(m.group(0))}", m.start())
    for m in _CODE.finditer(t):
        if inside(m.span()):
            continue  # 'QX-40' inside 'QX-40-118' is no code of its own: 'QX-40-181' is another
        if m.group(1):
            letters = m.group(1)
            joined = not re.search(r"[-_./]", m.group(0))
            short = len(m.group(2)) < 3
            if letters.islower() and joined and short and (len(letters) > 2 or letters in STOP):
                continue  # 'is45', 'at10' are not codes; 'A24', 'rt-512', 'k0421', 'shp20417' are
        elif m.group(3):
            letters = m.group(3)
        else:
            letters = m.group(6)
            if letters.lower() in ("st", "nd", "rd", "th", "am", "pm", "s", "x"):
                continue
        add(f"code:{canon(m.group(0))}", m.start())
    for m in _MONEY.finditer(t):
        sign, amount = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        add(f"qty:{_digits(amount)}{_CURRENCY[sign]}", m.start())
    for m in _QUANTITY.finditer(t):
        add(f"qty:{_digits(m.group(1))}{_UNIT_WORDS[m.group(2).lower()]}", m.start())
    for m in _COUNTED.finditer(t):  # what a number measures: a value and its limit share it
        unit = "$" if m.group(1) is not None else m.group(2).lower()
        if unit in _UNIT_WORDS or unit in _MONTHS or unit.endswith("s") and len(unit) > 3:
            add(f"dim:{_UNIT_WORDS.get(unit) or unit.rstrip('s')}", m.start())
    grouped = [m.span() for m in _DOTTED.finditer(t)]  # '84.000': one number, not 84 and 0
    for m in _DOTTED.finditer(t):
        if not piece(m.span()):
            add(f"num:{_digits(m.group(0))}", m.start())
    for m in re.finditer(r"\b\d[\d,]{2,}\b", t):  # bare numbers of three digits or more
        if any(a <= m.start() < b for a, b in grouped):
            continue
        if not piece(m.span()):  # not one of an identifier's numbers ('5530' of 'TRK 5530-1178')
            add(f"num:{_digits(m.group(0))}", m.start())
    for m in _NUMBERED.finditer(t):
        first, label, letters, n = m.group(1), m.group(2).lower(), m.group(3), int(m.group(4))
        if label in STOP or _UNIT_AFTER.match(t, m.end()) or piece(m.span(4)) or goes_on(m.end(4)):
            continue
        if not letters:
            add(f"code:{label}#{n}", m.start(2))
        if first and first.lower() not in STOP:
            add(f"code:{first.lower()} {label}#{n}", m.start())
    for m in _NAME.finditer(t):  # (a capitalized label before a number names a numbered thing)
        if m.group(0) not in CAPSTOP and not re.match(r"\s+\d", t[m.end() :]):
            add(f"name:{m.group(0).lower()}", m.start())
    for m in FULLNAME.finditer(t):
        words = re.split(r"[ -]", m.group(0))
        while words and words[0] in CAPSTOP:
            words = words[1:]
        if len(words) > 1 and not any(w in CAPSTOP for w in words):
            add(f"name:{' '.join(words).lower()}", m.start() + m.group(0).index(words[0]))
    for m in _LETTER.finditer(t):
        if m.group(1) not in ("I", "A"):
            add(f"code:{m.group(1).lower()}", m.start())
    for m in _CITE_NUM.finditer(t):
        for k in re.findall(r"\d+", m.group(1)):
            add(f"cite:{int(k)}", m.start())
    for m in _CITE_AY.finditer(t):
        if m.group(1) not in CAPSTOP and m.group(1) not in _CALENDAR:
            add(f"cite:{m.group(1).casefold()}{m.group(2)}", m.start())
    e = _ENTRY.match(t)
    if e and e.group(2):
        add(f"cite:{e.group(2).casefold()}{e.group(3)}", e.start(2))
    for m in _SECTION.finditer(t):
        add(f"code:sec {m.group(1)}", m.start())
    if h := _HEADING.match(t):
        add(f"code:sec {h.group(1)}", h.start(1))
    for a, at in aliases(text).items():
        add(f"alias:{a}", at)
    words = [w for w in WORD.finditer(t) if w.group(0).casefold() not in _GENITIVE]
    for a, b in zip(words, words[1:], strict=False):
        x, y = a.group(0).casefold(), b.group(0).casefold()
        if _GENITIVE_GAP.sub(" ", t[a.end() : b.start()]).strip(" -'’"):
            continue  # not next to each other: 'reads 1.9 metres' holds no term 'reads metres'
        if any(i <= a.start() < j or i <= b.start() < j for i, j in whole):
            continue  # no phrase out of an identifier's words ('eng platform')
        if x not in STOP and y not in STOP and len(x) > 2 and len(y) > 2:
            if x not in _WHEN and y not in _WHEN:
                add(f"term:{x} {y}", a.start())
    for m in _CJK_LETTER.finditer(t):  # a letter that names a thing after Japanese ('料金表C')
        add(f"code:{m.group(1).lower()}", m.start(1))
    runs = cjk_words(t)
    for k, r in enumerate(runs):  # Japanese: katakana runs name, runs joined by 'の' are a phrase
        if r.group(0)[0] in _KATAKANA:
            for part in {r.group(0), *r.group(0).split("・")}:
                if len(part.strip("ー")) >= 2:
                    add(f"name:{part}", r.start())
        nxt = runs[k + 1].group(0) if k + 1 < len(runs) else ""
        if nxt and t[r.end() : runs[k + 1].start()] in ("", "の") and len(r.group(0) + nxt) >= 3:
            add(f"term:{r.group(0)} {nxt}", r.start())  # ('倉庫の鍵'; not two lone kanji)
    n = max(len(t), 1)
    return {m: at / n for m, at in found.items()}
