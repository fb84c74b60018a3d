"""Retention policies: score every block, rank, then keep greedily under a token budget.

A policy is any callable ``policy(emb, q, edges, costs, budget) -> Retention`` where ``emb`` is
the (N, d) block embedding matrix, ``q`` the (d,) query embedding, ``edges`` an (|E|, 2) int
array of (dependent, prerequisite) store positions and ``costs`` the (N,) token costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from workbench.common.options import check_number

TAU = 0.25
LAMBDA = 1.0
PARTIAL_FROM = 4096  # stores at least this large sort only the head of the ranking the walk needs


@dataclass(frozen=True, repr=False)
class Retention:
    """What a policy decided: per-block scores (r, pi, I), the ranking and the kept set."""

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


# --- the pieces ------------------------------------------------------------------------------


def softmax_relevance(sims: np.ndarray, tau: float = TAU) -> np.ndarray:
    """r = softmax(sims / tau) over all N blocks."""
    z = sims / tau
    e = np.exp(z - z.max()) if len(z) else z
    return e / e.sum() if len(z) else e


def propagate(r: np.ndarray, edges: np.ndarray, hops: int = 1, delta: float = 1.0) -> np.ndarray:
    """pi_i = sum of r_j over dependents j of i; k hops add delta**(h-1) times the h-step support.

    `edges` is (|E|, 2) store positions [dependent, prerequisite], or (|E|, 3) with each edge's
    confidence in column 2: the support an edge carries is scaled by it (all ones: the paper's
    lambda * pi, to the last bit)."""
    n = len(r)
    pi = np.zeros(n)
    if len(edges) == 0 or hops < 1:
        return pi
    if edges.shape[1] == 3:
        dep, pre, w = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64), edges[:, 2]
    else:
        dep, pre, w = edges[:, 0], edges[:, 1], None
    wave = r
    for h in range(hops):  # one scatter-add per hop
        carried = wave[dep] if w is None else wave[dep] * w
        wave = np.bincount(pre, weights=carried, minlength=n)
        pi += delta**h * wave
    return pi


def rank(scores: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Positions best first; ties by `tiebreak` (descending), then store order.

    Exactly np.lexsort((-tiebreak, -scores)), at about the cost of one unstable sort: only the
    runs of equal scores are sorted again, by (-tiebreak, position).
    """
    order = np.argsort(-scores)  # unstable (SIMD); ties are settled below, whatever it left
    s = scores[order]
    eq = s[1:] == s[:-1]  # -0.0 == 0.0: signed zeros tie, as in a stable sort
    if not eq.any():
        return order
    tied = np.zeros(len(s), dtype=bool)
    tied[1:] |= eq
    tied[:-1] |= eq
    at = np.flatnonzero(tied)  # places of `order` inside a run of >= 2 equal scores
    new_run = np.ones(len(at), dtype=bool)
    new_run[1:] = ~((at[1:] == at[:-1] + 1) & eq[at[1:] - 1])
    run_id = np.cumsum(new_run)
    idx = order[at]
    second = np.zeros(len(idx)) if tiebreak is None else -tiebreak[idx]
    order[at] = idx[np.lexsort((idx, second, run_id))]
    return order


def select(order: np.ndarray, costs: np.ndarray, budget: int) -> np.ndarray:
    """Walk the ranking; keep a block if it fits, skip it if not, and go on (skip-and-continue)."""
    kept = np.zeros(len(costs), dtype=bool)
    walk(order, costs, int(budget), kept)
    return kept


def walk(order: np.ndarray, costs: np.ndarray, room: int, kept: np.ndarray) -> int:
    """The budget walk over `order`, marking `kept` in place; returns the room left.

    Vectorized: each pass keeps the longest fitting prefix of the blocks that could still fit,
    so there is one cumulative sum per skipped block, not a Python step per block.
    """
    cand = order
    while len(cand):
        cand = cand[costs[cand] <= room]  # a block larger than the room left can never fit
        if not len(cand):
            break
        fits = np.cumsum(costs[cand]) <= room
        stop = int(np.argmin(fits)) if not fits.all() else len(cand)
        kept[cand[:stop]] = True
        room -= int(costs[cand[:stop]].sum())
        cand = cand[stop + 1 :]  # the first block that did not fit is skipped
    return room


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


def cosine(emb: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Query similarity: one matrix-vector product (rows and query are L2-normalized).

    The query takes the matrix's dtype (a float64 query would upcast a float32 matrix, a copy
    twice its size); sims are float64 from here on.
    """
    return np.asarray(emb @ np.asarray(q, dtype=emb.dtype), dtype=np.float64)


# --- the policies ----------------------------------------------------------------------------


def decide(name, sims, scores, order, costs, budget, r=None, pi=None, params=None) -> Retention:
    """A Retention from a ranking: walk `order` under the budget (r and pi default to zeros)."""
    kept = select(order, costs, budget)
    return _retention(name, sims, scores, order, kept, costs, budget, r, pi, params, None)


def decide_ranked(name, sims, scores, tiebreak, costs, budget, r=None, pi=None, params=None):
    """A Retention that ranks by (scores, tiebreak, store order): fully for small stores, only
    the head the budget walk needs from PARTIAL_FROM blocks on (the same kept set either way)."""
    if len(scores) < PARTIAL_FROM:
        head = rank(scores, tiebreak)
        kept = select(head, costs, budget)
    else:
        head, kept = rank_select_partial(scores, tiebreak, costs, budget)
    return _retention(name, sims, scores, head, kept, costs, budget, r, pi, params, tiebreak)


def _retention(name, sims, scores, head, kept, costs, budget, r, pi, params, tiebreak):
    zeros = np.zeros(len(sims))
    return Retention(
        policy=name,
        sims=sims,
        r=zeros if r is None else r,
        pi=zeros if pi is None else pi,
        scores=scores,
        head=head,
        kept=kept,
        budget=int(budget),
        costs=costs,
        params=params or {},
        tiebreak=tiebreak,
    )


def similarity_only(emb, q, edges, costs, budget) -> Retention:
    """Rank by raw cosine to the query."""
    sims = cosine(emb, q)
    return decide_ranked("similarity", sims, sims, None, costs, budget)


@dataclass(frozen=True)
class DSGC:
    """I = r + lambda * pi with r = softmax(E q / tau) and pi propagated over `hops` hops.

    hops=1 is the paper's rule; each extra hop is damped by `delta`. lam=0 is no-graph DSGC.
    `density` > 0 divides I by cost**density (the length-density variant; 0 in the paper).
    Knobs are range-checked (workbench.common.options.RANGES): tau > 0, lam, delta, density >= 0, all
    finite, 1 <= hops <= MAX_HOPS (no propagation is lam=0: no-graph DSGC).
    """

    lam: float = LAMBDA
    tau: float = TAU
    hops: int = 1
    delta: float = 0.5
    density: float = 0.0
    name: str = "dsgc"

    def __post_init__(self):
        for knob, value in (
            ("lambda", self.lam),
            ("tau", self.tau),
            ("hops", self.hops),
            ("delta", self.delta),
            ("density", self.density),
        ):
            check_number(knob, value)
        object.__setattr__(self, "hops", int(self.hops))  # 2.0 -> 2: range() needs an int

    def __call__(self, emb, q, edges, costs, budget) -> Retention:
        sims = cosine(emb, q)
        r = softmax_relevance(sims, self.tau)
        pi = propagate(r, edges, self.hops, self.delta)
        scores = r + self.lam * pi
        if self.density:
            scores = scores / np.asarray(costs, dtype=np.float64) ** self.density
        params = {
            "lambda": self.lam,
            "tau": self.tau,
            "hops": self.hops,
            "delta": self.delta,
            "density": self.density,
        }
        # ties in I (e.g. exp underflow) fall back to raw similarity, then store order, so that
        # lam = 0 reproduces the similarity-only ranking exactly
        return decide_ranked(self.name, sims, scores, sims, costs, budget, r, pi, params)


def recency(emb, q, edges, costs, budget) -> Retention:
    """Sliding window: newest (last ingested) first, same budgeted walk."""
    n = len(costs)
    sims = cosine(emb, q)
    scores = np.arange(n, dtype=np.float64) / max(n - 1, 1)
    order = np.arange(n)[::-1].copy()
    return decide("recency", sims, scores, order, costs, budget)


POLICIES = ("similarity", "no-graph", "dsgc", "recency")


def make_policy(
    name: str,
    lam: float = LAMBDA,
    tau: float = TAU,
    hops: int = 1,
    delta: float = 0.5,
    density: float = 0.0,
):
    """A policy by its command-line name; the knobs are range-checked for every policy (those
    that ignore them included), so a bad value is an error wherever it is given."""
    for knob, value in (("lambda", lam), ("tau", tau), ("hops", hops), ("delta", delta)):
        check_number(knob, value)
    check_number("density", density)
    if name == "similarity":
        return similarity_only
    if name == "no-graph":
        return DSGC(lam=0.0, tau=tau, hops=hops, delta=delta, density=density, name="no-graph")
    if name == "dsgc":
        return DSGC(lam=lam, tau=tau, hops=hops, delta=delta, density=density)
    if name == "recency":
        return recency
    raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")


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
