"""What the recency rows should give, exactly, under a stated episode construction (RQ1).

Recency retention with capacity K keeps the last K observations, and recency selection exposes
the newest k of them, so only the target's position matters. `recency_formula` gives the
expectation for any placement of distractors whose law does not depend on position, with
targets uniform over the facts: then P(target at position p) = 1/N for every p. `recency_exact`
enumerates every distractor placement and target, and also takes a placement that does depend
on position (positions drawn one at a time with probability proportional to a weight among
those not yet drawn), to show what a construction must do to give other numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.recall.episodes import n_distractors

QUANTITIES = (
    "retention",  # recency retention rate at capacity K (= recall of recency/query, informative)
    "recall_recency_recency",
    "matched_access_gain",  # recency/query - recency/recency
    "mixed_comparison",  # unbounded/query - recency/recency
    "access_contribution",  # unbounded/query - recency/query
    "type_oracle_retention_delay_6_9",
    "marker_boost_unbounded",  # a selector exposing no distractor (newest facts) - recency/recency
    "marker_boost_bounded",
)


def _recency_quantities(kept: float, shown: float) -> dict[str, float]:
    """The recency quantities in percent from P(target retained) and P(target shown)."""
    return {
        "retention": 100 * kept,
        "recall_recency_recency": 100 * shown,
        "matched_access_gain": 100 * (kept - shown),
        "mixed_comparison": 100 * (1 - shown),
        "access_contribution": 100 * (1 - kept),
    }


def recency_formula(n_items: int = 10, K: int = 5, k: int = 3) -> dict[str, float]:
    """The recency quantities in percent for exchangeable placements: K/N, k/N and their differences."""
    return _recency_quantities(min(K, n_items) / n_items, min(k, K, n_items) / n_items)


def _placements(n_items: int, n_d: int, weights: Sequence[float] | None):
    """(probability, distractor positions) for every placement, exactly."""
    if weights is None:
        combos = list(itertools.combinations(range(n_items), n_d))
        return [(1.0 / len(combos), c) for c in combos]
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_items,) or (w < 0).any() or (w > 0).sum() < n_d:
        raise ValueError(f"weights must be {n_items} non-negative numbers, {n_d} of them positive")
    out: dict[tuple[int, ...], float] = {}
    for seq in itertools.permutations(range(n_items), n_d):
        p, left = 1.0, w.copy()
        for i in seq:
            if left[i] == 0:
                p = 0.0
                break
            p *= left[i] / left.sum()
            left[i] = 0.0
        key = tuple(sorted(seq))
        out[key] = out.get(key, 0.0) + p
    return [(p, c) for c, p in sorted(out.items()) if p > 0]


def recency_exact(
    n_items: int = 10,
    density: float = 0.3,
    K: int = 5,
    k: int = 3,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """The recency quantities in percent, by exact enumeration of placements and targets.

    weights=None places round(density * N) distractors uniformly (the seed's stated construction);
    otherwise positions are drawn one at a time in proportion to their weight.
    """
    n_d = n_distractors(density, n_items)
    keys = ("retention", "recall_recency_recency", "late", "late_kept", "filter_u", "filter_b")
    acc = dict.fromkeys(keys, 0.0)
    for p, d_pos in _placements(n_items, n_d, weights):
        facts = [i for i in range(n_items) if i not in d_pos]
        for t in facts:
            w = p / len(facts)
            delay = n_items - 1 - t
            acc["retention"] += w * (delay < K)
            acc["recall_recency_recency"] += w * (delay < min(k, K))
            # a perfect distractor filter that breaks ties by recency exposes the newest k facts
            # (unbounded), or the newest k facts among the last K observations (bounded)
            acc["filter_u"] += w * (sum(f > t for f in facts) < k)
            acc["filter_b"] += w * (delay < K and sum(t < f for f in facts) < k)
            if 6 <= delay <= 9:  # the type oracle drops distractors first: the last K facts stay
                acc["late"] += w
                acc["late_kept"] += w * (sum(f > t for f in facts) < K)
    shown = acc["recall_recency_recency"]
    return {
        **_recency_quantities(acc["retention"], shown),
        "type_oracle_retention_delay_6_9": (
            100 * acc["late_kept"] / acc["late"] if acc["late"] else float("nan")
        ),
        "marker_boost_unbounded": 100 * (acc["filter_u"] - shown),
        "marker_boost_bounded": 100 * (acc["filter_b"] - shown),
    }


LONGER_STREAM = "10 facts plus 3 distractors (13 items)"
SKEWED_PLACEMENT = "distractors 2x as likely at positions 5-7, 0.5x at 8-9"


def construction_variants(K: int = 5, k: int = 3) -> pd.DataFrame:
    """The recency quantities under the stated construction and under constructions that are not it.

    Each row answers "what would a generator have to do to give the seed's 46.8 / +15.5?".
    """
    rows = [
        ("stated: 10 items, 3 distractors at uniform positions", 10, 0.3, None),
        (LONGER_STREAM, 13, 3 / 13, None),
        ("distractors never at the first position", 10, 0.3, [0.0] + [1.0] * 9),
        ("distractors never at the last position", 10, 0.3, [1.0] * 9 + [0.0]),
        (
            SKEWED_PLACEMENT,
            10,
            0.3,
            [1.0] * 5 + [2.0] * 3 + [0.5] * 2,
        ),
    ]
    out = []
    for name, n, density, w in rows:
        out.append({"construction": name, **recency_exact(n, density, K, k, w)})
    return pd.DataFrame(out).round(1)
