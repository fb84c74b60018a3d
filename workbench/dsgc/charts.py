"""Altair charts: the score landscape, the semantic valley, ours-vs-paper bars and sweeps.

Every chart takes plain DataFrames or a Trace and returns an altair chart; nothing is rendered
here (notebook.show_figure renders to SVG + PNG). Colours are fixed so that a chain block is
the same blue in every figure, a honeypot the same vermillion and a filler the same grey.
"""

from __future__ import annotations

import textwrap

import altair as alt
import pandas as pd

from workbench.common.fonts import FAMILY
from workbench.dsgc import viewdata
from workbench.dsgc.scenario import KINDS
from workbench.dsgc.trace import Trace

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies
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
SUBTITLE_CHARS = 80  # a subtitle wraps here, so it never sets a figure's width


def _kind_scale() -> alt.Scale:
    return alt.Scale(domain=list(KINDS), range=list(KIND_COLORS))


def _scale(mapping: dict, present) -> alt.Scale:
    domain = [k for k in mapping if k in set(present)]
    return alt.Scale(domain=domain, range=[mapping[k] for k in domain])


CONFIG = alt.Config(
    font=FAMILY,  # the shipped family first (workbench.common.fonts): figures are byte-stable
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
#
# One spec per chart, fed by name: the layers read named datasets (viewdata.landscape_data /
# valley_data) and params (ymax, ids, chain, head, sub). A static figure binds one run's rows
# into the spec; the live explorer builds the spec once in the browser and swaps the rows.

LANDSCAPE_Y = {
    "components": "retention score I = r + λ·π",
    "similarity": "cosine similarity to the query",
    "recency": "recency score (newest block = 1)",
}
STATUS_SHAPES = ("circle", "diamond", "cross")


def _landscape_layers(family: str) -> list:
    x = alt.X(
        "rank:O",
        title="block, in ranking order (best first)",
        axis=alt.Axis(labelAngle=-60, labelExpr="ids[datum.value - 1]"),
    )
    comps = list(viewdata.COMPONENTS) if family == "components" else ["score"]
    opacity = (
        alt.Opacity(
            "component:N",
            title="score component",
            sort=comps,
            scale=alt.Scale(domain=comps, range=[1.0, 0.45]),
            legend=alt.Legend(symbolFillColor="#0072B2"),
        )
        if len(comps) > 1
        else alt.value(1.0)  # one component: a one-value opacity scale draws nothing on canvas
    )
    tooltip = [
        alt.Tooltip("id:N"),
        alt.Tooltip("kind:N"),
        alt.Tooltip("rank:Q"),
        alt.Tooltip("cost:Q"),
        alt.Tooltip("sim:Q", format=".3f"),
        alt.Tooltip("r:Q", format=".4f"),
        alt.Tooltip("pi:Q", format=".4f"),
        alt.Tooltip("I:Q", format=".4f"),
        alt.Tooltip("status:N"),
    ]
    bars = (
        alt.Chart(alt.NamedData("land"))
        .mark_bar()
        .encode(
            x=x,
            y=alt.Y(
                "value:Q",
                stack="zero",
                title=LANDSCAPE_Y[family],
                scale=alt.Scale(domainMin=0, domainMax=alt.ExprRef("ymax")),
            ),
            color=alt.Color("kind:N", title="block kind", scale=_kind_scale()),
            opacity=opacity,
            order=alt.Order("order:Q"),
            tooltip=tooltip,
        )
    )
    status = (
        alt.Chart(alt.NamedData("marks"))
        .mark_point(size=40, filled=True, color="black")
        .encode(
            x=x,
            y=alt.Y("y:Q"),
            shape=alt.Shape(
                "status:N",
                title="after the budgeted walk",
                scale=alt.Scale(domain=list(viewdata.STATUSES), range=list(STATUS_SHAPES)),
            ),
        )
    )
    edge = alt.X("rank:O", bandPosition=0)  # the rule sits on the left edge of the cut block
    rule = (
        alt.Chart(alt.NamedData("cut"))
        .mark_rule(strokeDash=[6, 3], color="black", strokeWidth=1.5)
        .encode(x=edge)
    )
    rule_text = (
        alt.Chart(alt.NamedData("cut"))
        .mark_text(align="left", baseline="top", fontSize=11, dx=5)
        .encode(x=edge, y=alt.value(2), text="label:N")
    )
    notes = (
        alt.Chart(alt.NamedData("notes"))
        .mark_text(angle=300, align="left", baseline="middle", fontSize=11, fontWeight="bold")
        .encode(x=x, y="y:Q", text="label:N")
    )
    return [bars, status, rule, rule_text, notes]


def _valley_layers() -> list:
    series = list(viewdata.VALLEY_SERIES)
    palette = alt.Scale(domain=series, range=list(viewdata.VALLEY_COLORS))
    color = alt.Color("series:N", title="run", sort=series, scale=palette)
    x = alt.X(
        "step:O",
        title="chain block (each depends on the one before it)",
        axis=alt.Axis(labelAngle=0, labelExpr="chain[datum.value]"),
    )
    y = alt.Y("score:Q", title="retention score (r before, I after)")
    data = alt.NamedData("valley")
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
            color=color,
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
                alt.Tooltip("series:N"),
                alt.Tooltip("block:N"),
                alt.Tooltip("sim:Q", format=".3f"),
                alt.Tooltip("score:Q", format=".4f"),
                alt.Tooltip("rank:Q"),
                alt.Tooltip("status:N"),
            ],
        )
    )
    labels = [  # I = r + lambda * pi >= r: the after-point is never below the before-point, so
        # its rank goes above it and the before-rank below, clear of each other and of the lines
        alt.Chart(data)
        .transform_filter(f"datum.series == '{s}'")
        .mark_text(dy=dy, baseline=baseline, fontSize=10)
        .encode(x=x, y=y, color=color, text="label:N")
        for s, dy, baseline in ((series[0], 9, "top"), (series[1], -9, "bottom"))
    ]
    cuts = alt.NamedData("vcut")
    ccolor = alt.Color("color:N", scale=None)
    rule = (
        alt.Chart(cuts)
        .mark_rule(strokeDash=[3, 3], strokeWidth=1.2)
        .encode(y="score:Q", color=ccolor)
    )
    texts = [  # outside the plot, right of it: clear of the points and their rank labels
        alt.Chart(cuts)
        .transform_filter(f"datum.place == '{place}'")
        .mark_text(align="left", baseline=baseline, dx=4, dy=dy, fontSize=10)
        .encode(x=alt.value(alt.ExprRef("width")), y="score:Q", text="label:N", color=ccolor)
        for place, baseline, dy in (
            ("upper", "bottom", -1),
            ("lower", "top", 1),
            ("middle", "middle", 0),
        )
    ]
    return [line, points, *labels, rule, *texts]


def _rescue_layers() -> list:
    return [
        alt.Chart(alt.NamedData("rescue"))
        .mark_line(interpolate="step-after", point=alt.OverlayMarkDef(size=60, filled=True))
        .encode(
            x=alt.X("x:Q", title="propagation weight λ", axis=alt.Axis(format="~g")),
            y=alt.Y(
                "kept:Q",
                title="full chain kept (1 = yes)",
                scale=alt.Scale(domain=[-0.1, 1.1]),
                axis=alt.Axis(values=[0, 1]),
            ),
            color=alt.Color("label:N", title="setting"),
            tooltip=[
                alt.Tooltip("label:N"),
                alt.Tooltip("x:Q", title="λ"),
                alt.Tooltip("kept:Q"),
                alt.Tooltip("evicted:N"),
            ],
        )
    ]


LIVE = {  # spec name -> (layers, params, width, height)
    **{f: (lambda f=f: _landscape_layers(f), ("ymax", "ids"), 640, 210) for f in LANDSCAPE_Y},
    "valley": (_valley_layers, ("chain",), 340, 170),
    "rescue": (_rescue_layers, (), 320, 140),
}
PARAM_DEFAULTS = {"ymax": 1.0, "ids": [], "chain": [], "head": "", "sub": []}


def _bound(name: str, data: dict, width, height: int, title: str | None = None) -> alt.LayerChart:
    """One run's rows bound into a spec: a static chart (for figures and notebooks)."""
    build, params, _, _ = LIVE[name]
    sets = {k: v for k, v in data.items() if k not in ("head", "sub", *params)}
    chart = (
        alt.layer(*build())
        .add_params(*[alt.param(name=p, value=data[p]) for p in params])
        .properties(
            width=width,
            height=height,
            title=alt.TitleParams(title or data["head"], subtitle=data["sub"]),
        )
    )
    chart.datasets = sets
    return _config(chart)


def landscape(trace: Trace, title: str | None = None) -> alt.LayerChart:
    """Every block ranked by score: bars coloured by kind, r and λ·π stacked, the budget cutoff
    as a dashed rule, kept / kept-past-the-cutoff / evicted markers on top, the displaced block
    and its displacer named."""
    data = viewdata.landscape_data(trace)
    return _bound(viewdata.family(trace.policy), data, alt.Step(STEP), 300, title)


def valley(before: Trace, after: Trace, title: str | None = None) -> alt.LayerChart:
    """The semantic valley: chain scores c1 -> c2 -> c3 before and after propagation, each run's
    budget cutoff as a dashed line; filled points were kept, hollow squares evicted."""
    chart = _bound("valley", viewdata.valley_data(before, after), 380, 260, title)
    legend = {**CONFIG.to_dict().get("legend", {}), "orient": "bottom"}  # the cutoffs' labels
    chart.config = alt.Config.from_dict({**CONFIG.to_dict(), "legend": legend})  # go right
    return chart


def live_specs() -> dict:
    """The vega-lite specs the browser builds once (workbench/explore/static/specs.json is this, saved
    by scripts/build_static.py): data by name, params as signals, width fitted by the page."""
    out = {}
    for name, (build, params, width, height) in LIVE.items():
        chart = alt.layer(*build()).add_params(
            *[alt.param(name=p, value=PARAM_DEFAULTS[p]) for p in (*params, "head", "sub")]
        )
        spec = _config(chart.properties(width=width, height=height)).to_dict(validate=False)
        spec["title"] = {"text": {"expr": "head"}, "subtitle": {"expr": "sub"}}
        spec["autosize"] = {"type": "fit-x", "contains": "padding"}
        if name == "valley":
            spec["config"]["legend"] = {**spec["config"].get("legend", {}), "orient": "bottom"}
        out[name] = spec
    return out


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


def sweep_chart(
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


# --- beyond the paper (notebook 10): retention with bootstrap intervals ------------------------

# the conversations study's arms (notebook 12), in the policies' colours; the right graph, an
# upper bound, in the paper's source colour
ARM_COLORS = {
    "recency": POLICY_COLORS["recency"],
    "similarity-only": POLICY_COLORS["similarity"],
    "DSGC, induced graph": POLICY_COLORS["dsgc"],
    "DSGC, right graph": SOURCE_COLORS["paper"],
}
HOP_COLORS = {"0": "#D55E00", "1": "#56B4E9", "2": "#0072B2", "3": "#004C80", "4": "#00263F"}


def interval_chart(
    table: pd.DataFrame,
    x: str,
    color: str,
    title: str,
    subtitle: str,
    *,
    x_title: str | None = None,
    bars: bool = False,
    column: str = "template",
    row: str | None = None,
    colors: dict | None = None,
    dash: str | None = None,
) -> alt.Chart:
    """Mean retention per `x` with bootstrap-interval whiskers (columns lo, hi), coloured by
    `color`, small multiples by `column` (and `row`): lines against a numeric `x` (titled
    `x_title`, one line per `color` and `dash`, each row's x scale its own), or with `bars`, bars
    per `x` grouped by an x offset."""
    data = table.copy()
    if bars:
        layers, width = _interval_bars(data, x, x_title, color, colors, dash)
    else:
        layers, width = _interval_lines(data, x, x_title, color, colors, dash, row)
    chart = alt.layer(*layers, data=data).properties(width=width, height=140)
    facet = {
        "column": alt.Column(f"{column}:N", title=None, sort=list(dict.fromkeys(data[column])))
    }
    if row:
        facet["row"] = alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(data[row])))
    chart = chart.facet(**facet)
    if not bars:
        chart = chart.resolve_scale(x="independent")
    lines = textwrap.wrap(subtitle, SUBTITLE_CHARS)
    return _config(chart.properties(title=alt.TitleParams(title, subtitle=lines)))


def _tips(*first) -> list:
    return [*first, alt.Tooltip("mean:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"),
            alt.Tooltip("hi:Q", format=".3f"), "n"]  # fmt: skip


DODGE = 0.12  # of the smallest step between two x values: how far apart coinciding lines are drawn


def _interval_lines(data, x, x_title, color, colors, dash, row=None) -> tuple[list, int]:
    """Lines (one per colour and dash) drawn a little apart along x, so a line whose values equal
    another's is still seen beside it, not under it (the step is each row's own, its x scale is);
    the axis and the tooltips keep the true x."""
    keys = [color, dash] if dash else [color]
    group = list(zip(*(data[k] for k in keys), strict=True))
    order = {g: i for i, g in enumerate(dict.fromkeys(group))}
    rows = data[row] if row else [None] * len(data)
    steps = {}
    for r in dict.fromkeys(rows):
        xs = sorted({v for v, w in zip(data[x], rows, strict=True) if w == r})
        steps[r] = min((b - a for a, b in zip(xs, xs[1:], strict=False)), default=1.0) * DODGE
    data["x_drawn"] = [
        v + (order[g] - (len(order) - 1) / 2) * steps[r]
        for v, g, r in zip(data[x], group, rows, strict=True)
    ]
    cscale = _scale(colors, data[color]) if colors else alt.Scale(scheme="viridis")
    xenc = alt.X("x_drawn:Q", title=x_title, axis=alt.Axis(format="~g", tickMinStep=0.25))
    yenc = alt.Y("mean:Q", title="full-chain retention", scale=alt.Scale(domain=[-0.02, 1.05]))
    col = alt.Color(f"{color}:N", title=color, scale=cscale)
    line = {"x": xenc, "y": yenc, "color": col, "tooltip": _tips(color, x)}
    if dash:  # the dash legend draws each pattern: the points are their own layer, undashed
        line["strokeDash"] = alt.StrokeDash(
            f"{dash}:N",
            title=dash,
            legend=alt.Legend(symbolType="stroke", symbolStrokeColor="#333", symbolStrokeWidth=2),
        )
        line["detail"] = f"{dash}:N"
    base = alt.Chart()
    return [
        base.mark_line(strokeWidth=1.5).encode(**line),
        base.mark_point(size=40, filled=True, opacity=1).encode(
            x=xenc, y=yenc, color=col, tooltip=_tips(color, x)
        ),
        base.mark_rule(opacity=0.7).encode(x=xenc, y="lo:Q", y2="hi:Q", color=col),
    ], 130


def _interval_bars(data, x, x_title, color, colors, dash) -> tuple[list, int]:
    order = list(dict.fromkeys(data[x]))
    cscale = _scale(colors, data[color]) if colors else alt.Scale(scheme="tableau10")
    xenc = alt.X(f"{x}:N", title=None, sort=order)
    off = alt.XOffset(f"{color}:N", sort=list(dict.fromkeys(data[color])))
    yenc = alt.Y("mean:Q", title="full-chain retention", scale=alt.Scale(domain=[0, 1.05]))
    base = alt.Chart()
    bar = {"x": xenc, "xOffset": off, "y": yenc, "color": alt.Color(f"{color}:N", scale=cscale),
           "tooltip": _tips(x, color)}  # fmt: skip
    return [
        base.mark_bar().encode(**bar),
        base.mark_rule(color="black").encode(x=xenc, xOffset=off, y="lo:Q", y2="hi:Q"),
    ], 150


def setting_colors(settings) -> dict:
    """Fixed colours for 'similarity' and 'dsgc h=K ...' settings: similarity vermillion, one hop
    sky blue, two hops blue, more hops darker still."""
    out = {}
    for s in dict.fromkeys(settings):
        hop = "0" if s == "similarity" else (s.split("h=")[1].split()[0] if "h=" in s else "1")
        out[s] = HOP_COLORS.get(hop, HOP_COLORS["4"])
    return out
