"""What the closure check of an agent log works on: messages, the log, its handles, the report.

One message is one span of the log (`m0`, `m1`, ...: the message index), so a trimmed log is a
subset of whole messages. Roles: `system` (system and developer messages), `user`, `assistant`
(its text and every call's arguments) and `tool` (a result). The closure is order-aware:

- a result answers a call in an earlier kept message, and a call's results are kept with it;
- a handle (what the handle pattern matches: a job id, a path) that an assistant message names,
  in a call's arguments or in its text, is defined by an earlier kept message that is not the
  assistant's: a tool result, or text the user or the system wrote, under any key or in prose.
  A later echo (a status poll returning the id) does not define it for an earlier call; a call
  never defines a handle; a typed tombstone `{"evicted_ref": h}` stands for an evicted definition.

The wire formats are read in `workbench.closure.logs.readers`, checked in `workbench.closure.logs.rules`
and written in `workbench.closure.logs.writers`.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field

import numpy as np

from workbench.closure.window.spans import CLOSURE_PATTERNS
from workbench.common.handles import Patterns
from workbench.common.io import InputError


class LogError(InputError):
    """A malformed agent log; the message names the file, the message index and the field."""

    def __init__(self, message: str, *, path=None, index: int | None = None, field=None):
        where = [str(path)] if path is not None else []
        where += [f"message {index}"] if index is not None else []
        where += [f"field '{field}'"] if field is not None else []
        ValueError.__init__(self, ": ".join([*where, message]))
        self.message, self.path, self.line, self.field, self.index = (
            message,
            path,
            None,
            field,
            index,
        )


def err(msg, index=None, fld=None, path=None) -> LogError:
    return LogError(msg, path=path, index=index, field=fld)


def text_of(content, index, fld) -> str:
    """The text of a content value: a string, or a list of parts or blocks (text, tool_result
    and tool_use blocks, Responses input_text / output_text parts, reasoning summaries)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise err(f"must be a string or a list of blocks, got {type(content).__name__}", index, fld)
    out = []
    for k, b in enumerate(content):
        if isinstance(b, str):
            out.append(b)
        elif isinstance(b, dict):
            if isinstance(b.get("text"), str):
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                out.append(text_of(b.get("content"), index, f"{fld}[{k}].content"))
            elif b.get("type") == "tool_use":
                out.append(json.dumps(b.get("input", {})))
        else:
            raise err("a content block must be an object or a string", index, f"{fld}[{k}]")
    return "\n".join(out)


class Message:
    """One message of a log, as the closure check sees it (`raw` is the message as read).

    `text` is what the handle patterns scan: the content, each call's arguments, a result's
    content. A reader may hand it over as `(content, tool calls)`, LangChain's shape: the
    arguments (a string, or a dict shown by `repr`) are then joined to the content on first use,
    so a trim that looks at the newest messages only never builds the others' text."""

    __slots__ = ("index", "role", "_text", "calls", "answers", "raw")

    def __init__(self, index: int, role: str, text, calls=None, answers=None, raw=None):
        self.index, self.role, self._text, self.raw = index, role, text, raw
        self.calls = [] if calls is None else calls  # [(call id, tool name)]
        self.answers = [] if answers is None else answers  # call ids this message answers
        # role: system | user | assistant | tool

    @property
    def text(self) -> str:
        t = self._text
        if type(t) is tuple:
            content, tcs = t
            parts = [content] if content else []
            for tc in tcs:
                a = tc.get("args")
                parts.append(a if type(a) is str else repr(a if a is not None else {}))
            t = self._text = "\n".join(filter(None, parts))
        return t

    def __repr__(self) -> str:
        return (
            f"Message({self.index}, {self.role}, calls={len(self.calls)}, answers={self.answers})"
        )


def _split(msgs, i: int, named, tombs) -> tuple:
    """Message i's (refs, defs, tombs) from the handles its text names and its tombstones."""
    named = tuple(sorted(named - tombs)) if named else ()
    tombs = tuple(sorted(tombs)) if tombs else ()
    if msgs[i].role == "assistant":
        return named, (), tombs
    return (), named, tombs


def _scan_one(at: list, msgs, patterns: Patterns, i: int) -> tuple:
    """Message i's (refs, defs, tombs), scanned once and kept in `at`."""
    v = at[i]
    if v is None:
        text = msgs[i].text
        named, _, t = patterns.scan(text) if text else ((), (), ())
        v = at[i] = _split(msgs, i, set(named), set(t))
    return v


class _Column:
    """One of a message's (refs, defs, tombs), by message index, scanned on first use. It holds
    the scans, the messages and the patterns, not the Handles: no reference cycle."""

    __slots__ = ("k", "_at", "_msgs", "_patterns")

    def __init__(self, at, msgs, patterns, k):
        self._at, self._msgs, self._patterns, self.k = at, msgs, patterns, k

    def __getitem__(self, i: int) -> tuple:
        v = self._at[i]
        return (_scan_one(self._at, self._msgs, self._patterns, i) if v is None else v)[self.k]

    def __len__(self) -> int:
        return len(self._msgs)


class _Rescan:
    """Backward searches grew dearer than one pass over everything."""


class Handles:
    """The handles of a log, per message: what an assistant message names (`refs`), what any
    other message introduces (`defs`), the tombstones (`tombs`); `pre_*` for a top-level system
    prompt. A message is scanned when first asked about (a trim that keeps the newest messages
    reads only those and the definitions they need), or all at once by `scan_all`: one regex
    pass over the texts joined, matches mapped back to their messages."""

    def __init__(self, log, patterns: Patterns):
        # the messages, not the log: the log caches its Handles, and a log and its handles that
        # referred to each other would be a cycle only the cyclic collector frees, traversing
        # every message of a long log when it does
        self.messages, self.patterns = log.messages, patterns
        self._at: list = [None] * len(log.messages)
        pre_refs, _, pre_tombs = patterns.scan(log.system_text())
        self.pre_defs, self.pre_tombs = frozenset(pre_refs), frozenset(pre_tombs)
        self.refs, self.defs, self.tombs = (
            _Column(self._at, self.messages, patterns, k) for k in range(3)
        )
        self._text = None  # (joined texts, start of each message's text)
        self._def_text = None  # the same for the messages that can define a handle, and their ids
        self._defs_of: dict | None = None  # handle -> messages defining it, in order (scan_all)
        self._all = False  # every message scanned
        self._searched = 0  # characters searched backwards so far
        self._nearest: dict = {}  # handle -> (query position, the definition found before it)
        self._tomb_first: dict | None = None  # handle -> the first message with its tombstone

    def at(self, i: int) -> tuple:
        """Message i's (refs, defs, tombs)."""
        return _scan_one(self._at, self.messages, self.patterns, i)

    def _joined(self):
        """(every message's text joined, the start of each)."""
        if self._text is None:
            self._text = self._join([m.text for m in self.messages])
        return self._text

    def _defining(self):
        """(the texts of the messages that can define a handle, joined; the start of each; their
        message indices): an assistant message never defines one, so definitions are looked
        for in the rest only."""
        if self._def_text is None:
            ids = [m.index for m in self.messages if m.role != "assistant"]
            msgs = self.messages
            self._def_text = (*self._join([msgs[i].text for i in ids]), ids)
        return self._def_text

    @staticmethod
    def _join(texts: list) -> tuple:
        lens = np.fromiter((len(t) + len(SEP) for t in texts), dtype=np.int64, count=len(texts))
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
        return SEP.join(texts), starts

    def scan_all(self) -> Handles:
        """Scan every message at once (what a whole-log check or a relevance trim needs)."""
        if self._all:
            return self
        joined, starts = self._joined()
        tomb_re = self.patterns._compiled[2]
        tombs_at: dict[int, set] = {}
        hits = [(m.start(), m.group(1)) for m in tomb_re.finditer(joined)]
        for w, (_, x) in zip(self._where(starts, hits), hits, strict=True):
            tombs_at.setdefault(w, set()).add(x)
        hits = self.patterns.find_handles(joined)
        msgs = self.messages
        empty = ((), (), ())
        at = [empty] * len(self._at)
        defs_of: dict[str, list[int]] = {}
        where = self._where(starts, hits)
        k, n = 0, len(hits)
        while k < n:  # hits are in text order: one run of hits a message
            w, j = where[k], k + 1
            while j < n and where[j] == w:
                j += 1
            t = tombs_at.pop(w, ()) if tombs_at else ()
            if j == k + 1 and not t:  # one handle named, no tombstone: what `_split` gives
                x = hits[k][1]
                if msgs[w].role == "assistant":
                    at[w] = ((x,), (), ())
                else:
                    at[w] = ((), (x,), ())
                    defs_of.setdefault(x, []).append(w)
                k = j
                continue
            named = {x for _, x in hits[k:j]}
            if t or len(named) > 1 or msgs[w].role == "assistant":
                at[w] = v = _split(msgs, w, named, set(t))
            else:
                at[w] = v = ((), tuple(named), ())
            for x in v[1]:
                defs_of.setdefault(x, []).append(w)
            k = j
        for w, t in tombs_at.items():  # tombstones in messages that name no handle
            at[w] = _split(msgs, w, set(), t)
        for d in defs_of.values():
            d.sort()
        self._at[:] = at  # in place: the columns hold this list
        self._defs_of, self._all = defs_of, True
        return self

    def part(self, log, positions) -> Handles:
        """The handles of `log`, whose message k is this log's message `positions[k]`: each
        message's scan comes along (a message's handles are its own text's), and with every
        message scanned here, the index of definitions is rebuilt in the new order."""
        h = Handles(log, self.patterns)
        src = self._at
        h._at[:] = [src[s] for s in positions]  # in place: the columns hold this list
        if self._all:
            defs_of: dict[str, list[int]] = {}
            for w, v in enumerate(h._at):
                for x in v[1]:
                    defs_of.setdefault(x, []).append(w)
            h._defs_of, h._all = defs_of, True
        return h

    def grown(self, log) -> Handles:
        """The handles of `log`, whose messages are this log's and then more (a conversation's
        next turns): what was found of the earlier messages comes along (they are the same
        messages); the new ones are scanned when asked, or at once where every earlier one was,
        and an index of definitions grows by theirs, in order. These handles stay as they are."""
        h = Handles(log, self.patterns)
        n, msgs = len(self._at), log.messages
        h._at[:n] = self._at  # in place: the columns hold this list
        h._nearest, h._searched = dict(self._nearest), self._searched
        if self._defs_of is not None:
            defs = {x: list(d) for x, d in self._defs_of.items()}
            h._all = self._all
            for w in range(n, len(msgs)):
                if h._all or msgs[w].role != "assistant":  # (an assistant's defines nothing)
                    for x in _scan_one(h._at, msgs, self.patterns, w)[1]:
                        defs.setdefault(x, []).append(w)
            h._defs_of = defs
        return h

    def index_definitions(self) -> Handles:
        """Index which messages define each handle (one regex pass over the texts joined), for
        `definer_before`, without scanning each message apart (`scan_all` does that too)."""
        if self._defs_of is not None:
            return self
        joined, starts, ids = self._defining()
        hits = self.patterns.find_handles(joined)
        defs_of: dict[str, list[int]] = {}
        for k, (_, x) in zip(self._where(starts, hits), hits, strict=True):
            w = ids[k]
            d = defs_of.get(x)
            if d is None:
                defs_of[x] = [w]
            elif d[-1] != w:
                d.append(w)
        tomb_re = self.patterns._compiled[2]
        for m in tomb_re.finditer(joined):  # a tombstone's handle is no definition
            w = ids[int(np.searchsorted(starts, m.start(), side="right")) - 1]
            d = defs_of.get(m.group(1))
            if d is not None and w in d and m.group(1) not in self.at(w)[1]:
                d.remove(w)
        self._defs_of = defs_of
        return self

    @staticmethod
    def _where(starts, hits) -> list[int]:
        """The message each (position, value) hit falls in."""
        if not hits:
            return []
        pos = np.fromiter((p for p, _ in hits), dtype=np.int64, count=len(hits))
        return (np.searchsorted(starts, pos, side="right") - 1).tolist()

    def definer_before(self, x: str, i: int) -> int | None:
        """The nearest message before i that defines handle x (-1: the top-level system), or
        None. Without `scan_all`, found by searching the joined texts backwards for x (C speed)
        and confirming each hit with the message's own scan."""
        if x in self.pre_defs:
            return -1
        if self._defs_of is not None:
            d = self._defs_of.get(x, ())
            k = bisect.bisect_left(d, i)
            return d[k - 1] if k else None
        memo = self._nearest.get(x)  # (i', j): j is the nearest definition before i'
        if memo is not None and memo[1] is not None and memo[1] < i <= memo[0]:
            return memo[1]  # nothing defines x between j and i' (and i is in between)
        joined, starts, ids = self._defining()
        k = bisect.bisect_left(ids, i)  # the defining messages before i are ids[:k]
        end = int(starts[k]) if k < len(starts) else len(joined)
        found = self._search_back(x, end, joined, starts, ids)
        if not isinstance(found, _Rescan):
            self._nearest[x] = (i, found)
            return found
        self.index_definitions()
        return self.definer_before(x, i)

    def _search_back(self, x, end, joined, starts, ids):
        while end > 0:
            p = joined.rfind(x, 0, end)
            # a backward search is C-speed: a score of them cost less than one regex
            # pass over everything; past that (or many confirming scans), scan everything once
            self._searched += end - max(p, 0) + 4096
            if self._searched > 20 * len(joined) + 4096 * len(starts) // 4:
                return _Rescan()
            if p < 0:
                return None
            k = int(np.searchsorted(starts, p, side="right")) - 1
            if x in self.at(ids[k])[1]:
                return ids[k]
            end = int(starts[k])  # no definition of x in that message: look before it
        return None

    def orphaned_at(self, x: str, i: int) -> bool:
        """Is handle x, named by message i, an orphan there: neither the top-level system nor an
        earlier message defines it or holds its tombstone? The rule `check` applies along the
        whole log, asked of one handle (a backward search, not a pass over everything)."""
        if x in self.pre_tombs or self.definer_before(x, i) is not None:
            return False
        if self._tomb_first is None:
            joined, starts = self._joined()
            hits = [(m.start(), m.group(1)) for m in self.patterns._compiled[2].finditer(joined)]
            self._tomb_first = {}
            for w, (_, t) in zip(self._where(starts, hits), hits, strict=True):
                self._tomb_first.setdefault(t, w)
        return self._tomb_first.get(x, i) >= i

    @property
    def first_def(self) -> dict:
        """Handle -> the first message defining it (-1: the top-level system)."""
        self.scan_all()
        out = {x: d[0] for x, d in self._defs_of.items()}
        out.update({x: -1 for x in self.pre_defs})
        return out

    def needed(self, i: int) -> list[tuple[str, int]]:
        """(handle, its nearest earlier definition) for each handle message i names that an
        earlier message defines: what keeping message i needs. Others were never defined."""
        out = []
        for x in self.refs[i]:
            p = self.definer_before(x, i)
            if p is not None:
                out.append((x, p))
        return out


@dataclass(repr=False)
class Log:
    """An agent log in one of the wire formats (`workbench.closure.logs.readers.FORMATS`)."""

    format: str
    messages: list
    system: object = (
        None  # a top-level system prompt (Anthropic `system`, Responses `instructions`)
    )
    body: dict | None = None  # a request body (its other keys kept on writing), None for a list
    key: str = "messages"  # the body's message list key (`input` for the Responses API)
    # results answering calls the log does not hold, which the provider keeps (a Responses body
    # continuing `previous_response_id`): the request must carry them, so a trim keeps them
    carried: tuple = ()
    by_order: bool = False  # calls without ids (a legacy function_call), paired by order
    _handles: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        calls = sum(len(m.calls) for m in self.messages)
        return f"Log({self.format}, {len(self.messages)} messages, {calls} tool calls)"

    def system_text(self) -> str:
        return text_of(self.system, None, "system") if self.system is not None else ""

    def handles(self, patterns: Patterns = CLOSURE_PATTERNS) -> Handles:
        """The log's handles under `patterns` (each message scanned once, when first needed)."""
        if patterns not in self._handles:
            self._handles[patterns] = Handles(self, patterns)
        return self._handles[patterns]


SEP = "\n\x00\n"  # between texts: no handle or tombstone pattern matches across it


@dataclass(frozen=True, repr=False)
class LogReport:
    """What a set of kept messages leaves dangling."""

    orphan_results: tuple  # (message index, call id): a result whose call is gone
    orphan_calls: tuple  # (message index, call id, tool name): a call whose result is gone
    orphan_handles: dict  # handle -> message indices naming it, no earlier definition kept
    tombstoned: tuple = ()  # handles a tombstone in the kept messages stands for

    @property
    def closed(self) -> bool:
        return not (self.orphan_results or self.orphan_calls or self.orphan_handles)

    def counts(self) -> dict:
        return {
            "orphan_calls": len(self.orphan_calls),
            "orphan_results": len(self.orphan_results),
            "orphan_handles": len(self.orphan_handles),
        }

    def to_dict(self) -> dict:
        return {
            "closed": self.closed,
            "orphan_calls": [
                {"message": i, "call_id": c, "tool": n} for i, c, n in self.orphan_calls
            ],
            "orphan_results": [{"message": i, "call_id": c} for i, c in self.orphan_results],
            "orphan_handles": [
                {"handle": h, "named_by_messages": list(v)} for h, v in self.orphan_handles.items()
            ],
            "tombstoned": list(self.tombstoned),
        }

    def lines(self) -> list[str]:
        out = [
            f"closure: {'OK' if self.closed else 'FAILED'}  orphaned calls={len(self.orphan_calls)} "
            f"results={len(self.orphan_results)} handles={len(self.orphan_handles)}"
            + (f"  tombstoned={len(self.tombstoned)}" if self.tombstoned else "")
        ]
        for i, c, n in self.orphan_calls:
            out.append(f"orphaned call: message {i}, {n} (id {c}) has no result")
        for i, c in self.orphan_results:
            out.append(f"orphaned result: message {i} answers call id {c}, which is not there")
        for h, v in self.orphan_handles.items():
            out.append(
                f"orphaned handle {h}: named by message {', '.join(map(str, v))}, "
                "and no earlier message defines it"
            )
        return out

    def __repr__(self) -> str:
        c = self.counts()
        return f"LogReport({'closed' if self.closed else 'OPEN'}, {c})"


def check(log: Log, kept=None, patterns: Patterns = CLOSURE_PATTERNS, tombstones=()) -> LogReport:
    """Order-aware closure of the kept messages (default: all), in O(kept messages and their
    handles); `tombstones` are handles a tombstone in the system preamble stands for."""
    msgs = log.messages
    keep = range(len(msgs)) if kept is None else sorted({int(i) for i in kept})
    call_at = {cid: i for i in keep for cid, _ in msgs[i].calls}
    answered = {cid for i in keep for cid in msgs[i].answers}
    stored = set(log.carried)  # they answer calls of the stored response the log continues
    res = tuple(
        (i, c)
        for i in keep
        if i not in stored
        for c in msgs[i].answers
        if call_at.get(c, len(msgs)) > i
    )
    calls = tuple((i, c, n) for i in keep for c, n in msgs[i].calls if c not in answered)
    kept_set = set(keep)  # a stored call whose answer is not kept goes unanswered
    calls += tuple((i, c, "(a call of the stored response)") for i in sorted(stored - kept_set)
                   for c in msgs[i].answers)  # fmt: skip
    h = log.handles(patterns)
    if len(keep) * 2 > len(msgs):
        h.scan_all()  # one pass over everything beats one scan a message
    tombed = set(h.pre_tombs) | set(tombstones)
    defined = set(h.pre_defs) | tombed
    orphans: dict[str, list[int]] = {}
    at = h._at  # each message's (refs, defs, tombs), None until scanned
    for i in keep:
        v = at[i]
        refs, defs, tombs = h.at(i) if v is None else v
        for x in refs:
            if x not in defined:
                orphans.setdefault(x, []).append(i)
        if defs:
            defined.update(defs)
        if tombs:
            defined.update(tombs)
            tombed.update(tombs)
    return LogReport(
        res, calls, {x: tuple(orphans[x]) for x in sorted(orphans)}, tuple(sorted(tombed))
    )


def approx_tokens(message: Message) -> int:
    """Default token counter, the rule of thumb of langchain-core's count_tokens_approximately:
    ceil(characters / 4) + 3 per message, over the role, the content text, the call names and
    arguments and the answered call ids. Plug in an exact counter (tiktoken, say) instead."""
    t = message._text  # (a text already joined is read without the property)
    chars = len(message.role) + len(t if type(t) is str else message.text)
    for c, n in message.calls:  # (a loop: a generator a message would cost more than the sum)
        chars += len(c) + len(n)
    for a in message.answers:
        chars += len(a)
    return (chars + 3) // 4 + 3  # ceil(chars / 4), in integers
