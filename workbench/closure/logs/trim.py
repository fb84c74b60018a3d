"""A closure-safe trimmer for agent message logs.

`trim_log` keeps the system message, the last turn a person wrote (with what it needs) and then
the newest turns (or the most relevant ones) that fit a token budget, and never leaves a
reference dangling: a call and its results are one block, kept or dropped together (a Responses
`reasoning` item goes with the item after it); a kept block brings back the blocks holding the
nearest earlier definition of every handle it names (to a fixpoint); when a definition does not
fit, the handle gets the note's typed tombstone `{"evicted_ref": h, "recoverable": true}` in the
system preamble instead, priced by the same token counter as the messages. A handle the log never
defined gets no tombstone (nothing was evicted). What cannot fit is reported (`over_budget`,
`conversation`, `fits`), never silent. The output has the shape that was read (see `readers`).

Linear in the log: one pass to index handles and blocks, O(a block and its handles) per candidate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from workbench.closure.logs import Log, LogReport, Message, approx_tokens, check, read, write
from workbench.closure.logs.logtypes import text_of
from workbench.closure.logs.readers import READERS
from workbench.closure.window.spans import CLOSURE_PATTERNS
from workbench.common.encoders import CachedEncoder, LexicalEncoder, get_encoder
from workbench.common.handles import Patterns
from workbench.common.io import paused_gc

STRATEGIES = ("last", "relevance")
NEVER = 1 << 62  # no kept message: later than any position


class _RankRows(LexicalEncoder):
    """The lexical rule, memoized whatever the batch's size: the relevance ranking's batch (every
    block of a history) comes back at the next model call of a running agent, nearly whole."""

    recompute = False


# each block text's row kept for the next call, at most RANK_HELD of them, the oldest forgotten
# first: a long-lived agent process does not keep a row for every block it ever ranked (as the
# shared encoder's memo would); the same bits as the shared encoder's rows (batch-invariant)
RANK_HELD = 1 << 13
RANKER = CachedEncoder(_RankRows(), by_text=True)  # (no disk: keyed by the texts)
RANKER.hold(RANK_HELD)


def tombstone(handle: str) -> dict:
    """The note's typed tombstone."""
    return {"evicted_ref": handle, "recoverable": True}


@dataclass(frozen=True, repr=False)
class Trimmed:
    """A trimmed log: kept message indices, tombstones, the output in the log's shape, tokens."""

    log: Log
    kept: tuple[int, ...]
    tombstones: tuple[str, ...]  # handles
    output: object
    tokens: int  # counted on the output, by the trim's counter
    budget: int
    report: LogReport  # closure of the output
    # the input's own orphans when the output has any (a handle the log names before any message
    # defines it, a result whose call it does not hold): no trim can close them, and a trim adds
    # none of its own
    inherited: LogReport | None = None

    @property
    def over_budget(self) -> int:
        return max(self.tokens - self.budget, 0)

    @property
    def closed(self) -> bool:
        """The output leaves nothing dangling that the input did not already leave."""
        r, base = self.report, self.inherited
        if r.closed:
            return True
        if base is None:
            return False
        return (
            {c for _, c in r.orphan_results} <= {c for _, c in base.orphan_results}
            and {c for _, c, _ in r.orphan_calls} <= {c for _, c, _ in base.orphan_calls}
            and r.orphan_handles.keys() <= base.orphan_handles.keys()
        )

    @property
    def conversation(self) -> bool:
        """Does the output hold a message besides the system prompt (an empty conversation is
        no request a provider accepts)?"""
        return any(self.log.messages[i].role != "system" for i in self.kept)

    @property
    def fits(self) -> bool:
        """A window within the budget, with a conversation in it, that leaves nothing dangling the
        input did not, was found."""
        return self.over_budget == 0 and self.closed and self.conversation

    def __repr__(self) -> str:
        return (
            f"Trimmed({self.log.format}, kept {len(self.kept)}/{len(self.log.messages)} messages, "
            f"{len(self.tombstones)} tombstones, {self.tokens}/{self.budget} tokens, "
            f"{'closed' if self.closed else 'OPEN'})"
        )


def blocks_of(log: Log) -> list[list[int]]:
    """A message with tool calls and every message answering them form one block (a block is a
    run of messages: results follow their call, and where a format lets other messages come
    between, those join the block); a Responses `reasoning` item joins the item after it; other
    messages stand alone. Blocks in log order, one pass."""
    msgs = log.messages
    if log.format != "responses":  # the readers checked that results follow their call's turn
        # a message starts a block unless it answers an earlier message's call (an Anthropic
        # assistant turn holding its server tools' results answers its own calls; a result whose
        # call the log does not hold, an orphan, stands alone)
        called = {c for m in msgs if m.calls for c, _ in m.calls}
        starts = []
        for m in msgs:
            answers = m.answers
            if answers and m.calls:  # (its own calls' results do not tie it to an earlier one)
                own = {c for c, _ in m.calls}
                answers = [a for a in answers if a not in own]
            if not answers or called.isdisjoint(answers):
                starts.append(m.index)
        starts = starts or [0]
        if starts[0] != 0:
            starts.insert(0, 0)
        ends = [*starts[1:], len(msgs)]
        return [range(a, b) for a, b in zip(starts, ends, strict=True)]
    out: list[list[int]] = []
    open_calls: dict[str, int] = {}  # call id -> its block, while unanswered
    glue = False  # the previous message was a reasoning item: this one joins its block
    for m in msgs:
        i = m.index
        home = None
        for cid in m.answers:
            b = open_calls.pop(cid, None)
            if b is not None and (home is None or b < home):
                home = b
        if home is not None:
            if len(out) - 1 > home:  # messages between a call and its result join it
                while len(out) - 1 > home:
                    out[home].extend(out.pop(home + 1))
                for c, cb in open_calls.items():
                    open_calls[c] = min(cb, home)
            out[home].append(i)
            b = home
        elif glue:
            out[-1].append(i)
            b = len(out) - 1
        else:
            out.append([i])
            b = len(out) - 1
        if m.calls:
            for cid, _ in m.calls:
                open_calls[cid] = b
        raw = m.raw
        glue = isinstance(raw, dict) and raw.get("type") == "reasoning"
    return out


class _Open:
    """The handles a growing kept set leaves dangling (a kept message names a handle the whole
    log defines earlier, and no kept message defines it before that one) and the tokens their
    tombstones add, kept up to date as blocks join: asking what a candidate would add costs
    O(the candidate's handles), whatever has been kept."""

    def __init__(self, handles, needed, tcost):
        self.h, self.needed, self.tcost = handles, needed, tcost
        self.min_def: dict[str, int] = {x: -1 for x in handles.pre_defs | handles.pre_tombs}
        self.min_ref: dict[str, int] = {}
        self.cost = 0
        self.count = 0

    def _touch(self, positions):
        md, mr = {}, {}
        scanned, at = self.h._at, self.h.at  # a message's (refs, defs, tombs), scanned once
        for i in positions:
            _, defs, tombs = scanned[i] or at(i)
            for x in defs:
                if i < md.get(x, self.min_def.get(x, NEVER)):
                    md[x] = i
            for x in tombs:
                if i < md.get(x, self.min_def.get(x, NEVER)):
                    md[x] = i
            for x, _ in self.needed[i]:
                if i < mr.get(x, self.min_ref.get(x, NEVER)):
                    mr[x] = i
        return md, mr

    def _delta(self, md, mr):
        dc = dn = 0
        for x in md.keys() | mr.keys():
            r0, d0 = self.min_ref.get(x, NEVER), self.min_def.get(x, NEVER)
            r1, d1 = mr.get(x, r0), md.get(x, d0)
            was, now = r0 < d0, r1 < d1
            if was != now:
                dc += self.tcost(x) if now else -self.tcost(x)
                dn += 1 if now else -1
        return dc, dn

    def if_added(self, positions) -> tuple[int, int]:
        """(tombstone tokens, tombstones) with `positions` kept too."""
        dc, dn = self._delta(*self._touch(positions))
        return self.cost + dc, self.count + dn

    def add(self, positions) -> None:
        md, mr = self._touch(positions)
        dc, dn = self._delta(md, mr)
        self.cost += dc
        self.count += dn
        self.min_def.update(md)
        self.min_ref.update(mr)


def _dangling(log: Log, handles, needed, kept_msgs) -> list[str]:
    """The exact tombstone set of a kept set: handles a kept message names, that the log defines
    earlier, and that no earlier kept message (or the top-level system) defines."""
    defined = set(handles.pre_defs | handles.pre_tombs)
    out = set()
    for i in kept_msgs:
        for x, _ in needed[i]:
            if x not in defined:
                out.add(x)
        defined.update(handles.defs[i])
        defined.update(handles.tombs[i])
    return sorted(out)


def output_tokens(log: Log, out, kept, cost, counter) -> int:
    """Tokens of a written log by the counter: kept messages written unchanged cost what they
    cost before; a changed or new message (a system message carrying tombstones, merged turns) is
    read back alone and counted; a top-level system counts as one more system message."""
    items = (
        out if isinstance(out, list) else out[log.key] if isinstance(out.get(log.key), list) else []
    )
    ids = {id(o) for o in items}
    total = sum(cost[i] for i in kept if id(log.messages[i].raw) in ids)
    unchanged = {id(log.messages[i].raw) for i in kept}
    fresh = [o for o in items if id(o) not in unchanged]
    if fresh:
        total += sum(counter(m) for m in READERS[log.format](fresh).messages)
    top = None
    if isinstance(out, dict):
        top = out.get("system") if log.format == "anthropic" else out.get("instructions")
    if top is not None:
        total += counter(Message(-1, "system", text_of(top, None, "system")))
    return total


class _Lazy(dict):
    """Values computed on first use, by index (a hit is a plain dict lookup)."""

    __slots__ = ("f",)

    def __init__(self, f):
        super().__init__()
        self.f = f

    def __missing__(self, i):
        v = self[i] = self.f(i)
        return v


def block_costs(cost: list, block_of: list[int], blocks: list) -> list:
    """Each block's price, the sum of its messages' (`cost` per message, `block_of` its block):
    integer prices in one bincount (exact: sums far below 2**53), others (a counter of floats)
    summed one block at a time, as the 'last' walk sums them."""
    if all(type(c) is int for c in cost):
        return np.bincount(block_of, weights=cost, minlength=len(blocks)).astype(np.int64).tolist()
    return [sum(cost[i] for i in members) for members in blocks]


def _unclosable_blocks(msgs, block_of, n_blocks: int, carried: set) -> list[bool]:
    """Per block, what `unclosable` answers, in one pass over the messages: a block whose calls
    are not exactly the calls it answers (a call unanswered in its block, a result whose call
    the block does not hold; a result the provider carries answers nothing here)."""
    calls: dict[int, set] = {}
    answers: dict[int, set] = {}
    for i, m in enumerate(msgs):
        if m.calls:
            calls.setdefault(block_of[i], set()).update(c for c, _ in m.calls)
        if m.answers and i not in carried:
            answers.setdefault(block_of[i], set()).update(m.answers)
    bad = [False] * n_blocks
    for b in calls.keys() | answers.keys():
        bad[b] = calls.get(b, set()) != answers.get(b, set())
    return bad


def trim_log(
    log: Log,
    max_tokens: int,
    *,
    keep_system: bool = True,
    strategy: str = "last",
    counter=approx_tokens,
    patterns: Patterns = CLOSURE_PATTERNS,
    start_on_user: bool | None = None,
    goal: str | None = None,
) -> Trimmed:
    """Trim a log to `max_tokens` without orphaning a call, a result or a handle.

    strategy 'last' keeps the newest blocks that fit, as a contiguous suffix; 'relevance' walks the
    blocks by lexical relevance to `goal` (default: the last user message), newest first on ties,
    skipping a block that does not fit. `start_on_user` (default: Anthropic only, which requires
    it) drops leading kept blocks until the first non-system message is a user message. `counter`
    prices a `Message` (the default is langchain-core's approximate rule); tombstones are priced
    by it too."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    with paused_gc():  # many small objects: the collector's passes would cost as much again
        return _trim(log, max_tokens, keep_system, strategy, counter, patterns, start_on_user, goal)


def _trim(log, max_tokens, keep_system, strategy, counter, patterns, start_on_user, goal):
    if start_on_user is None:
        start_on_user = log.format == "anthropic"
    msgs = log.messages
    handles = log.handles(patterns)
    blocks = blocks_of(log)
    sizes = np.fromiter((len(members) for members in blocks), dtype=np.int64, count=len(blocks))
    block_of = np.repeat(np.arange(len(blocks)), sizes).tolist()
    # per message: (handle, its nearest earlier definition) for each handle it names that the
    # log defines earlier: what keeping the message needs
    needed = _Lazy(handles.needed)

    # a block that cannot be closed whatever is kept (a call the log never answers, a handle no
    # earlier message defines) is never kept: the output of a trim always checks closed
    # (a handle no earlier message defines cannot be closed by any trim either: the input leaves
    # it open, and keeping the block that names it makes nothing worse, so it is no reason to drop
    # a completed call; no tombstone stands for it, since nothing was evicted)
    carried = set(log.carried)

    def unclosable(b) -> bool:
        members = blocks[b]
        calls = {cid for i in members for cid, _ in msgs[i].calls}
        answers = {cid for i in members if i not in carried for cid in msgs[i].answers}
        if calls - answers:
            return True  # a call's results are in its block, or nowhere
        return bool(answers - calls)  # a result whose call the log does not hold: an orphan

    if strategy == "last":
        bad = _Lazy(unclosable)
        # tokens are counted when a message is first considered ('last' looks at the newest only)
        cost = _Lazy(lambda i: counter(msgs[i]))
        bcost = _Lazy(lambda b: sum(cost[i] for i in blocks[b]))
    else:  # every block is a candidate: priced and judged in one pass each
        bad = _unclosable_blocks(msgs, block_of, len(blocks), carried)
        cost = [counter(m) for m in msgs]
        bcost = block_costs(cost, block_of, blocks)
        # the walk stops once the room left is below every block it has not tried: with a budget
        # of a quarter of the log or more it tries most of them, and one regex pass over every
        # text costs less than scanning them one by one; with less, the few it tries are scanned
        # when tried (either way the same answer)
        if 4 * max_tokens >= sum(cost):
            handles.scan_all()
    empty = counter(Message(-1, "system", ""))
    tomb_cost: dict[str, int] = {}

    def tcost(x: str) -> int:
        if x not in tomb_cost:
            line = json.dumps(tombstone(x))
            tomb_cost[x] = max(counter(Message(-1, "system", line)) - empty, 1) + 1
        return tomb_cost[x]

    system = [b for b, members in enumerate(blocks) if msgs[members[0]].role == "system"]
    has_preamble = (keep_system and system) or log.system is not None
    if log.format == "anthropic" and log.body is None:
        has_preamble = True  # the note goes into the first user turn
    new_preamble = 0 if has_preamble else empty + 1
    fixed = counter(Message(-1, "system", log.system_text())) if log.system is not None else 0
    kept: set[int] = set(system) if keep_system else set()
    kept.update(block_of[i] for i in log.carried)  # answers the provider waits for: always kept
    added: list[set[int]] = []  # blocks in the order they were kept (the system is not here)
    opened = _Open(handles, needed, tcost)
    opened.add([i for b in kept for i in blocks[b]])
    kept_cost = sum(bcost[b] for b in kept) + fixed

    if keep_system:  # the whole log fits: it is the answer, unchanged (newest first, as 'last'
        whole = fixed  # walks them, stopping at the first message past the budget), but for
        for i in range(len(msgs) - 1, -1, -1):  # what a provider rejects: a result whose call
            whole += cost[i]  # is gone, a call never answered
            if whole > max_tokens:
                break
        else:
            kept.update(b for b in range(len(blocks)) if not bad[b])

    def total_with(new_blocks) -> int:
        tc, tn = opened.if_added([i for b in new_blocks for i in blocks[b]])
        return kept_cost + sum(bcost[b] for b in new_blocks) + tc + (new_preamble if tn else 0)

    def keep(new_blocks) -> None:
        nonlocal kept_cost
        opened.add([i for b in new_blocks for i in blocks[b]])
        kept_cost += sum(bcost[b] for b in new_blocks)
        kept.update(new_blocks)
        added.append(set(new_blocks))

    def closure_of(b, room: int) -> set | None:
        """The block with the blocks holding what it needs, to a fixpoint; None once it costs
        more than `room` tokens (it cannot fit)."""
        want, stack, spent = {b}, [b], bcost[b]
        while stack:
            for i in blocks[stack.pop()]:
                for x, p in needed[i]:
                    if p < 0 or opened.min_def.get(x, NEVER) < i:
                        continue  # defined by the preamble, or by a kept message before
                    q = block_of[p]
                    if q not in want and q not in kept and not bad[q]:
                        want.add(q)
                        stack.append(q)
                        spent += bcost[q]
                        if spent > room:
                            return None
        return want

    def try_keep(b) -> bool:
        room = max_tokens - kept_cost
        if bcost[b] > room:
            return False  # the block alone is past the budget (tombstones only add to it)
        want = closure_of(b, room)
        if want is not None and total_with(want) <= max_tokens:
            keep(want)
            return True
        if want != {b} and total_with({b}) <= max_tokens:
            keep({b})  # the block alone: tombstones for what it needs
            return True
        return False

    # the last turn a person wrote is the request: kept first (with what it needs) whenever it
    # fits, so a trim keeps a conversation and an Anthropic log still starts on a user message;
    # `human`: the newest block a user message starts, `said`: the newest holding one, `last`:
    # the newest user message (blocks are runs of messages: one scan back from the end)
    human = said = last = None
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role == "user":
            if said is None:
                said, last = block_of[i], msgs[i]
            if blocks[block_of[i]][0] == i:
                human = block_of[i]
                break
    if human is not None and human not in kept and not bad[human]:
        try_keep(human)
    # a person may write into the Anthropic turn that carries tool results ("the check hung, go
    # with what you have"): when that is newer, it is the person's last word, kept next
    if said is not None and said not in kept and not bad[said] and (human is None or said > human):
        try_keep(said)
    if strategy == "relevance" and human is not None:
        # what the agent did since that turn (its calls and their results) is the work in
        # flight: kept next, newest first, as 'last' keeps it
        for b in range(len(blocks) - 1, human, -1):
            if b not in kept and not bad[b] and not try_keep(b):
                break
    if strategy == "last":
        order = range(len(blocks) - 1, -1, -1)
    else:
        enc = RANKER if len(blocks) <= RANK_HELD else get_encoder("lexical")  # (none kept)
        goal = goal or (last.text if last is not None else "")
        # (the blocks first: on a first call none is known, and the goal, a block's text
        # when the turn stands alone, is then one)
        e = enc([" ".join(msgs[i].text for i in members) for members in blocks])
        q = enc([goal])[0]
        # the most relevant first, the newest first on ties
        order = np.lexsort((-np.arange(len(blocks)), -(e @ q))).tolist()
    # (relevance) the cheapest block from each position of the walk on: once the room left is
    # below it, no later block fits (the room only shrinks), and the walk ends there
    cheapest = (
        np.minimum.accumulate(np.asarray(bcost)[order][::-1])[::-1].tolist()
        if strategy == "relevance"
        else None
    )
    for k, b in enumerate(order):
        if cheapest is not None and cheapest[k] > max_tokens - kept_cost:
            break
        if b in kept or bad[b]:
            continue
        if not try_keep(b) and strategy == "last":
            break  # the newest turns, contiguous
    if start_on_user:
        rest = sorted(b for b in kept if b not in system)
        while rest and msgs[blocks[rest[0]][0]].role != "user":
            kept.discard(rest.pop(0))

    def finish():
        kept_msgs = tuple(sorted(i for b in kept for i in blocks[b]))
        tombs = tuple(_dangling(log, handles, needed, kept_msgs))
        out = write(log, kept_msgs, [tombstone(x) for x in tombs])
        return kept_msgs, tombs, out, output_tokens(log, out, kept_msgs, cost, counter)

    kept_msgs, tombs, out, tokens = finish()
    # the plan prices tombstones by the counter one at a time: if the written preamble costs more,
    # give back the blocks kept last until it fits (rare, and a few tokens)
    while tokens > max_tokens and added:
        kept.difference_update(added.pop())
        kept_msgs, tombs, out, tokens = finish()
    report = check(log, kept_msgs, patterns=patterns, tombstones=tombs)
    inherited = None if report.closed else check(log, patterns=patterns)
    return Trimmed(log, kept_msgs, tombs, out, tokens, max_tokens, report, inherited)


def trim_messages(messages, max_tokens: int, *, format: str | None = None, **kw):
    """Trim plain message dicts (OpenAI / Responses / Anthropic / LangChain dicts; format detected
    unless given), or LangChain message objects; returns the same kind, in the same shape."""
    with paused_gc():  # one pause over reading and trimming; the log is freed before it ends
        log = read(messages, format)
        out = trim_log(log, max_tokens, **kw).output
        del log  # freed by reference counting (a log holds no cycle): the collector never walks it
    return out
