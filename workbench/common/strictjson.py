"""Strict JSON: Python's parser with the limits a reader of untrusted files needs (depth at most
`MAX_JSON_DEPTH`, no NaN or Infinity, no over-long numbers, no lone surrogates), every error
raised as the caller's error class naming the path, the line and the field.
`workbench.common.io.parse_json` is the front door."""

from __future__ import annotations

import json
import math
import re

import numpy as np

MAX_JSON_DEPTH = 100  # deeper JSON is an error (Python's parser would hit its recursion limit)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = "a string holds a lone surrogate (\\ud800-\\udfff), which is not text"


class _NotANumber:
    """Stands in for NaN, Infinity or an overflowing number while parsing, so the error can
    name the field that holds it."""

    def __init__(self, what: str):
        self.what = what


_not_numbers = 0  # how many _NotANumber markers the decoder below has made (only grows)


def _constant(name: str) -> _NotANumber:
    global _not_numbers
    _not_numbers += 1
    return _NotANumber(f"{name} is not a JSON number")


def _number(text: str):
    global _not_numbers
    v = float(text)
    if math.isfinite(v):
        return v
    _not_numbers += 1
    return _NotANumber(f"number {text[:20]} is out of range")


# one decoder, built once (json.loads with hooks would build one per call)
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_number)


_JSON_SPECIAL = np.zeros(256, dtype=bool)
_JSON_SPECIAL[[ord(c) for c in '"\\[]{}']] = True


def _depth(text: str) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings ignored)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return 0  # cannot be deeper than the number of openers
    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    pos = np.flatnonzero(_JSON_SPECIAL[b])  # quotes, backslashes and brackets only
    v = b[pos]
    # a quote opens or closes a string unless an odd run of backslashes right before it
    slash = v == ord("\\")
    after_slash = np.zeros(len(v), dtype=bool)
    after_slash[1:] = slash[:-1] & (pos[:-1] == pos[1:] - 1)
    starts = slash & ~after_slash  # a backslash run begins here
    run_id = np.cumsum(starts) - 1
    run_len = np.bincount(run_id[slash], minlength=int(starts.sum())) if slash.any() else None
    quote = v == ord('"')
    if run_len is not None:
        prev = np.flatnonzero(quote & after_slash)  # quotes right after a backslash run
        escaped = run_len[run_id[prev - 1]] % 2 == 1
        quote[prev[escaped]] = False
    outside = np.cumsum(quote) % 2 == 0  # after an even number of quotes: not in a string
    opens = ((v == ord("[")) | (v == ord("{"))) & outside
    closes = ((v == ord("]")) | (v == ord("}"))) & outside
    step = opens.astype(np.int64) - closes
    return int(np.cumsum(step).max()) if len(step) else 0


def _bad_value(obj) -> tuple[str, str] | None:
    """(field path, what is wrong) of the first value that is not JSON: a NaN/Infinity marker,
    or a string (or key) that is not valid Unicode (a lone surrogate)."""
    stack = [(obj, "")]
    while stack:
        o, w = stack.pop()
        if isinstance(o, _NotANumber):
            return w or "(top level)", o.what
        if isinstance(o, str):
            try:
                o.encode("utf-8")
            except UnicodeEncodeError:
                return w or "(top level)", _SURROGATE
        elif isinstance(o, list):
            stack += [(v, f"{w}[{i}]") for i, v in reversed(list(enumerate(o)))]
        elif isinstance(o, dict):
            for k, v in reversed(list(o.items())):
                kw = f"{w}.{k}" if w else str(k)
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{kw!r} (the key)", _SURROGATE
                stack.append((v, kw))
    return None


def strict_json(text: str, error, path=None, line=None):
    """Parse one JSON text strictly: depth <= MAX_JSON_DEPTH, no NaN/Infinity, no over-long
    numbers, no lone surrogates; anything else raises `error` naming path, line (and field)."""
    too_deep = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    before = _not_numbers
    try:
        obj = _DECODER.decode(text)
    except json.JSONDecodeError as e:
        at = f"column {e.colno}" if line is not None else f"line {e.lineno} column {e.colno}"
        msg = e.msg.removesuffix(" at")  # 'Unterminated string starting at' + ' at line ...'
        raise error(f"invalid JSON ({msg} at {at})", path=path, line=line) from None
    except RecursionError:  # deeper than the parser goes (about 1000 levels)
        raise error(too_deep, path=path, line=line) from None
    except ValueError as e:  # e.g. an integer longer than Python converts (4300 digits)
        msg = str(e)
        if "digits" in msg:
            msg = "a number has too many digits"
        raise error(f"invalid JSON ({msg})", path=path, line=line) from None
    if _depth(text) > MAX_JSON_DEPTH:  # valid JSON, so the string-skipping scan is exact
        raise error(too_deep, path=path, line=line)
    if _not_numbers != before or (
        ("\\ud" in text or "\\uD" in text) and _SURROGATE_ESCAPE.search(text)
    ):  # NaN, Infinity, 1e999 or a lone surrogate: find the value and name its field
        bad = _bad_value(obj)
        if bad is not None:
            raise error(bad[1], path=path, line=line, field=bad[0])
    return obj
