"""A closure-safe trimmer for agent message logs.

`trim_log` keeps the system message and the newest turns (or the most relevant ones) that fit a
token budget, and never leaves a reference dangling: a call and its results are one block, kept or
dropped together; a kept block brings back every block defining a handle it names (to a fixpoint);
when a definition does not fit, the handle gets the note's typed tombstone
`{"evicted_ref": h, "recoverable": true}` in the system preamble instead. What cannot fit at all
is reported (`over_budget`, `fits`), never silent. `trim_messages` takes and returns plain lists of
dicts (an Anthropic request body stays a body), or LangChain message objects.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from workbench.closure.logs import Log, LogReport, Message, approx_tokens, check, read, write
from workbench.closure.spans import CLOSURE_PATTERNS, SpanIndex
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns

STRATEGIES = ("last", "relevance")


def tombstone(handle: str) -> dict:
    """The note's typed tombstone."""
    return {"evicted_ref": handle, "recoverable": True}


@dataclass(frozen=True, repr=False)
class Trimmed:
    """A trimmed log: kept message indices, tombstones, the output in the log's format, tokens."""

    log: Log
    kept: tuple[int, ...]
    tombstones: tuple[str, ...]  # handles
    output: object
    tokens: int  # counted on the output
    budget: int
    report: LogReport  # closure of the output

    @property
    def over_budget(self) -> int:
        return max(self.tokens - self.budget, 0)

    @property
    def conversation(self) -> bool:
        """Does the output hold a message besides the system prompt (an empty conversation is
        no request a provider accepts)?"""
        return any(self.log.messages[i].role != "system" for i in self.kept)

    @property
    def fits(self) -> bool:
        """A closed window within the budget, with a conversation in it, was found."""
        return self.over_budget == 0 and self.report.closed and self.conversation

    def __repr__(self) -> str:
        return (
            f"Trimmed({self.log.format}, kept {len(self.kept)}/{len(self.log.messages)} messages, "
            f"{len(self.tombstones)} tombstones, {self.tokens}/{self.budget} tokens, "
            f"{'closed' if self.report.closed else 'OPEN'})"
        )


def _blocks(log: Log) -> list[list[int]]:
    """A message with tool calls and every message answering them (and, through a message that
    both answers and calls, the whole chain) form one block; other messages stand alone."""
    parent = list(range(len(log.messages)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    call_msg = {cid: m.index for m in log.messages for cid, _ in m.calls}
    for m in log.messages:
        for cid in m.answers:
            if cid in call_msg:
                a, b = find(m.index), find(call_msg[cid])
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(log.messages)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values())


class _Dangling:
    """The handles a growing kept set names but neither defines nor tombstones (what
    `SpanIndex.report(...).orphans` lists), kept up to date as spans join: asking what a candidate
    would leave dangling costs O(the candidate's spans), not O(everything kept)."""

    def __init__(self, index: SpanIndex, always: range):
        self.index = index
        self.cover: set[str] = set()  # handles a kept span defines or tombstones
        self.handles: set[str] = set()
        self.add(always)

    def _new(self, positions) -> tuple[set, set]:
        ix = self.index
        covered, named = set(), set()
        for i in positions:
            covered |= ix.defs[i] | ix.tombs[i]
            named |= ix.refs[i]
        return covered, named

    def _after(self, covered: set, named: set) -> set:
        out = self.handles - covered
        out.update(h for h in named if h not in covered and h not in self.cover)
        return out

    def if_added(self, positions) -> set:
        return self._after(*self._new(positions))

    def add(self, positions) -> None:
        covered, named = self._new(positions)
        self.handles = self._after(covered, named)
        self.cover |= covered


def _is_human(m: Message) -> bool:
    """A message a person wrote: a user turn that is not a tool result."""
    return m.role == "user" and not m.answers


def _output_tokens(log: Log, out, counter) -> int:
    """Tokens of a written log, by the counter, read back in the same format (the Anthropic
    top-level system counted as one more message)."""
    back = read(out, log.format)
    total = sum(counter(m) for m in back.messages)
    if back.format == "anthropic" and back.system is not None:
        total += counter(Message(-1, "system", json.dumps(back.system)))
    return total


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
    it) drops leading kept blocks until the first non-system message is a user message."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if start_on_user is None:
        start_on_user = log.format == "anthropic"
    msgs = log.messages
    index = SpanIndex(patterns).extend(log.spans())
    blocks = _blocks(log)
    block_of = {i: b for b, members in enumerate(blocks) for i in members}
    cost = [counter(m) for m in msgs]
    bcost = [sum(cost[i] for i in members) for members in blocks]
    # block -> blocks it needs: the definers of the handles its messages name
    bneeds = [
        sorted(
            {
                block_of[p]
                for i in members
                for p in index.needs[i]
                if p < len(msgs) and block_of[p] != b
            }
        )
        for b, members in enumerate(blocks)
    ]
    system = {b for b, members in enumerate(blocks) if msgs[members[0]].role == "system"}
    tomb_cost = {}  # handle -> tokens its tombstone adds to the system preamble

    def tcost(h):
        if h not in tomb_cost:
            tomb_cost[h] = math.ceil((len(json.dumps(tombstone(h))) + 1) / 4) + 1
        return tomb_cost[h]

    sys_overhead = 0 if (keep_system and system) or log.system is not None else 4

    def dangling(kept_blocks) -> set:
        kept_msgs = sorted(i for b in kept_blocks for i in blocks[b])
        return set(index.report(kept_msgs + list(range(len(msgs), len(index)))).orphans)

    fixed = counter(Message(-1, "system", json.dumps(log.system))) if log.system else 0
    kept = set(system) if keep_system else set()
    open_handles = _Dangling(index, range(len(msgs), len(index)))  # spans past the messages stay
    open_handles.add([i for b in kept for i in blocks[b]])
    kept_cost = sum(bcost[b] for b in kept)

    def total_with(new_blocks) -> int:
        """Tokens of the kept set plus `new_blocks` (not yet kept), its tombstones included."""
        d = open_handles.if_added([i for b in new_blocks for i in blocks[b]])
        extra = sum(bcost[b] for b in new_blocks)
        return kept_cost + extra + sum(tcost(h) for h in d) + (sys_overhead if d else 0) + fixed

    def keep(new_blocks) -> None:
        nonlocal kept_cost
        open_handles.add([i for b in new_blocks for i in blocks[b]])
        kept_cost += sum(bcost[b] for b in new_blocks)
        kept.update(new_blocks)

    def closure_of(b) -> set:
        """The block with every block it needs, to a fixpoint."""
        want, stack = {b}, [b]
        while stack:
            for p in bneeds[stack.pop()]:
                if p not in want and p not in kept:
                    want.add(p)
                    stack.append(p)
        return want

    # the last turn a person wrote is the request: kept first (with what it needs) whenever it
    # fits, so a trim keeps a conversation and an Anthropic log still starts on a user message
    humans = [b for b, members in enumerate(blocks) if _is_human(msgs[members[0]])]
    if humans and humans[-1] not in kept:
        want = closure_of(humans[-1]) - kept
        if total_with(want) <= max_tokens:
            keep(want)
    if strategy == "last":
        order = [b for b in range(len(blocks) - 1, -1, -1) if b not in kept]
    else:
        enc = get_encoder("lexical")
        users = [m for m in msgs if m.role == "user" and not m.answers]
        goal = goal or (users[-1].text if users else "")
        q = enc([goal])[0]
        e = enc([msgs[b[0]].text + " " + " ".join(msgs[i].text for i in b[1:]) for b in blocks])
        rel = (e @ q).tolist()
        order = sorted(
            (b for b in range(len(blocks)) if b not in kept), key=lambda b: (-rel[b], -b)
        )
    for b in order:
        if b in kept:
            continue
        # the block with every block it needs (to a fixpoint), else the block alone (tombstones)
        want = closure_of(b)
        if total_with(want - kept) <= max_tokens:
            keep(want - kept)
        elif want != {b} and total_with({b} - kept) <= max_tokens:
            keep({b} - kept)
        elif strategy == "last":
            break  # the newest turns, contiguous
    if start_on_user:
        rest = sorted(b for b in kept if b not in system)
        while rest and msgs[blocks[rest[0]][0]].role != "user":
            kept.discard(rest.pop(0))
    kept_msgs = tuple(sorted(i for b in kept for i in blocks[b]))
    tombs = tuple(sorted(dangling(kept)))
    out = write(log, kept_msgs, [tombstone(h) for h in tombs])
    back = read(out, log.format)
    return Trimmed(
        log,
        kept_msgs,
        tombs,
        out,
        _output_tokens(log, out, counter),
        max_tokens,
        check(back, patterns=patterns),
    )


def trim_messages(messages, max_tokens: int, *, format: str | None = None, **kw):
    """Trim plain message dicts (OpenAI / Anthropic / LangChain dicts; format detected unless
    given), or LangChain message objects when langchain-core is installed; returns the same kind."""
    lc = (
        isinstance(messages, list)
        and messages
        and type(messages[0]).__module__.startswith("langchain_core")
    )
    if lc:
        from langchain_core.messages import messages_from_dict, messages_to_dict

        out = trim_log(read(messages_to_dict(messages), "langchain"), max_tokens, **kw).output
        return messages_from_dict(out)
    return trim_log(read(messages, format), max_tokens, **kw).output
