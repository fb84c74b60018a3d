"""Charts of notebook 09 (altair): step cost and memory against N, retention as the store grows."""

from __future__ import annotations

import altair as alt
import pandas as pd

_LOG = alt.Scale(type="log")


def step_chart(step: pd.DataFrame) -> alt.Chart:
    """One retention step and the numpy floor against N, log-log."""
    long = step.melt(
        id_vars=["blocks"], value_vars=["step_s", "floor_s"], var_name="what", value_name="seconds"
    )
    long["what"] = long["what"].map({"step_s": "our DSGC step", "floor_s": "numpy floor"})
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("blocks:Q", scale=_LOG, title="blocks in the store (N)"),
            y=alt.Y("seconds:Q", scale=_LOG, title="seconds per step (median)"),
            color=alt.Color("what:N", title=None),
            strokeDash=alt.StrokeDash("what:N", legend=None),
        )
        .properties(
            width=360,
            height=240,
            title=alt.TitleParams(
                "One retention step against N (d = 384, |E| = N), beside the floor",
                subtitle="floor: one float32 mat-vec + one stable argsort + one bincount",
                anchor="start",
            ),
        )
    )


def memory_chart(mem: pd.DataFrame) -> alt.Chart:
    """Peak resident memory of a step and the embedding matrix against N, log-log."""
    long = mem.melt(
        id_vars=["blocks"],
        value_vars=["peak_mib", "matrix_mib"],
        var_name="what",
        value_name="MiB",
    )
    long["what"] = long["what"].map(
        {"peak_mib": "peak resident (process)", "matrix_mib": "embedding matrix"}
    )
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("blocks:Q", scale=_LOG, title="blocks in the store (N)"),
            y=alt.Y("MiB:Q", scale=_LOG, title="MiB"),
            color=alt.Color("what:N", title=None),
        )
        .properties(
            width=360,
            height=240,
            title=alt.TitleParams(
                "Memory of one step against N: the matrix dominates",
                subtitle="peak: Linux VmHWM of a fresh process around the step",
                anchor="start",
            ),
        )
    )


def retention_chart(summary: pd.DataFrame) -> alt.FacetChart:
    """Full-chain retention against N, per encoder (rows) and regime (columns)."""
    return (
        alt.Chart(summary)
        .mark_line(point=True)
        .encode(
            x=alt.X("blocks:Q", scale=_LOG, title="blocks in the store (N)"),
            y=alt.Y("full_chain:Q", title="full-chain retention", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("policy:N", sort=["similarity", "dsgc"], title="policy"),
            strokeDash=alt.StrokeDash("template:N", title="template"),
        )
        .properties(width=260, height=160)
        .facet(row=alt.Row("encoder:N", title=None), column=alt.Column("regime:N", title=None))
        .properties(
            title=alt.TitleParams(
                "The one-hop rule as the store grows (M = 2, lambda = 1)",
                subtitle="each chain's query over the whole store; budget C = 2L of that chain",
                anchor="start",
            )
        )
    )
