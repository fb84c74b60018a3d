"""The window every manager is: spans scored against the agent's goal (or a span's supplied
`score`), evicted in cycles when the window passes its trigger, relevance-only. The closure
managers (`workbench.closure.window.managers`) change how a cycle's proposal is gated or grouped.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass

import numpy as np

from workbench.closure.window import rule
from workbench.closure.window.spans import (
    CLOSURE_PATTERNS,
    Span,
    SpanIndex,
    WindowReport,
)
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns

FRACTION = 0.78  # evict when the window passes this share of its capacity (the note's trigger)
TARGET = 0.60  # ... down to this share (hysteresis, so not every turn is a cycle)
THRESHOLD = 0.35  # relevance below which a span may be evicted (the note's threshold)
FLOOR = 0.03  # eviction margin below which the ranking is near-arbitrary (the note's floor)
MODES = ("throttle", "raise")


class BudgetExceeded(RuntimeError):
    """A cycle could not bring the window within capacity (strict managers refuse)."""


@dataclass(frozen=True, repr=False)
class Cycle:
    """One eviction cycle: the proposal's margin and orphans, the gate's decision, the outcome."""

    turn: int
    used_before: int
    used_after: int
    evicted: tuple[str, ...]
    margin: float | None  # of the proposal, in the manager's score units
    proposal_orphans: tuple[str, ...]  # handles the proposed eviction would orphan
    orphans: tuple[str, ...]  # handles orphaned after the commit
    pinned: tuple[str, ...] = ()  # spans the gate kept against the proposal
    tombstoned: tuple[str, ...] = ()  # handles externalized behind a tombstone
    throttled: bool = False  # the margin was below the floor, so eviction was deferred
    decision: str = "evict"  # evict | repair | throttle | repair+throttle
    over: int = 0  # tokens over capacity after the cycle (reported, never silent)

    @property
    def tie(self) -> bool:
        """The margin is an exact tie: the cut fell between two spans of equal score."""
        return self.margin == 0.0

    def __repr__(self) -> str:
        m = "n/a" if self.margin is None else f"{self.margin:.3f}"
        return (
            f"Cycle(turn {self.turn}, {self.used_before}->{self.used_after} tokens, "
            f"evicted {len(self.evicted)}, margin {m}, {self.decision}, orphans {list(self.orphans)})"
        )


def walk_units(order, score, cost, need_soft: int, need_hard: int, threshold: float, extra=None):
    """Evict items of `order` (lowest score first): below `threshold` until `need_soft` tokens are
    freed, then any until `need_hard` are. `extra[u]` is a cost an eviction adds (a tombstone)."""
    out, taken, freed = [], set(), 0
    for phase_soft in (True, False):
        need = need_soft if phase_soft else need_hard
        for u in order:
            if freed >= need:
                break
            if u in taken or (phase_soft and score[u] >= threshold):
                continue
            out.append(u)
            taken.add(u)
            freed += cost[u] - (extra[u] if extra else 0)
    return out


class _Positions:
    """The positions of an (score, -position) order, read lazily: the rule walks only the prefix
    it takes, so a cycle costs its proposal, not the window."""

    __slots__ = ("o",)

    def __init__(self, o):
        self.o = o

    def __len__(self) -> int:
        return len(self.o)

    def __getitem__(self, k: int) -> int:
        return -self.o[k][1]


class RelevanceManager:
    """Relevance-only eviction: once the window passes `fraction` of `capacity`, evict spans whose
    relevance to the goal is below `threshold`, lowest first, down to `target`; if still over
    capacity, the lowest of the rest (the note's pruner).

    Relevance is the cosine of the span's embedding to the goal's (rows are L2-normalized), or the
    span's supplied `score`. Pinned spans are never evicted. `enforce=False` switches a closure
    manager's enforcement off (the same scorer and eviction rule with no closure step).
    """

    name = "relevance"
    closure = False  # does the manager keep the window closed

    def __init__(
        self,
        capacity: int,
        *,
        fraction: float = FRACTION,
        target: float = TARGET,
        threshold: float = THRESHOLD,
        floor: float = FLOOR,
        encoder="lexical",
        patterns: Patterns = CLOSURE_PATTERNS,
        enforce: bool = True,
        strict: bool = False,
        mode: str = "throttle",
    ):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 token, got {capacity}")
        if mode not in MODES:
            raise ValueError(f"mode must be 'throttle' or 'raise', got {mode!r}")
        self.capacity, self.fraction, self.target = int(capacity), fraction, min(target, fraction)
        self.threshold, self.floor, self.mode = threshold, floor, mode
        self.enforce, self.strict = enforce, strict
        self.encoder = get_encoder(encoder) if isinstance(encoder, str) else encoder
        self.index = SpanIndex(patterns)
        self._emb = np.zeros((64, self.encoder.dim))
        self.score: list[float] = []  # per span: relevance to the current goal, or supplied
        self._version: list[int] = []  # goal version a score is for (-1: supplied, never stale)
        self._goal, self._q, self._goal_version = None, None, 0
        self.retained: dict[int, None] = {}  # positions in the window
        self.used = 0
        self.pins: set[int] = set()  # never evicted: pinned spans and tombstones
        self.held: set[int] = set()  # kept by closure against the scorer (pins and re-admissions)
        self.tombstones: set[int] = set()
        self._new: list[int] = []
        # kept as the window changes, so a cycle costs what it evicts, not the window's size:
        self._ord: list[tuple[float, int]] = []  # (score, -position) of unpinned retained spans
        self._named: dict[str, int] = {}  # handle -> retained spans naming it
        self._defd: dict[str, int] = {}  # handle -> retained spans defining or tombstoning it
        self._open: set[str] = set()  # handles named in the window and defined nowhere in it
        self._rret: dict[int, set[int]] = {}  # position -> the retained spans that need it
        self._cut: tuple[list[int], int] | None = None  # the last relevance proposal, its length
        # the same counts for the window less the last proposal (`_orphans_without`)
        self._pset: set[int] = set()  # the last proposal
        self._pn: dict[str, int] = {}  # handle -> spans of it naming it
        self._pd: dict[str, int] = {}  # handle -> spans of it defining or tombstoning it
        self._popen: set[str] = set()  # orphans of the window less the last proposal
        self._dirty: set[str] = set()  # handles whose window counts changed since then
        self.cycles: list[Cycle] = []
        self.over_budget: list[tuple[int, int]] = []  # (turn, tokens over capacity)

    # --- state ---
    @property
    def n(self) -> int:
        return len(self.index.spans)

    @property
    def kept(self) -> np.ndarray:
        """Bool mask over the log (O(n): for reports, not for the hot path)."""
        mask = np.zeros(self.n, dtype=bool)
        mask[list(self.retained)] = True
        return mask

    @property
    def occupancy(self) -> float:
        return self.used / self.capacity

    @property
    def closure_tokens(self) -> int:
        """Tokens in the window only because of closure: held bindings plus tombstones."""
        cost = self.index.cost
        return sum(cost[i] for i in self.held | self.tombstones if i in self.retained)

    def window(self) -> list[Span]:
        """The retained spans in trace order."""
        return [self.index.spans[i] for i in sorted(self.retained)]

    def report(self) -> WindowReport:
        return self.index.report(self.retained)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.used}/{self.capacity} tokens, "
            f"{len(self.retained)}/{self.n} spans kept, {len(self.cycles)} cycles)"
        )

    # --- the log grows ---
    def reserve(self, n: int) -> None:
        """Room for `n` spans' embeddings in all, so adding them copies no rows twice."""
        if n > len(self._emb):
            grown = np.zeros((n, self.encoder.dim))
            grown[: self.n] = self._emb[: self.n]
            self._emb = grown

    def add(self, *spans: Span, emb: np.ndarray | None = None, sims=None) -> None:
        """Append spans to the log; they enter the window. `emb`: their rows, if already encoded;
        `sims`: their cosines to the current goal, if already computed."""
        if not spans:
            return
        n0 = self.n
        if n0 + len(spans) > len(self._emb):
            self.reserve(max(2 * len(self._emb), n0 + len(spans)))
        self._emb[n0 : n0 + len(spans)] = (
            self.encoder([s.text for s in spans]) if emb is None else emb
        )
        if sims is None and self._q is not None:
            sims = (self._emb[n0 : n0 + len(spans)] @ self._q).tolist()
        index = self.index
        for k, s in enumerate(spans):
            i = index.add(s)
            if s.score is not None:
                self.score.append(s.score)
                self._version.append(-1)
            else:
                self.score.append(sims[k] if sims is not None else 0.0)
                self._version.append(self._goal_version if sims is not None else -2)
            if s.pinned or s.role == "tombstone":
                self.pins.add(i)
            if s.role == "tombstone":
                self.tombstones.add(i)
            call = index.call_of.get(i)
            if call is not None and call in self.retained and index.defs[i]:
                self._rret.setdefault(i, set()).add(call)  # a retained call now needs its binding
            self._enter(i)
            self._new.append(i)

    def set_goal(self, goal: str) -> None:
        """Score the window against a new goal (O(retained)); evicted spans are rescored only if
        they come back."""
        if goal == self._goal:
            return
        self._goal, self._q = goal, self.encoder([goal])[0]
        self._goal_version += 1
        stale = [i for i in self.retained if self._version[i] != -1]
        if stale:
            sims = self._emb[stale] @ self._q
            for i, v in zip(stale, sims.tolist(), strict=True):
                self.score[i] = v
                self._version[i] = self._goal_version
            self._rescored()

    def _rescored(self) -> None:
        """Scores of retained spans changed: rebuild what is ordered by them."""
        score, pins = self.score, self.pins
        self._ord = sorted((score[i], -i) for i in self.retained if i not in pins)

    def _admit(self, i: int) -> None:
        """Bring an evicted span back into the window (rescored if its score is stale)."""
        if self._version[i] not in (-1, self._goal_version) and self._q is not None:
            self.score[i] = float(self._emb[i] @ self._q)
            self._version[i] = self._goal_version
        self._enter(i)

    def _drop(self, i: int) -> None:
        self._leave(i)
        self.held.discard(i)

    def _enter(self, i: int) -> None:
        """Span i joins the window: O(its handles and needs)."""
        index = self.index
        self.retained[i] = None
        self.used += index.cost[i]
        if i not in self.pins:
            insort(self._ord, (self.score[i], -i))
        named, defd, open_, dirty = self._named, self._defd, self._open, self._dirty
        if index.refs[i]:
            dirty |= index.refs[i]
            for h in index.refs[i]:
                c = named.get(h, 0)
                named[h] = c + 1
                if not c and not defd.get(h):
                    open_.add(h)
        for hs in (index.defs[i], index.tombs[i]):
            if hs:
                dirty |= hs
                for h in hs:
                    c = defd.get(h, 0)
                    defd[h] = c + 1
                    if not c:
                        open_.discard(h)
        rret = self._rret
        for p in index.needs[i]:
            r = rret.get(p)
            if r is None:
                rret[p] = {i}
            else:
                r.add(i)

    def _leave(self, i: int) -> None:
        """Span i leaves the window: O(its handles and needs)."""
        index = self.index
        del self.retained[i]
        self.used -= index.cost[i]
        if i not in self.pins:
            o = self._ord
            del o[bisect_left(o, (self.score[i], -i))]
        named, defd, open_, dirty = self._named, self._defd, self._open, self._dirty
        if index.refs[i]:
            dirty |= index.refs[i]
            for h in index.refs[i]:
                c = named[h] - 1
                named[h] = c
                if not c:
                    open_.discard(h)
        for hs in (index.defs[i], index.tombs[i]):
            if hs:
                dirty |= hs
                for h in hs:
                    c = defd[h] - 1
                    defd[h] = c
                    if not c and named.get(h):
                        open_.add(h)
        rret = self._rret
        for p in index.needs[i]:
            rret[p].discard(i)

    def resolve(self, handle: str) -> str:
        """'bound' if a retained span defines the handle, 'recoverable' if a retained tombstone
        names it, else 'missing'."""
        if any(p in self.retained for p in self.index.defined_by.get(handle, ())):
            return "bound"
        if self._tomb_of(handle) is not None:
            return "recoverable"
        return "missing"

    def _tomb_of(self, handle: str) -> int | None:
        return None

    def restore(self, handle: str) -> tuple[Span, ...]:
        """Bring an externalized component back (managers without tombstones have none)."""
        raise KeyError(f"{handle} was not externalized by the {self.name} manager")

    # --- one step: re-admit what new spans need, then a cycle if past the trigger ---
    def trigger(self) -> float:
        return self.fraction * self.capacity

    def step(self, goal: str, turn: int) -> Cycle | None:
        """After a turn's spans were added: keep closure for them, run a cycle if the window is
        past its trigger, and record (or, strict, refuse) a window left over capacity."""
        self.set_goal(goal)
        new, self._new = self._new, []
        if self.closure and self.enforce:
            self._readmit(new)
        cyc = self._cycle(turn) if self.used > self.trigger() else None
        over = self.used - self.capacity
        if over > 0:
            self.over_budget.append((turn, over))
            if self.strict:
                raise BudgetExceeded(
                    f"turn {turn}: the window holds {self.used} tokens, {over} over its capacity "
                    f"{self.capacity}; what is left is pinned or needed by closure"
                )
        return cyc

    def _covered(self, p: int) -> bool:
        """A missing prerequisite that a retained tombstone stands for (a recoverable miss)."""
        return False

    def _readmit(self, start) -> None:
        """A new span may name a binding evicted earlier (a replayed log does): bring it back,
        with what it needs in turn. O(new spans x dependency depth)."""
        stack = list(start)
        needs = self.index.needs
        while stack:
            i = stack.pop()
            for p in needs[i]:
                if p not in self.retained and not self._covered(p):
                    self._admit(p)
                    self.held.add(p)
                    stack.append(p)

    # --- one eviction cycle ---
    def _cycle(self, turn: int) -> Cycle:
        W = list(self.retained)
        used_before = self.used
        proposal, unit_score = self._propose(W, self.target)
        margin = self._margin(W, proposal, unit_score)
        prop_orphans = self._orphans_without(proposal)
        commit, decision, throttled = self._gate(W, proposal, margin, prop_orphans)
        for i in commit:
            self._drop(i)
        tombed = self._externalize(commit, turn)
        kept_against = sorted(set(proposal).difference(commit)) if proposal else []
        if kept_against:  # held by closure: what a retained span needs (not what a throttle defers)
            rret = self._rret
            kept_against = [p for p in kept_against if rret.get(p)]
            self.held.update(kept_against)
        spans = self.index.spans
        after = prop_orphans if commit == proposal and not tombed else sorted(self._open)
        cyc = Cycle(
            turn,
            used_before,
            self.used,
            tuple(spans[i].id for i in sorted(commit)),
            margin,
            tuple(prop_orphans),
            tuple(after),
            tuple(spans[i].id for i in kept_against),
            tombed,
            throttled,
            decision,
            max(self.used - self.capacity, 0),
        )
        self.cycles.append(cyc)
        return cyc

    def _needs(self, target: float) -> tuple[int, int]:
        return self.used - int(target * self.capacity), self.used - self.capacity

    def _propose(self, W, target) -> tuple[list[int], dict | None]:
        """(positions the scorer alone would evict, unit scores or None for span scores)."""
        # lowest first; among equal scores the later span goes first, as the note's
        # sorted(..., reverse=True) keeps the earlier of two ties: the order `_ord` keeps. The
        # walk (`walk_units` on that order) takes a prefix: below the threshold until the soft need,
        # then on until the hard need
        order = _Positions(self._ord)
        need_soft, need_hard = self._needs(target)
        k = rule.proposal_length(
            order, self.score, self.index.cost, need_soft, need_hard, self.threshold
        )
        out = [-t[1] for t in self._ord[:k]]
        self._cut = (out, k)
        return out, None

    def _margin(self, W, evict, unit_score=None) -> float | None:
        """Lowest retained score minus highest evicted score, over scored (unpinned) spans."""
        if not evict:
            return None
        if unit_score is None and self._cut is not None and self._cut[0] is evict:
            has, margin = rule.prefix_margin(_Positions(self._ord), self.score, self._cut[1])
            return margin if has else None
        sc = self.score if unit_score is None else unit_score
        ev = set(evict)
        kept = [sc[i] for i in W if i not in ev and i not in self.pins]
        return rule.set_margin(kept, [sc[i] for i in evict])

    def _orphans_without(self, evict) -> list[str]:
        """Handles the window less `evict` names and does not define (nor tombstone). Kept as
        the proposals change: the counts of the last proposal are updated by what entered and
        left it, and a handle's status is looked at again only where a count changed (in the
        window or in the proposal), so a cycle costs the change, not the proposal's size."""
        refs, defs, tombs = self.index.refs, self.index.defs, self.index.tombs
        P = set(evict)
        old = self._pset
        touched = self._dirty
        self._dirty = set()
        pn, pd = self._pn, self._pd
        for group, step in ((old - P, -1), (P - old, 1)):
            for i in group:
                if refs[i]:
                    touched |= refs[i]
                    for h in refs[i]:
                        pn[h] = pn.get(h, 0) + step
                for hs in (defs[i], tombs[i]):
                    if hs:
                        touched |= hs
                        for h in hs:
                            pd[h] = pd.get(h, 0) + step
        self._pset = P
        named, defd, popen = self._named, self._defd, self._popen
        for h in touched:
            if named.get(h, 0) - pn.get(h, 0) > 0 and defd.get(h, 0) == pd.get(h, 0):
                popen.add(h)
            else:
                popen.discard(h)
        return sorted(popen)

    def _gate(self, W, proposal, margin, prop_orphans):
        """(committed eviction, decision, throttled); relevance-only trusts the proposal."""
        return proposal, "evict", False

    def _externalize(self, evicted, turn) -> tuple[str, ...]:
        return ()
