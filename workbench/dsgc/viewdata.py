"""What the landscape and valley charts show for one run, as plain rows (no altair here).

The same rows feed the static figures (charts.landscape / charts.valley bind them into a spec)
and the live explorer (the browser puts them into vega views that were built once), so the two
can never disagree. Importing this module stays cheap: the explorer's kernel never needs altair.
"""

from __future__ import annotations

import numpy as np

from workbench.dsgc.trace import Trace

COMPONENTS = ("r: query relevance", "λ·π: propagated support")
VALLEY_SERIES = ("before: r (λ = 0)", "after: I = r + λ·π")
VALLEY_COLORS = ("#7F7F7F", "#0072B2")
KEPT, KEPT_PAST, EVICTED = "kept", "kept past the cutoff (it fit)", "evicted"
STATUSES = (KEPT, KEPT_PAST, EVICTED)
CUTOFF_NOTE = (
    "dashed line: the budget cutoff, where the first block did not fit; a block ranked after it "
    "is still kept when it fits in what is left"
)


def family(policy: str) -> str:
    """Which landscape spec draws a policy: stacked r + λ·π, raw similarity, or recency."""
    return "components" if policy in ("dsgc", "no-graph") else policy


def first_evicted(trace: Trace) -> int | None:
    """Rank (1-based) of the first block the budgeted walk had to drop: the budget cutoff."""
    kept = trace.retention.kept[trace.retention.order]
    if kept.all():
        return None
    return int(np.argmin(kept)) + 1


def cutoff_score(trace: Trace) -> float | None:
    """The score of the first block the walk dropped (None when everything was kept)."""
    cut = first_evicted(trace)
    if cut is None:
        return None
    return float(trace.retention.scores[trace.retention.order[cut - 1]])


def statuses(trace: Trace) -> list[str]:
    """Each block's status in ranking order: kept, kept past the cutoff (it fit), or evicted."""
    kept = trace.retention.kept[trace.retention.order]
    cut = first_evicted(trace)
    return [
        (KEPT_PAST if cut is not None and k > cut else KEPT) if kept[k - 1] else EVICTED
        for k in range(1, len(kept) + 1)
    ]


def _wrap(text: str, width: int = 110) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + len(w) + 1 > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return [*lines, line] if line else lines


def landscape_data(trace: Trace, head: str | None = None) -> dict:
    """The landscape's datasets (land, marks, cut, notes) and params (ymax, ids, head, sub)."""
    ret, sc = trace.retention, trace.scenario
    order, ids, kinds = ret.order, sc.ids, sc.kinds
    status = statuses(trace)
    lam = float(ret.params.get("lambda", 0.0))
    top = float(ret.scores.max()) if len(order) else 0.0
    ymax = max(top, 1e-9)
    base = [
        {
            "rank": k + 1,
            "id": ids[i],
            "kind": kinds[i],
            "cost": int(ret.costs[i]),
            "sim": float(ret.sims[i]),
            "r": float(ret.r[i]),
            "pi": float(ret.pi[i]),
            "I": float(ret.scores[i]),
            "status": status[k],
        }
        for k, i in enumerate(order)
    ]
    if family(trace.policy) == "components":
        land = []
        for b, i in zip(base, order, strict=True):
            land.append({**b, "component": COMPONENTS[0], "value": float(ret.r[i]), "order": 0})
            land.append(
                {**b, "component": COMPONENTS[1], "value": lam * float(ret.pi[i]), "order": 1}
            )
    else:
        land = [{**b, "component": "score", "value": b["I"], "order": 0} for b in base]
    marks = [{"rank": b["rank"], "y": b["I"] + ymax * 0.04, "status": b["status"]} for b in base]
    cut = first_evicted(trace)
    cuts = [] if cut is None else [{"rank": cut, "label": f"← budget cutoff (C = {ret.budget})"}]
    rank_of = {b["id"]: b["rank"] for b in base}
    notes = []
    if trace.displaced:
        d = trace.displaced[0]
        notes.append((d, f"displaced {d}"))
        if trace.top_non_chain is not None and trace.margin is not None:
            notes.append((trace.top_non_chain, f"displacer (+{trace.margin:.3f})"))
    notes = [
        {"rank": rank_of[i], "y": trace.score(i) + ymax * 0.09, "label": label}
        for i, label in notes
    ]
    past = [b["id"] for b in base if b["status"] == KEPT_PAST]
    sub = _wrap(trace.verdict().split(": ", 1)[-1])
    if cut is not None:
        sub.append(
            f"dashed line: budget cutoff (C = {ret.budget} tokens), the first block that did not "
            "fit; "
            + (
                f"{len(past)} block{'s' if len(past) != 1 else ''} ranked after it still kept "
                f"because {'they' if len(past) != 1 else 'it'} fit: {', '.join(past)}"
                if past
                else "a block ranked after it would still be kept if it fit"
            )
        )
    return {
        "land": land,
        "marks": marks,
        "cut": cuts,
        "notes": notes,
        "ymax": ymax * 1.45,
        "ids": [ids[i] for i in order],
        "head": head or f"Score landscape: {sc.id}, {trace.encoder} encoder, {trace.policy}",
        "sub": sub,
    }


def valley_data(
    before: Trace, after: Trace, head: str | None = None, chosen: str | None = None
) -> dict:
    """The valley's datasets (valley, vcut) and params (chain, head, sub): the chain blocks'
    scores without propagation (before) and with it (after), each run's budget cutoff. Its
    subtitle names the two runs; `chosen`, a policy a viewer picked that is neither run (the
    explorer's similarity-only or recency), is named too, so the chart never seems to draw it."""
    sc = after.scenario
    pos = sc.index()
    rows = []
    for label, t in zip(VALLEY_SERIES, (before, after), strict=True):
        status = dict(zip(t.ranking, statuses(t), strict=True))
        for k, c in enumerate(sc.chain):
            i = pos[c]
            rank = t.chain_ranks[c]
            rows.append(
                {
                    "series": label,
                    "block": c,
                    "step": k,
                    "sim": float(t.retention.sims[i]),
                    "score": float(t.retention.scores[i]),
                    "rank": rank,
                    "status": EVICTED if status[c] == EVICTED else KEPT,
                    "label": f"rank {rank}",
                }
            )
    cuts = [
        (s, c, color)
        for s, t, color in zip(VALLEY_SERIES, (before, after), VALLEY_COLORS, strict=True)
        if (c := cutoff_score(t)) is not None
    ]
    if len(cuts) == 2 and abs(cuts[0][1] - cuts[1][1]) < 1e-12:
        vcut = [
            {
                "series": VALLEY_SERIES[1],
                "score": cuts[0][1],
                "color": "#333333",
                "label": "budget cutoff (same block in both runs)",
                "place": "middle",
            }
        ]
    else:
        vcut = [
            {
                "series": s,
                "score": c,
                "color": color,
                "label": f"budget cutoff, {s.split(':')[0]}",
                # right of the plot, where no point or rank label is; the higher of two cutoffs
                # written above its line, the lower below, so they never overlap each other
                "place": "middle"
                if len(cuts) == 1
                else ("upper" if c >= max(x[1] for x in cuts) else "lower"),
            }
            for s, c, color in cuts
        ]
    sims = ", ".join(f"{c} {before.retention.sims[pos[c]]:.2f}" for c in sc.chain)
    p = after.retention.params
    runs = [
        f"before: λ = 0; after: DSGC at λ = {p.get('lambda', 0):g}, τ = {p.get('tau', 0):g}, "
        f"{p.get('hops', 1)} hop{'s' if p.get('hops', 1) != 1 else ''}"
    ]
    if chosen is not None:
        runs.append(f"(the policy chosen, {chosen}, is neither run)")
    return {
        "valley": rows,
        "vcut": vcut,
        "chain": list(sc.chain),
        "head": head or f"Semantic valley: {sc.id}, {after.encoder} encoder",
        "sub": [
            *runs,
            f"cosine to the query: {sims}",
            "dashed line: budget cutoff (score of the first block that did not fit);",
            "a chain block below it is still kept (filled) when it fits",
        ],
    }


def rescue_data(rows: list[dict], knob: str, label: str, head: str) -> dict:
    """The rescue curve (workshop): does the full chain survive at each value of one knob?"""
    return {
        "rescue": [
            {
                "x": float(r[knob]),
                "kept": int(bool(r["full_chain_retained"])),
                "label": label,
                "evicted": r["displaced_text"],
            }
            for r in rows
        ],
        "head": head,
        "sub": [],
    }
