"""Closure charts (altair), apart from the reports: the command line never imports altair."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.closure.window.cycle import FLOOR
from workbench.closure.window.managers import MANAGERS


def timeline_chart(frame: pd.DataFrame, floor: float = FLOOR):
    """Occupancy, margin and orphans per turn (rows) for each manager (columns); red rules are
    silent corruptions, grey rules loud tool errors."""
    base = alt.Chart(frame).encode(x=alt.X("turn:Q", title="turn"))
    line = base.mark_line(strokeWidth=1).encode(y=alt.Y("value:Q", title=None))
    silent = (
        base.transform_filter("datum.kind == 'corrupt'")
        .mark_rule(color="#d62728", opacity=0.5)
        .encode(tooltip=["failing_call:N"])
    )
    loud = (
        base.transform_filter("datum.kind == 'tool_error'")
        .mark_rule(color="#7f7f7f", opacity=0.35)
        .encode(tooltip=["failing_call:N"])
    )
    pts = (
        base.transform_filter(f"datum.metric == 'margin' && datum.value < {floor!r}")
        .mark_point(size=8, color="#ff7f0e", filled=True)
        .encode(y="value:Q")
    )
    return (
        alt.layer(loud, silent, line, pts, data=frame)
        .properties(width=215, height=110)
        .facet(
            row=alt.Row("metric:N", sort=["occupancy", "margin", "orphans"], title=None),
            column=alt.Column("manager:N", sort=list(MANAGERS), title=None),
        )
        .resolve_scale(y="independent")
        .properties(
            title=alt.TitleParams(
                "One simulated run of a plan-driven agent, turn by turn",
                subtitle=[
                    "rows: occupancy, eviction margin and evicted-binding orphans per turn;",
                    "columns: window manager; red rules: a silently corrupted call (a guessed "
                    "handle the tool accepted);",
                    "grey rules: a tool error on an unknown handle;",
                    f"orange dots: eviction margin below the floor {floor:g}; occupancy is "
                    "retained tokens / capacity",
                ],
                anchor="start",
            )
        )
    )


OUTCOME_PANELS = (  # (column, panel title): causes and recoveries apart; the subtitle says more
    ("evicted_binding_turns", "turns citing an evicted binding"),
    ("silent", "silent corruptions"),
    ("tool_errors", "tool errors"),
    ("restores", "tombstone restores"),
    ("raises", "gate raises"),
    ("jobs_done", "jobs completed"),
)


def outcome_chart(table: pd.DataFrame):
    """Per manager, each cause of failure and each recovery per run, apart, with 95% bootstrap
    intervals over seeds."""
    rows = []
    for m, r in table.iterrows():
        for col, title in OUTCOME_PANELS:
            rows.append(
                {
                    "manager": m,
                    "measure": title,
                    "mean": r[col],
                    "lo": r[f"{col}_lo"],
                    "hi": r[f"{col}_hi"],
                }
            )
    df = pd.DataFrame(rows)
    order = list(table.index)
    base = alt.Chart(df).encode(y=alt.Y("manager:N", sort=order, title=None))
    bars = base.mark_bar(color="#4c78a8").encode(x=alt.X("mean:Q", title="per run"))
    err = base.mark_rule(color="black").encode(x="lo:Q", x2="hi:Q")
    seeds = int(table.seeds.iloc[0])
    return (
        alt.layer(bars, err, data=df)
        .properties(width=150, height=16 * len(order))
        .facet(
            facet=alt.Facet(
                "measure:N",
                title=None,
                sort=[t for _, t in OUTCOME_PANELS],
                header=alt.Header(labelLimit=0, labelFontSize=11),
            ),
            columns=3,
        )
        .resolve_scale(x="independent")
        .properties(
            title=alt.TitleParams(
                "What each window manager does to a plan-driven agent's calls, by cause",
                subtitle=[
                    f"mean per simulated run over {seeds} seeds, 95% bootstrap interval over "
                    "seeds; source: simulated (workbench.closure.window.agent)",
                    "silent: a guessed handle the tool accepted; tool error: one it refused; "
                    "restores: recoveries from a tombstone;",
                    "'-off': closure enforcement switched off; '-raise': the gate in raise mode; "
                    "'-miss p': the tombstone store misses a share p of restores",
                ],
                anchor="start",
            )
        )
    )
