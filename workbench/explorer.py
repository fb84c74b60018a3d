"""The explorer: one seed's ranking, landscape, valley and verdict, as a pure `update` and a widget.

`update(state)` is what the notebooks, the workshop, the browser test and the bench all call;
`explorer(state)` wraps it in ipywidgets. Scenarios are memoized and encoders are the shared
cached ones, so after the first call for a scenario an update only re-scores and re-draws.
"""

from __future__ import annotations

import html
import os
from dataclasses import asdict

import pandas as pd

from workbench import charts
from workbench.generator import TEMPLATES
from workbench.notebook import show_figure, show_table
from workbench.policies import POLICIES
from workbench.trace import WORKED, Setting, Trace, run_setting, valley_pair

TEMPLATE_CHOICES = (WORKED, *TEMPLATES)


COLUMNS = ("rank", "id", "kind", "status", "cost", "sim", "r", "pi", "I", "text")


def ranking_table(trace: Trace) -> pd.DataFrame:
    """Every block in ranking order: rank, id, kind, kept/evicted, cost, sim, r, pi, I, text."""
    f = trace.frame()
    f["status"] = ["kept" if k else "evicted" for k in f["kept"]]
    f["text"] = [trace.scenario.block(i).text for i in f["id"]]
    return f[list(COLUMNS)].reset_index(drop=True)


def table_cells(table: pd.DataFrame) -> list[list[str]]:
    """The ranking table as the strings the widget shows (header first): floats at fixed places."""
    fmt = {"sim": "{:.3f}", "r": "{:.4f}", "pi": "{:.4f}", "I": "{:.4f}"}
    rows = [list(table.columns)]
    for rec in table.itertuples(index=False):
        rows.append(
            [
                fmt[c].format(v) if c in fmt else str(v)
                for c, v in zip(table.columns, rec, strict=True)
            ]
        )
    return rows


def verdict_line(trace: Trace) -> str:
    """The one-line verdict: the library's Trace.verdict() plus the knobs that produced it."""
    p = trace.retention.params
    knobs = (
        f"lambda={p['lambda']:g}, tau={p['tau']:g}, hops={p['hops']}"
        if trace.policy in ("dsgc", "no-graph")
        else ""
    )
    return trace.verdict() + (f" [{knobs}]" if knobs else "")


def update(state: Setting):
    """(ranking table, landscape chart, valley chart, verdict) for one setting. Pure."""
    trace = run_setting(state)
    before, after = valley_pair(state)
    return (
        ranking_table(trace),
        charts.landscape(trace),
        charts.valley(before, after),
        verdict_line(trace),
    )


# --- rendering ---------------------------------------------------------------------------------


def table_html(table: pd.DataFrame) -> str:
    """The ranking table as HTML with a stable class per row status (kept / evicted) and kind."""
    cells = table_cells(table)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cells[0])
    body = []
    for row, rec in zip(cells[1:], table.itertuples(index=False), strict=True):
        cls = f"wb-{rec.status} wb-kind-{rec.kind}"
        body.append(
            f'<tr class="{cls}">' + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
        )
    return (
        f"<style>{_CSS}</style><table class='wb-table'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


_CSS = """
.wb-table {border-collapse: collapse; font: 12px/1.3 monospace;}
.wb-table th, .wb-table td {padding: 2px 6px; border-bottom: 1px solid #ddd; text-align: left;
  white-space: nowrap;}
.wb-table tr.wb-evicted td {color: #999;}
.wb-table tr.wb-kind-chain td:nth-child(2) {color: #0072B2; font-weight: bold;}
.wb-table tr.wb-kind-honeypot td:nth-child(2) {color: #D55E00; font-weight: bold;}
"""


def chart_svg(chart) -> str:
    """An altair chart as inline SVG (offline, no JavaScript needed in the page)."""
    import vl_convert as vlc

    return vlc.vegalite_to_svg(chart.to_json(validate=False))


def in_voila() -> bool:
    """True inside a Voila kernel (it sets SERVER_SOFTWARE=voila/<version>)."""
    return os.environ.get("SERVER_SOFTWARE", "").startswith("voila")


def snapshot(state: Setting, figures_dir="../figures", name: str = "explorer"):
    """Static rendering of update(state) for stored outputs: table, both figures, verdict.

    Figures are written to figures_dir as NAME_landscape / NAME_valley, except under Voila,
    where the page only displays them (a workshop room must not race on the committed files).
    """
    from IPython.display import SVG, display

    table, land, val, verdict = update(state)
    display({"text/plain": verdict}, raw=True)
    show_table(table.drop(columns=["text"]), digits=4)
    for chart, suffix in ((land, "landscape"), (val, "valley")):
        if in_voila():
            display(SVG(chart_svg(chart)))
        else:
            show_figure(chart, f"{name}_{suffix}", figures_dir)
    return verdict


# --- the widget ----------------------------------------------------------------------------------


def explorer(state: Setting | None = None, encoders=("lexical", "sentence")):
    """The ipywidgets explorer: controls on the left of every knob; the verdict, the ranking table
    and both charts update together on every change. Returns the top-level widget."""
    import ipywidgets as w

    state = state or Setting()
    common = {"style": {"description_width": "110px"}, "layout": w.Layout(width="330px")}

    def pick(options, value, label):
        return w.Dropdown(options=list(options), value=value, description=label, **common)

    def slide(cls, value, lo, hi, step, label, **kw):
        return cls(
            value=value,
            min=lo,
            max=hi,
            step=step,
            description=label,
            continuous_update=False,
            **kw,
            **common,
        )

    two = {"readout_format": ".2f"}
    controls = {
        "template": pick(TEMPLATE_CHOICES, state.template, "template"),
        "seed": slide(w.IntSlider, state.seed, 0, 99, 1, "seed"),
        "encoder": pick(encoders, state.encoder, "encoder"),
        "policy": pick(POLICIES, state.policy, "policy"),
        "multiplier": slide(w.FloatSlider, state.multiplier, 1.0, 5.0, 0.25, "budget M", **two),
        "lam": slide(w.FloatSlider, state.lam, 0.0, 3.0, 0.25, "lambda", **two),
        "tau": slide(w.FloatSlider, state.tau, 0.05, 1.0, 0.05, "tau", **two),
        "hops": slide(w.IntSlider, state.hops, 1, 3, 1, "hops"),
        "total_blocks": pick([20, 50], state.total_blocks, "total blocks"),
    }
    for name, widget in controls.items():
        widget.add_class(f"wb-control-{name.replace('_', '-')}")
    verdict = w.HTML().add_class("wb-verdict")
    ranking = w.HTML().add_class("wb-ranking")
    land = w.HTML().add_class("wb-landscape")
    val = w.HTML().add_class("wb-valley")
    status = w.HTML().add_class("wb-status")

    def current() -> Setting:
        return Setting(**{k: c.value for k, c in controls.items()})

    def refresh(_change=None):
        s = current()
        try:
            table, lchart, vchart, line = update(s)
        except Exception as e:  # show the problem in the page, keep the widget alive
            status.value = f"<b>error:</b> {html.escape(str(e))}"
            return
        ranking.value = table_html(table)
        land.value = chart_svg(lchart)
        val.value = chart_svg(vchart)
        # the verdict goes last: when it changes, the table and charts above are already sent
        verdict.value = f"<b class='wb-verdict-text'>{html.escape(line)}</b>"
        status.value = f"<span class='wb-state'>{html.escape(str(asdict(s)))}</span>"

    for c in controls.values():
        c.observe(refresh, names="value")
    refresh()
    left = w.VBox(list(controls.values()), layout=w.Layout(width="350px"))
    right = w.VBox([verdict, land, val, ranking, status])

    class Explorer(w.HBox):
        def __repr__(self):  # short and stable: the stored text/plain of the widget output
            s = current()
            return f"Explorer({s.template} seed {s.seed}, {s.encoder}, {s.policy})"

    return Explorer([left, right]).add_class("wb-explorer")
