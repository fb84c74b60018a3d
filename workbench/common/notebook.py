"""Small helpers shared by every notebook: record key numbers, save figures, show tables stably."""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path

from workbench.common import fonts
from workbench.common.io import atomic_write_bytes, atomic_write_text

RECORD_MIME = "application/vnd.workbench.record+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# the kernel ipykernel installs, as JupyterLab names it (a stored name it does not give would
# mark every notebook modified the moment it opens)
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# where the record keeps a notebook's outputs, from the checkout's root (notebooks/ beside them)
RECORD = {"FIGURES_DIR": "figures", "RESULTS_DIR": "data/results"}


def clean_notebook(nb: dict) -> dict:
    """What a stored notebook keeps, whoever writes it (papermill in `workbench reproduce`,
    JupyterLab's save and autosave through explore.lab): no live widget state (a new model id
    for every view, a megabyte of vega) and no reference to a widget model (opened again, the
    page would look for a model no kernel holds: "widget model not found"; the widget's text
    and its static view stay), the one kernelspec, no per-run timings, and execution counts
    numbered from 1 in cell order, as one run in a fresh kernel numbers them (Run All twice in
    JupyterLab counts on from the first run). Edits `nb` (a notebook as JSON) in place and
    returns it."""
    meta = nb.setdefault("metadata", {})
    meta.pop("widgets", None)
    meta["kernelspec"] = dict(KERNELSPEC)
    pm = meta.get("papermill", {})
    for key in ("start_time", "end_time", "duration", "input_path", "output_path"):
        pm.pop(key, None)
    count = 0
    for cell in nb.get("cells", []):
        if cell.get("execution_count") is not None:
            count += 1
            cell["execution_count"] = count
        for out in cell.get("outputs", None) or []:
            (out.get("data") or {}).pop(WIDGET_MIME, None)
            if "execution_count" in out:
                out["execution_count"] = count
        cmeta = cell.get("metadata", {})
        cmeta.pop("papermill", None)
        cmeta.pop("execution", None)  # JupyterLab's "record timing"
    return nb


def _round(value, digits: int):
    """A record's value as JSON keeps it: floats to `digits` places, a whole float as an integer
    (5.0 -> 5: JupyterLab's save writes numbers as JavaScript does, and a stored 5.0 would come
    back as 5), NaN and infinities as null (they are not JSON)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        r = round(value, digits)
        return int(r) if r.is_integer() and abs(r) < 2**53 else r
    if isinstance(value, dict):
        return {str(k): _round(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, digits) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return _round(value.item(), digits)
    return value


def record(name: str, value, digits: int = 4, shown: bool = True) -> None:
    """Record a key number in the notebook's outputs so tests can read it back (scrapbook-style),
    out of the reader's way: a one-line fold ("recorded for the tests: NAME") that opens on the
    value. shown=False leaves the value out of the fold (a workshop's answer key)."""
    from IPython.display import display

    value = _round(value, digits)
    said = f"recorded for the tests: {name}"
    inside = (
        f"<pre>{html.escape(json.dumps(value, sort_keys=True, indent=1))}</pre>" if shown else ""
    )
    display(
        {
            RECORD_MIME: {"name": name, "value": value},
            "text/plain": f"({said})",
            "text/html": f"<details class='wb-record'><summary><small>{html.escape(said)}"
            f"</small></summary>{inside}</details>",
        },
        raw=True,
    )


def read_records(notebook_path: str | os.PathLike) -> dict:
    """Every value record()-ed in an executed notebook, by name."""
    nb = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    out = {}
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []) or []:
            data = o.get("data", {})
            if RECORD_MIME in data:
                rec = data[RECORD_MIME]
                out[rec["name"]] = rec["value"]
    return out


def figure_spec(chart) -> dict:
    """The vega-lite spec a figure is rendered from: the chart's, every text in the shipped font."""
    return fonts.pin(json.loads(chart.to_json()))


def save_figure(chart, name: str, folder: str | os.PathLike = "../figures", scale: float = 2.0):
    """Render an altair chart to folder/name.svg and folder/name.png (offline, via vl-convert,
    with the package's own font: the same bytes on every machine)."""
    import vl_convert as vlc

    fonts.register()
    folder = Path(folder)
    spec = figure_spec(chart)
    atomic_write_text(folder / f"{name}.svg", vlc.vegalite_to_svg(spec))
    return atomic_write_bytes(folder / f"{name}.png", vlc.vegalite_to_png(spec, scale=scale))


def show_figure(chart, name: str, folder: str | os.PathLike = "../figures") -> None:
    """Save the chart, then show it. When the folder is the figures/ beside the notebook's own
    folder (the record: a notebook runs in its folder), the stored output is a link to the SVG
    there (small, stable; it resolves in JupyterLab and on a viewer); a run elsewhere (runs/...,
    a folder passed by name) shows the picture itself, so its notebook reads wherever it is kept."""
    from IPython.display import display

    save_figure(chart, name, folder)
    svg = Path(folder) / f"{name}.svg"
    if Path(folder).resolve() == Path.cwd().resolve().parent / RECORD["FIGURES_DIR"]:
        link = f"../{RECORD['FIGURES_DIR']}/{name}.svg"
        display({"text/markdown": f"![{name}]({link})", "text/plain": f"figure: {link}"}, raw=True)
        return
    text = svg.read_text(encoding="utf-8")
    display({"image/svg+xml": text, "text/plain": f"figure: {svg.as_posix()}"}, raw=True)


LONG_TABLE = 10  # rows: a longer table scrolls in a box of its own and sorts by any column
# the sorter a long table carries: a click on a header sorts by it (numbers as numbers), a second
# click reverses; it runs where the output is trusted (a live kernel, nbconvert's HTML)
SORTER = """<script>(() => { const t = document.currentScript.previousElementSibling
  .querySelector('table'); if (!t) return;
  t.querySelectorAll('th').forEach((th, k) => { th.style.cursor = 'pointer';
    th.title = 'sort by this column'; th.onclick = () => {
      const body = t.tBodies[0], rows = [...body.rows], up = th.dataset.up !== '1';
      const key = (r) => { const v = r.cells[k].textContent.trim(), n = parseFloat(v);
        return isNaN(n) || !/^[-+]?[0-9.]/.test(v) ? v : n; };
      rows.sort((a, b) => { const x = key(a), y = key(b);
        const c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === 'number' ? -1 : 1);
        return up ? c : -c; });
      th.dataset.up = up ? '1' : '0'; rows.forEach((r) => body.appendChild(r)); }; }); })();
</script>"""


def show_table(df, digits: int = 3):
    """Display a DataFrame for people and for the record: an HTML table (no index, floats to
    `digits`; a long one in a scrolling box, sortable by its headers) and the same table as
    fixed-width text (what nbval compares and a text reader sees)."""
    import pandas as pd
    from IPython.display import display

    def number(v):
        return f"{v:.{digits}f}"

    with pd.option_context(
        "display.max_rows",
        500,
        "display.max_columns",
        50,
        "display.width",
        200,
        "display.float_format",
        number,
    ):
        text = df.to_string()
    frame = df.reset_index() if _named_index(df) else df
    table = frame.to_html(index=False, float_format=number, border=0, na_rep="", escape=True)
    if len(df) > LONG_TABLE:
        table = f"<div style='max-height: 20em; overflow: auto'>{table}</div>{SORTER}"
    display({"text/html": table, "text/plain": text}, raw=True)


def _named_index(df) -> bool:
    """Does the index say something (named, or not 0..n-1)? Then the HTML table shows it."""
    import pandas as pd

    plain = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
    return not plain or any(n is not None for n in df.index.names)
