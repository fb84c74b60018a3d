"""The closure-safe trim of an agent message log: one rule for what a kept set needs
(`needs`), used by the trim and by the guard (`workbench.agents.core`).

`trim_log` keeps the system preamble (and what stands for a compacted prefix), the last turn a
person wrote (with what it needs) and then the newest turns (or the most relevant ones) that fit
a token budget, and never leaves a reference dangling: a call and its results are one block, kept
or dropped together (a Responses `reasoning` item goes with the item after it); a kept block
brings back the blocks holding the definition of every id it uses (to a fixpoint); when a
definition does not fit, the id gets the note's typed tombstone `{"evicted_ref": id,
"recoverable": true}` in the system preamble instead, priced by the same token counter as the
messages. A log that fits is given back unchanged. What cannot fit is reported (`over_budget`,
`conversation`, `fits`), never silent. The output has the shape that was read (its format's `write`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from workbench.closure.logs import read
from workbench.closure.logs.formats import get
from workbench.closure.logs.logtypes import Log, LogReport, Message, approx_tokens, check, text_of
from workbench.closure.logs.writers import write
from workbench.common.encoders import LexicalEncoder

STRATEGIES = ("last", "relevance")


def tombstone(handle: str) -> dict:
    """The note's typed tombstone."""
    return {"evicted_ref": handle, "recoverable": True}


def tombstone_tokens(handle: str, counter=approx_tokens) -> int:
    """One tombstone's price: the counter's, as a line of the system preamble."""
    line = json.dumps(tombstone(handle))
    return max(counter(Message(-1, "system", line)) - counter(Message(-1, "system", "")), 1) + 1


@dataclass(frozen=True, repr=False)
class Trimmed:
    """A trimmed log: kept message indices, tombstones, the output in the log's shape, tokens."""

    log: Log
    kept: tuple[int, ...]
    tombstones: tuple[str, ...]  # ids
    output: object
    tokens: int  # counted on the output, by the trim's counter
    budget: int
    report: LogReport  # closure of the output
    # the input's own orphans when the output has any (an id the log names before any message
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
        roles = self.log.messages.role
        return any(roles[i] != "system" for i in self.kept)

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


def blocks_of(log: Log) -> list[range]:
    """A message with calls and every message answering them form one block, with the messages
    between them: a block is a run of messages; a Responses `reasoning` item joins the item after
    it; other messages stand alone. Blocks in log order, one pass."""
    msgs = log.messages
    starts: list[int] = []
    waiting: dict[str, int] = {}  # call id -> its block, while unanswered
    glue = False  # the previous message was a reasoning item: this one joins its block
    for i in range(len(msgs)):
        calls, answers = msgs.calls[i], msgs.answers[i]
        own = {c for c, _ in calls}
        homes = [waiting.pop(c) for c in answers if c in waiting and c not in own]
        if homes:  # the blocks from its call's on are one
            home = min(homes)
            del starts[home + 1 :]
            for c, b in waiting.items():
                waiting[c] = min(b, home)
        elif not glue:
            starts.append(i)
        for c in own.difference(answers):
            waiting[c] = len(starts) - 1
        raw = msgs.raw[i]
        glue = isinstance(raw, dict) and raw.get("type") == "reasoning"
    return [range(a, b) for a, b in zip(starts, [*starts[1:], len(msgs)], strict=True)]


class Plan:
    """A log seen as blocks for keeping: each block's price, whether it can ever be closed, the
    blocks holding the definitions its ids need, and the ids it defines; and a kept set growing
    block by block, with the ids it leaves dangling (their tombstones priced by the counter)."""

    def __init__(self, log: Log, counter, pattern, given=()):
        msgs = self.messages = log.messages
        self.log, self.counter = log, counter
        self.flow = log.flow(pattern)
        self.blocks = blocks_of(log)
        self.block_of = [0] * len(msgs)
        for b, members in enumerate(self.blocks):
            for i in members:
                self.block_of[i] = b
        carried = set(log.carried)
        self.bad = [self._unclosable(members, carried) for members in self.blocks]
        uses: dict[int, list] = {}  # block -> (id, the block defining it) where it uses one
        defines: dict[int, set] = {}  # block -> the ids it defines that a block uses
        given = set(given) | self.flow.pre_tombs
        for i, us in enumerate(self.flow.uses):
            for x, d in us:
                if d is not None and d >= 0 and x not in given:
                    q = self.block_of[d]
                    uses.setdefault(self.block_of[i], []).append((x, q))
                    defines.setdefault(q, set()).add(x)
        # (held as tuples of strings and numbers, which the garbage collector stops tracking)
        self.uses = {b: tuple(v) for b, v in uses.items()}
        self.defines = {b: tuple(v) for b, v in defines.items()}
        self.kept: set[int] = set()
        self.kept_cost = self.tomb_cost = 0
        self.dangling: set[str] = set()
        self.added: list[set[int]] = []
        self._empty = counter(Message(-1, "system", ""))
        self._tomb: dict[str, int] = {}

    @cached_property
    def cost(self) -> list:
        """Each message's price by the counter (found when first asked: a guard that brings back
        what a request needs, with no budget, never asks)."""
        return [self.counter(m) for m in self.messages]

    @cached_property
    def bcost(self) -> list:
        cost = self.cost
        return [sum(cost[i] for i in members) for members in self.blocks]

    def _unclosable(self, members, carried) -> bool:
        """A block whose calls are not exactly the calls it answers (a call unanswered in its
        block, not the server's to run; a result whose call the block does not hold): never
        kept."""
        msgs, server = self.messages, self.log.server
        calls = {c for i in members for c, _ in msgs.calls[i]}
        answers = {c for i in members if i not in carried for c in msgs.answers[i]}
        return bool(calls - answers - server or answers - calls)

    def tcost(self, x: str) -> int:
        if x not in self._tomb:
            self._tomb[x] = tombstone_tokens(x, self.counter)
        return self._tomb[x]

    def needs(self, start, room: float | None = None) -> set | None:
        """`start` blocks with the blocks holding what they need, to a fixpoint (a block that can
        never be closed is never brought); None once they cost more than `room` tokens."""
        want, stack = set(start), list(start)
        bcost = self.bcost if room is not None else None
        spent = sum(bcost[b] for b in want if b not in self.kept) if bcost else 0
        if bcost and spent > room:
            return None
        while stack:
            for _, q in self.uses.get(stack.pop(), ()):
                if q not in want and q not in self.kept and not self.bad[q]:
                    want.add(q)
                    stack.append(q)
                    if bcost:
                        spent += bcost[q]
                        if spent > room:
                            return None
        return want

    def delta(self, new) -> tuple[set, set]:
        """(ids that would dangle, ids that would stop dangling) with the blocks `new` kept too."""
        add, gone = set(), set()
        for b in new:
            for x, q in self.uses.get(b, ()):
                if q not in self.kept and q not in new and x not in self.dangling:
                    add.add(x)
            gone.update(x for x in self.defines.get(b, ()) if x in self.dangling)
        return add, gone

    def price(self, new) -> tuple[int, bool]:
        """Tokens of the kept blocks with `new` kept too (the blocks and the tombstones of what
        they leave dangling), and whether any id is left dangling."""
        fresh = [b for b in new if b not in self.kept]
        add, gone = self.delta(fresh)
        tombs = self.tomb_cost + sum(map(self.tcost, add)) - sum(map(self.tcost, gone))
        return self.kept_cost + sum(self.bcost[b] for b in fresh) + tombs, bool(
            (self.dangling | add) - gone
        )

    def keep(self, new, record: bool = True) -> None:
        fresh = {b for b in new if b not in self.kept}
        add, gone = self.delta(fresh)
        self.dangling = (self.dangling | add) - gone
        self.tomb_cost += sum(map(self.tcost, add)) - sum(map(self.tcost, gone))
        self.kept_cost += sum(self.bcost[b] for b in fresh)
        self.kept.update(fresh)
        if record:
            self.added.append(fresh)

    def messages_kept(self, blocks=None) -> tuple[int, ...]:
        return tuple(sorted(i for b in (self.kept if blocks is None else blocks)
                            for i in self.blocks[b]))  # fmt: skip

    def dangling_of(self, kept_msgs) -> list[str]:
        """The exact tombstone set of a kept set: ids a kept message uses whose defining message
        is not kept."""
        kset = set(kept_msgs)
        given = self.flow.pre_tombs
        return sorted({x for i in kept_msgs for x, d in self.flow.uses[i]
                       if d is not None and d >= 0 and d not in kset and x not in given})  # fmt: skip


def output_tokens(log: Log, out, kept, cost, counter) -> int:
    """Tokens of a written log by the counter: kept messages written unchanged cost what they
    cost before; a changed or new message (a system message carrying tombstones) is read back
    alone and counted; a top-level system counts as one more system message."""
    items = (
        out if isinstance(out, list) else out[log.key] if isinstance(out.get(log.key), list) else []
    )
    ids = {id(o) for o in items}
    raws = log.messages.raw
    total = sum(cost[i] for i in kept if id(raws[i]) in ids)
    unchanged = {id(raws[i]) for i in kept}
    fresh = [o for o in items if id(o) not in unchanged]
    if fresh:
        total += sum(counter(m) for m in get(log.format).read(fresh).messages)
    top = get(log.format).system_of(out)
    if top is not None:
        total += counter(Message(-1, "system", text_of(top, None, "system")))
    return total


def trim_log(
    log: Log,
    max_tokens: int,
    *,
    keep_system: bool = True,
    strategy: str = "last",
    counter=approx_tokens,
    pattern=None,
    start_on_user: bool | None = None,
    goal: str | None = None,
    tombstones=(),
) -> Trimmed:
    """Trim a log to `max_tokens` without orphaning a call, a result or an id.

    strategy 'last' keeps the newest blocks that fit, as a contiguous suffix; 'relevance' walks the
    blocks by lexical relevance to `goal` (default: the last user message), newest first on ties,
    skipping a block that does not fit. `start_on_user` (default: the format's, Anthropic's
    requires it) drops leading kept blocks until the first non-system message is a user message. `counter`
    prices a `Message` (the default is langchain-core's approximate rule); tombstones are priced
    by it too. `pattern`: what else counts as an id (`workbench.closure.logs.flow`); `tombstones`:
    ids the request stands in for already (written with the trim's own, priced with them)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if start_on_user is None:
        start_on_user = get(log.format).starts_on_user
    msgs = log.messages
    plan = Plan(log, counter, pattern, tombstones)
    blocks, bad = plan.blocks, plan.bad
    given = tuple(sorted(set(tombstones)))
    pinned = {plan.block_of[i] for i in [*log.carried, *log.compactions]}
    system = [b for b, members in enumerate(blocks) if msgs.role[members[0]] == "system"]
    has_preamble = (keep_system and system) or log.system is not None
    if get(log.format).preamble_free(log.body):
        has_preamble = True  # the note costs no system message of its own
    new_preamble = 0 if has_preamble else plan._empty + 1
    fixed = counter(Message(-1, "system", log.system_text())) if log.system is not None else 0
    fixed += sum(map(plan.tcost, given))
    plan.keep(pinned | (set(system) if keep_system else set()), record=False)

    def total(new) -> int:
        tokens, dangling = plan.price(new)
        return fixed + tokens + (new_preamble if dangling or given else 0)

    if keep_system and fixed + sum(plan.cost) <= max_tokens:
        # the whole log fits: it is the answer, unchanged, less what a provider rejects (a result
        # whose call is gone, a call never answered)
        plan.keep({b for b in range(len(blocks)) if not bad[b]})
    else:
        _walk(plan, max_tokens, total, strategy, goal)
    if start_on_user:
        rest = sorted(b for b in plan.kept if b not in system and b not in pinned)
        while rest and msgs.role[blocks[rest[0]][0]] != "user":
            plan.kept.discard(rest.pop(0))

    def finish():
        kept_msgs = plan.messages_kept()
        tombs = tuple(sorted(set(plan.dangling_of(kept_msgs)) | set(given)))
        out = write(log, kept_msgs, [tombstone(x) for x in tombs])
        return kept_msgs, tombs, out, output_tokens(log, out, kept_msgs, plan.cost, counter)

    kept_msgs, tombs, out, tokens = finish()
    # the plan prices tombstones by the counter one at a time: if the written preamble costs more,
    # give back the blocks kept last until it fits (rare, and a few tokens)
    while tokens > max_tokens and plan.added:
        plan.kept.difference_update(plan.added.pop())
        kept_msgs, tombs, out, tokens = finish()
    report = check(log, kept_msgs, pattern=pattern, tombstones=tombs)
    inherited = None if report.closed else check(log, pattern=pattern)
    return Trimmed(log, kept_msgs, tombs, out, tokens, max_tokens, report, inherited)


def _walk(plan: Plan, max_tokens: int, total, strategy: str, goal) -> None:
    """Keep the last turn a person wrote, then the newest (or the most relevant) blocks, each
    with what it needs, while they fit."""
    msgs, blocks, bcost, bad = plan.messages, plan.blocks, plan.bcost, plan.bad

    def try_keep(b) -> bool:
        room = max_tokens - total(())
        if bcost[b] > room:
            return False  # the block alone is past the budget (tombstones only add to it)
        want = plan.needs({b}, room)
        if want is not None and total(want) <= max_tokens:
            plan.keep(want)
            return True
        if want != {b} and total({b}) <= max_tokens:
            plan.keep({b})  # the block alone: tombstones for what it needs
            return True
        return False

    # the last turn a person wrote is the request: kept first (with what it needs) whenever it
    # fits, so a trim keeps a conversation and an Anthropic log still starts on a user message;
    # `human`: the newest block a user message starts, `said`: the newest holding one
    human = said = last = None
    for i in range(len(msgs) - 1, -1, -1):
        if msgs.role[i] == "user":
            b = plan.block_of[i]
            if said is None:
                said, last = b, msgs.text[i]
            if blocks[b][0] == i:
                human = b
                break
    if human is not None and human not in plan.kept and not bad[human]:
        try_keep(human)
    # a person may write into the Anthropic turn that carries tool results ("the check hung, go
    # with what you have"): when that is newer, it is the person's last word, kept next
    if (
        said is not None
        and said not in plan.kept
        and not bad[said]
        and (human is None or said > human)
    ):
        try_keep(said)
    if strategy == "relevance" and human is not None:
        # what the agent did since that turn (its calls and their results) is the work in
        # flight: kept next, newest first, as 'last' keeps it
        for b in range(len(blocks) - 1, human, -1):
            if b not in plan.kept and not bad[b] and not try_keep(b):
                break
    if strategy == "last":
        order = range(len(blocks) - 1, -1, -1)
    else:
        enc = LexicalEncoder()
        goal = goal or (last if last is not None else "")
        e = enc([" ".join(msgs.text[i] for i in members) for members in blocks])
        q = enc([goal])[0]
        # the most relevant first, the newest first on ties
        order = np.lexsort((-np.arange(len(blocks)), -(e @ q))).tolist()
    for b in order:
        if b in plan.kept or bad[b]:
            continue
        if not try_keep(b) and strategy == "last":
            break  # the newest turns, contiguous


def trim_messages(messages, max_tokens: int, *, format: str | None = None, **kw):
    """Trim plain message dicts (OpenAI / Responses / Anthropic / LangChain dicts; format detected
    unless given), or LangChain message objects; returns the same kind, in the same shape."""
    return trim_log(read(messages, format), max_tokens, **kw).output
