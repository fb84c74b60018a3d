"""Retention policies: score every block, rank, then keep greedily under a token budget.

The paper's rule, written once over a leading batch axis (rows are scenarios of one store size;
one scenario is a batch of one): r = softmax(sims / tau) along each row, pi the support that
arrives from a block's dependents (one scatter-add per hop), I = r + lambda * pi, a stable
ranking, and the skip-and-continue budget walk. `PolicySetting` is the one shape of a policy's
knobs; called on (emb, q, edges, costs, budget) it is a policy, as any plain function with that
signature returning a `Retention` is. `workbench.dsgc.batch` only packs scenarios into rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from workbench.common.options import check_choice, check_number

TAU = 0.25
LAMBDA = 1.0
DELTA = 0.5  # the damping of each hop past the first
POLICIES = ("similarity", "no-graph", "dsgc", "recency")
GRAPH_POLICIES = ("dsgc",)  # the policies whose ranking reads the graph
PARTIAL_FROM = 4096  # a store at least this large sorts only the head of the ranking the walk needs


@dataclass(frozen=True, repr=False)
class Retention:
    """What a policy decided for one scenario: per-block scores (r, pi, I), the ranking and the
    kept set."""

    policy: str
    sims: np.ndarray  # raw cosine to the query
    r: np.ndarray  # softmax relevance (zeros for policies that do not use it)
    pi: np.ndarray  # propagated support
    scores: np.ndarray  # the score the ranking sorts by (I for DSGC)
    head: np.ndarray  # the ranking's first positions, best first (all N unless sorted partially)
    kept: np.ndarray  # bool mask in store order
    budget: int
    costs: np.ndarray
    params: dict = field(default_factory=dict)
    tiebreak: np.ndarray | None = None  # the ranking's second key (completes a partial head)

    @cached_property
    def order(self) -> np.ndarray:
        """Every block position, best first (sorted on first use when only the head was)."""
        if len(self.head) == len(self.scores):
            return self.head
        return rank(self.scores, self.tiebreak)

    @property
    def used(self) -> int:
        return int(self.costs[self.kept].sum())

    def rank_of(self, positions) -> np.ndarray:
        """1-based ranks of a few blocks, without sorting the others: 1 + how many blocks come
        before each (better score, then better tiebreak, then earlier in the store)."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(self.head) == len(self.scores) or "order" in self.__dict__:
            return self.ranks[positions]
        s = self.scores
        t = s if self.tiebreak is None else self.tiebreak
        out = []
        for p in positions.tolist():
            tie = s == s[p]
            ahead = (s > s[p]) | (tie & (t > t[p]))
            out.append(
                1 + int(np.count_nonzero(ahead)) + int(np.count_nonzero((tie & (t == t[p]))[:p]))
            )
        return np.array(out, dtype=np.int64)

    @property
    def ranks(self) -> np.ndarray:
        """1-based rank of each block in store order."""
        out = np.empty(len(self.order), dtype=np.int64)
        out[self.order] = np.arange(1, len(self.order) + 1)
        return out

    def __repr__(self) -> str:
        return (
            f"Retention({self.policy}, kept {int(self.kept.sum())}/{len(self.kept)} blocks, "
            f"{self.used}/{self.budget} tokens)"
        )


# --- the paper's score, row by row ------------------------------------------------------------


def cosine(emb: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Query similarity: one matrix-vector product (rows and query are L2-normalized).

    The query takes the matrix's dtype (a float64 query would upcast a float32 matrix, a copy
    twice its size); sims are float64 from here on.
    """
    return np.asarray(emb @ np.asarray(q, dtype=emb.dtype), dtype=np.float64)


def relevance(sims: np.ndarray, tau: float = TAU) -> np.ndarray:
    """r = softmax(sims / tau) over each row's N blocks."""
    z = sims / tau
    if z.shape[-1] == 0:
        return z
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def waves(r: np.ndarray, edges: np.ndarray, hops: int, confidence=None) -> list[np.ndarray]:
    """The support arriving exactly h hops upstream, h = 1..hops: one scatter-add per hop, each
    edge carrying its dependent's wave to its prerequisite (scaled by the edge's confidence when
    given). `edges` are (|E|, 2) flat positions [dependent, prerequisite] into r's rows."""
    shape, wave, out = r.shape, r.ravel(), []
    dep, pre = edges[:, 0], edges[:, 1]
    for _ in range(hops):
        carried = wave[dep] if confidence is None else wave[dep] * confidence
        wave = np.bincount(pre, weights=carried, minlength=wave.size)
        out.append(wave.reshape(shape))
    return out


def support(w: list[np.ndarray], hops: int, delta: float = DELTA) -> np.ndarray:
    """pi = sum over h of delta**(h-1) times the support arriving h hops upstream."""
    pi = np.zeros(w[0].shape)
    for h in range(hops):
        pi += delta**h * w[h]
    return pi


def rank(scores: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Each row's positions best first; ties by `tiebreak` (descending), then store order.

    Exactly np.lexsort((-tiebreak, -scores)) per row, at about the cost of one unstable sort:
    only the runs of equal scores are sorted again, by (-tiebreak, position). A 1-d `scores` is
    one row and gives a 1-d order.
    """
    s2 = np.atleast_2d(scores)
    b, n = s2.shape
    if n == 0:
        return np.zeros(s2.shape, dtype=np.int64) if np.ndim(scores) == 2 else np.zeros(0, np.int64)
    order = np.argsort(-s2, axis=-1)  # unstable (SIMD); ties are settled below
    offset = (np.arange(b, dtype=np.int64) * n)[:, None]
    flat = (order + offset).ravel()
    s = s2.ravel()[flat]
    eq = s[1:] == s[:-1]  # -0.0 == 0.0: signed zeros tie, as in a stable sort
    eq[n - 1 :: n] = False  # never across two rows
    if eq.any():
        tied = np.zeros(len(s), dtype=bool)
        tied[1:] |= eq
        tied[:-1] |= eq
        at = np.flatnonzero(tied)  # places inside a run of >= 2 equal scores
        new_run = np.ones(len(at), dtype=bool)
        new_run[1:] = ~((at[1:] == at[:-1] + 1) & eq[at[1:] - 1])
        idx = flat[at]
        second = np.zeros(len(idx)) if tiebreak is None else -np.ravel(tiebreak)[idx]
        flat[at] = idx[np.lexsort((idx, second, np.cumsum(new_run)))]
    out = flat.reshape(b, n) - offset
    return out if np.ndim(scores) == 2 else out[0]


def walk(order: np.ndarray, costs: np.ndarray, room, kept: np.ndarray):
    """The budget walk, marking `kept` (store order) in place; returns the room left.

    Each row walks its `order` (positions, best first): a block that fits is kept, one that does
    not is skipped and the walk goes on. Each pass keeps, in every row at once, the longest
    fitting prefix of the blocks that could still fit: one cumulative sum per skipped block, not
    a Python step per block. 1-d arguments are one row.
    """
    if np.ndim(order) == 1:
        return int(walk(order[None], np.asarray(costs)[None], [room], kept[None])[0])
    c = np.take_along_axis(costs, order, 1)
    room = np.array(room, dtype=np.int64)
    alive = np.ones(order.shape, dtype=bool)
    cols, rows = np.arange(order.shape[1]), np.arange(len(order))
    while True:
        alive &= c <= room[:, None]  # larger than the room left: never fits (the room only shrinks)
        if not alive.any():
            return room
        over = alive & (np.cumsum(np.where(alive, c, 0), axis=1) > room[:, None])
        skip = over.any(axis=1)
        stop = np.where(skip, over.argmax(axis=1), order.shape[1])  # the first that does not fit
        take = alive & (cols < stop[:, None])
        r, j = np.nonzero(take)
        kept[r, order[r, j]] = True
        room -= np.where(take, c, 0).sum(axis=1)
        alive &= ~take
        alive[rows[skip], stop[skip]] = False


def select(order: np.ndarray, costs: np.ndarray, budget) -> np.ndarray:
    """The kept mask of the budget walk over `order` (rows, or one 1-d ranking)."""
    kept = np.zeros(np.shape(costs), dtype=bool)
    walk(order, costs, budget if np.ndim(order) == 1 else np.asarray(budget), kept)
    return kept


def eviction_margin(
    scores: np.ndarray, kept: np.ndarray, among: np.ndarray | None = None
) -> float | None:
    """Lowest retained score minus highest evicted score, over the blocks `among` (default all);
    None when nothing (or everything) was evicted. Negative: the walk skipped a block."""
    if among is not None:
        scores, kept = scores[among], kept[among]
    if kept.all() or not kept.any():
        return None
    return float(scores[kept].min() - scores[~kept].max())


def split_edges(edges) -> tuple[np.ndarray, np.ndarray | None]:
    """(positions, confidence or None) from (|E|, 2) positions or (|E|, 3) with each edge's
    confidence in column 2 (`Scenario.edge_index`)."""
    edges = np.asarray(edges)
    if edges.ndim == 2 and edges.shape[1] == 3:
        return edges[:, :2].astype(np.int64), edges[:, 2].astype(np.float64)
    return edges.reshape(-1, 2).astype(np.int64), None


# --- the one shape of a policy ----------------------------------------------------------------


@dataclass(frozen=True)
class PolicySetting:
    """A retention policy and its knobs, range-checked (workbench.common.options).

    similarity: rank by raw cosine. dsgc: I = r + lam * pi, pi over `hops` hops, each hop past
    the first damped by `delta`; `density` > 0 divides I by cost**density (the length-density
    variant; 0 in the paper). no-graph: DSGC at lam = 0 (ranks as similarity-only). recency: the
    newest block first. Calling a setting on (emb, q, edges, costs, budget) runs it on one
    scenario; `decide` runs it on rows of scenarios.
    """

    policy: str = "dsgc"
    lam: float = LAMBDA
    tau: float = TAU
    hops: int = 1
    delta: float = DELTA
    density: float = 0.0

    def __post_init__(self):
        check_choice("policy", self.policy, POLICIES)
        for knob, value in (("lambda", self.lam), ("tau", self.tau), ("hops", self.hops),
                            ("delta", self.delta), ("density", self.density)):  # fmt: skip
            check_number(knob, value)
        object.__setattr__(self, "hops", int(self.hops))  # 2.0 -> 2: range() needs an int
        if self.policy == "no-graph":
            object.__setattr__(self, "lam", 0.0)

    @property
    def reads_graph(self) -> bool:
        return self.policy in GRAPH_POLICIES

    @property
    def params(self) -> dict:
        """The knobs a run records (DSGC's only: the other rankings have none)."""
        if self.policy not in ("dsgc", "no-graph"):
            return {}
        return {"lambda": self.lam, "tau": self.tau, "hops": self.hops, "delta": self.delta,
                "density": self.density}  # fmt: skip

    def score(self, sims, costs, edges=None, confidence=None, w=None):
        """(r, pi, I, tiebreak) of each row: `edges` flat positions into the rows, or `w`, the
        rows' waves already computed (at least `hops` of them, at this tau)."""
        zeros = np.zeros(sims.shape)
        if self.policy == "similarity":
            return zeros, zeros, sims, None
        if self.policy == "recency":
            n = sims.shape[-1]
            newest = np.broadcast_to(np.arange(n, dtype=np.float64) / max(n - 1, 1), sims.shape)
            return zeros, zeros, newest, None
        r = relevance(sims, self.tau)
        if w is None:
            w = waves(r, np.zeros((0, 2), np.int64) if edges is None else edges, self.hops,
                      confidence)  # fmt: skip
        pi = support(w, self.hops, self.delta)
        scores = r + self.lam * pi
        if self.density:
            scores = scores / np.asarray(costs, dtype=np.float64) ** self.density
        # ties in I (e.g. exp underflow) fall back to raw similarity, then store order, so that
        # lam = 0 reproduces the similarity-only ranking exactly
        return r, pi, scores, sims

    def decide(self, sims, costs, budgets, edges=None, confidence=None, w=None):
        """(order, kept, r, pi, I) of rows of scenarios: (S, N) sims and costs, (S,) budgets."""
        r, pi, scores, tiebreak = self.score(sims, costs, edges, confidence, w)
        order = rank(scores, tiebreak)
        return order, select(order, costs, budgets), r, pi, scores

    def __call__(self, emb, q, edges, costs, budget) -> Retention:
        sims = cosine(emb, q)
        costs = np.asarray(costs)
        pos, conf = split_edges(edges)
        r, pi, scores, tiebreak = self.score(sims[None], costs[None], pos, conf)
        r, pi, scores = r[0], pi[0], scores[0]
        tiebreak = None if tiebreak is None else tiebreak[0]
        if len(sims) < PARTIAL_FROM:
            head = rank(scores, tiebreak)
            kept = select(head, costs, budget)
        else:
            head, kept = rank_select_partial(scores, tiebreak, costs, budget)
        return Retention(self.policy, sims, r, pi, scores, head, kept, int(budget), costs,
                         self.params, tiebreak)  # fmt: skip

    def __repr__(self) -> str:
        if not self.params:
            return f"PolicySetting({self.policy})"
        d = f", density={self.density:g}" if self.density else ""
        return (f"PolicySetting({self.policy}, lambda={self.lam:g}, tau={self.tau:g}, "
                f"hops={self.hops}, delta={self.delta:g}{d})")  # fmt: skip


similarity_only = PolicySetting("similarity")  # a policy: rank by raw cosine
recency = PolicySetting("recency")  # a policy: sliding window, newest first


# --- the head of the ranking only (large stores) ---------------------------------------------


def top_k(scores: np.ndarray, tiebreak: np.ndarray | None, k: int) -> np.ndarray:
    """Bool mask of exactly the first k blocks of rank(scores, tiebreak), in O(N).

    The cut is found key by key: the k-th best score t (all better scores are in); among the
    blocks scoring t, the best tiebreak values; among those tied on both, store order.
    """
    n = len(scores)
    if k >= n:
        return np.ones(n, dtype=bool)
    second = scores if tiebreak is None else tiebreak
    t = -np.partition(-scores, k - 1)[k - 1]
    mask = scores > t
    need = k - int(mask.sum())
    tied = np.flatnonzero(scores == t)  # in store order
    vals = second[tied]
    s = -np.partition(-vals, need - 1)[need - 1]
    better = vals > s
    mask[tied[better]] = True
    need -= int(better.sum())
    mask[tied[vals == s][:need]] = True
    return mask


def rank_select_partial(
    scores, tiebreak, costs, budget, k: int = 256, grow: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """(head, kept): a sorted head of the ranking and exactly the kept set of the full walk.

    The walk runs over the head; once the room left is below the cheapest block outside the
    head, no later block can fit (the room only shrinks), so the kept set is final. Otherwise
    the head grows `grow`-fold and the walk goes on over the new part: the first k blocks of a
    longer head are the same blocks in the same order, since (score, tiebreak, position) is a
    strict total order.
    """
    n = len(scores)
    costs = np.asarray(costs)
    kept = np.zeros(n, dtype=bool)
    room, walked = int(budget), 0
    if n == 0:
        return np.zeros(0, dtype=np.int64), kept
    if room >= int(costs.sum()):  # everything fits: the walk keeps every block
        kept[:] = True
        k = min(k, n)
    cheapest = int(costs.min())
    while True:
        k = min(k, n)
        inside = top_k(scores, tiebreak, k)
        head = np.flatnonzero(inside)
        head = head[rank(scores[head], None if tiebreak is None else tiebreak[head])]
        if kept.all():
            return head, kept
        room = walk(head[walked:], costs, room, kept)
        walked = k
        if k == n or room < cheapest or room < int(costs[~inside].min()):
            return head, kept
        k *= grow
