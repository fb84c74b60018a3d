"""Window managers over a growing tool-call log: relevance-only, gated, atomic, tombstone, DSGC.

Each manager scores spans against the agent's goal (or takes a span's supplied `score`), evicts
when the window passes its trigger, and (except relevance-only and DSGC) keeps the retained window
referentially closed. Every manager is incremental: adding a span costs O(its references), and
nothing is rebuilt over the whole log. The window keeps its order by score, its handle counts and
who needs each span as it changes (`window._enter` / `_leave`), and the gate keeps its units, so
a gate cycle costs O(its proposal + the evictable units), not O(window); the atomic, tombstone
and DSGC managers still group the window per cycle (O(r log r) in the r retained spans). A window still over capacity after a cycle is recorded in
`over_budget` (and refused with `strict=True`): a manager never exceeds its budget silently.
"""

from __future__ import annotations

import heapq
import math
import os
import threading

import numpy as np

from workbench.closure.window import fastgate, rule
from workbench.closure.window.cycle import (
    RelevanceManager,
    walk_units,
)
from workbench.closure.window.spans import (
    TOMBSTONE_COST,
    ContextClosureError,
    Span,
    SpanIndex,
    components,
    tombstone_span,
)
from workbench.common.options import check_number
from workbench.common.seeds import Draw
from workbench.dsgc.policies import PolicySetting


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

    def __init__(self, capacity: int, **kw):
        super().__init__(capacity, **kw)
        # the closure-respecting greedy's units, kept as the window changes: a unit is a call
        # with its binding answer (`SpanIndex.unit`); links count (needer, needed) span pairs
        # between two retained units
        self._umem: dict[int, dict[int, None]] = {}  # unit -> its retained members
        self._uscore: dict[int, float] = {}  # unit -> its best retained member's score
        self._uneeds: dict[int, dict[int, int]] = {}  # unit -> {unit it needs: links}
        self._nb: dict[int, int] = {}  # unit -> retained units that need it
        self._ufix: dict[int, int] = {}  # unit -> its retained pins
        self._free: set[int] = set()  # units nothing retained needs, unpinned: evictable now

    def _refree(self, u: int) -> None:
        if self._umem.get(u) and not self._nb.get(u) and not self._ufix.get(u):
            self._free.add(u)
        else:
            self._free.discard(u)

    def _link(self, u: int, v: int) -> None:
        d = self._uneeds.get(u)
        if d is None:
            d = self._uneeds[u] = {}
        c = d.get(v, 0)
        d[v] = c + 1
        if not c:
            self._nb[v] = self._nb.get(v, 0) + 1
            self._free.discard(v)

    def _unlink(self, u: int, v: int) -> None:
        d = self._uneeds[u]
        c = d[v] - 1
        if c:
            d[v] = c
            return
        del d[v]
        self._nb[v] -= 1
        if not self._nb[v]:
            self._refree(v)

    def _enter(self, i: int) -> None:
        super()._enter(i)
        u = self.index.unit[i]
        ms = self._umem.get(u)
        if ms is None:
            ms = self._umem[u] = {}
        ms[i] = None
        s = self.score[i]
        if len(ms) == 1 or s > self._uscore[u]:
            self._uscore[u] = s
        if i in self.pins:
            self._ufix[u] = self._ufix.get(u, 0) + 1
        self._unit_links(i, self._link)
        self._refree(u)

    def _unit_links(self, i: int, change) -> None:
        """`change(needer unit, needed unit)` for each link between span i's unit and another
        retained unit: what i needs, and the retained spans that need i."""
        unit, retained = self.index.unit, self.retained
        u = unit[i]
        for p in self.index.needs[i]:
            if p in retained and unit[p] != u:
                change(u, unit[p])
        for q in self._rret.get(i, ()):
            if unit[q] != u:
                change(unit[q], u)

    def _leave(self, i: int) -> None:
        u = self.index.unit[i]
        self._unit_links(i, self._unlink)
        super()._leave(i)
        ms = self._umem[u]
        del ms[i]
        if i in self.pins:
            self._ufix[u] -= 1
        if not ms:
            del self._umem[u], self._uscore[u]
        elif self.score[i] == self._uscore[u]:
            self._uscore[u] = max(self.score[j] for j in ms)
        self._refree(u)

    def _rescored(self) -> None:
        super()._rescored()
        score = self.score
        self._uscore = {u: max(score[j] for j in ms) for u, ms in self._umem.items()}

    def _dangling(self, W, proposal) -> list[int]:
        """Evicted positions a span the proposal retains needs (closure was intact before):
        from the kept needers of each position, O(|proposal|)."""
        ev, rret = set(proposal), self._rret
        return sorted(p for p in proposal if (r := rret.get(p)) and not r <= ev)

    def _gate(self, W, proposal, margin, prop_orphans):
        throttled = rule.throttled(margin is not None, margin, self.floor)
        if not self.enforce:  # the gate without its closure step: margin throttle only
            if throttled:
                return self._propose(W, 1.0)[0], "throttle", True
            return proposal, "evict", False
        dang = self._dangling(W, proposal)
        dangling = bool(dang)
        if self.mode == "raise":
            if dangling:
                lost = prop_orphans or sorted(self.index.spans[p].id for p in dang)
                raise ContextClosureError(rule.dangling_message(lost, margin, self.floor))
            if throttled:
                raise ContextClosureError(rule.margin_message(margin, self.floor))
            return proposal, "evict", False
        decision = rule.DECISIONS[rule.decision_code(dangling, throttled)]
        if decision == "evict":
            return proposal, decision, False
        return self._greedy(W, 1.0 if throttled else self.target), decision, throttled

    def evict_closure_safe(self, target: float) -> list[int]:
        """Commit the closure-respecting eviction down to `target` (1.0: only what capacity
        forces); returns the evicted positions, in window order."""
        out = sorted(self._greedy(list(self.retained), target))
        for i in out:
            self._drop(i)
        return out

    def _greedy(self, W, target) -> list[int]:
        """Closure-respecting eviction of the window W (the retained spans): a unit (a call with
        its binding answer) becomes evictable once no retained unit outside it needs a member;
        lowest best-member score first, below the threshold until the target, then any until the
        window is within capacity. O(evictable units + what it evicts), from the kept units."""
        need_soft, need_hard = self._needs(target)
        if max(need_soft, need_hard) <= 0:
            return []  # nothing to free (a throttled window under capacity): nothing to build
        cost, us, umem, uneeds, nb, fix = (
            self.index.cost,
            self._uscore,
            self._umem,
            self._uneeds,
            self._nb,
            self._ufix,
        )
        heap = [(us[u], u) for u in self._free]
        heapq.heapify(heap)
        left: dict[int, int] = {}  # units' needers still retained as the eviction proceeds
        out, freed, goal = [], 0, max(need_soft, need_hard)
        while heap and freed < goal:
            s, u = heapq.heappop(heap)
            if freed >= need_hard and s >= self.threshold:
                break  # hard budget met; the heap holds only units at or above the threshold, and
                # nothing more is evicted, so nothing new can enter it
            ms = umem[u]
            out += ms
            freed += sum(cost[i] for i in ms)
            for v in uneeds.get(u, ()):
                c = left.get(v)
                c = (nb[v] if c is None else c) - 1
                left[v] = c
                if not c and not fix.get(v):
                    heapq.heappush(heap, (us[v], v))
        return out


class AtomicManager(RelevanceManager):
    """Component-atomic eviction: a dependency component of the window (a call, its result and
    every retained span referencing what they define) is scored as a unit (its best member's
    relevance) and kept or evicted whole. A new span naming an evicted binding re-admits it."""

    name = "atomic"
    closure = True

    def _components(self, W) -> dict[int, int]:
        """Component label (smallest member) of each retained position: spans.components over
        the needs among retained spans."""
        n, needs = len(self.index.spans), self.index.needs
        links = np.array([(i, p) for i in W for p in needs[i]], dtype=np.int64).reshape(-1, 2)
        among = np.zeros(n, dtype=bool)
        among[list(W)] = True
        lab = components(n, links, np.zeros((0, 2), dtype=np.int64), among)
        return {i: int(lab[i]) for i in W}

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
        # lowest first; among equal scores the later unit goes first (the note's tie-break)
        order = sorted((u for u in members if uscore[u] < math.inf), key=lambda u: (uscore[u], -u))
        units = walk_units(order, uscore, ucost, *self._needs(target), self.threshold, extra)
        unit_score = {i: uscore[lab[i]] for i in W}
        return [i for u in units for i in members[u]], unit_score


class RestoreMissed(KeyError):
    """The external store could not give an externalized component back."""


class TombstoneManager(AtomicManager):
    """Component-atomic eviction that evicts only when the window is over its budget, and
    externalizes every evicted component that defines a handle to a store, behind one typed
    tombstone per handle (`{"evicted_ref": h, "recoverable": true}`): a later reference resolves
    to a recoverable miss, never to a silent absence. Tombstones are small (4 tokens), pinned and
    never evicted; `restore(h)` brings the component back exactly as it was.

    `miss` is the share of restores the external store fails (a real store can lose or expire
    what it holds): a missed restore raises RestoreMissed and the component is gone for good, so
    a tombstone can fail too. Which restores miss is a seeded draw per handle."""

    name = "tombstone"

    def __init__(self, capacity: int, miss: float = 0.0, **kw):
        super().__init__(capacity, **kw)
        self.miss = check_number("restore_miss", miss)
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
        if self.miss and Draw("tombstone-restore", handle).below(10**6) < self.miss * 10**6:
            raise RestoreMissed(f"the store lost {handle} (restore miss rate {self.miss:g})")
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
        self.policy = PolicySetting("dsgc", lam=lam, tau=tau, hops=hops, delta=delta)

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


COMPILED_MIN = 20_000  # spans: below this, loading the compiled loop costs more than it saves


def compiled(manager: RelevanceManager, spans, force: bool | None = None) -> bool:
    """Whether `replay` runs this manager in the compiled loop (`workbench.closure.window.fastgate`):
    a fresh gate in its default configuration (closure enforced, mode 'throttle', not strict),
    every supplied score a float, numba installed, and a log of COMPILED_MIN spans or more
    (`force=True`: any length; False, or $WORKBENCH_COMPILED=0: never)."""
    if force is False or os.environ.get("WORKBENCH_COMPILED", "1") == "0":
        return False
    if not (
        type(manager) is GatedManager
        and manager.n == 0
        and spans
        and (force or len(spans) >= COMPILED_MIN)
        and manager.enforce
        and manager.mode == "throttle"
        and not manager.strict
        and all(s.score is None or type(s.score) is float for s in spans)
    ):
        return False
    return fastgate.available()


def _load_compiled(done: list) -> None:
    try:
        fastgate.load()
        done.append(None)
    except Exception as e:  # noqa: BLE001  (a numba that cannot load: the Python loop runs)
        done.append(e)


def replay(
    spans, manager: RelevanceManager, goal: str | None = None, compiled_loop: bool | None = None
) -> RelevanceManager:
    """Feed a log to a manager turn by turn, running a step after each turn. The goal is `goal`
    if given, else the first user span (the task the agent was given). Encodes the log in one
    batch and groups turns in one pass. A fresh gate over a long log runs compiled, with the
    same result (`compiled`; `compiled_loop` forces it on or off)."""
    spans = list(spans)
    loading, loaded = None, []
    if compiled(manager, spans, compiled_loop):  # numba loads while the log is encoded, indexed
        loading = threading.Thread(target=_load_compiled, args=(loaded,), daemon=True)
        loading.start()
    if goal is None:
        goal = next((s.text for s in spans if s.role == "user"), spans[0].text if spans else "")
    manager.set_goal(goal)
    emb = manager.encoder([s.text for s in spans]) if spans else None
    sims = (emb @ manager._q).tolist() if spans else []  # the goal is fixed: one product
    if loading is not None:
        manager.index.extend(spans)
        loading.join()  # (the collector runs meanwhile: a first compile makes much garbage)
        if loaded[0] is None:
            fastgate.replay(manager, spans, emb, sims)
            return manager
        manager.index = SpanIndex(manager.index.patterns)  # numba failed: over again, in Python
    manager.reserve(manager.n + len(spans))
    k = 0
    while k < len(spans):
        j = k
        while j < len(spans) and spans[j].turn == spans[k].turn:
            j += 1
        manager.add(*spans[k:j], emb=emb[k:j], sims=sims[k:j])
        manager.step(goal, spans[k].turn)
        k = j
    return manager
