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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from workbench.agents.history import Codec, Reading
from workbench.closure.logs import (
    Log,
    LogError,
    LogReport,
    Message,
    approx_tokens,
    check,
    read,
    read_part,
)
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
    """The closure-safe trim of one request (a message list or body in `fmt`, or its reading)."""
    settings(max_tokens, strategy)
    log = obj if isinstance(obj, Log) else read(obj, fmt)
    return trim_log(log, max_tokens, strategy=strategy, counter=counter)


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
    reading: Reading | None = None,
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
    `ClosureError` in both modes. `reading`: the conversation's `Reading`, kept between calls
    (the history read last is not read again)."""
    settings(max_tokens, mode=mode)
    t0 = time.perf_counter()
    with paused_gc():  # a history read and checked: the collector would triple the time
        return _guard(edited, full, codec, mode, max_tokens, call, t0, reading)


def _guard(edited, full, codec, mode, max_tokens, call, t0, reading) -> Guarded:
    if reading is not None:
        flog = reading(full, codec)
    else:
        try:
            flog = read(codec.wrap(full), codec.fmt)
        except LogError:
            flog = None  # a history that is no valid request: nothing to restore from
    src = _match(edited, full, codec.key)
    seq = list(zip(src, edited, strict=True))
    if flog is not None and 2 * len(edited) > len(full):
        # most of the history goes again: one pass over it scans every request item once
        flog.handles().scan_all()
    try:
        first = _reading(seq, full, flog, codec)
    except LogError as e:
        raise ClosureError(f"the request to the model is not valid: {e}") from None
    rep = check(first)
    # each message priced once, where a request read from the history is priced as it (a legacy
    # call id, which reading again renumbers, is not)
    prices = None if reading is None or flog is None or flog.by_order else reading.prices(flog)
    tokens_in = _tokens(first, seq, full, prices)
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
            log = _reading(seq, full, flog, codec)
            rep = check(log, tombstones=tombs)
        told = len(tombs)  # the tombstones `rep` was checked with
        present = {s for s, _ in seq if s is not None}
        room = (
            None
            if max_tokens is None
            else max_tokens - _tokens(log, seq, full, prices) - 8 * len(tombs)
        )

        def fits(members, present=present) -> bool:
            nonlocal room
            if room is None:
                return True
            out = [m for m in members if m not in present]
            cost = (sum(map(approx_tokens, (flog.messages[m] for m in out))) if prices is None
                    else sum(prices[m] for m in out))  # fmt: skip
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
            final = _reading(seq, full, flog, codec)
        except LogError as e:
            raise ClosureError(f"the repaired request is not valid: {e}", found) from None
        left = check(final, tombstones=tombs)
    if left.orphan_results or left.orphan_calls or own.foreign(left, seq):
        raise ClosureError(
            "the request could not be repaired: " + "; ".join(_describe(left)), found
        )
    tokens_out = _tokens(final, seq, full, prices)
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


def _tokens(log: Log, seq: list, full: list, prices: list | None) -> int:
    """`tokens(log)` of the request `seq` read as `log`: from the history's prices where every
    item is a history item itself (its reading a part of the history's, no system of its own)."""
    if prices is None or log.system is not None:
        return tokens(log)
    total = 0
    for s, it in seq:
        if s is None or full[s] is not it:
            return tokens(log)
        total += prices[s]
    return total


def _reading(seq: list, full: list, flog: Log | None, codec: Codec) -> Log:
    """The reading of request items ((history position or None, item) pairs): taken from the
    history's (`read_part`) when every item is a history item itself, else read."""
    if flog is not None and codec.wrap is list:
        at = []
        for s, it in seq:
            if s is None or full[s] is not it:
                break
            at.append(s)
        else:
            log = read_part(flog, at)
            if log is not None:
                return log
    return read(codec.wrap([it for _, it in seq]), codec.fmt)


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


def note(handles: Sequence[str]) -> str:
    """The typed tombstones, one JSON object a line, as the trim writes them."""
    return "\n".join(json.dumps(tombstone(h)) for h in handles)
