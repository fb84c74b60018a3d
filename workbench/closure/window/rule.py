"""The gate's one rule: the relevance proposal, its margin, the decision, and what a raise says.

Every engine of the gate calls these: the window managers (`cycle.RelevanceManager._propose`
and `_margin`, `managers.GatedManager._gate`), the compiled replay (`fastgate` wraps these same
functions with numba, so the compiled loop runs this source, not a copy of it) and the static
check of one window (`gate.window_decision`). They take plain indexables (lists, numpy arrays)
and scalars, nothing else, so that numba can compile them unchanged.

The proposal: spans by score, lowest first (among equal scores the later span first); a prefix
of that order is evicted, below `threshold` until `need_soft` tokens are freed, then any span
until `need_hard` are. The margin: the lowest score kept minus the highest score evicted, over
scored (unpinned) spans; none when nothing is evicted or nothing scored is kept. The decision,
in the note's order: a proposal that leaves a dangling reference is repaired (mode 'raise':
raises), then a margin below `floor` throttles eviction (mode 'raise': raises).
"""

from __future__ import annotations

DECISIONS = ("evict", "repair", "throttle", "repair+throttle")  # by decision_code


def proposal_length(order, score, cost, need_soft, need_hard, threshold):
    """How many spans of `order` (positions, lowest score first) the proposal evicts."""
    m = len(order)
    k, freed = 0, 0
    while k < m and freed < need_soft and score[order[k]] < threshold:
        freed += cost[order[k]]
        k += 1
    while k < m and freed < need_hard:
        freed += cost[order[k]]
        k += 1
    return k


def prefix_margin(order, score, k):
    """(has a margin, the margin) of evicting the first k of `order`: the next span's score
    minus the last evicted one's (0.0 when there is none)."""
    if 0 < k < len(order):
        return True, score[order[k]] - score[order[k - 1]]
    return False, 0.0


def set_margin(kept_scores, evicted_scores):
    """The margin of any eviction (not a prefix): lowest kept minus highest evicted, or None."""
    if len(evicted_scores) == 0 or len(kept_scores) == 0:
        return None
    return min(kept_scores) - max(evicted_scores)


def throttled(has_margin, margin, floor):
    """The ranking is near-arbitrary at the cut: pruning is deferred."""
    return has_margin and margin < floor


def decision_code(dangling, throttle):
    """The decision's index in DECISIONS."""
    return (1 if dangling else 0) + (2 if throttle else 0)


def dangling_message(lost, margin, floor) -> str:
    """What a raise says of a proposal that would orphan references."""
    m = "n/a" if margin is None else f"{margin:.3f}"
    return (
        f"eviction would orphan references {list(lost)}; margin={m} (floor {floor}). "
        "Externalize these bindings as tombstones or evict their dependency components atomically."
    )


def margin_message(margin, floor) -> str:
    """What a raise says of a margin below the floor."""
    return (
        f"eviction margin {margin:.3f} below floor {floor}: the scorer cannot tell load-bearing "
        "spans from filler; defer pruning or raise the threshold."
    )
