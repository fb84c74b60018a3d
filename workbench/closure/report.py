"""Reports over simulated runs: the margin signal, the per-manager summary, timelines, stories."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from workbench.closure.agent import Run
from workbench.closure.managers import FLOOR, MANAGERS
from workbench.reference import paper_figures


def margin_signal(cycles, floor: float = FLOOR, horizon: int = 2) -> dict:
    """How well `margin < floor` at cycle k predicts a new closure violation in cycles k+1..k+horizon.

    A violation at cycle j: the proposed eviction orphans a handle that was not already orphaned
    after cycle j-1 (for relevance-only it is committed; a gate catches and repairs it).
    Lead time: cycles (and turns) from the earliest flag in the window to the violation.
    """
    m = np.array([np.nan if c.margin is None else c.margin for c in cycles])
    turns = np.array([c.turn for c in cycles])
    prev = [frozenset()] + [frozenset(c.orphans) for c in cycles[:-1]]
    event = np.array([bool(set(c.proposal_orphans) - p) for c, p in zip(cycles, prev, strict=True)])
    flag = m < floor  # nan compares False: a cycle that evicted nothing raises no flag
    n = len(cycles)
    ahead = np.array([event[k + 1 : k + 1 + horizon].any() for k in range(n)], dtype=bool)
    leads_c, leads_t, caught = [], [], 0
    for j in np.flatnonzero(event):
        ks = [k for k in range(max(j - horizon, 0), j) if flag[k]]
        if ks:
            caught += 1
            leads_c.append(j - ks[0])
            leads_t.append(int(turns[j] - turns[ks[0]]))
    return {
        "cycles": n,
        "flags": int(flag.sum()),
        "violations": int(event.sum()),
        "true_flags": int((flag & ahead).sum()),
        "caught": caught,
        "base_rate_cycles": int(ahead.sum()),
        "lead_cycles": leads_c,
        "lead_turns": leads_t,
    }


def _ratio(a, b):
    return float(a) / b if b else float("nan")


def summary_table(runs) -> pd.DataFrame:
    """One row per manager over all seeds: failures, closure token overhead, margin signal."""
    ref = {r.seed: r.timeline.used.mean() for r in runs if r.manager == "relevance"}
    rows = []
    for name in dict.fromkeys(r.manager for r in runs):
        group = [r for r in runs if r.manager == name]
        tl = pd.concat([r.timeline for r in group])
        sig = [margin_signal(r.cycles) for r in group]
        tot = {
            k: sum(s[k] for s in sig)
            for k in ("cycles", "flags", "violations", "true_flags", "caught", "base_rate_cycles")
        }
        lead_c = [x for s in sig for x in s["lead_cycles"]]
        lead_t = [x for s in sig for x in s["lead_turns"]]
        extra = [r.timeline.used.mean() / ref[r.seed] - 1 for r in group if r.seed in ref]
        rows.append(
            {
                "manager": name,
                "seeds": len(group),
                "turns": len(tl),
                "invalid_per_turn": tl.invalid.mean(),
                "invalid_calls": int(tl.invalid.sum()),
                "silent_corruptions": int(tl.corrupt.sum()),
                "orphan_turns": float((tl.orphans > 0).mean()),
                "mean_tokens": tl.used.mean(),
                "closure_token_share": _ratio(tl.closure_tokens.sum(), tl.used.sum()),
                "extra_tokens_vs_relevance": float(np.mean(extra)) if extra else float("nan"),
                "restores": sum(r.restores for r in group),
                "jobs_done_share": _ratio(
                    sum(r.jobs_done for r in group), sum(r.jobs_submitted for r in group)
                ),
                "cycles": tot["cycles"],
                "violations": tot["violations"],
                "margin_flags": tot["flags"],
                "margin_precision": _ratio(tot["true_flags"], tot["flags"]),
                "margin_recall": _ratio(tot["caught"], tot["violations"]),
                "base_rate": _ratio(tot["base_rate_cycles"], tot["cycles"]),
                "lead_cycles": float(np.mean(lead_c)) if lead_c else float("nan"),
                "lead_turns": float(np.mean(lead_t)) if lead_t else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index("manager")


def timeline_frame(runs, seed: int, managers=("relevance", "gate")) -> pd.DataFrame:
    """Long-form timeline of one seed: occupancy, margin and orphan count per turn and manager."""
    parts = []
    for r in runs:
        if r.seed != seed or r.manager not in managers:
            continue
        tl = r.timeline
        for metric in ("occupancy", "margin", "orphans"):
            parts.append(
                pd.DataFrame(
                    {
                        "manager": r.manager,
                        "turn": tl.turn,
                        "metric": metric,
                        "value": tl[metric].astype(float),
                        "failing_call": tl.failing_call,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def timeline_chart(frame: pd.DataFrame, floor: float = FLOOR):
    """Occupancy, margin and orphans per turn (rows) for each manager (columns); red marks are
    the turns with an invalid or corrupted call."""
    base = alt.Chart(frame).encode(x=alt.X("turn:Q", title="turn"))
    line = base.mark_line(strokeWidth=1).encode(y=alt.Y("value:Q", title=None))
    fails = (
        base.transform_filter("datum.failing_call != ''")
        .mark_rule(color="#d62728", opacity=0.35)
        .encode(tooltip=["failing_call:N"])
    )
    pts = (
        base.transform_filter(f"datum.metric == 'margin' && datum.value < {floor!r}")
        .mark_point(size=8, color="#ff7f0e", filled=True)
        .encode(y="value:Q")
    )
    return (
        alt.layer(fails, line, pts, data=frame)
        .properties(width=320, height=110)
        .facet(
            row=alt.Row("metric:N", sort=["occupancy", "margin", "orphans"], title=None),
            column=alt.Column("manager:N", sort=list(MANAGERS), title=None),
        )
        .resolve_scale(y="independent")
        .properties(
            title=alt.TitleParams(
                "One simulated run: window occupancy, eviction margin and orphaned handles per turn",
                subtitle=[
                    "columns: window manager; red rules: a turn whose tool call failed "
                    "(invalid or silently corrupted handle);",
                    f"orange dots: eviction margin below the floor {floor:g}; occupancy "
                    "is retained tokens / capacity",
                ],
                anchor="start",
            )
        )
    )


def note_figures() -> dict:
    """The closure note's published figures."""
    return paper_figures("closure")


def failures(run: Run) -> pd.DataFrame:
    """The failing calls of one run, with the window's orphan count and the last two margins."""
    tl = run.timeline.set_index("turn")
    cyc = pd.DataFrame(
        {
            "turn": [c.turn for c in run.cycles],
            "margin": [np.nan if c.margin is None else c.margin for c in run.cycles],
        }
    )
    rows = []
    for t in tl.index[tl.failing_call != ""]:
        prior = cyc[cyc.turn < t].margin.tail(2).tolist()
        rows.append(
            {
                "turn": int(t),
                "kind": "corrupt" if tl.corrupt[t] else "invalid",
                "orphans_before": int(tl.orphans.get(t - 1, 0)),
                "margins_before": " ".join("n/a" if np.isnan(m) else f"{m:.3f}" for m in prior),
                "call": tl.failing_call[t],
            }
        )
    return pd.DataFrame(rows, columns=["turn", "kind", "orphans_before", "margins_before", "call"])


def story(run: Run) -> dict:
    """The note's observed-run numbers for one run: first orphan, first failure, margins."""
    tl = run.timeline
    orph, fail = tl.turn[tl.orphans > 0], tl.turn[tl.failing_call != ""]
    first_fail = int(fail.iloc[0]) if len(fail) else None
    m = tl[tl.margin.notna() & ((tl.turn < first_fail) if first_fail is not None else True)].margin
    return {
        "turns": int(len(tl)),
        "first_orphan_turn": int(orph.iloc[0]) if len(orph) else None,
        "failure_surfaced_turn": first_fail,
        "margin_before": float(m.iloc[:-2].median()) if len(m) > 2 else None,
        "margin_at_failure": float(m.iloc[-1]) if len(m) else None,
        "invalid_tool_calls_per_turn": float((tl.invalid + tl.corrupt).mean()),
    }


def note_comparison(run: Run, note: dict | None = None) -> pd.DataFrame:
    """The note's observed run beside one of ours (margin_before: median margin of the cycles
    before the last two ahead of the first failure; margin_at_failure: the last one)."""
    note = note or note_figures()
    ref = dict(note["observed_run"])
    ref["invalid_tool_calls_per_turn"] = note["with_closure_pass"][
        "invalid_tool_calls_per_turn_before"
    ]
    ours = story(run)
    keys = list(ours)
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    return pd.DataFrame(
        {
            "note": [fmt(ref.get(k)) for k in keys],
            f"ours ({run.manager}, seed {run.seed})": [fmt(ours[k]) for k in keys],
        },
        index=keys,
    )
