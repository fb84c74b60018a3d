"""What every framework adapter shares: one closure-aware trim of a request, one guard that checks
(and repairs) what another context editor left, and the record of what each call did.

The adapters (`for_langchain`, `for_openai_agents`, `for_pydantic_ai`) only translate: each hands
its framework's messages to these functions in a wire format the closure readers know (LangChain
messages, Responses items, OpenAI chat dicts) and translates the answer back. The trim is
`workbench.closure.logs.trim.trim_log`; the guard brings back from the history what the request
needs, by the trim's own rule (`Plan.needs`), then, given `max_tokens`, lets that trim cut the
request to size. No rule is written here twice.
"""

from __future__ import annotations

import bisect
import json
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field

from workbench.closure.logs import Log, LogError, LogReport, Message, approx_tokens, check, read
from workbench.closure.logs.flow import tombstoned
from workbench.closure.logs.formats import get
from workbench.closure.logs.rules import turn_rules, wire_id
from workbench.closure.logs.trim import (
    STRATEGIES,
    Plan,
    Trimmed,
    tombstone,
    tombstone_tokens,
    trim_log,
)

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


class NoRoom(ClosureError):
    """No closed request within `max_tokens` keeps a message besides the system prompt (the last
    turn a person wrote, with what it needs, does not fit): nothing a provider accepts is left."""


@dataclass(frozen=True)
class Codec:
    """How an adapter sees one framework's request items: the wire format they read as, a key
    that finds an edited item's original in the full history (the same key for an item a context
    editor rewrote in place, such as a cleared tool result), a stand-in result for a call whose
    result is gone, and what `read` takes for a list of items."""

    fmt: str
    key: Callable[[object], Hashable]
    stub: Callable[[str, str], object]  # (call id, tool name) -> a result item
    wrap: Callable[[list], object] = list


def wire(fmt: str) -> Codec:
    """The codec of plain wire items in `fmt` (dicts as a provider takes them), from the format
    itself: its key for an item's original, its stand-in result."""
    f = get(fmt)
    return Codec(fmt, f.item_key, f.stub)


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
    tombstoned: tuple = ()  # ids a tombstone stands for in the request
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

    def frame(self):
        """The records as a pandas DataFrame (pandas is imported here: an agent's process that
        never asks pays nothing for it)."""
        import pandas as pd

        return pd.DataFrame(
            [asdict(r) for r in self.rows], columns=list(Record.__dataclass_fields__)
        )


def tokens(log: Log) -> int:
    """A request's tokens by the trim's counter (a top-level system counts as one message)."""
    from_msgs = sum(approx_tokens(m) for m in log.messages)
    if log.system is None:
        return from_msgs
    return from_msgs + approx_tokens(Message(-1, "system", log.system_text()))


def trim(obj, fmt: str, max_tokens: int, strategy: str = "last", pattern=None) -> Trimmed:
    """The closure-safe trim of one request (a message list or body in `fmt`); raises `NoRoom`
    (a `ClosureError`) when no closed request within `max_tokens` keeps a message besides the system
    prompt (a provider takes no request without one)."""
    settings(max_tokens, strategy)
    log = read(obj, fmt)
    t = trim_log(log, max_tokens, strategy=strategy, pattern=pattern)
    if not t.conversation and any(r != "system" for r in log.messages.role):
        raise NoRoom(
            f"at max_tokens={max_tokens} no closed request keeps a message besides the system "
            f"prompt (the request is {tokens(log)} tokens; the last turn a person wrote, with "
            "what it needs, does not fit)"
        )
    return t


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


def note(handles: Sequence[str]) -> str:
    """The typed tombstones, one JSON object a line, as the trim writes them."""
    return "\n".join(json.dumps(tombstone(h)) for h in handles)


@dataclass
class Guarded:
    """A guard's answer: the items to send, the tombstones the adapter writes into the request's
    system preamble, and the record."""

    items: list
    tombstones: tuple
    record: Record


def _match(edited: list, full: list, key) -> list:
    """For each edited item, the index of its original in `full` (in order, each used once) or
    None: an item another editor wrote (a summary)."""
    same = {id(it): i for i, it in enumerate(full)}  # an editor that keeps the objects
    where: dict | None = None  # key -> history positions, built once an item is not the same
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


def _describe(rep: LogReport, ids: dict) -> list[str]:
    out = [f"result for call {c} (message {i}): its call is not in the request"
           for i, c in rep.orphan_results]  # fmt: skip
    out += [f"call {c} to {n} (message {i}): its result is not in the request"
            for i, c, n in rep.orphan_calls]  # fmt: skip
    out += [f"id {x} (used by message {', '.join(map(str, v))}): the message defining it is not "
            "in the request" for x, v in ids.items()]  # fmt: skip
    return out


def guard(
    edited: list,
    full: list,
    codec: Codec,
    *,
    mode: str = "repair",
    max_tokens: int | None = None,
    call: int = 0,
    pattern=None,
) -> Guarded:
    """Check the request another editor produced (`edited`) against the history it was cut from
    (`full`) and, in repair mode, make it one a provider accepts: what the request's items need
    is brought back from the history by the trim's own rule (a result's call, a call's results,
    the message defining an id a kept call uses, and the last turn a person wrote when the cut
    left none), an item an editor rewrote goes back to its original where it defines an id a
    kept call uses; what the history lacks is stood in for (a stand-in result for a call, a
    tombstone for an id) or dropped (a result whose call is nowhere). Given `max_tokens`, the
    repaired request is then cut to it by the closure trim ("guard: trimmed"), which raises
    `NoRoom` (a `ClosureError`) when no closed request within it keeps a conversation. Raise mode raises
    `ClosureError` naming every orphan instead of repairing. An id the history itself uses
    before any message defines it is the history's own, left alone. What cannot be made a valid
    request (items out of order) raises `ClosureError` in both modes."""
    settings(max_tokens, mode=mode)
    t0 = time.perf_counter()
    try:
        req = read(codec.wrap(edited), codec.fmt, cut=True) if edited else None
    except LogError as e:
        raise ClosureError(f"the request to the model is not valid: {e}") from None
    try:
        hist = read(codec.wrap(full), codec.fmt) if full else None
    except LogError:
        hist = None  # a history that is no valid request: nothing to restore from
    src = _match(edited, full, codec.key) if hist is not None else [None] * len(edited)
    lost = _lost_ids(hist, req, _whole(src, edited, full), pattern) if req is not None else {}
    # (the ids a request item uses are the history's to say, where there is one)
    found = list(_describe(check(req, pattern=pattern, ids=hist is None), lost)
                 if req is not None else ())  # fmt: skip
    if _said(hist) and not _said(req):
        found.append("no turn a person wrote is in the request")
    found = tuple(found)
    tokens_in = tokens(req) if req is not None else 0
    if not found and (max_tokens is None or tokens_in <= max_tokens):
        rec = Record(call, "guard: closed", len(edited), len(edited), len(edited), 0, 0,
                     tokens_in=tokens_in, tokens_out=tokens_in,
                     seconds=time.perf_counter() - t0)  # fmt: skip
        return Guarded(list(edited), (), rec)
    if found and mode == "raise":
        raise ClosureError(
            "the request to the model would leave references dangling (an earlier context edit "
            "cut them): " + "; ".join(found),
            found,
        )
    items, stubbed, tombs, restored, final = list(edited), [], [], 0, req
    if found:
        at = list(src)  # each item's history position (None: not the history's)
        if hist is not None:
            at, items, restored = _restore(at, items, hist, req, full, pattern)
        at, items, stubbed, tombs, final = _stand_in(at, items, hist, full, codec, pattern)
    ids = {id(x) for x in edited}
    action, size, budget = "guard: repaired" if found else "guard: closed", tokens(final), None
    price = size + sum(tombstone_tokens(x) for x in tombs)
    if max_tokens is not None and price > max_tokens:  # the one trim cuts it to size
        t = trim_log(final, max_tokens, pattern=pattern, tombstones=tombs)
        if not t.fits:
            raise NoRoom(
                f"the request to the model is {size} tokens, over max_tokens={max_tokens}, and "
                "no closed request within it keeps a conversation",
                found,
            )
        if len(t.kept) < len(items):
            items, action, budget = [items[i] for i in t.kept], "guard: trimmed", t.budget
        tombs, size = t.tombstones, t.tokens
    kept = sum(1 for x in items if id(x) in ids)
    rec = Record(
        call=call,
        action=action,
        messages_in=len(edited),
        messages_out=len(items),
        kept=kept,
        dropped=len(edited) - kept,
        restored=restored,
        stubbed=tuple(stubbed),
        tombstoned=tuple(tombs),
        orphans=found,
        tokens_in=tokens_in,
        tokens_out=size,
        budget=budget,
        seconds=time.perf_counter() - t0,
    )
    return Guarded(items, tuple(tombs), rec)


def _whole(src: list, items: list, full: list) -> list:
    """The history position of each item that is its history item unchanged (None for an item
    another editor wrote, or rewrote: a cleared result no longer defines what it did)."""
    return [s if s is not None and (items[k] is full[s] or items[k] == full[s]) else None
            for k, s in enumerate(src)]  # fmt: skip


def _said(log: Log | None) -> bool:
    """Does a log hold a turn a person wrote?"""
    return log is not None and "user" in log.messages.role


def _lost_ids(hist: Log | None, req: Log, src: list, pattern) -> dict:
    """Ids a request item uses whose defining message (in the history) the request lacks
    unchanged, and no tombstone in it stands for: id -> request positions using it (`src`: each
    item's history position where it is that item unchanged). Without a history, the request's
    own check decides (its orphaned pattern ids)."""
    if req is None:
        return {}
    if hist is None:
        return dict(check(req, pattern=pattern).orphan_handles)
    f, present = hist.flow(pattern), {s for s in src if s is not None}
    told = tombstoned(req)
    out: dict[str, list[int]] = {}
    for k, s in enumerate(src):
        for x, d in f.uses[s] if s is not None else ():
            if d is not None and d >= 0 and d not in present and x not in told:
                out.setdefault(x, []).append(k)
    return out


def _restore(at: list, items: list, hist: Log, req: Log, full: list, pattern):
    """The request (`items`, at history positions `at`) with what its items need brought back
    from the history (`Plan.needs`, the trim's rule), each in its history place; rewritten items
    that define a needed id go back to their original. (positions, items, how many came back)."""
    plan = Plan(hist, approx_tokens, pattern)
    present = {s for s in at if s is not None}
    start = {plan.block_of[s] for s in present}
    roles = hist.messages.role
    if not _said(req):  # the cut left no turn a person wrote
        last = next((i for i in range(len(roles) - 1, -1, -1) if roles[i] == "user"), None)
        if last is not None:
            start.add(plan.block_of[last])
    want = plan.needs(start)
    if get(hist.format).starts_on_user:  # the request must start on a turn a person wrote
        raws = hist.messages.raw
        while True:
            heads = [i for b in want for i in plan.blocks[b] if raws[i].get("role") != "system"]
            first = min(heads, default=None)
            if first is None or raws[first].get("role") == "user":
                break
            before = [i for i in range(first)
                      if roles[i] == "user" and plan.blocks[plan.block_of[i]][0] == i]  # fmt: skip
            if not before:
                break
            want = plan.needs(want | {plan.block_of[before[-1]]})
    want = {i for b in want for i in plan.blocks[b]}
    needed = {d for i in want for d in plan.flow.needs(i)}
    items = [full[s] if s is not None and s in needed and it is not full[s] else it
             for s, it in zip(at, items, strict=True)]  # fmt: skip
    adds = sorted(want - present)
    at, items = insert_at(at, items, adds, full)
    return at, items, len(adds)


def _stand_in(at: list, items: list, hist: Log | None, full: list, codec: Codec, pattern):
    """What the history cannot bring back, stood in for: a result whose call is nowhere is
    dropped, a call whose result is nowhere gets a stand-in result after its results, an id whose
    definition is not in the request gets a tombstone. (positions, items, the stubbed call ids,
    the tombstoned ids, the request read: raises `ClosureError` where it is no valid request)."""
    try:
        log = read(codec.wrap(items), codec.fmt, cut=True)
    except LogError as e:
        raise ClosureError(f"the repaired request is not valid: {e}") from None
    rep = check(log, pattern=pattern, ids=hist is None)
    drop = {i for i, _ in rep.orphan_results}
    stubs: dict[int, list] = {}
    for i, cid, name in rep.orphan_calls:
        k = i + 1
        while k < len(log.messages) and log.messages.role[k] == "tool":
            k += 1
        stubs.setdefault(k, []).append(codec.stub(wire_id(cid), name))
    changed = bool(drop or stubs)
    if changed:
        new_at, new_items = [], []
        for k in range(len(items) + 1):
            for stub in stubs.get(k, ()):
                new_at.append(None)
                new_items.append(stub)
            if k < len(items) and k not in drop:
                new_at.append(at[k])
                new_items.append(items[k])
        at, items = new_at, new_items
    if hist is None:  # no history: what the request itself leaves open
        tombs = set(rep.orphan_handles)
    else:  # an id the history uses before defining it is the history's own: left alone
        whole = _whole(at, items, full)
        present, f = {s for s in whole if s is not None}, hist.flow(pattern)
        tombs = {x for s in whole if s is not None for x, d in f.uses[s]
                 if d is not None and d >= 0 and d not in present}  # fmt: skip
    tombs -= tombstoned(log)
    try:
        final = read(codec.wrap(items), codec.fmt) if changed else log
        if not changed:
            turn_rules(final)
    except LogError as e:
        raise ClosureError(f"the repaired request is not valid: {e}") from None
    stubbed = [wire_id(cid) for _, cid, _ in rep.orphan_calls]
    return at, items, stubbed, sorted(tombs), final


def insert_at(at: list, items: list, adds: list[int], full: list) -> tuple[list, list]:
    """The items with the history's items `adds` (ascending) put back in history order: each
    before the first item that came after it in the history. One merge pass: an item is the first
    after `f` exactly when the running maximum of the history positions first exceeds `f` there."""
    out_at, out, k, top = [], [], 0, -1
    for s, it in zip(at, items, strict=True):
        if s is not None and s > top:
            top = s
            while k < len(adds) and adds[k] < top:
                out_at.append(adds[k])
                out.append(full[adds[k]])
                k += 1
        out_at.append(s)
        out.append(it)
    out_at.extend(adds[k:])
    out.extend(full[f] for f in adds[k:])
    return out_at, out
