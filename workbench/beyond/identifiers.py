"""The readers of identifiers (`workbench.beyond.reading.READERS`): an id however it is
written, a date (read as nothing), a configuration file's sections and values, and what a table's
header or a key names (a field, not a thing).
"""

from __future__ import annotations

import re

from workbench.beyond.words import LOWER, STOP, UPPER, Text, canon, canons

# an id whose capitals a space separates from its digits ('TRK 5530-1178' / 'TRK55301178')
_SPACED = re.compile(
    r"\b[A-Z]{1,5}[- ]?\d{2,}(?: \d{2,})+\b(?![.,]\d)|"  # 'NV-883 210', 'MC 40 2291'
    r"\b[A-Z]{1,5} \d[A-Za-z0-9]*(?:[-_/][A-Za-z0-9]+)+(?![\w/-])"
    r"|\b[A-Z]{1,5} \d+[A-Za-z][A-Za-z0-9]*(?![\w/-])"  # 'SKU 550913G'
)


def read_spaced(x: Text) -> None:
    for m in _SPACED.finditer(x.t):
        x.whole.append(m.span())
        for c in canons(m.group(0)):
            x.add(f"code:{c}", m.start())


# a string written without spaces whose parts separators join ('FF_LOGIN_V2', '77-3019',
# 'reporting.env', 'cohort-b'); a key (of JSON, of a config line, 'key=value') and a table's
# header cell are a field's name, not a thing's; a word the language joins with a function word
# ('call-out') is no identifier
_JOINED = re.compile(r"(?<![\w/.-])[A-Za-z0-9]+(?:(?:[-_/]|\.(?=[A-Za-z]))[A-Za-z0-9]+)+(?![\w/-])")
_KEY = re.compile(r'"\s*:|=(?!=)|:(?:[ \t]|$)', re.M)  # after a JSON key, 'key=', 'key: '


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


# an ISO date or date-time ('2026-11-30', '2026-11-30T04:12:07Z'): it says when, not what
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)


def read_dates(x: Text) -> None:
    x.whole += [m.span() for m in _DATE.finditer(x.t)]


def read_joined(x: Text) -> None:
    lines = x.t.split("\n")
    header = len(lines[0]) if table_separator(lines) else -1  # a table's header names fields
    for m in _JOINED.finditer(x.t):
        raw = m.group(0)
        if x.inside(m.span()) or m.span() in x.whole:
            continue
        key = _KEY.match(x.t, m.end())  # a YAML key ('key: ') only first on its line
        before = x.t[x.t.rfind("\n", 0, m.start()) + 1 : m.start()]
        first = not before.strip(" \t-")
        field = m.end() <= header or (key is not None and (key.group(0)[0] in '"=' or first))
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


def read_alternating(x: Text) -> None:
    for m in _ALNUM.finditer(x.t):
        letters = re.sub(r"[^A-Za-z]", "", m.group(0))
        if not (letters.isupper() or letters.islower()):
            continue  # mixed case is an encoding ('iVBORw0KGgo'), not an identifier
        x.whole.append(m.span())
        x.add(f"code:{canon(m.group(0))}", m.start())


_CAPSID = re.compile(r"\b[A-Z]{1,3}-[A-Z]{2,5}\b")  # letters only, in capitals: 'G-LRKB'
_HEXID = re.compile(r"\b([a-z]{2,8})[_-]([0-9a-f]{4,})\b", re.I)  # a word joined to hex


def read_lettered(x: Text) -> None:
    for m in [*_CAPSID.finditer(x.t), *_HEXID.finditer(x.t)]:
        if not x.inside(m.span()):
            x.add(f"code:{canon(m.group(0))}", m.start())


# letters then digits ('RT-512', 'k0421', 'Q47'; uppercase letters when a space separates them:
# 'RT 512') or digits then letters ('4B')
_CODE = re.compile(
    r"\b([A-Za-z]{1,4})[-_./]?(\d{1,8})\b|\b([A-Z]{1,4}) (\d{1,8})\b|\b(\d{1,6})[-_]?([A-Za-z]{1,2})\b"
)


def read_codes(x: Text) -> None:
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


def read_capitalized(x: Text) -> None:
    for m in _CAMEL.finditer(x.t):
        x.add(f"code:{canon(m.group(0))}", m.start())


# in a configuration file (a text of lines): a section's name ('[replica]'), a key that opens a
# section of its own ('cohort-b:') and a setting's one-word value ('DB=replica'); the format's
# own literals name nothing
_SETTING = re.compile(
    r"(?m)^[ \t]*\[([\w.-]+)\][ \t]*$|^[ \t]*[\w.-]+[ \t]*(?:=|:)[ \t]*([\w.-]+)[ \t]*$"
    r"|^[ \t]+([\w.-]+):[ \t]*$"
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


def read_settings(x: Text) -> None:
    for word, (a, _), _ in settings(x.t):
        x.add(f"code:{canon(word)}", a)
