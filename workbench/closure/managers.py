"""Window managers over a growing tool-call log: relevance-only, gated, atomic, tombstone, DSGC.

Each manager scores spans against the agent's goal (or takes a span's supplied `score`), evicts
when the window passes its trigger, and (except relevance-only and DSGC) keeps the retained window
referentially closed. Every manager is incremental: adding a span costs O(its references), a
cycle costs O(r log r) in the r retained spans, and nothing is rebuilt over the whole log, so a
100,000-span log replays in seconds. A window still over capacity after a cycle is recorded in
`over_budget` (and refused with `strict=True`): a manager never exceeds its budget silently.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from workbench.closure.spans import (
    CLOSURE_PATTERNS,
    TOMBSTONE_COST,
    ContextClosureError,
    Span,
    SpanIndex,
    WindowReport,
    tombstone_span,
)
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns
from workbench.common.io import paused_gc
from workbench.dsgc.policies import DSGC

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

    def __repr__(self) -> str:
        m = "n/a" if self.margin is None else f"{self.margin:.3f}"
        return (
            f"Cycle(turn {self.turn}, {self.used_before}->{self.used_after} tokens, "
            f"evicted {len(self.evicted)}, margin {m}, {self.decision}, orphans {list(self.orphans)})"
        )


def _walk(order, score, cost, need_soft: int, need_hard: int, threshold: float, extra=None):
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
    def add(self, *spans: Span, emb: np.ndarray | None = None, sims=None) -> None:
        """Append spans to the log; they enter the window. `emb`: their rows, if already encoded;
        `sims`: their cosines to the current goal, if already computed."""
        if not spans:
            return
        n0 = self.n
        if n0 + len(spans) > len(self._emb):
            grown = np.zeros((max(2 * len(self._emb), n0 + len(spans)), self.encoder.dim))
            grown[:n0] = self._emb[:n0]
            self._emb = grown
        self._emb[n0 : n0 + len(spans)] = (
            self.encoder([s.text for s in spans]) if emb is None else emb
        )
        if sims is None and self._q is not None:
            sims = (self._emb[n0 : n0 + len(spans)] @ self._q).tolist()
        for k, s in enumerate(spans):
            i = self.index.add(s)
            if s.score is not None:
                self.score.append(s.score)
                self._version.append(-1)
            else:
                self.score.append(sims[k] if sims is not None else 0.0)
                self._version.append(self._goal_version if sims is not None else -2)
            self.retained[i] = None
            self.used += self.index.cost[i]
            if s.pinned or s.role == "tombstone":
                self.pins.add(i)
            if s.role == "tombstone":
                self.tombstones.add(i)
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

    def _admit(self, i: int) -> None:
        """Bring an evicted span back into the window (rescored if its score is stale)."""
        if self._version[i] not in (-1, self._goal_version) and self._q is not None:
            self.score[i] = float(self._emb[i] @ self._q)
            self._version[i] = self._goal_version
        self.retained[i] = None
        self.used += self.index.cost[i]

    def _drop(self, i: int) -> None:
        del self.retained[i]
        self.used -= self.index.cost[i]
        self.held.discard(i)

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
        prop_orphans = self._orphans(set(W).difference(proposal) if proposal else W)
        commit, decision, throttled = self._gate(W, proposal, margin, prop_orphans)
        for i in commit:
            self._drop(i)
        tombed = self._externalize(commit, turn)
        kept_against = sorted(set(proposal).difference(commit)) if proposal else []
        if kept_against:  # held by closure: what a retained span needs (not what a throttle defers)
            needs = self.index.needs
            needed = {p for i in self.retained for p in needs[i]}
            kept_against = [p for p in kept_against if p in needed]
            self.held.update(kept_against)
        spans = self.index.spans
        after = prop_orphans if commit == proposal and not tombed else self._orphans(self.retained)
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
        score, cost = self.score, self.index.cost
        cand = sorted((i for i in W if i not in self.pins), key=score.__getitem__)
        return _walk(cand, score, cost, *self._needs(target), self.threshold), None

    def _margin(self, W, evict, unit_score=None) -> float | None:
        """Lowest retained score minus highest evicted score, over scored (unpinned) spans."""
        if not evict:
            return None
        sc = self.score if unit_score is None else unit_score
        ev = set(evict)
        kept = [sc[i] for i in W if i not in ev and i not in self.pins]
        if not kept:
            return None
        return min(kept) - max(sc[i] for i in evict)

    def _orphans(self, kept) -> list[str]:
        """Handles named in `kept` whose definition is not in it (nor tombstoned), O(|kept|)."""
        refs, defs, tombs = self.index.refs, self.index.defs, self.index.tombs
        defined, named = set(), set()
        for i in kept:
            if refs[i]:
                named |= refs[i]
            if defs[i]:
                defined |= defs[i]
            if tombs[i]:
                defined |= tombs[i]
        return sorted(named - defined)

    def _gate(self, W, proposal, margin, prop_orphans):
        """(committed eviction, decision, throttled); relevance-only trusts the proposal."""
        return proposal, "evict", False

    def _externalize(self, evicted, turn) -> tuple[str, ...]:
        return ()


class GatedManager(RelevanceManager):
    """Relevance eviction behind the note's closure gate, in the note's order: a proposal that
    would leave a dangling reference (or split a call from its binding) raises in mode 'raise',
    else it is repaired; then a margin below `floor` raises in mode 'raise', else eviction is
    throttled (pruning deferred: only what the hard budget forces is evicted). A repair commits the
    closure-respecting greedy: units (a call with its binding answer) lowest score first, a unit
    evictable only when no retained span needs it, down to the target (or to capacity when
    throttled); what closure pins counts against the budget, and a window it cannot bring within
    capacity is reported as over budget."""

    name = "gate"
    closure = True

    def _dangling(self, W, proposal) -> list[int]:
        """Evicted positions a span the proposal retains needs (closure was intact before)."""
        ev = set(proposal)
        needs = self.index.needs
        return sorted({p for i in W if i not in ev for p in needs[i] if p in ev})

    def _gate(self, W, proposal, margin, prop_orphans):
        throttled = margin is not None and margin < self.floor
        if not self.enforce:  # the gate without its closure step: margin throttle only
            if throttled:
                return self._propose(W, 1.0)[0], "throttle", True
            return proposal, "evict", False
        dangling = self._dangling(W, proposal)
        if self.mode == "raise":
            if dangling:
                lost = prop_orphans or sorted(self.index.spans[p].id for p in dangling)
                m = "n/a" if margin is None else f"{margin:.3f}"
                raise ContextClosureError(
                    f"eviction would orphan references {lost}; margin={m} (floor {self.floor}). "
                    "Externalize these bindings as tombstones or evict their dependency "
                    "components atomically."
                )
            if throttled:
                raise ContextClosureError(
                    f"eviction margin {margin:.3f} below floor {self.floor}: the scorer cannot "
                    "tell load-bearing spans from filler; defer pruning or raise the threshold."
                )
            return proposal, "evict", False
        if not dangling and not throttled:
            return proposal, "evict", False
        commit = self._greedy(W, 1.0 if throttled else self.target)
        decision = "+".join(d for d, on in (("repair", dangling), ("throttle", throttled)) if on)
        return commit, decision, throttled

    def _greedy(self, W, target) -> list[int]:
        """Closure-respecting eviction, O(r log r): a unit (a call with its binding answer) becomes
        evictable once no retained unit outside it needs a member; lowest best-member score first,
        below the threshold until the target, then any until the window is within capacity."""
        score, cost, needs, unit = self.score, self.index.cost, self.index.needs, self.index.unit
        inW = self.retained
        members: dict[int, list[int]] = {}
        uscore: dict[int, float] = {}
        ucost: dict[int, int] = {}
        for i in W:
            u = unit[i]
            if u in members:
                members[u].append(i)
                uscore[u] = max(uscore[u], score[i])
                ucost[u] += cost[i]
            else:
                members[u], uscore[u], ucost[u] = [i], score[i], cost[i]
        needed_by = dict.fromkeys(members, 0)
        upre: dict[int, set] = {}
        for i in W:
            if needs[i]:
                u = unit[i]
                for p in needs[i]:
                    if p in inW and unit[p] != u:
                        pre = upre.setdefault(u, set())
                        if unit[p] not in pre:
                            pre.add(unit[p])
                            needed_by[unit[p]] += 1
        fixed = {unit[i] for i in self.pins if i in inW}
        heap = [(uscore[u], u) for u, c in needed_by.items() if c == 0 and u not in fixed]
        heapq.heapify(heap)
        need_soft, need_hard = self._needs(target)
        out, freed, goal = [], 0, max(need_soft, need_hard)
        while heap and freed < goal:
            s, u = heapq.heappop(heap)
            if freed >= need_hard and s >= self.threshold:
                break  # hard budget met; the heap holds only units at or above the threshold, and
                # nothing more is evicted, so nothing new can enter it
            out += members[u]
            freed += ucost[u]
            for v in upre.get(u, ()):
                needed_by[v] -= 1
                if needed_by[v] == 0 and v not in fixed:
                    heapq.heappush(heap, (uscore[v], v))
        return out


class AtomicManager(RelevanceManager):
    """Component-atomic eviction: a dependency component of the window (a call, its result and
    every retained span referencing what they define) is scored as a unit (its best member's
    relevance) and kept or evicted whole. A new span naming an evicted binding re-admits it."""

    name = "atomic"
    closure = True

    def _components(self, W) -> dict[int, int]:
        """Component label (smallest member) of each retained position, by union-find over the
        needs among retained spans, O(r)."""
        parent = {i: i for i in W}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        needs = self.index.needs
        for i in W:
            for p in needs[i]:
                if p in parent:
                    a, b = find(i), find(p)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
        return {i: find(i) for i in W}

    def _extra(self, members) -> int:
        return 0

    def _propose(self, W, target):
        if not self.enforce:  # every span its own unit: relevance-only with this trigger
            return super()._propose(W, target)
        lab = self._components(W)
        members: dict[int, list[int]] = {}
        for i in W:
            members.setdefault(lab[i], []).append(i)
        score, cost = self.score, self.index.cost
        uscore = {
            u: (math.inf if any(i in self.pins for i in ms) else max(score[i] for i in ms))
            for u, ms in members.items()
        }
        ucost = {u: sum(cost[i] for i in ms) for u, ms in members.items()}
        extra = {u: self._extra(ms) for u, ms in members.items()}
        order = sorted((u for u in members if uscore[u] < math.inf), key=uscore.__getitem__)
        units = _walk(order, uscore, ucost, *self._needs(target), self.threshold, extra)
        unit_score = {i: uscore[lab[i]] for i in W}
        return [i for u in units for i in members[u]], unit_score


class TombstoneManager(AtomicManager):
    """Component-atomic eviction that evicts only when the window is over its budget, and
    externalizes every evicted component that defines a handle to a store, behind one typed
    tombstone per handle (`{"evicted_ref": h, "recoverable": true}`): a later reference resolves
    to a recoverable miss, never to a silent absence. Tombstones are small (4 tokens), pinned and
    never evicted; `restore(h)` brings the component back exactly as it was."""

    name = "tombstone"

    def __init__(self, capacity: int, **kw):
        super().__init__(capacity, **kw)
        self.store: dict[str, tuple[int, ...]] = {}  # handle -> positions of its component
        self._tomb: dict[str, int] = {}  # handle -> position of its live tombstone
        self._external: dict[int, str] = {}  # stored position -> a handle standing for it
        self._serial = 0

    def trigger(self) -> float:
        return float(self.capacity)  # only when over budget

    def _tomb_of(self, handle):
        p = self._tomb.get(handle)
        return p if p is not None and p in self.retained else None

    def _covered(self, p):
        h = self._external.get(p)
        return h is not None and self._tomb_of(h) is not None

    def _handles(self, members) -> list[str]:
        defs = self.index.defs
        return sorted({h for i in members for h in defs[i] if self._tomb_of(h) is None})

    def _extra(self, members) -> int:
        return TOMBSTONE_COST * len(self._handles(members)) if self.enforce else 0

    def _externalize(self, evicted, turn) -> tuple[str, ...]:
        if not self.enforce or not evicted:
            return ()
        lab = self._components(evicted)
        groups: dict[int, list[int]] = {}
        for i in evicted:
            groups.setdefault(lab[i], []).append(i)
        handles, tombs = [], []
        for root in sorted(groups):
            members = tuple(sorted(groups[root]))
            for h in self._handles(members):
                self.store[h] = members
                for i in members:
                    self._external.setdefault(i, h)
                handles.append(h)
                self._serial += 1
                tombs.append(tombstone_span(f"tomb{self._serial}:{h}", turn, h))
        n0 = self.n
        self.add(*tombs)
        self._new = [i for i in self._new if i < n0]  # tombstones need nothing
        for k, h in enumerate(handles):
            self._tomb[h] = n0 + k
        return tuple(handles)

    def restore(self, handle: str) -> tuple[Span, ...]:
        """Bring the handle's component back into the window exactly as it was; drop its tombstones."""
        if handle not in self.store:
            raise KeyError(f"{handle} is not externalized")
        members = self.store[handle]
        gone = sorted(h for h, m in self.store.items() if m == members)
        for h in gone:
            del self.store[h]
            t = self._tomb.pop(h, None)
            if t is not None and t in self.retained:
                self._drop(t)
        for i in members:
            self._external.pop(i, None)
            if i not in self.retained:
                self._admit(i)
        return tuple(self.index.spans[i] for i in members)


class DSGCManager(RelevanceManager):
    """DSGC over log-induced edges: I = r + lambda * pi on the retained spans, kept by the
    budgeted walk down to `target`; scores are reported as I / max(I) so the margin is in [0, 1]."""

    name = "dsgc"

    def __init__(
        self,
        capacity: int,
        *,
        lam: float = 1.0,
        tau: float = 0.25,
        hops: int = 1,
        delta: float = 0.5,
        **kw,
    ):
        super().__init__(capacity, **kw)
        self.policy = DSGC(lam=lam, tau=tau, hops=hops, delta=delta)

    def _propose(self, W, target):
        pos = [i for i in W if i not in self.pins]
        local = {i: k for k, i in enumerate(pos)}
        needs = self.index.needs
        e = np.array(
            [(local[i], local[p]) for i in pos for p in needs[i] if p in local], dtype=np.int64
        ).reshape(-1, 2)
        cost = self.index.cost
        budget = int(target * self.capacity) - sum(cost[i] for i in W if i in self.pins)
        costs = np.array([cost[i] for i in pos], dtype=np.int64)
        ret = self.policy(self._emb[pos], self._q, e, costs, max(budget, 0))
        top = max(float(ret.scores.max()), 1e-12) if len(pos) else 1.0
        unit_score = {i: float(ret.scores[k]) / top for k, i in enumerate(pos)}
        return [i for k, i in enumerate(pos) if not ret.kept[k]], unit_score


MANAGERS = {
    "relevance": RelevanceManager,
    "gate": GatedManager,
    "atomic": AtomicManager,
    "tombstone": TombstoneManager,
    "dsgc": DSGCManager,
}


def make_manager(name: str, capacity: int, **kw) -> RelevanceManager:
    """A window manager by its command-line name."""
    if name not in MANAGERS:
        raise ValueError(f"unknown manager {name!r}; choose one of {', '.join(MANAGERS)}")
    return MANAGERS[name](capacity, **kw)


def replay(spans, manager: RelevanceManager, goal: str | None = None) -> RelevanceManager:
    """Feed a log to a manager turn by turn, running a step after each turn. The goal is `goal`
    if given, else the first user span (the task the agent was given). Encodes the log in one
    batch and groups turns in one pass."""
    spans = list(spans)
    if goal is None:
        goal = next((s.text for s in spans if s.role == "user"), spans[0].text if spans else "")
    manager.set_goal(goal)
    emb = manager.encoder([s.text for s in spans]) if spans else None
    sims = (emb @ manager._q).tolist() if spans else []  # the goal is fixed: one product
    k = 0
    with paused_gc():
        while k < len(spans):
            j = k
            while j < len(spans) and spans[j].turn == spans[k].turn:
                j += 1
            manager.add(*spans[k:j], emb=emb[k:j], sims=sims[k:j])
            manager.step(goal, spans[k].turn)
            k = j
    return manager
