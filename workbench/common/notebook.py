"""Small helpers shared by every notebook: record key numbers, save figures, show tables stably."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from workbench.common import fonts
from workbench.common.io import atomic_write_bytes, atomic_write_text

RECORD_MIME = "application/vnd.workbench.record+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# where the record keeps a notebook's outputs, from the checkout's root (notebooks/ beside them)
RECORD = {"FIGURES_DIR": "figures", "RESULTS_DIR": "data/results"}


def clean_notebook(nb: dict) -> dict:
    """What a stored notebook keeps, whoever writes it (papermill in `workbench reproduce`,
    JupyterLab's save and autosave through explore.lab): no live widget state (a new model id
    for every view, a megabyte of vega) and no reference to a widget model (opened again, the
    page would look for a model no kernel holds: "widget model not found"; the widget's text
    and its static view stay), the one kernelspec, no per-run timings. Edits `nb` (a notebook
    as JSON) in place and returns it."""
    meta = nb.setdefault("metadata", {})
    meta.pop("widgets", None)
    meta["kernelspec"] = dict(KERNELSPEC)
    pm = meta.get("papermill", {})
    for key in ("start_time", "end_time", "duration", "input_path", "output_path"):
        pm.pop(key, None)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", None) or []:
            (out.get("data") or {}).pop(WIDGET_MIME, None)
        cmeta = cell.get("metadata", {})
        cmeta.pop("papermill", None)
        cmeta.pop("execution", None)  # JupyterLab's "record timing"
    return nb


def _round(value, digits: int):
    if isinstance(value, float):  # NaN / inf are not JSON: a record holds null instead
        return round(value, digits) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _round(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, digits) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return _round(value.item(), digits)
    return value


def record(name: str, value, digits: int = 4, shown: bool = True) -> None:
    """Record a key number in the notebook's outputs so tests can read it back (scrapbook-style).
    shown=False keeps the value out of the visible text (a workshop's answer key)."""
    from IPython.display import display

    value = _round(value, digits)
    text = f"{name} = {json.dumps(value, sort_keys=True)}" if shown else f"({name} recorded)"
    display({RECORD_MIME: {"name": name, "value": value}, "text/plain": text}, raw=True)


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


def show_table(df, digits: int = 3):
    """Display a DataFrame as fixed-width text with fixed float formatting (nbval-stable)."""
    import pandas as pd
    from IPython.display import display

    with pd.option_context(
        "display.max_rows",
        500,
        "display.max_columns",
        50,
        "display.width",
        200,
        "display.float_format",
        lambda v: f"{v:.{digits}f}",
    ):
        text = df.to_string()
    display({"text/plain": text}, raw=True)
