"""The page's building blocks: the vendored vega bundle, the live view every chart and the
explorer share (static/view.js draws them), one chart from a live spec, and a live spec bound
to one run's rows as a static figure. Nothing here imports altair (seconds to import): the specs
come pre-built in static/specs.json (scripts/build_static.py writes it)."""

from __future__ import annotations

import json
from importlib import resources

import anywidget
import traitlets

from workbench.explore import messages


def static_text(name: str) -> str:
    """A file shipped in workbench/explore/static (package data)."""
    return resources.files("workbench.explore").joinpath("static", name).read_text(encoding="utf-8")


_SPECS: dict = {}


def specs() -> dict:
    """The live chart specs (static/specs.json; scripts/build_static.py writes it)."""
    if not _SPECS:
        _SPECS.update(json.loads(static_text("specs.json")))
    return _SPECS


class VegaLib(anywidget.AnyWidget):
    """vega + vega-lite + vega-embed (static/vega-bundle.js), sent to the page once and shared
    by every view in it, so nothing is fetched from a CDN."""

    _esm = "export default {};"
    source = traitlets.Unicode("").tag(sync=True)


_LIB: list[VegaLib] = []


def vega_lib() -> VegaLib:
    if not _LIB:
        _LIB.append(VegaLib(source=static_text("vega-bundle.js")))
    return _LIB[0]


class LiveView(anywidget.AnyWidget):
    """Shared by the explorer and single charts: the front end (static/view.js) and vega."""

    _esm = static_text("view.js")
    _css = static_text("view.css")
    kind = traitlets.Unicode("chart").tag(sync=True)
    lib = anywidget.WidgetTrait().tag(sync=True)
    specs = traitlets.Dict().tag(sync=True)


class ChartView(LiveView):
    """One chart drawn in the browser from a live spec and one run's rows (viewdata.*_data)."""

    spec = traitlets.Unicode().tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    width = traitlets.Int(640).tag(sync=True)

    def __init__(self, spec: str, data: dict, width: int = 640, **kw):
        super().__init__(
            kind="chart",
            lib=vega_lib(),
            specs={spec: specs()[spec]},
            spec=spec,
            data=data,
            width=width,
            **kw,
        )

    def __repr__(self) -> str:
        return f"ChartView({self.spec}: {self.data.get('head', '')})"


class BoundSpec:
    """A live spec with one run's rows and params bound in: a static figure (no altair needed),
    renderable by notebook.show_figure / save_figure (anything with to_json)."""

    def __init__(self, name: str, data: dict, width: int | None = None):
        spec = json.loads(json.dumps(specs()[name]))
        params = {p["name"] for p in spec.get("params", [])}
        spec["datasets"] = {k: v for k, v in data.items() if k not in params and k != "family"}
        for p in spec.get("params", []):
            if p["name"] in data:
                p["value"] = data[p["name"]]
        if width is not None:
            spec["width"] = width
        self.spec = spec

    def to_json(self, **_kw) -> str:
        return json.dumps(self.spec)

    def to_dict(self, **_kw) -> dict:
        return self.spec


class KernelWatch(LiveView):
    """A hidden view inside a workshop box (`.wb-live`): it keeps JupyterLab's shortcuts off the
    box's controls, and when the kernel is gone it shows the banner and disables them."""

    def __init__(self, **kw):
        super().__init__(kind="watch", **kw)
        self.on_msg(lambda _w, content, _b: messages.read(content, messages.WATCH))

    def __repr__(self) -> str:
        return "KernelWatch()"


# In a live page the widget's own element (`.wb-live`) sits in the same output area as its static
# view, and hides it; on a viewer, in nbconvert's HTML or where the widget cannot be drawn, only
# the static view is there. (The rule travels with the static view: nothing else to install.)
STATIC_CSS = (
    "<style>.jp-OutputArea:has(.wb-live) .wb-static, .output_area:has(.wb-live) .wb-static"
    " {display: none}</style>"
)


def show_live(widget, static_html: str, label: str) -> None:
    """Display a live widget after its static view (HTML: what a reader without a kernel sees).
    Stored notebooks keep both; a live page shows only the widget."""
    from IPython.display import display

    html = f"{STATIC_CSS}<div class='wb-static'>{static_html}</div>"
    display({"text/html": html, "text/plain": f"{label} (static view)"}, raw=True)
    bundle = widget._repr_mimebundle_()  # ipywidgets: data; anywidget: (data, metadata)
    data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
    # what a reader without the widget sees in its place: words, not a Python repr
    data = {**data, "text/plain": f"({label}: live in the running notebook)"}
    display(data, metadata=meta, raw=True)


class Memory(anywidget.AnyWidget):
    """What a page keeps across a reload, in the browser's localStorage under `key`: on render
    the page sends back what it kept (`restored`); every change of `state` is written there.
    Nothing leaves the browser; a storage that refuses (private mode, quota) keeps nothing."""

    _esm = """
export default {
  render({ model, el }) {
    el.style.display = "none";
    const key = model.get("key");
    let kept = {};
    try { kept = JSON.parse(window.localStorage.getItem(key) || "{}") || {}; } catch (e) { kept = {}; }
    model.set("restored", kept);
    model.save_changes();
    model.on("change:state", () => {
      try { window.localStorage.setItem(key, JSON.stringify(model.get("state"))); } catch (e) {}
    });
  }
};
"""
    key = traitlets.Unicode("").tag(sync=True)
    state = traitlets.Dict().tag(sync=True)  # kernel -> page: what to keep
    restored = traitlets.Dict().tag(sync=True)  # page -> kernel: what was kept

    def __repr__(self) -> str:  # stable: a stored notebook output shows it (no address)
        return f"Memory({self.key})"
