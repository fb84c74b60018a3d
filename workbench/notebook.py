"""Small helpers shared by every notebook: record key numbers, save figures, show tables stably."""

from __future__ import annotations

import json
import os
from pathlib import Path

RECORD_MIME = "application/vnd.workbench.record+json"


def _round(value, digits: int):
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {str(k): _round(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, digits) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return _round(value.item(), digits)
    return value


def record(name: str, value, digits: int = 4) -> None:
    """Record a key number in the notebook's outputs so tests can read it back (scrapbook-style)."""
    from IPython.display import display

    value = _round(value, digits)
    text = f"{name} = {json.dumps(value, sort_keys=True)}"
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


def save_figure(chart, name: str, folder: str | os.PathLike = "../figures", scale: float = 2.0):
    """Render an altair chart to folder/name.svg and folder/name.png (offline, via vl-convert)."""
    import vl_convert as vlc

    from workbench.scenario import atomic_write_text

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    spec = chart.to_json()
    atomic_write_text(folder / f"{name}.svg", vlc.vegalite_to_svg(spec))
    png = vlc.vegalite_to_png(spec, scale=scale)
    tmp = folder / f".{name}.png.tmp"
    tmp.write_bytes(png)
    os.replace(tmp, folder / f"{name}.png")
    return folder / f"{name}.png"


def show_figure(chart, name: str, folder: str | os.PathLike = "../figures"):
    """Save the chart, then display the saved PNG (stable outputs; altair's live HTML ids are not)."""
    from IPython.display import Image, display

    png = save_figure(chart, name, folder)
    display(Image(filename=str(png)))
    return png


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


def write_notebook(cells, path: str | os.PathLike, prefix: str) -> Path:
    """Write an unexecuted notebook (python3 kernel) with stable cell ids `prefix-NN`, so
    regenerating it gives the same bytes; papermill executes it afterwards."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{prefix}-{i:02d}"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
