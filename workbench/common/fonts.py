"""The one font family every figure is drawn with, shipped in the package (fonts/: DejaVu Sans
Book and Bold renamed "Workbench Sans", see scripts/build_fonts.py and fonts/LICENSE).

vl-convert measures text with whatever fonts a machine has; a chart that names a family only
this package provides is measured and drawn the same everywhere, so its SVG and PNG bytes are
the same on every machine. `register()` hands the folder to vl-convert before any render, and
`pin(spec)` makes every text of a spec name the family first (a chart cannot be measured with a
font of the machine's). After it come fallbacks that only a reader of the SVG uses: a browser
showing the figure as an image cannot see the package's fonts, and without a generic family it
would draw the text in its default serif face.

A figure is read in a notebook whose output area is NOTEBOOK_WIDTH pixels wide (JupyterLab at
1280x800 with the file browser open, measured by tests/explore/test_lab_browser.py); a wider
figure is shrunk to fit, and every text of every figure stays at least MIN_TEXT_PX there."""

from __future__ import annotations

from importlib import resources

FONT = "Workbench Sans"
FAMILY = f"{FONT}, DejaVu Sans, Helvetica, Arial, sans-serif"
NOTEBOOK_WIDTH = 828
MIN_TEXT_PX = 10
# every vega-lite config key that names a font (config.font is the default for all the others)
FONT_KEYS = ("font", "labelFont", "titleFont", "subtitleFont")
_registered: list[str] = []


def font_dir() -> str:
    """The folder of the shipped TTFs (package data)."""
    return str(resources.files("workbench.common") / "fonts")


def register() -> None:
    """Give vl-convert the shipped fonts (once per process)."""
    if not _registered:
        import vl_convert as vlc

        vlc.register_font_directory(font_dir())
        _registered.append(font_dir())


def pin(spec: dict) -> dict:
    """The spec with FAMILY as its config's default font and every font key it sets anywhere
    (config, marks, axes, legends, titles) replaced by FAMILY."""

    def walk(node):
        if isinstance(node, dict):
            return {
                k: (FAMILY if k in FONT_KEYS and isinstance(v, str) else walk(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk(spec)
    out["config"] = {**out.get("config", {}), "font": FAMILY}
    return out
