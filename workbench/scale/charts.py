"""Charts of notebook 09 (altair): step cost and memory against N, retention as the store grows.
Every one is drawn from recorded numbers and says where and when they were recorded."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.common.provenance import recorded

_LOG = alt.Scale(type="log")
_N = alt.X("blocks:Q", scale=_LOG, title="blocks in the store (N)", axis=alt.Axis(format="~s"))


def _against_n(table: pd.DataFrame, series: dict, y: str, title: str, subtitle: str) -> alt.Chart:
    """Lines of `series` ({column: label}) against N, log-log; the title says it is recorded."""
    long = table.melt(id_vars=["blocks"], value_vars=list(series), var_name="what", value_name=y)
    long["what"] = long["what"].map(series)
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=_N,
            y=alt.Y(f"{y}:Q", scale=_LOG, title=y),
            color=alt.Color("what:N", title=None, sort=list(series.values())),
            strokeDash=alt.StrokeDash("what:N", legend=None, sort=list(series.values())),
        )
        .properties(
            width=360,
            height=240,
            title=alt.TitleParams(title, subtitle=[recorded(table), subtitle], anchor="start"),
        )
    )


def step_chart(step: pd.DataFrame) -> alt.Chart:
    """One retention step, the least-work floor and the scatter-add against N, log-log."""
    return _against_n(
        step,
        {
            "step_s": "our DSGC step",
            "floor_s": "least-work floor",
            "scatter_s": "scatter-add over |E|",
        },
        "seconds per step (median)",
        "One retention step against N (d = 384, |E| = N)",
        "floor: one float32 mat-vec + one argpartition for the head (the step is "
        f"{step.loc[step.blocks.idxmax(), 'ratio']:.2f}x it at the largest N)",
    )


def memory_chart(mem: pd.DataFrame) -> alt.Chart:
    """Peak resident memory of a step and the embedding matrix against N, log-log."""
    return _against_n(
        mem,
        {"peak_mib": "peak resident (process)", "matrix_mib": "embedding matrix"},
        "MiB",
        "Memory of one step against N",
        "peak: Linux VmHWM of a fresh process around the step",
    )


def retention_chart(summary: pd.DataFrame, recorded_as: str) -> alt.FacetChart:
    """Full-chain retention against N, per encoder (rows) and regime (columns)."""
    return (
        alt.Chart(summary)
        .mark_line(point=True)
        .encode(
            x=_N,
            y=alt.Y("full_chain:Q", title="full-chain retention", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("policy:N", sort=["similarity", "dsgc"], title="policy"),
            strokeDash=alt.StrokeDash("template:N", title="template"),
        )
        .properties(width=260, height=160)
        .facet(row=alt.Row("encoder:N", title=None), column=alt.Column("regime:N", title=None))
        .properties(
            title=alt.TitleParams(
                "The one-hop rule as the store grows (M = 2, lambda = 1)",
                subtitle=[
                    recorded_as,
                    "each chain's query over the whole store; budget C = 2L of that chain",
                ],
                anchor="start",
            )
        )
    )
