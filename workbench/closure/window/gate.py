"""One gate decision on a window as it stands (`workbench closure check WINDOW --budget N`).

The note's `evict_by_relevance` proposal (rank by (pinned, score), keep while the budget allows,
skipping a span that does not fit), its margin over scored, unpinned spans, then the note's order:
dangling references first, then a margin below the floor. In mode 'raise' either raises; in mode
'throttle' the gate commits the closure-respecting eviction instead (down to the budget; what
closure pins counts against it) and reports a window it cannot bring within the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.closure.window import rule
from workbench.closure.window.cycle import FLOOR, MODES
from workbench.closure.window.managers import GatedManager
from workbench.closure.window.spans import CLOSURE_PATTERNS, SpanIndex
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns
from workbench.dsgc.policies import walk


@dataclass(frozen=True, repr=False)
class Decision:
    """What the gate does with one window at one budget."""

    decision: str  # nothing | evict | raise | repair | throttle | repair+throttle
    reason: str
    budget: int
    tokens: int  # the window as given
    pinned_tokens: int
    score_source: str
    proposal: tuple[str, ...]  # ids the relevance proposal evicts
    proposal_tokens: int  # tokens it retains
    margin: float | None
    dangling: tuple[str, ...]  # handles (or span ids) the proposal would orphan
    committed: tuple[str, ...] | None  # ids the gate evicts (None: it raised)
    committed_tokens: int | None
    closed: bool  # the committed window (or the proposal, when raising)

    @property
    def over(self) -> int:
        return max((self.committed_tokens or 0) - self.budget, 0)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()} | {
            "over_budget": self.over
        }

    def lines(self) -> list[str]:
        m = "n/a (nothing evicted)" if self.margin is None else f"{self.margin:.4f}"
        out = [
            f"scores: {self.score_source}; {self.pinned_tokens} tokens pinned",
            f"proposal (the note's evict_by_relevance at budget {self.budget}): evict "
            f"{', '.join(self.proposal) or '-'}; retains {self.proposal_tokens} tokens",
            f"eviction margin: {m} (floor {self.reason_floor}; over scored, unpinned spans)",
            "dangling after the proposal: " + (", ".join(self.dangling) or "none"),
            f"gate decision: {self.decision.upper()}: {self.reason}",
        ]
        if self.committed is not None and self.decision not in ("nothing", "evict"):
            out.append(
                f"committed: evict {', '.join(self.committed) or '-'}; retains "
                f"{self.committed_tokens} tokens, {'closed' if self.closed else 'NOT closed'}"
            )
        if self.over:
            out.append(
                f"OVER BUDGET by {self.over} tokens: what is left is pinned or needed by closure"
            )
        return out

    reason_floor: float = FLOOR


def window_decision(
    spans,
    budget: int,
    *,
    floor: float = FLOOR,
    mode: str = "throttle",
    goal: str | None = None,
    encoder="lexical",
    patterns: Patterns = CLOSURE_PATTERNS,
) -> Decision:
    """The gate's decision on `spans` (a window with optional `score` and `pinned` per span)."""
    if mode not in MODES:
        raise ValueError(f"mode must be 'throttle' or 'raise', got {mode!r}")
    spans = list(spans)
    n = len(spans)
    cost = np.array([s.cost for s in spans], dtype=np.int64)
    pinned = np.array([s.pinned for s in spans], dtype=bool)
    have = [s.score is not None for s in spans]
    scores = np.zeros(n)
    if not all(have):
        enc = get_encoder(encoder) if isinstance(encoder, str) else encoder
        goal = goal or next((s.text for s in spans if s.role == "user"), spans[0].text)
        scores = enc([s.text for s in spans]) @ enc([goal])[0]
    scores = np.array([s.score if s.score is not None else scores[i] for i, s in enumerate(spans)])
    name = encoder if isinstance(encoder, str) else getattr(encoder, "name", "encoder")
    source = (
        "supplied per span (score)"
        if all(have)
        else f"supplied for {sum(have)}/{n} spans, the rest {name} cosine to the goal"
        if any(have)
        else f"{name} cosine to the goal (no span has a score)"
    )
    # the note's evict_by_relevance: pinned spans stay, the rest by score (ties: window order)
    # through the one budget walk
    keep = pinned.copy()
    free = np.flatnonzero(~pinned)
    room = walk(
        free[np.argsort(-scores[free], kind="stable")], cost, budget - int(cost[pinned].sum()), keep
    )
    used = budget - room
    evict = ~keep
    margin = rule.set_margin(scores[keep & ~pinned], scores[evict])
    margin = None if margin is None else float(margin)
    index = SpanIndex(patterns).extend(spans)
    rep = index.report(keep)
    kept_set = set(np.flatnonzero(keep).tolist())
    broken = sorted({p for i in kept_set for p in index.needs[i] if p not in kept_set})
    dangling = tuple(rep.orphans) or tuple(spans[p].id for p in broken)
    ids = tuple(s.id for s, e in zip(spans, evict, strict=True) if e)
    base = dict(
        budget=budget,
        tokens=int(cost.sum()),
        pinned_tokens=int(cost[pinned].sum()),
        score_source=source,
        proposal=ids,
        proposal_tokens=int(used),
        margin=margin,
        dangling=dangling,
        reason_floor=floor,
    )
    low = rule.throttled(margin is not None, margin, floor)
    if not evict.any():
        return Decision(
            "nothing",
            "the window fits its budget",
            committed=(),
            committed_tokens=int(used),
            closed=rep.closed and not broken,
            **base,
        )
    if not dangling and not low:
        return Decision(
            "evict",
            f"closed, and the margin is at or above the floor {floor}",
            committed=ids,
            committed_tokens=int(used),
            closed=True,
            **base,
        )
    if mode == "raise":
        if dangling:
            reason = rule.dangling_message(dangling, margin, floor)
        else:
            reason = rule.margin_message(margin, floor)
        return Decision(
            "raise",
            "ContextClosureError: " + reason,
            committed=None,
            committed_tokens=None,
            closed=False,
            **base,
        )
    m = GatedManager(
        budget, fraction=1.0, target=1.0, floor=floor, patterns=patterns, encoder=encoder
    )
    m.add(*spans, sims=scores.tolist())
    out = m.evict_closure_safe(1.0)
    decision = rule.DECISIONS[rule.decision_code(bool(dangling), low)]
    reason = {
        "repair": "dangling references: commit the closure-respecting eviction instead",
        "throttle": f"margin below the floor {floor}: the ranking is near-arbitrary at the cut; "
        "defer pruning (evict only what the budget forces, closure-safe)",
        "repair+throttle": "dangling references, and the margin is below the floor: commit the "
        "closure-respecting eviction, only what the budget forces",
    }[decision]
    return Decision(
        decision,
        reason,
        committed=tuple(spans[i].id for i in out),
        committed_tokens=m.used,
        closed=m.report().closed,
        **base,
    )
