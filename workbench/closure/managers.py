"""Window managers over a growing tool-call log: relevance-only, gated, atomic, tombstone, DSGC.

Each manager scores spans against the agent's goal, evicts when the window passes a capacity
fraction, and (except relevance-only and DSGC) keeps the retained window referentially closed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.closure.spans import (
    ContextClosureError,
    Span,
    SpanIndex,
    WindowReport,
    closure_requirements,
    components,
    tombstone_span,
)
from workbench.encoders import get_encoder
from workbench.handles import DEFAULT_PATTERNS, Patterns
from workbench.policies import DSGC, eviction_margin

# --- window managers over a growing log -------------------------------------------------------

FRACTION = 0.78  # evict when the window passes this share of its capacity
TARGET = 0.60  # ... down to this share (hysteresis, so not every turn is a cycle)
THRESHOLD = 0.35  # relevance below which a span may be evicted
FLOOR = 0.03  # eviction margin below which the ranking is near-arbitrary
TOMB_SCORE = 2.0  # a tombstone with nothing stored behind it sorts after every cosine score


@dataclass(frozen=True, repr=False)
class Cycle:
    """One eviction cycle: the proposal's margin and orphans, what the gate changed, the outcome."""

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

    def __repr__(self) -> str:
        m = "n/a" if self.margin is None else f"{self.margin:.3f}"
        return (
            f"Cycle(turn {self.turn}, {self.used_before}->{self.used_after} tokens, "
            f"evicted {len(self.evicted)}, margin {m}, orphans {list(self.orphans)})"
        )


def _evict_order(scores, costs, cand, pool, need_soft: int, need_hard: int) -> np.ndarray:
    """Evict `cand` units lowest score first until `need_soft` tokens are freed; then, if fewer
    than `need_hard` were freed, the rest of `pool` the same way. One cumsum per phase."""
    evict = np.zeros(len(scores), dtype=bool)
    freed = 0
    for mask, need in ((cand, need_soft), (pool, need_hard)):
        need -= freed
        if need <= 0:
            continue
        idx = np.flatnonzero(mask & ~evict)
        idx = idx[np.argsort(scores[idx], kind="stable")]
        cum = np.cumsum(costs[idx])
        k = min(int(np.searchsorted(cum, need)) + 1, len(idx))
        evict[idx[:k]] = True
        freed += int(cum[k - 1]) if k else 0
    return evict


class RelevanceManager:
    """Relevance-only eviction: once the window passes `fraction` of `capacity`, evict spans whose
    cosine to the goal is below `threshold`, lowest first, down to `target` (the note's pruner).

    Relevance is the cosine similarity of the span's embedding to the goal's embedding (the
    project encoders rows are L2-normalized, so one matrix-vector product scores the window).
    """

    name = "relevance"

    def __init__(
        self,
        capacity: int,
        *,
        fraction: float = FRACTION,
        target: float = TARGET,
        threshold: float = THRESHOLD,
        floor: float = FLOOR,
        encoder="lexical",
        patterns: Patterns = DEFAULT_PATTERNS,
    ):
        self.capacity, self.fraction, self.target = int(capacity), fraction, min(target, fraction)
        self.threshold, self.floor = threshold, floor
        self.encoder = get_encoder(encoder) if isinstance(encoder, str) else encoder
        self.index = SpanIndex(patterns)
        self._emb = np.zeros((0, self.encoder.dim))
        self._cost = np.zeros(0, dtype=np.int64)
        self._kept = np.zeros(0, dtype=bool)
        self._tomb = np.zeros(0, dtype=bool)
        self._pinned = np.zeros(0, dtype=bool)
        self.cycles: list[Cycle] = []

    # --- state ---
    @property
    def n(self) -> int:
        return len(self.index.spans)

    @property
    def kept(self) -> np.ndarray:
        return self._kept[: self.n]

    @property
    def used(self) -> int:
        return int(self._cost[: self.n][self.kept].sum())

    @property
    def occupancy(self) -> float:
        return self.used / self.capacity

    @property
    def closure_tokens(self) -> int:
        """Tokens in the window only because of closure: gate pins plus tombstones."""
        extra = (self._pinned[: self.n] | self._tomb[: self.n]) & self.kept
        return int(self._cost[: self.n][extra].sum())

    def window(self) -> list[Span]:
        """The retained spans in trace order."""
        return [self.index.spans[i] for i in np.flatnonzero(self.kept)]

    def report(self) -> WindowReport:
        return self.index.report(self.kept)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.used}/{self.capacity} tokens, "
            f"{int(self.kept.sum())}/{self.n} spans kept, {len(self.cycles)} cycles)"
        )

    def add(self, *spans: Span) -> None:
        """Append spans to the trace; they enter the window."""
        if not spans:
            return
        for s in spans:
            self.index.add(s)
        emb = self.encoder([s.text for s in spans])
        self._emb = np.vstack([self._emb[: self.n - len(spans)], emb])
        grow = np.ones(len(spans), dtype=bool)
        self._cost = np.concatenate([self._cost, [s.cost for s in spans]]).astype(np.int64)
        self._kept = np.concatenate([self._kept, grow])
        self._tomb = np.concatenate(
            [
                self._tomb,
                [
                    s.role == "tombstone" or bool(self.index.tombs[self.index.pos[s.id]])
                    for s in spans
                ],
            ]
        )
        self._pinned = np.concatenate([self._pinned, ~grow])

    def resolve(self, handle: str) -> str:
        """'bound' if a retained span defines the handle, 'recoverable' if a retained tombstone
        names it, else 'missing'."""
        idx = np.flatnonzero(self.kept)
        if any(handle in self.index.defs[i] for i in idx):
            return "bound"
        if any(handle in self.index.tombs[i] for i in idx):
            return "recoverable"
        return "missing"

    def restore(self, handle: str) -> tuple[Span, ...]:
        """Bring an externalized component back (managers without tombstones have none)."""
        raise KeyError(f"{handle} was not externalized by the {self.name} manager")

    # --- one eviction cycle ---
    def step(self, goal: str, turn: int) -> Cycle | None:
        """Run an eviction cycle if the window is past `fraction` of capacity."""
        if self.used <= self.fraction * self.capacity:
            need = self._requirements(self.kept)  # a new span may name an evicted binding
            self._kept[: self.n] |= need
            self._pinned[: self.n] |= need
            return None
        q = self.encoder([goal])[0]
        sims = self._emb[: self.n] @ q
        before = self.kept.copy()
        evict, scores, scored = self._propose(q, sims, self.target)
        margin = eviction_margin(scores, before & ~evict, scored & before)
        proposal = tuple(self.index.report(before & ~evict).orphans)
        evict, need, throttled = self._gate(q, sims, evict, margin)
        used_before = self.used
        self._kept[: self.n] = (before & ~evict) | need
        self._pinned[: self.n] = need & self.kept
        tombs = self._externalize(evict & before, turn)
        cyc = Cycle(
            turn,
            used_before,
            self.used,
            tuple(self.index.spans[i].id for i in np.flatnonzero(evict & before)),
            margin,
            proposal,
            tuple(self.report().orphans),
            tuple(self.index.spans[i].id for i in np.flatnonzero(need)),
            tombs,
            throttled,
        )
        self.cycles.append(cyc)
        return cyc

    def _needs(self, target: float) -> tuple[int, int]:
        used = self.used
        return used - int(target * self.capacity), used - self.capacity

    def _propose(self, q, sims, target, exclude=None):
        """(evict mask, scores for the margin, mask of scored spans)."""
        scored = self.kept & ~self._tomb[: self.n]
        evict = _evict_order(
            sims,
            self._cost[: self.n],
            scored & (sims < self.threshold),
            scored,
            *self._needs(target),
        )
        return evict, sims, scored

    def _gate(self, q, sims, evict, margin):
        """(evict, spans to pin, throttled); relevance-only trusts the proposal."""
        return evict, np.zeros(self.n, dtype=bool), False

    def _requirements(self, kept) -> np.ndarray:
        """Spans outside `kept` that closure needs back in (relevance-only needs none)."""
        return np.zeros(self.n, dtype=bool)

    def _externalize(self, evicted, turn) -> tuple[str, ...]:
        return ()


class GatedManager(RelevanceManager):
    """Relevance eviction plus the closure gate: a proposal that would orphan a reference (or split
    a call from its result) is repaired by pinning the bindings, or raises in mode 'raise'; a
    margin below `floor` defers eviction to the trigger level, or raises in mode 'raise'."""

    name = "gate"

    def __init__(self, capacity: int, *, mode: str = "throttle", **kw):
        if mode not in ("throttle", "raise"):
            raise ValueError(f"mode must be 'throttle' or 'raise', got {mode!r}")
        super().__init__(capacity, **kw)
        self.mode = mode

    def _gate(self, q, sims, evict, margin):
        throttled = margin is not None and margin < self.floor
        if throttled and self.mode == "raise":
            raise ContextClosureError(
                f"eviction margin {margin:.3f} below floor {self.floor}: the scorer cannot "
                "tell load-bearing spans from filler; defer pruning"
            )
        target = self.fraction if throttled else self.target  # throttle: evict only to the trigger
        need = self._requirements(self.kept & ~evict)
        if need.any() and self.mode == "raise":
            lost = sorted(self.index.report(self.kept & ~evict).orphans)
            raise ContextClosureError(
                f"eviction would orphan references {lost} or split call/result pairs; "
                "externalize them as tombstones or evict their components atomically"
            )
        held = np.zeros(self.n, dtype=bool)
        for _ in range(16):  # pin what the retained set needs, let the scorer evict elsewhere
            if throttled or need.any():
                evict = self._propose(q, sims, target, exclude=held)[0]
            # what will be retained includes the held spans, and they have requirements too
            need = self._requirements((self.kept & ~evict) | held)
            if not need.any():
                break
            held |= need
        return evict & ~held, held | need, throttled

    def _requirements(self, kept) -> np.ndarray:
        return closure_requirements(kept, self.index.edges, self.index.bindings)

    def _propose(self, q, sims, target, exclude=None):
        """As relevance-only; spans held by the gate are not the scorer's to evict."""
        scored = self.kept & ~self._tomb[: self.n]
        pool = scored if exclude is None else scored & ~exclude
        evict = _evict_order(
            sims, self._cost[: self.n], pool & (sims < self.threshold), pool, *self._needs(target)
        )
        return evict, sims, scored


class AtomicManager(RelevanceManager):
    """Component-atomic eviction: a dependency component (call + result + every reference) is
    scored as a unit (its best member's relevance) and kept or evicted whole."""

    name = "atomic"

    def _units(self, sims):
        kept, n = self.kept, self.n
        lab = components(n, self.index.edges, self.index.pairs, kept)
        members = np.flatnonzero(kept)
        unit_score = np.full(n, -np.inf)
        np.maximum.at(unit_score, lab[members], sims[members])
        tombs = np.flatnonzero(self._tomb[:n] & kept)
        unit_score[tombs] = self._tomb_scores(sims, tombs)
        unit_cost = np.bincount(lab[members], weights=self._cost[:n][members], minlength=n)
        return lab, unit_score, unit_cost.astype(np.int64)

    def _tomb_scores(self, sims, tombs) -> np.ndarray:
        return np.full(len(tombs), TOMB_SCORE)

    def _gate(self, q, sims, evict, margin):
        """Components leave whole, but a new span may name a binding evicted in an earlier cycle
        (a replayed trace does): re-admit it, unless a retained tombstone covers the handle."""
        need = self._requirements(self.kept & ~evict)
        return evict & ~need, need, False

    def _requirements(self, kept) -> np.ndarray:
        edges = self.index.edges
        tombs = np.flatnonzero(kept & self._tomb[: self.n])
        covered = set().union(*(self.index.tombs[i] for i in tombs))
        if covered:  # a reference to a tombstoned handle is a recoverable miss, not a violation
            cov = np.array([bool(d) and d <= covered for d in self.index.defs[: self.n]])
            edges = edges[~cov[edges[:, 1]]]
        return closure_requirements(kept, edges, self.index.bindings)

    def _propose(self, q, sims, target, exclude=None):
        lab, unit_score, unit_cost = self._units(sims)
        roots = np.zeros(self.n, dtype=bool)
        roots[np.unique(lab[self.kept])] = True
        evict_units = _evict_order(
            unit_score,
            unit_cost,
            roots & (unit_score < self.threshold),
            roots,
            *self._needs(target),
        )
        evict = self.kept & evict_units[np.maximum(lab, 0)]
        scored = self.kept & ~self._tomb[: self.n]
        scores = np.where(self.kept, unit_score[np.maximum(lab, 0)], 0.0)
        return evict, scores, scored


class TombstoneManager(AtomicManager):
    """Component-atomic eviction that externalizes each evicted component to a store and leaves
    a typed tombstone per handle it defined, so a later reference is a recoverable miss."""

    name = "tombstone"

    def __init__(self, capacity: int, **kw):
        super().__init__(capacity, **kw)
        self.store: dict[str, tuple[int, ...]] = {}  # handle -> positions of its component
        self._serial = 0

    def _externalize(self, evicted, turn) -> tuple[str, ...]:
        lab = components(self.n, self.index.edges, self.index.pairs, evicted)
        handles, tombs = [], []
        for root in np.unique(lab[evicted & ~self._tomb[: self.n]]):
            members = tuple(int(i) for i in np.flatnonzero((lab == root) & evicted))
            for h in sorted(set().union(*(self.index.defs[i] for i in members))):
                self.store[h] = members
                handles.append(h)
                self._serial += 1
                tombs.append(tombstone_span(f"tomb{self._serial}:{h}", turn, h))
        self.add(*tombs)
        return tuple(handles)

    def _tomb_scores(self, sims, tombs) -> np.ndarray:
        """A tombstone is as relevant as the best span of the component it stands for."""
        out = np.full(len(tombs), TOMB_SCORE)
        for k, i in enumerate(tombs):
            members = [m for h in self.index.tombs[i] for m in self.store.get(h, ())]
            if members:
                out[k] = sims[members].max()
        return out

    def restore(self, handle: str) -> tuple[Span, ...]:
        """Bring the handle's component back into the window exactly as it was; drop its tombstones."""
        if handle not in self.store:
            raise KeyError(f"{handle} is not externalized")
        members = self.store[handle]
        gone = {h for h, m in self.store.items() if m == members}
        for h in gone:
            del self.store[h]
        self._kept[list(members)] = True
        for i in np.flatnonzero(self.kept & self._tomb[: self.n]):
            if self.index.tombs[i] & gone:
                self._kept[i] = False
        return tuple(self.index.spans[i] for i in members)


class DSGCManager(RelevanceManager):
    """DSGC over trace-induced edges: I = r + lambda * pi on the retained spans, kept by the
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

    def _propose(self, q, sims, target, exclude=None):
        n, kept = self.n, self.kept
        scored = kept & ~self._tomb[:n]
        pos = np.flatnonzero(scored)
        local = np.full(n, -1)
        local[pos] = np.arange(len(pos))
        e = self.index.edges
        e = local[e[scored[e[:, 0]] & scored[e[:, 1]]]]
        budget = int(target * self.capacity) - int(self._cost[:n][kept & ~scored].sum())
        ret = self.policy(self._emb[pos], q, e, self._cost[pos], max(budget, 0))
        evict = np.zeros(n, dtype=bool)
        evict[pos[~ret.kept]] = True
        scores = np.zeros(n)
        scores[pos] = ret.scores / max(float(ret.scores.max()), 1e-12)
        return evict, scores, scored


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
    """Feed a trace to a manager turn by turn, running a cycle after each turn. The goal is
    `goal` if given, else the first user span (the task the agent was given)."""
    if goal is None:
        goal = next((s.text for s in spans if s.role == "user"), spans[0].text if spans else "")
    for turn in sorted({s.turn for s in spans}):
        manager.add(*[s for s in spans if s.turn == turn])
        manager.step(goal, turn)
    return manager
