"""Retention policies: score every block, rank, then keep greedily under a token budget.

A policy is any callable ``policy(emb, q, edges, costs, budget) -> Retention`` where ``emb`` is
the (N, d) block embedding matrix, ``q`` the (d,) query embedding, ``edges`` an (|E|, 2) int
array of (dependent, prerequisite) store positions and ``costs`` the (N,) token costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.options import check_number

TAU = 0.25
LAMBDA = 1.0


@dataclass(frozen=True, repr=False)
class Retention:
    """What a policy decided: per-block scores (r, pi, I), the ranking and the kept set."""

    policy: str
    sims: np.ndarray  # raw cosine to the query
    r: np.ndarray  # softmax relevance (zeros for policies that do not use it)
    pi: np.ndarray  # propagated support
    scores: np.ndarray  # the score the ranking sorts by (I for DSGC)
    order: np.ndarray  # block positions, best first
    kept: np.ndarray  # bool mask in store order
    budget: int
    costs: np.ndarray
    params: dict = field(default_factory=dict)

    @property
    def used(self) -> int:
        return int(self.costs[self.kept].sum())

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
    """pi_i = sum of r_j over dependents j of i; k hops add delta**(h-1) times the h-step support."""
    n = len(r)
    pi = np.zeros(n)
    if len(edges) == 0 or hops < 1:
        return pi
    dep, pre = edges[:, 0], edges[:, 1]
    wave = r
    for h in range(hops):  # one scatter-add per hop
        wave = np.bincount(pre, weights=wave[dep], minlength=n)
        pi += delta**h * wave
    return pi


def rank(scores: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Positions best first; ties by `tiebreak` (descending), then store order (stable)."""
    n = len(scores)
    keys = [np.arange(n)]
    if tiebreak is not None:
        keys.append(-tiebreak)
    keys.append(-scores)
    return np.lexsort(keys)


def select(order: np.ndarray, costs: np.ndarray, budget: int) -> np.ndarray:
    """Walk the ranking; keep a block if it fits, skip it if not, and go on (skip-and-continue).

    Vectorized: each pass keeps the longest fitting prefix of the blocks that could still fit,
    so there is one cumulative sum per skipped block, not a Python step per block.
    """
    kept = np.zeros(len(costs), dtype=bool)
    cand = order
    room = int(budget)
    while len(cand):
        cand = cand[costs[cand] <= room]  # a block larger than the room left can never fit
        if not len(cand):
            break
        fits = np.cumsum(costs[cand]) <= room
        stop = int(np.argmin(fits)) if not fits.all() else len(cand)
        kept[cand[:stop]] = True
        room -= int(costs[cand[:stop]].sum())
        cand = cand[stop + 1 :]  # the first block that did not fit is skipped
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


def cosine(emb: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Query similarity: one matrix-vector product (rows and query are L2-normalized)."""
    return emb @ q


# --- the policies ----------------------------------------------------------------------------


def decide(name, sims, scores, order, costs, budget, r=None, pi=None, params=None) -> Retention:
    """A Retention from a ranking: walk `order` under the budget (r and pi default to zeros)."""
    zeros = np.zeros(len(sims))
    return Retention(
        policy=name,
        sims=sims,
        r=zeros if r is None else r,
        pi=zeros if pi is None else pi,
        scores=scores,
        order=order,
        kept=select(order, costs, budget),
        budget=int(budget),
        costs=costs,
        params=params or {},
    )


def similarity_only(emb, q, edges, costs, budget) -> Retention:
    """Rank by raw cosine to the query."""
    sims = cosine(emb, q)
    return decide("similarity", sims, sims, rank(sims), costs, budget)


@dataclass(frozen=True)
class DSGC:
    """I = r + lambda * pi with r = softmax(E q / tau) and pi propagated over `hops` hops.

    hops=1 is the paper's rule; each extra hop is damped by `delta`. lam=0 is no-graph DSGC.
    `density` > 0 divides I by cost**density (the length-density variant; 0 in the paper).
    Knobs are range-checked (workbench.options.RANGES): tau > 0, lam, delta, density >= 0, all
    finite, 0 <= hops <= MAX_HOPS (hops=0 propagates nothing, like lam=0).
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
        # ties in I (e.g. exp underflow) fall back to raw similarity, then store order, so that
        # lam = 0 reproduces the similarity-only ranking exactly
        order = rank(scores, tiebreak=sims)
        params = {
            "lambda": self.lam,
            "tau": self.tau,
            "hops": self.hops,
            "delta": self.delta,
            "density": self.density,
        }
        return decide(self.name, sims, scores, order, costs, budget, r, pi, params)


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
