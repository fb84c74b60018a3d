"""What every framework adapter shares: one closure-aware trim of a request, one guard that checks
(and repairs) what another context editor left, and the record of what each call did.

The adapters (`for_langchain`, `for_openai_agents`, `for_pydantic_ai`) only translate: each hands
its framework's messages to these two functions in a wire format the closure readers know
(LangChain messages, Responses items, OpenAI chat dicts) and translates the answer back. The trim
is `workbench.closure.logs.trim.trim_log` (dependency-scored, a call and its results one block,
the definitions a kept message needs brought back, tombstones for what cannot fit); the guard's
verdict is `workbench.closure.logs.check`. No rule is written here twice.
"""

from __future__ import annotations

import bisect
import json
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from workbench.closure.logs import Log, LogError, LogReport, Message, approx_tokens, check, read
from workbench.closure.logs.trim import STRATEGIES, Trimmed, blocks_of, tombstone, trim_log
from workbench.common.io import paused_gc

MODES = ("repair", "raise")


def settings(max_tokens: int | None = None, strategy: str = "last", mode: str = "repair") -> None:
    """The one check of what an adapter is given (each trim checks it again when it runs)."""
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


class ClosureError(RuntimeError):
    """What goes to the model would leave a reference dangling (raised by a guard in raise mode,
    or when no repair can make the request valid). `orphans` lists every one."""

    def __init__(self, message: str, orphans: Sequence[str] = ()):
        super().__init__(message)
        self.orphans = tuple(orphans)


@dataclass
class Record:
    """What one adapter did on one model call (read them from the adapter's `records`)."""

    call: int  # the adapter's own count of model calls, from 1
    action: str  # "trim", "guard: closed", "guard: repaired", "guard: trimmed" (over max_tokens)
    messages_in: int
    messages_out: int
    kept: int  # messages of the input sent unchanged
    dropped: int  # messages of the input not sent
    restored: int  # messages brought back from the full history (guard)
    stubbed: tuple = ()  # call ids answered by a stand-in result (guard: the result is gone)
    tombstoned: tuple = ()  # handles a tombstone stands for in the request
    orphans: tuple = ()  # what the guard found before repairing it
    tokens_in: int | None = None  # the request before (the guard's; a trim does not price it all)
    tokens_out: int = 0  # what was sent
    budget: int | None = None
    seconds: float = 0.0


@dataclass
class Records:
    """An adapter's per-call records, newest last."""

    rows: list = field(default_factory=list)

    def add(self, record: Record) -> Record:
        self.rows.append(record)
        return record

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, k):
        return self.rows[k]

    def __iter__(self):
        return iter(self.rows)

    @property
    def last(self) -> Record | None:
        return self.rows[-1] if self.rows else None

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [asdict(r) for r in self.rows], columns=list(Record.__dataclass_fields__)
        )


def tokens(log: Log) -> int:
    """A request's tokens by the trim's counter (a top-level system counts as one message)."""
    from_msgs = sum(approx_tokens(m) for m in log.messages)
    if log.system is None:
        return from_msgs
    return from_msgs + approx_tokens(Message(-1, "system", log.system_text()))


def trim(obj, fmt: str, max_tokens: int, strategy: str = "last", counter=approx_tokens) -> Trimmed:
    """The closure-safe trim of one request (a message list or body in `fmt`)."""
    settings(max_tokens, strategy)
    return trim_log(read(obj, fmt), max_tokens, strategy=strategy, counter=counter)


def trim_record(t: Trimmed, call: int, seconds: float) -> Record:
    n = len(t.log.messages)
    return Record(
        call=call,
        action="trim",
        messages_in=n,
        messages_out=len(t.kept),
        kept=len(t.kept),
        dropped=n - len(t.kept),
        restored=0,
        tombstoned=t.tombstones,
        tokens_in=None,  # a trim prices only what it looks at, not what it drops
        tokens_out=t.tokens,
        budget=t.budget,
        seconds=seconds,
    )


# --- the guard --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Codec:
    """How a guard sees one framework's request items: the wire format they read as, a key that
    finds an edited item's original in the full history (the same key for an item a context
    editor rewrote in place, such as a cleared tool result), and a stand-in result for a call
    whose result is gone."""

    fmt: str
    key: Callable[[object], Hashable]
    stub: Callable[[str, str], object]  # (call id, tool name) -> a result item
    wrap: Callable[[list], object] = list  # items -> what `read` takes (a body, say)


STUB = (
    "[no result in context: the context editor cut the result of {name} (call {cid}); call the "
    "tool again if you need it]"
)


def stub_text(cid: str, name: str) -> str:
    return STUB.format(cid=cid, name=name)


def _match(edited: list, full: list, key) -> list:
    """For each edited item, the index of its original in `full` (in order, each used once) or
    None: an item another editor wrote (a summary)."""
    where: dict | None = None  # key -> history positions, built once an item is not the same
    same = {id(it): i for i, it in enumerate(full)}  # an editor that keeps the objects
    out, last = [], -1
    for it in edited:
        j = same.get(id(it))
        if j is None:
            if where is None:
                where = {}
                for i, x in enumerate(full):
                    where.setdefault(key(x), []).append(i)
            cands = where.get(key(it), ())
            k = bisect.bisect_right(cands, last)  # the first of them after the last matched
            j = cands[k] if k < len(cands) else None
        out.append(j)
        if j is not None:
            last = j
    return out


def _describe(rep: LogReport) -> list[str]:
    out = [f"result for call {c} (message {i}): its call is not in the request"
           for i, c in rep.orphan_results]  # fmt: skip
    out += [f"call {c} to {n} (message {i}): its result is not in the request"
            for i, c, n in rep.orphan_calls]  # fmt: skip
    out += [f"handle {h} (named by message {', '.join(map(str, v))}): its definition is not in "
            "the request" for h, v in rep.orphan_handles.items()]  # fmt: skip
    return out


@dataclass
class Guarded:
    """A guard's answer: the items to send, the tombstones the adapter writes into the request's
    system preamble, and the record."""

    items: list
    tombstones: tuple
    record: Record


def guard(
    edited: list,
    full: list,
    codec: Codec,
    *,
    mode: str = "repair",
    max_tokens: int | None = None,
    call: int = 0,
) -> Guarded:
    """Check the request another editor produced (`edited`) against the history it was cut from
    (`full`) and, in repair mode, make it closed: a result whose call was cut gets its call back
    from the history (with the call's other results), or is dropped when the history lacks it; a
    call whose result was cut gets it back, or a stand-in result saying so; a handle whose
    definition was cut gets the message defining it back (its original, where an editor rewrote
    it), or a tombstone. With `max_tokens`, nothing is brought back past that many tokens: the
    result is dropped, the call answered by a stand-in, the handle tombstoned instead; and a
    request still over `max_tokens` (as the editor left it, or once repaired) is cut to it by the
    closure trim, the newest first ("guard: trimmed"), or raises `ClosureError` when no closed
    request within it keeps a conversation. Raise mode raises `ClosureError` naming every orphan
    instead of repairing. A handle the history itself never defined earlier is the history's
    own, left alone. What cannot be made a valid request (items out of order) raises
    `ClosureError` in both modes."""
    settings(max_tokens, mode=mode)
    t0 = time.perf_counter()
    with paused_gc():  # three readings of a history: the collector would triple the time
        return _guard(edited, full, codec, mode, max_tokens, call, t0)


def _guard(edited, full, codec, mode, max_tokens, call, t0) -> Guarded:
    try:
        flog = read(codec.wrap(full), codec.fmt)
    except LogError:
        flog = None  # a history that is no valid request: nothing to restore from
    src = _match(edited, full, codec.key)
    seq = list(zip(src, edited, strict=True))
    try:
        first = read(codec.wrap(edited), codec.fmt)
    except LogError as e:
        raise ClosureError(f"the request to the model is not valid: {e}") from None
    rep = check(first)
    tokens_in = tokens(first)
    own = _Own(flog)
    found = tuple(_describe(rep))
    if rep.closed or not (rep.orphan_results or rep.orphan_calls or own.foreign(rep, seq)):
        fit = _fit(first, (), max_tokens, tokens_in, found)
        if fit is not None:
            return _fitted(fit, edited, edited, found, call, tokens_in, 0, (), t0)
        rec = Record(call, "guard: closed", len(edited), len(edited), len(edited), 0, 0,
                     tokens_in=tokens_in, tokens_out=tokens_in,
                     seconds=time.perf_counter() - t0)  # fmt: skip
        return Guarded(list(edited), (), rec)
    if mode == "raise":
        raise ClosureError(
            "the request to the model would leave references dangling (an earlier context edit "
            "cut them): " + "; ".join(found),
            found,
        )
    restored, stubbed, tombs, dropped = 0, [], [], 0
    blocks = blocks_of(flog) if flog is not None else []
    block_of = {i: b for b, members in enumerate(blocks) for i in members}
    calls_at = {c: m.index for m in flog.messages for c, _ in m.calls} if flog else {}
    answer_at = {c: m.index for m in flog.messages for c in m.answers} if flog else {}
    fh = own.fh
    log = first  # the first round reads what the editor sent; each later one what it left
    for _ in range(8):  # each round brings back what the last one needed; a few suffice
        if log is None:
            log = read(codec.wrap([it for _, it in seq]), codec.fmt)
            rep = check(log, tombstones=tombs)
        told = len(tombs)  # the tombstones `rep` was checked with
        present = {s for s, _ in seq if s is not None}
        room = None if max_tokens is None else max_tokens - tokens(log) - 8 * len(tombs)

        def fits(members, present=present) -> bool:
            nonlocal room
            if room is None:
                return True
            cost = sum(approx_tokens(flog.messages[m]) for m in members if m not in present)
            if cost > room:
                return False
            room -= cost
            return True

        want: set[int] = set()
        originals: set[int] = set()  # rewritten items whose original defines what is needed
        drop: set[int] = set()
        stubs: list[tuple[int, str, str]] = []
        for i, cid in rep.orphan_results:
            p = calls_at.get(cid)
            if p is not None and p not in present and fits(blocks[block_of[p]]):
                want.update(blocks[block_of[p]])
            else:
                drop.add(i)
        for i, cid, name in rep.orphan_calls:
            p = answer_at.get(cid)
            if p is not None and p not in present and fits(blocks[block_of[p]]):
                want.update(blocks[block_of[p]])
            else:
                stubs.append((i, cid, name))
        back = _last_sources(seq)
        for h, named in rep.orphan_handles.items():
            if own.of(h, seq[named[0]][0]):
                continue
            at = back[named[0]]  # the history position of the naming message (or the last before)
            at = named[0] if at is None else at
            p = fh.definer_before(h, at + 1) if fh is not None else None
            if p is None or p < 0:
                tombs.append(h)
            elif p in present:
                originals.add(p)
            elif fits(blocks[block_of[p]]):
                want.update(blocks[block_of[p]])
            else:
                tombs.append(h)
        if not (want or originals or drop):
            if not stubs:
                break
            # the last resort, once nothing else can be brought back: a stand-in result (the
            # indices are this round's, as read)
            for i, cid, name in sorted(stubs, reverse=True):
                seq.insert(_after_results(i, log), (None, codec.stub(cid, name)))
                stubbed.append(cid)
            log = None
            continue
        new = []
        for k, (s, it) in enumerate(seq):
            if k in drop:
                dropped += 1
                continue
            if s in originals and it is not full[s]:
                it = full[s]
                restored += 1
            new.append((s, it))
        seq = _insert(new, sorted(want - present), full)
        restored += len(want - present)
        log = None
        if not any(it for _, it in seq):
            raise ClosureError(
                "the request holds only what cannot be sent (nothing is left once its orphans "
                "are dropped, and the history cannot bring their calls back): " + "; ".join(found),
                found,
            )
    items = [it for _, it in seq]
    final, left = log, rep  # the last round's reading, when it changed nothing
    if final is not None and len(tombs) != told:
        left = check(final, tombstones=tombs)  # handles this round tombstoned
    if final is None:
        try:
            final = read(codec.wrap(items), codec.fmt)
        except LogError as e:
            raise ClosureError(f"the repaired request is not valid: {e}", found) from None
        left = check(final, tombstones=tombs)
    if left.orphan_results or left.orphan_calls or own.foreign(left, seq):
        raise ClosureError(
            "the request could not be repaired: " + "; ".join(_describe(left)), found
        )
    tokens_out = tokens(final)
    fit = _fit(final, tuple(sorted(set(tombs))), max_tokens, tokens_out, found)
    if fit is not None:
        return _fitted(fit, items, edited, found, call, tokens_in, restored, stubbed, t0)
    ids = {id(x) for x in edited}
    rec = Record(
        call=call,
        action="guard: repaired",
        messages_in=len(edited),
        messages_out=len(items),
        kept=sum(1 for x in items if id(x) in ids),
        dropped=len(edited) - sum(1 for x in items if id(x) in ids),
        restored=restored,
        stubbed=tuple(stubbed),
        tombstoned=tuple(sorted(set(tombs))),
        orphans=found,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        seconds=time.perf_counter() - t0,
    )
    return Guarded(items, rec.tombstoned, rec)


def _fit(log: Log, tombs: tuple, max_tokens: int | None, size: int, found: tuple):
    """A request (closed, with its tombstones) over `max_tokens` cut to it by the closure trim
    (the newest first, what they need brought along, tombstones for the rest): the `Trimmed`
    and its tombstones with the request's, or None when it is within the budget (or none is
    set). Raises `ClosureError` when no closed request within the budget keeps a conversation."""
    if max_tokens is None or size + 8 * len(tombs) <= max_tokens:
        return None
    t = trim_log(log, max(max_tokens - 8 * len(tombs), 1))
    if not t.fits:
        raise ClosureError(
            f"the request to the model is {size} tokens, over max_tokens={max_tokens}, and no "
            "closed request within it keeps a conversation",
            found,
        )
    return t, tuple(sorted(set(tombs) | set(t.tombstones)))


def _fitted(fit, items, edited, found, call, tokens_in, restored, stubbed, t0) -> Guarded:
    """The guard's answer for a request `_fit` cut: its kept items, recorded."""
    t, tombs = fit
    out = [items[i] for i in t.kept]
    ids = {id(x) for x in edited}
    kept = sum(1 for x in out if id(x) in ids)
    rec = Record(
        call=call,
        action="guard: trimmed",
        messages_in=len(edited),
        messages_out=len(out),
        kept=kept,
        dropped=len(edited) - kept,
        restored=sum(1 for x in out if id(x) not in ids) if restored else 0,
        stubbed=tuple(stubbed),
        tombstoned=tombs,
        orphans=found,
        tokens_in=tokens_in,
        tokens_out=t.tokens + 8 * (len(tombs) - len(t.tombstones)),
        budget=t.budget,
        seconds=time.perf_counter() - t0,
    )
    return Guarded(out, tombs, rec)


class _Own:
    """The handles the history itself names before defining them (a typed id, say): the
    history's own, which no repair brings back. Asked of one orphaned handle of a request at the
    history message naming it: does nothing in the history before that message define it (the
    history's handle index, searched backwards)? A request item no history message is (a
    summary) is weighed against one whole check of the history, made the first time one is."""

    def __init__(self, flog: Log | None):
        self.fh = flog.handles() if flog is not None else None
        self._flog, self._handles = flog, None

    def of(self, h: str, s: int | None) -> bool:
        """Is handle h, named by history message s (None: by an item not from the history), the
        history's own?"""
        if self.fh is None:
            return False
        if s is not None:
            return self.fh.orphaned_at(h, s)
        if self._handles is None:
            self._handles = set(check(self._flog).orphan_handles)
        return h in self._handles

    def foreign(self, rep: LogReport, seq: list) -> set:
        """The request's orphaned handles that are not the history's own (`seq`: the request's
        (history position or None, item) pairs, as `rep` read them)."""
        return {h for h, named in rep.orphan_handles.items() if not self.of(h, seq[named[0]][0])}


def _insert(seq: list, adds: list[int], full: list) -> list:
    """`seq` with the history's items `adds` (ascending) put back in history order: each before
    the first item that came after it in the history. One merge pass: an item is the first after
    `f` exactly when the running maximum of the history positions first exceeds `f` there."""
    out, k, top = [], 0, -1
    for s, it in seq:
        if s is not None and s > top:
            top = s
            while k < len(adds) and adds[k] < top:
                out.append((adds[k], full[adds[k]]))
                k += 1
        out.append((s, it))
    out.extend((f, full[f]) for f in adds[k:])
    return out


def _last_sources(seq: list) -> list:
    """For each position of `seq`, the history position of the last item at or before it that came
    from the history (None before the first)."""
    out, last = [], None
    for s, _ in seq:
        if s is not None:
            last = s
        out.append(last)
    return out


def _after_results(i: int, log: Log) -> int:
    """Where a stand-in result for a call of message i goes: after the results that follow it."""
    k = i + 1
    while k < len(log.messages) and log.messages[k].role == "tool":
        k += 1
    return k


class Seen:
    """Every message of one conversation that a guard has seen, in the conversation's order. A
    context editor that rewrites the framework's own history (a pydantic-ai history processor,
    LangChain's summarizer, a persisted trim) leaves what it cut nowhere but here. A message is
    known by identity, else by `key` (its id, or what a framework stamps on it), then, with
    `equal`, by equality; with `equal=False` the key alone decides (an id: a message an editor
    rewrote under the same id is the message seen first, its original). One not seen before goes
    after the last known message before it."""

    def __init__(self, key: Callable[[object], Hashable], equal: bool = True):
        self.key, self.equal = key, equal
        self.items: list = []
        self._at: dict[int, int] = {}  # id(message) -> position in items (`items` holds each)
        self._by_key: dict[Hashable, list[int]] = {}
        # the copies the last merge found by key (a checkpoint read back gives each call of a run
        # the same new objects): id -> (position, the copy, held so its id is not reused)
        self._alias: dict[int, tuple[int, object]] = {}

    def _find(self, m) -> int | None:
        k = self._at.get(id(m))
        if k is not None:
            return k
        hit = self._alias.get(id(m))
        if hit is not None and hit[1] is m:
            return hit[0]
        for k in self._by_key.get(self.key(m), ()):
            if not self.equal or self.items[k] == m:
                return k
        return None

    def merge(self, messages) -> list:
        """Take in a history (or one response) and return everything seen. A message not seen
        before goes after the last known one before it in `messages`; before the first known one
        if none is before it; at the end if `messages` holds no known message (what follows the
        conversation so far, such as the newest messages alone)."""
        messages = list(messages)
        first = next((k for k in map(self._find, messages) if k is not None), None)
        at = len(self.items) if first is None else first  # where the leading new ones go
        alias, moved = {}, False
        for m in messages:
            k = self._find(m)  # after an insertion, the positions it moved are indexed again
            if k is not None:
                if id(m) not in self._at:
                    alias[id(m)] = (k, m)
                at = k + 1
                continue
            self.items.insert(at, m)
            if at == len(self.items) - 1:
                self._index(m, at)
            else:  # before the end: the positions after it moved
                self._reindex()
                moved = True
            at += 1
        if moved:  # positions noted before a move are stale: found again
            self._alias = {}
            alias = {id(m): (k, m) for m in messages if id(m) not in self._at
                     for k in [self._find(m)] if k is not None}  # fmt: skip
        self._alias = alias
        return self.items

    def _reindex(self) -> None:
        self._at, self._by_key, self._alias = {}, {}, {}
        for j, x in enumerate(self.items):
            self._index(x, j)

    def _index(self, m, k: int) -> None:
        self._at[id(m)] = k
        self._by_key.setdefault(self.key(m), []).append(k)


class Conversations:
    """A guard's `Seen` store per conversation (a pydantic-ai `conversation_id`, a LangGraph
    `thread_id`): the `size` most recently used kept, the oldest forgotten first."""

    def __init__(self, size: int, make: Callable[[], Seen]):
        if size < 1:
            raise ValueError(f"conversations must be at least 1, got {size}")
        self.size, self.make = size, make
        self._by: dict = {}

    def get(self, cid) -> Seen | None:
        """The store of conversation `cid` (a new one the first time; None for no id)."""
        if cid is None:
            return None
        seen = self._by.pop(cid, None) or self.make()
        self._by[cid] = seen  # the most recently used last
        while len(self._by) > self.size:
            self._by.pop(next(iter(self._by)))
        return seen

    def __len__(self) -> int:
        return len(self._by)

    def __contains__(self, cid) -> bool:
        return cid in self._by

    def values(self) -> list[Seen]:
        return list(self._by.values())


def note(handles: Sequence[str]) -> str:
    """The typed tombstones, one JSON object a line, as the trim writes them."""
    return "\n".join(json.dumps(tombstone(h)) for h in handles)
