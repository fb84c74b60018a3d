"""Altair charts: the score landscape, the semantic valley, ours-vs-paper bars and sweeps.

Every chart takes plain DataFrames or a Trace and returns an altair chart; nothing is rendered
here (notebook.show_figure renders to SVG + PNG). Colours are fixed so that a chain block is
the same blue in every figure, a honeypot the same vermillion and a filler the same grey.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from workbench.trace import Trace

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies
KINDS = ("chain", "honeypot", "filler")
KIND_COLORS = ("#0072B2", "#D55E00", "#A0A0A0")
SOURCE_COLORS = {"ours": "#0072B2", "paper": "#E69F00"}
POLICY_COLORS = {
    "similarity": "#D55E00",
    "no-graph": "#CC79A7",
    "dsgc": "#0072B2",
    "recency": "#7F7F7F",
}
TEMPLATE_COLORS = {
    "expense": "#56B4E9",
    "threshold": "#009E73",
    "role": "#0072B2",
    "profile": "#D55E00",
}
STEP = 22  # pixels per block in the landscape


def _kind_scale() -> alt.Scale:
    return alt.Scale(domain=list(KINDS), range=list(KIND_COLORS))


def _scale(mapping: dict, present) -> alt.Scale:
    domain = [k for k in mapping if k in set(present)]
    return alt.Scale(domain=domain, range=[mapping[k] for k in domain])


CONFIG = alt.Config(
    axis=alt.AxisConfig(labelFontSize=11, titleFontSize=12),
    legend=alt.LegendConfig(labelFontSize=11, titleFontSize=12),
    title=alt.TitleConfig(fontSize=14, subtitleFontSize=11, anchor="start"),
    view=alt.ViewConfig(stroke=None),
)


def _config(chart):
    """Shared fonts and frame. Set in place: configure_*() would deep-copy the chart each time,
    which costs more than the explorer's whole update."""
    chart.config = CONFIG
    return chart


# --- per-run charts --------------------------------------------------------------------------


def first_evicted(trace: Trace) -> int | None:
    """Rank (1-based) of the first block the budgeted walk had to drop: the budget cutoff."""
    kept = trace.retention.kept[trace.retention.order]
    if kept.all():
        return None
    return int(np.argmin(kept)) + 1


def score_axis_title(trace: Trace) -> str:
    if trace.policy in ("dsgc", "no-graph"):
        return "retention score I = r + λ·π"
    if trace.policy == "recency":
        return "recency score (newest block = 1)"
    return "cosine similarity to the query"


def landscape_frame(trace: Trace) -> pd.DataFrame:
    """Long form of every block's score: one row per (block, component), in ranking order."""
    f = trace.frame()
    lam = float(trace.retention.params.get("lambda", 0.0))
    if trace.policy in ("dsgc", "no-graph"):
        parts = [("r: query relevance", f["r"]), ("λ·π: propagated support", lam * f["pi"])]
    else:
        parts = [("score", f["I"])]
    rows = []
    for order, (name, values) in enumerate(parts):
        part = f[["id", "kind", "rank", "cost", "sim", "r", "pi", "I", "kept"]].copy()
        part["component"], part["value"], part["order"] = name, values.to_numpy(), order
        rows.append(part)
    out = pd.concat(rows, ignore_index=True)
    out["status"] = np.where(out["kept"], "kept", "evicted")
    return out


def landscape(trace: Trace, title: str | None = None) -> alt.Chart:
    """Every block ranked by score: bars coloured by kind, r and λ·π stacked, the budget cutoff
    as a dashed rule, kept/evicted markers on top, the displaced block and its displacer named."""
    data = landscape_frame(trace)
    ids = trace.ranking
    top = data.groupby("id", sort=False)["I"].first().to_dict()
    ymax = max(float(max(top.values())), 1e-9)
    x = alt.X(
        "id:N",
        sort=ids,
        title="block, in ranking order (best first)",
        axis=alt.Axis(labelAngle=-60),
    )
    components = list(dict.fromkeys(data["component"]))
    opacity = alt.Opacity(
        "component:N",
        title="score component",
        scale=alt.Scale(domain=components, range=[1.0, 0.45][: len(components)]),
        sort=components,
        legend=alt.Legend(symbolFillColor="#0072B2") if len(components) > 1 else None,
    )
    tooltip = [
        "id",
        "kind",
        "rank",
        "cost",
        alt.Tooltip("sim:Q", format=".3f"),
        alt.Tooltip("r:Q", format=".4f"),
        alt.Tooltip("pi:Q", format=".4f"),
        alt.Tooltip("I:Q", format=".4f"),
        "status",
    ]
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(
                "value:Q",
                stack="zero",
                title=score_axis_title(trace),
                scale=alt.Scale(domain=[0, ymax * 1.45]),
            ),
            color=alt.Color("kind:N", title="block kind", scale=_kind_scale()),
            opacity=opacity,
            order=alt.Order("order:Q"),
            tooltip=tooltip,
        )
    )
    marks = pd.DataFrame(
        {
            "id": ids,
            "I": [top[i] for i in ids],
            "status": [
                "kept" if k else "evicted" for k in trace.retention.kept[trace.retention.order]
            ],
        }
    )
    marks["y"] = marks["I"] + ymax * 0.04
    status = (
        alt.Chart(marks)
        .mark_point(size=40, filled=True, color="black")
        .encode(
            x=x,
            y="y:Q",
            shape=alt.Shape(
                "status:N",
                title="after the budgeted walk",
                scale=alt.Scale(domain=["kept", "evicted"], range=["circle", "cross"]),
            ),
        )
    )
    layers = [bars, status]
    cut = first_evicted(trace)
    if cut is not None:
        rule = pd.DataFrame(
            {
                "id": [ids[cut - 1]],
                "label": [f"← budget cutoff: C = {trace.retention.budget} tokens"],
            }
        )
        layers.append(
            alt.Chart(rule)
            .mark_rule(xOffset=-STEP / 2, strokeDash=[6, 3], color="black", strokeWidth=1.5)
            .encode(x=x)
        )
        layers.append(
            alt.Chart(rule)
            .mark_text(xOffset=-STEP / 2 + 5, align="left", baseline="top", fontSize=11)
            .encode(x=x, y=alt.value(2), text="label:N")
        )
    notes = []
    if trace.displaced:
        d = trace.displaced[0]
        notes.append((d, f"displaced {d}"))
        if trace.top_non_chain is not None and trace.margin is not None:
            notes.append((trace.top_non_chain, f"displacer (+{trace.margin:.3f})"))
    if notes:
        ann = pd.DataFrame({"id": [n[0] for n in notes], "label": [n[1] for n in notes]})
        ann["y"] = [top[i] + ymax * 0.09 for i in ann["id"]]
        layers.append(
            alt.Chart(ann)
            .mark_text(angle=300, align="left", baseline="middle", fontSize=11, fontWeight="bold")
            .encode(x=x, y="y:Q", text="label:N")
        )
    sc = trace.scenario
    head = title or f"Score landscape: {sc.id}, {trace.encoder} encoder, {trace.policy}"
    chart = alt.layer(*layers).properties(
        width=alt.Step(STEP),
        height=300,
        title=alt.TitleParams(head, subtitle=_wrap(trace.verdict().split(": ", 1)[-1])),
    )
    return _config(chart)


def _wrap(text: str, width: int = 110) -> list[str]:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + len(w) + 1 > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return [*lines, line] if line else lines


def valley_frame(before: Trace, after: Trace) -> pd.DataFrame:
    """The chain blocks' scores under two runs (no propagation, then propagation), chain order."""
    rows = []
    for label, t in (("before: r (λ = 0)", before), ("after: I = r + λ·π", after)):
        pos = t.scenario.index()
        for k, c in enumerate(t.scenario.chain):
            i = pos[c]
            rows.append(
                {
                    "series": label,
                    "block": c,
                    "step": k,
                    "sim": float(t.retention.sims[i]),
                    "score": float(t.retention.scores[i]),
                    "rank": t.chain_ranks[c],
                    "status": "kept" if t.retention.kept[i] else "evicted",
                }
            )
    return pd.DataFrame(rows)


def cutoff_score(trace: Trace) -> float | None:
    """The score of the first block the walk dropped (None when everything was kept)."""
    cut = first_evicted(trace)
    if cut is None:
        return None
    return float(trace.retention.scores[trace.retention.order[cut - 1]])


def valley(before: Trace, after: Trace, title: str | None = None) -> alt.Chart:
    """The semantic valley: chain scores c1 -> c2 -> c3 before and after propagation, each run's
    budget cutoff as a dashed line; filled points were kept, hollow squares evicted."""
    data = valley_frame(before, after)
    series = list(dict.fromkeys(data["series"]))
    palette = alt.Scale(domain=series, range=["#7F7F7F", "#0072B2"])
    color = alt.Color("series:N", title="run", sort=series, scale=palette)
    quiet = color  # one shared legend: vega-lite drops it if any layer says legend=None
    x = alt.X(
        "block:N",
        sort=list(before.scenario.chain),
        title="chain block (each depends on the one before it)",
        axis=alt.Axis(labelAngle=0),
    )
    y = alt.Y("score:Q", title="retention score (r before, I after)")
    line = (
        alt.Chart(data)
        .mark_line(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=alt.StrokeDash(
                "series:N",
                sort=series,
                title="run",
                scale=alt.Scale(domain=series, range=[[5, 3], [1, 0]]),
            ),
        )
    )
    points = (
        alt.Chart(data)
        .mark_point(size=120, strokeWidth=2, filled=True)
        .encode(
            x=x,
            y=y,
            color=quiet,
            stroke=alt.Stroke("series:N", sort=series, scale=palette, title="run"),
            fillOpacity=alt.condition("datum.status == 'kept'", alt.value(1.0), alt.value(0.0)),
            shape=alt.Shape(
                "status:N",
                title="after the budgeted walk",
                scale=alt.Scale(domain=["kept", "evicted"], range=["circle", "square"]),
                legend=alt.Legend(
                    symbolStrokeColor="black", symbolFillColor="white", symbolStrokeWidth=2
                ),
            ),
            tooltip=[
                "series",
                "block",
                alt.Tooltip("sim:Q", format=".3f"),
                alt.Tooltip("score:Q", format=".4f"),
                "rank",
                "status",
            ],
        )
    )
    data["label"] = [f"rank {r}" for r in data["rank"]]
    labels = [
        alt.Chart(data[data.series == s])
        .mark_text(dx=dx, align=align, fontSize=10)
        .encode(x=x, y=y, color=quiet, text="label:N")
        for s, dx, align in ((series[0], -12, "right"), (series[1], 12, "left"))
    ]
    layers = [line, points, *labels]
    cuts = [(s, cutoff_score(t)) for s, t in zip(series, (before, after), strict=True)]
    cuts = [(s, c) for s, c in cuts if c is not None]
    ccolor = quiet
    if len(cuts) == 2 and abs(cuts[0][1] - cuts[1][1]) < 1e-12:
        cuts = [(series[1], cuts[0][1], "budget cutoff (same block in both runs)")]
        ccolor = alt.value("#333333")
    else:
        cuts = [(s, c, f"budget cutoff, {s.split(':')[0]}") for s, c in cuts]
    if cuts:
        cdf = pd.DataFrame(cuts, columns=["series", "score", "label"])
        cdf["x"] = [4 if s == series[0] and len(cdf) > 1 else 376 for s in cdf["series"]]
        cdf["align"] = ["left" if x < 100 else "right" for x in cdf["x"]]
        layers.append(
            alt.Chart(cdf)
            .mark_rule(strokeDash=[3, 3], strokeWidth=1.2)
            .encode(y="score:Q", color=ccolor)
        )
        for align in ("left", "right"):  # before-run label on the left, after-run on the right
            part = cdf[cdf["align"] == align]
            if len(part):
                layers.append(
                    alt.Chart(part)
                    .mark_text(align=align, baseline="bottom", dy=-2, fontSize=10)
                    .encode(x=alt.X("x:Q", scale=None), y="score:Q", text="label:N", color=ccolor)
                )
    sc = after.scenario
    head = title or f"Semantic valley: {sc.id}, {after.encoder} encoder"
    sims = ", ".join(f"{r.block} {r.sim:.2f}" for r in data[data.series == series[0]].itertuples())
    chart = alt.layer(*layers).properties(
        width=380,
        height=260,
        title=alt.TitleParams(
            head,
            subtitle=[
                f"cosine to the query: {sims}",
                "dashed line: budget cutoff (score of the first block the budgeted walk dropped)",
            ],
        ),
    )
    return _config(chart)


# --- suite charts ----------------------------------------------------------------------------


def _long_with_paper(table: pd.DataFrame) -> pd.DataFrame:
    """ours and paper as rows (source column), with clipped error-bar ends."""
    ours = table.assign(source="ours")
    paper = (
        table.drop(columns=["mean", "std"])
        .rename(columns={"paper_mean": "mean", "paper_std": "std"})
        .assign(source="paper")
    )
    out = pd.concat([ours, paper[paper["mean"].notna()]], ignore_index=True)
    out["std"] = out["std"].fillna(0.0)
    out["lo"] = (out["mean"] - out["std"]).clip(0, 1)
    out["hi"] = (out["mean"] + out["std"]).clip(0, 1)
    return out[[c for c in out.columns if c not in ("ours", "paper", "paper_mean", "paper_std")]]


def ours_vs_paper(table: pd.DataFrame, group: str, title: str) -> alt.Chart:
    """Grouped bars: ours beside the paper's figure for each (group, policy), one panel per
    encoder; whiskers are mean ± sample std over seeds, clipped to [0, 1]."""
    data = _long_with_paper(table)
    data["cell"] = data[group] + " / " + data["policy"]
    cells = list(dict.fromkeys(data["cell"]))
    src = alt.Color("source:N", title="source", scale=_scale(SOURCE_COLORS, data["source"]))
    base = alt.Chart(data).encode(
        x=alt.X("cell:N", sort=cells, title=f"{group} / policy", axis=alt.Axis(labelAngle=-40)),
        xOffset=alt.XOffset("source:N", sort=["ours", "paper"]),
    )
    bars = base.mark_bar().encode(
        y=alt.Y(
            "mean:Q",
            title="full-chain retention (mean over seeds)",
            scale=alt.Scale(domain=[0, 1.05]),
        ),
        color=src,
        tooltip=[
            "encoder",
            group,
            "policy",
            "source",
            alt.Tooltip("mean:Q", format=".2f"),
            alt.Tooltip("std:Q", format=".2f"),
        ],
    )
    whiskers = base.mark_rule(color="black").encode(y="lo:Q", y2="hi:Q")
    return _config(
        alt.layer(bars, whiskers, data=data)
        .properties(width=alt.Step(16), height=220)
        .facet(column=alt.Column("encoder:N", title="encoder"))
        .properties(
            title=alt.TitleParams(
                title, subtitle=["whiskers: ± sample std over seeds, clipped to [0, 1]"]
            )
        )
    )


def sweep(
    table: pd.DataFrame,
    x: str,
    x_title: str,
    color: str,
    title: str,
    facet: str | None = None,
    log_x: bool = False,
) -> alt.Chart:
    """A sweep: mean retention against `x`, one line per `color`, whiskers ± sample std, the
    paper's figures overlaid as hollow diamonds (same colour)."""
    data = _long_with_paper(table)
    mapping = {"policy": POLICY_COLORS, "template": TEMPLATE_COLORS}.get(color)
    cscale = _scale(mapping, data[color]) if mapping else alt.Scale()
    ctitle = {"policy": "policy", "template": "template", "encoder": "encoder"}.get(color, color)
    xs = sorted(data[x].unique())
    xenc = alt.X(
        f"{x}:Q",
        title=x_title,
        scale=alt.Scale(type="log" if log_x else "linear", domain=[xs[0], xs[-1]], nice=False),
        axis=alt.Axis(values=xs, format="~g"),
    )
    yenc = alt.Y(
        "mean:Q",
        title="full-chain retention (mean over seeds)",
        scale=alt.Scale(domain=[-0.02, 1.05]),
    )
    col = alt.Color(
        f"{color}:N",
        title=ctitle,
        scale=cscale,
        legend=alt.Legend(
            labelExpr="datum.label == 'recency' ? 'recency (sliding window)' : datum.label"
        ),
    )
    ours, paper = alt.datum.source == "ours", alt.datum.source == "paper"
    data["marker"] = "paper (published)"
    layers = [
        alt.Chart()
        .mark_line(point=alt.OverlayMarkDef(size=50, filled=True))
        .encode(
            x=xenc,
            y=yenc,
            color=col,
            tooltip=[
                color,
                x,
                alt.Tooltip("mean:Q", format=".2f"),
                alt.Tooltip("std:Q", format=".2f"),
                "n",
            ],
        )
        .transform_filter(ours),
        alt.Chart()
        .mark_rule(opacity=0.6)
        .encode(x=xenc, y="lo:Q", y2="hi:Q", color=col)
        .transform_filter(ours),
    ]
    if (data.source == "paper").any():
        layers.append(
            alt.Chart()
            .mark_point(size=110, strokeWidth=2, filled=False)
            .encode(
                x=xenc,
                y=yenc,
                color=col,
                shape=alt.Shape(
                    "marker:N",
                    title="reference",
                    scale=alt.Scale(domain=["paper (published)"], range=["diamond"]),
                ),
                tooltip=[color, x, alt.Tooltip("mean:Q", format=".2f", title="paper mean")],
            )
            .transform_filter(paper)
        )
    chart = alt.layer(*layers, data=data).properties(width=260, height=200)
    if facet:
        chart = chart.facet(column=alt.Column(f"{facet}:N", title=facet))
    return _config(
        chart.properties(
            title=alt.TitleParams(
                title,
                subtitle=[
                    "lines: ours (whiskers ± sample std over seeds, clipped to [0, 1]); "
                    "hollow diamonds: the paper's published means"
                ],
            )
        )
    )


def rescue_curve(frame: pd.DataFrame, x: str, x_title: str, title: str) -> alt.Chart:
    """Workshop: does the chain survive as one knob moves? One step line of 0/1 per setting."""
    data = frame.assign(kept=frame["full_chain_retained"].astype(int))
    xs = sorted(data[x].unique())
    chart = (
        alt.Chart(data)
        .mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=60, filled=True))
        .encode(
            x=alt.X(f"{x}:Q", title=x_title, axis=alt.Axis(values=xs, format="~g")),
            y=alt.Y(
                "kept:Q",
                title="full chain kept (1 = yes)",
                scale=alt.Scale(domain=[-0.1, 1.1]),
                axis=alt.Axis(values=[0, 1]),
            ),
            color=alt.Color("label:N", title="setting"),
            tooltip=["label", x, "kept", "displaced_text"],
        )
        .properties(width=320, height=160, title=title)
    )
    return _config(chart)


# --- beyond the paper (notebook 10): retention with bootstrap intervals ------------------------

HOP_COLORS = {"0": "#D55E00", "1": "#56B4E9", "2": "#0072B2", "3": "#004C80", "4": "#00263F"}


def interval_lines(
    table: pd.DataFrame,
    x: str,
    x_title: str,
    color: str,
    title: str,
    subtitle: str,
    column: str = "template",
    row: str | None = None,
    colors: dict | None = None,
    dash: str | None = None,
) -> alt.Chart:
    """Mean retention against `x` with bootstrap-interval whiskers (columns lo, hi), one line per
    `color` (and `dash`), small multiples by `column` (and `row`), each row's x scale its own."""
    data = table.copy()
    cscale = _scale(colors, data[color]) if colors else alt.Scale(scheme="viridis")
    xenc = alt.X(f"{x}:Q", title=x_title, axis=alt.Axis(format="~g", tickMinStep=0.25))
    yenc = alt.Y("mean:Q", title="full-chain retention", scale=alt.Scale(domain=[-0.02, 1.05]))
    col = alt.Color(f"{color}:N", title=color, scale=cscale)
    tip = [color, x, alt.Tooltip("mean:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f")]
    tip += [alt.Tooltip("hi:Q", format=".3f"), "n"]
    line = {"x": xenc, "y": yenc, "color": col, "tooltip": tip}
    if dash:
        line["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=dash)
        line["detail"] = f"{dash}:N"
    base = alt.Chart()
    layers = [
        base.mark_line(point=alt.OverlayMarkDef(size=40, filled=True), strokeWidth=1.5).encode(
            **line
        ),
        base.mark_rule(opacity=0.7).encode(x=xenc, y="lo:Q", y2="hi:Q", color=col),
    ]
    chart = alt.layer(*layers, data=data).properties(width=170, height=140)
    facet = {
        "column": alt.Column(f"{column}:N", title=None, sort=list(dict.fromkeys(data[column])))
    }
    if row:
        facet["row"] = alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(data[row])))
    chart = chart.facet(**facet).resolve_scale(x="independent")
    return _config(chart.properties(title=alt.TitleParams(title, subtitle=[subtitle])))


def interval_bars(
    table: pd.DataFrame,
    x: str,
    color: str,
    title: str,
    subtitle: str,
    column: str = "template",
    row: str | None = None,
    colors: dict | None = None,
) -> alt.Chart:
    """Mean retention per `x` (bars, coloured by `color`, grouped by an x offset) with
    bootstrap-interval whiskers, small multiples by `column` (and `row`)."""
    data = table.copy()
    order = list(dict.fromkeys(data[x]))
    cscale = _scale(colors, data[color]) if colors else alt.Scale(scheme="tableau10")
    xenc = alt.X(f"{x}:N", title=None, sort=order)
    off = alt.XOffset(f"{color}:N", sort=list(dict.fromkeys(data[color])))
    yenc = alt.Y("mean:Q", title="full-chain retention", scale=alt.Scale(domain=[0, 1.05]))
    tip = [x, color, alt.Tooltip("mean:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f")]
    tip += [alt.Tooltip("hi:Q", format=".3f"), "n"]
    base = alt.Chart()
    layers = [
        base.mark_bar().encode(
            x=xenc, xOffset=off, y=yenc, color=alt.Color(f"{color}:N", scale=cscale), tooltip=tip
        ),
        base.mark_rule(color="black").encode(x=xenc, xOffset=off, y="lo:Q", y2="hi:Q"),
    ]
    chart = alt.layer(*layers, data=data).properties(width=150, height=140)
    facet = {
        "column": alt.Column(f"{column}:N", title=None, sort=list(dict.fromkeys(data[column])))
    }
    if row:
        facet["row"] = alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(data[row])))
    return _config(
        chart.facet(**facet).properties(title=alt.TitleParams(title, subtitle=[subtitle]))
    )


def setting_colors(settings) -> dict:
    """Fixed colours for 'similarity' and 'dsgc h=K ...' settings: similarity vermillion, one hop
    sky blue, two hops blue, more hops darker still."""
    out = {}
    for s in dict.fromkeys(settings):
        hop = "0" if s == "similarity" else (s.split("h=")[1].split()[0] if "h=" in s else "1")
        out[s] = HOP_COLORS.get(hop, HOP_COLORS["4"])
    return out
