"""Which ids a log's calls take from what came before them: handles by how values flow.

A value in a call's arguments that first appeared in an earlier message a tool, a person or the
system wrote (a tool result, the person's words, the system prompt) is an id that message
defines, whatever its shape: `JG7FMM`, `mia_li_3668`, `credit_card_4421486`, `job_3fa9`. The call
uses it; keeping the call without the message that defined it leaves the id dangling (the note's
orphaned argument reference), unless a typed tombstone `{"evicted_ref": id}` stands for it.

What counts as a value (`is_id`, decided on real provider logs: `data/calibration/value_flow.md`):
the arguments are read as JSON where they parse (their leaf values, not their keys; free text
otherwise), each value split into tokens at white space, quotes and brackets (`tokens`); a token
counts when it is at least four characters long and is not an ordinary word (letters only in
lower case, or such words joined by `_` or `-`: `economy`, `basic_economy`; in free text also a
capitalized word, `However`, while a whole value `"Amelia"` counts) nor a short number (fewer
than five digits: amounts, counts, years). So `JG7FMM`, `AQLBTL`, `mia_li_3668`, `order-123`,
`2024-05-20`, `test.txt`, `12390` and a passenger's name count; `JFK`, `economy`, `one_way`,
`2`, `1166` do not. A value counts where the same token
stands in the earlier message (its text read by the same `tokens`); its definition is the first
such message, not a later echo.

`pattern` (optional, `--handle-re`): a regex whose matches are ids too, also in an assistant's
own text, also when no earlier message holds them (then no earlier message defines them: an
orphan in any window, unless a compaction before it stands for where it was defined). The default
is the closure note's own pattern (`run|job|sess|doc` and hex digits), which real ids rarely
match; "" turns it off.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from workbench.common.handles import HANDLE_RE, Patterns

DEFAULT = HANDLE_RE
_SEP = str.maketrans(dict.fromkeys("\"'`,;(){}[]<>|\\*\u201c\u201d\u2018\u2019", " "))
_TRAIL = ".:!?"  # sentence punctuation after a token ("reservation JG7FMM.")
_WORD = re.compile(r"(?:[a-z]+|[A-Z][a-z]+)(?:[_-][a-z]+)*")
_NUMBER = re.compile(r"[0-9.,+-]+")
TOMBSTONE = re.compile(r'"evicted_ref"\s*:\s*"([^"\\]+)"')
MIN_LENGTH = 4  # a shorter token is too likely to stand in two messages by chance
MIN_DIGITS = 5  # a shorter number is an amount, a count or a year


def tokens(text: str) -> list[str]:
    """The tokens of a text: split at white space, quotes, brackets, commas and semicolons, with
    sentence punctuation at a token's end dropped."""
    return [t.rstrip(_TRAIL) if t[-1] in _TRAIL else t for t in text.translate(_SEP).split()]


def is_id(token: str, whole: bool = False) -> bool:
    """Does a token count as an id (see the module docstring)? `whole`: the token is a whole
    argument value (a name passed as one, `"first_name": "Amelia"`), where a capitalized word
    counts; in free text it is a sentence's first word as often as a name."""
    if len(token) < MIN_LENGTH:
        return False
    if token.isalpha() or not token.isalnum():  # (a mix of letters and digits is an id)
        if _NUMBER.fullmatch(token):
            return sum(c.isdigit() for c in token) >= MIN_DIGITS
        if _WORD.fullmatch(token):
            return whole and not token[0].islower()
        return True
    return not token.isdigit() or len(token) >= MIN_DIGITS


def _leaves(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif isinstance(v, list | tuple):
        for x in v:
            yield from _leaves(x)
    elif isinstance(v, str):
        yield v
    elif isinstance(v, int | float) and not isinstance(v, bool):
        yield str(v)


def arg_ids(args) -> list[str]:
    """The ids in one call's arguments (a JSON string is read as JSON; free text as text)."""
    if isinstance(args, str):
        s = args.lstrip()
        if s[:1] in ("{", "["):
            try:
                args = json.loads(s)
            except ValueError:
                pass
    out = []
    for leaf in _leaves(args):
        toks = tokens(leaf)
        out.extend(t for t in toks if is_id(t, whole=len(toks) == 1))
    return out


def find(pattern) -> re.Pattern | None:
    """The compiled extra pattern: a regex string (group 1, if it has one, is the id), a
    `Patterns` (its handle rule), or "" / None for none."""
    if isinstance(pattern, Patterns):
        pattern = pattern.handle
    return re.compile(pattern) if pattern else None


def pattern_ids(rx: re.Pattern, text: str) -> set[str]:
    """What the pattern matches in a text, but for the ids its tombstones stand for."""
    if not text:
        return set()
    found = set(rx.findall(text))
    return found - tombstones(text) if found and "evicted_ref" in text else found


NONE: frozenset = frozenset()  # (one empty set for every message that holds no tombstone)


def tombstones(text: str) -> frozenset:
    """The ids the typed tombstones in a text stand for."""
    return frozenset(TOMBSTONE.findall(text)) if "evicted_ref" in text else NONE


def said(msgs, i: int) -> str | None:
    """What message i of `msgs` (a log's `Messages`) defines ids in: a tool's, a person's or the
    system's text, or a server's results in the model's own turn; None for the model's words."""
    given = msgs.given[i]
    return given if given is not None else msgs.text[i] if msgs.role[i] != "assistant" else None


def tombstoned(log) -> set[str]:
    """The ids the tombstones a log carries stand for (its system preamble and messages)."""
    out = set(tombstones(log.system_text()))
    for i in range(len(log.messages)):
        text = said(log.messages, i)
        if text and "evicted_ref" in text:
            out |= tombstones(text)
    return out


@dataclass(frozen=True)
class Flow:
    """Per message of a log: the ids it uses, each with the message that defines it (-1: the
    top-level system prompt; None: no earlier message, a `pattern` match; the message itself
    where a server's result in the model's own turn returned it before the call), and the ids a
    tombstone in it stands for; the compactions, and the tombstones in the top-level system."""

    uses: tuple
    tombs: tuple
    pre_tombs: frozenset
    compactions: frozenset

    @classmethod
    def of(cls, log, rx: re.Pattern | None) -> Flow:
        msgs = log.messages
        n = len(msgs)
        roles, texts, calls, given = msgs.role, msgs.text, msgs.calls, msgs.given
        wanted: dict[int, list[str]] = {}  # message -> the ids its calls (or the pattern) name
        passed: dict[int, set[str]] = {}  # message -> the ids its calls' arguments pass
        named: set[str] = set()  # ids the pattern names (they need no earlier definition)
        for i, args in enumerate(msgs.args):
            found = [x for a in args for x in arg_ids(a)] if args else []
            if found:
                passed[i] = set(found)
            if rx is not None and (roles[i] == "assistant" or calls[i]):
                more = pattern_ids(rx, texts[i])
                if more:
                    named.update(more)
                    found.extend(more)
            if found:
                wanted[i] = list(dict.fromkeys(found))
        candidates = {x for xs in wanted.values() for x in xs}
        first: dict[str, int] = {}
        system = log.system_text()

        def define(i: int, text: str) -> None:
            for x in candidates.intersection(tokens(text)):
                first.setdefault(x, i)

        if candidates and system:
            define(-1, system)
        tombs = [NONE] * n
        for i in range(n):
            text = (
                given[i] if given[i] is not None else texts[i] if roles[i] != "assistant" else None
            )
            if not text:
                continue
            if candidates and len(first) < len(candidates):
                define(i, text)
            if "evicted_ref" in text:
                tombs[i] = tombstones(text)
        uses = [()] * n
        for i, xs in wanted.items():
            got = []
            for x in xs:
                d = first.get(x)
                if d is not None and d < i:
                    got.append((x, d))
                elif d == i and given[i] is not None and x in passed.get(i, ()):
                    got.append((x, d))  # a server's result in the turn, then a call passing it
                elif x in named and (d is None or d > i):
                    got.append((x, None))
            uses[i] = tuple(got)
        return cls(tuple(uses), tuple(tombs), tombstones(system), frozenset(log.compactions))

    def needs(self, i: int) -> list[int]:
        """The messages message i's ids are defined by (in the log, not the preamble)."""
        return sorted({d for _, d in self.uses[i] if d is not None and d >= 0})

    @property
    def ids(self) -> set[str]:
        """Every id some message takes from an earlier one."""
        return {x for u in self.uses for x, d in u if d is not None}
