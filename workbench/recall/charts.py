"""Altair charts for the streaming-recall benchmark; the paper's numbers drawn as black marks beside ours."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.recall.episodes import QUERY_FORMS
from workbench.recall.rules import RETENTION_RULES, SELECTION_RULES

PAPER_MARK = {"color": "black", "shape": "diamond", "size": 90, "filled": True}


def grid_heatmap(cells: pd.DataFrame, source: str = "synthetic") -> alt.FacetChart:
    """Recall per cell with its 95% interval; row labels carry the retention rate; one panel per query form.

    The title names the source of the episodes (synthetic, fixture or a data file)."""
    d = cells.copy()
    d["row"] = [
        f"{r} (retained {v:.1f}%)" for r, v in zip(d["retention"], d["retention_rate"], strict=True)
    ]
    d["label"] = [f"{v:.1f}" for v in d["recall"]]
    d["interval"] = [
        "" if a != a else f"[{a:.1f}, {b:.1f}]"
        for a, b in zip(d["recall_lo"], d["recall_hi"], strict=True)
    ]
    rows = [r for rule in RETENTION_RULES for r in d["row"].unique() if r.startswith(rule + " ")]
    base = alt.Chart().encode(
        x=alt.X("selection:N", sort=list(SELECTION_RULES), title="selection rule (top-k)"),
        y=alt.Y("row:N", sort=rows, title="retention rule (capacity K)"),
    )
    rect = base.mark_rect().encode(
        color=alt.Color(
            "recall:Q", scale=alt.Scale(domain=[0, 100], scheme="blues"), title="recall %"
        )
    )
    ink = alt.condition("datum.recall > 60", alt.value("white"), alt.value("black"))
    top = base.mark_text(dy=-6, fontSize=12).encode(text="label:N", color=ink)
    bottom = base.mark_text(dy=8, fontSize=10).encode(text="interval:N", color=ink)
    return (
        alt.layer(rect, top, bottom, data=d)
        .properties(width=330, height=230)
        .facet(row=alt.Row("query_form:N", sort=list(QUERY_FORMS), title="query form"))
        .properties(title=f"Required-fact recall per cell, 95% intervals (source={source})")
    )


def decomposition_chart(ours: pd.DataFrame, paper: dict) -> alt.LayerChart:
    """The three decomposition components, ours beside the paper's, with intervals."""
    rows = [
        {"component": r["component"], "source": "ours", "pp": r["pp"], "lo": r["lo"], "hi": r["hi"]}
        for _, r in ours.iterrows()
    ]
    rows += [
        {"component": c, "source": "paper", "pp": v[0], "lo": v[1], "hi": v[2]}
        for c, v in paper["rq1_pp"].items()
    ]
    d = pd.DataFrame(rows)
    order = ["matched_access_gain", "access_contribution", "mixed_comparison"]
    base = alt.Chart(d).encode(
        x=alt.X("component:N", sort=order, title=None, axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("source:N", sort=["paper", "ours"]),
    )
    bars = base.mark_bar().encode(
        y=alt.Y("pp:Q", title="recall difference (pp)"),
        color=alt.Color(
            "source:N", sort=["paper", "ours"], scale=alt.Scale(range=["#999999", "#1f77b4"])
        ),
    )
    err = base.mark_rule(color="black").encode(y="lo:Q", y2="hi:Q")
    return (bars + err).properties(
        width=420, height=260, title="Matched-access decomposition (95% paired bootstrap)"
    )


def _paper_points(points: list[dict], x: str, y: str) -> alt.Chart:
    return (
        alt.Chart(pd.DataFrame(points))
        .mark_point(**PAPER_MARK)
        .encode(x=x, y=y, tooltip=["note:N"])
    )


def _recall_lines(
    d, x, y_title: str, by: str, order, points, x_field: str, title: str, dash: bool = False
) -> alt.LayerChart:
    """Recall (0-100) against `x`, one line per `by` (dashed too when `dash`), the paper's
    `points` as diamonds."""
    enc = {
        "x": x,
        "y": alt.Y("recall:Q", scale=alt.Scale(domain=[0, 100]), title=y_title),
        "color": alt.Color(f"{by}:N", sort=list(order)),
    }
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{by}:N", sort=list(order), legend=None)
    lines = alt.Chart(d).mark_line(point=True).encode(**enc)
    return (lines + _paper_points(points, x_field, "recall:Q")).properties(
        width=360, height=240, title=title
    )


def k_curve(pressure: pd.DataFrame, paper: dict, retention: str = "recency") -> alt.LayerChart:
    """Recall vs capacity K for one retention rule, one line per selection rule; paper endpoints as diamonds."""
    d = pressure.query("retention == @retention")
    x = alt.X("K:Q", scale=alt.Scale(type="log", base=2, domain=[2, 20]),
              title="capacity K (log scale)")  # fmt: skip
    pk = paper["rq2"]["recency_recall_by_K"]
    pts = [
        {"K": pk["K"][0], "recall": pk["first"], "note": "paper"},
        {"K": pk["K"][-1], "recall": pk["last"], "note": "paper"},
    ]
    title = f"{retention} retention under memory pressure (diamonds: paper)"
    return _recall_lines(d, x, "recall %", "selection", SELECTION_RULES, pts, "K:Q", title,
                         dash=True)  # fmt: skip


def _bars_with_paper(
    d, x_col, order, y, lo, hi, scale, y_title, column, column_title, width
) -> alt.FacetChart:
    """Bars of `y` per `x_col` with interval rules (lo, hi) and the paper's values (column
    `paper`) as diamonds, one panel per `column`."""
    x = alt.X(f"{x_col}:N", sort=list(order), title=None)
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(f"{y}:Q", scale=scale, title=y_title),
            color=alt.Color(f"{x_col}:N", sort=list(order), legend=None),
        )
    )
    err = alt.Chart().mark_rule(color="black").encode(x=x, y=f"{lo}:Q", y2=f"{hi}:Q")
    pts = alt.Chart().mark_point(**PAPER_MARK).encode(x=x, y="paper:Q")
    return (
        alt.layer(bars, err, pts, data=d)
        .properties(width=width, height=220)
        .facet(column=alt.Column(f"{column}:N", title=column_title))
    )


def delay_chart(delays: pd.DataFrame, paper: dict, selection: str = "query") -> alt.FacetChart:
    """Retention rate by delay bucket for each retention rule with 95% intervals; paper's delay 6-9 values as diamonds."""
    d = delays.query("selection == @selection").copy()
    p = paper["rq2"]
    published = {
        ("6-9", "recency"): p["recency_recall_delay_6_to_9"],
        ("6-9", "type_oracle"): p["type_oracle_retention"],
    }
    d["paper"] = [published.get((a, b)) for a, b in zip(d["delay"], d["retention"], strict=True)]
    return _bars_with_paper(
        d, "retention", RETENTION_RULES, "retention_rate", "retention_lo", "retention_hi",
        alt.Scale(domain=[0, 100]), "target retained %",
        "delay", "delay (observations after the target); diamonds: paper", 170,
    )  # fmt: skip


def density_chart(density: pd.DataFrame, paper: dict, selection: str = "query") -> alt.LayerChart:
    """Recall vs distractor density per retention rule; paper endpoints as diamonds."""
    d = density.query("selection == @selection")
    dp = paper["rq2"]["distractor_density_0.1_to_0.7"]
    pts = [
        {"density": x, "recall": v, "note": f"paper {rule}"}
        for rule in ("type_oracle", "recency")
        for x, v in zip((0.1, 0.7), dp[rule], strict=True)
    ]
    x = alt.X("density:Q", title="distractor density")
    return _recall_lines(d, x, f"recall % ({selection} selection)", "retention", RETENTION_RULES,
                         pts, "density:Q", "Distractor density (diamonds: paper)")  # fmt: skip


def artifact_chart(artifact: pd.DataFrame, paper: dict) -> alt.FacetChart:
    """The marker's boost per selection rule under uninformative queries; paper's QUERY boosts as diamonds."""
    d = artifact.copy()
    b = paper["rq3"]["marker_boost_pp"]
    published = {("unbounded", "query"): b["unbounded"], ("recency", "query"): b["bounded"]}
    d["paper"] = [
        published.get((a, c)) for a, c in zip(d["retention"], d["selection"], strict=True)
    ]
    return _bars_with_paper(
        d, "selection", SELECTION_RULES, "boost_pp", "boost_lo", "boost_hi", alt.Undefined,
        "marked - unmarked recall (pp)",
        "retention", "retention (uninformative queries); diamonds: paper", 220,
    )  # fmt: skip
