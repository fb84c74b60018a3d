"""Figures are the same bytes on every machine: every text is drawn in the package's own font
(workbench.common.fonts), so neither the fonts a machine lacks nor the ones it adds change a
byte of an SVG or a PNG."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.common import fonts
from workbench.common.notebook import figure_spec

ROOT = Path(__file__).resolve().parents[2]

RENDER = """
import hashlib, json, sys
from workbench.common.notebook import figure_spec, save_figure
from workbench.dsgc import charts
from workbench.dsgc.paper import table1
from workbench.dsgc.protocols import Protocol
from workbench.dsgc.runs import run_protocol
from workbench.dsgc.trace import Setting, run_setting, valley_pair

extra, pinned = sys.argv[1], sys.argv[2] == "pinned"
if extra != "-":
    import vl_convert as vlc
    vlc.register_font_directory(extra)
s = Setting(template="profile", seed=3)
df = run_protocol(Protocol.load("main").with_(seeds=(0, 2), encoders=("lexical",)))
figs = {
    "landscape": charts.landscape(run_setting(s)),
    "valley": charts.valley(*valley_pair(s)),  # Greek letters and a middle dot
    "table1": charts.ours_vs_paper(table1(df), "regime", "Table 1 (±)"),
}
out = {}
for name, chart in figs.items():
    if not pinned:  # the chart as altair writes it, no font of ours: the machine's fonts decide
        import vl_convert as vlc
        spec = json.loads(chart.to_json())
        spec.get("config", {}).pop("font", None)
        out[name] = hashlib.sha256(vlc.vegalite_to_png(spec, scale=2.0)).hexdigest()
        continue
    save_figure(chart, name, "figs")
    for ext in ("svg", "png"):
        out[f"{name}.{ext}"] = hashlib.sha256(open(f"figs/{name}.{ext}", "rb").read()).hexdigest()
print(json.dumps(out))
"""


def _render(tmp_path, extra: str = "-", pinned: bool = True, hide_fonts: bool = False) -> dict:
    """Digests of a few real figures rendered in a fresh process (optionally with another font
    folder registered first, or with the machine's font folders hidden)."""
    cmd = [sys.executable, "-c", RENDER, extra, "pinned" if pinned else "raw"]
    if hide_fonts:  # a private mount namespace: /usr/share/fonts is an empty tmpfs in it only
        hide = " && ".join(
            f"mount -t tmpfs tmpfs {d}"
            for d in ("/usr/share/fonts", "/usr/local/share/fonts")
            if Path(d).is_dir()
        )
        cmd = ["unshare", "-m", "sh", "-c", f'{hide} && exec "$@"', "sh", *cmd]
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _can_hide_fonts() -> bool:
    if not shutil.which("unshare") or not Path("/usr/share/fonts").is_dir():
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /usr/share/fonts"],
        capture_output=True,
    )
    return probe.returncode == 0


def test_pin_names_the_shipped_font_wherever_a_spec_names_one():
    spec = {
        "config": {"axis": {"labelFont": "Arial", "titleFont": "Helvetica"}},
        "layer": [{"mark": {"type": "text", "font": "Comic Sans MS"}}],
        "title": {"text": "t", "subtitleFont": "serif"},
    }
    got = fonts.pin(spec)
    assert got["config"]["font"] == fonts.FAMILY
    found = re.findall(r'"(?:font|labelFont|titleFont|subtitleFont)": "([^"]*)"', json.dumps(got))
    assert found and set(found) == {fonts.FAMILY}
    # the shipped face first (what vl-convert measures with), a generic sans-serif last (what a
    # browser showing the SVG as an image falls back to, never its default serif)
    assert fonts.FAMILY.startswith(fonts.FONT + ",") and fonts.FAMILY.endswith(", sans-serif")
    assert Path(fonts.font_dir(), "WorkbenchSans-Regular.ttf").is_file()


def test_a_chart_spec_names_only_the_shipped_font():
    from workbench.dsgc import charts
    from workbench.dsgc.trace import Setting, run_setting

    spec = figure_spec(charts.landscape(run_setting(Setting())))
    names = re.findall(r'"(?:font|labelFont|titleFont|subtitleFont)": "([^"]*)"', json.dumps(spec))
    assert set(names) == {fonts.FAMILY}


def test_every_committed_svg_names_only_the_shipped_font():
    svgs = sorted(ROOT.glob("figures/*.svg")) + sorted(ROOT.glob("data/calibration/*.svg"))
    assert len(svgs) >= 25  # every figure the notebooks and the calibration draw
    for svg in svgs:
        families = set(re.findall(r'font-family="([^"]*)"', svg.read_text(encoding="utf-8")))
        assert families <= {fonts.FAMILY}, f"{svg.name}: {families}"


def test_every_figure_is_legible_at_notebook_width():
    """Shrunk to the notebook's output width (a wider figure is), every text of every figure is
    at least MIN_TEXT_PX: no tick label, legend or cell label too small to read."""
    small = []
    for svg in sorted(ROOT.glob("figures/*.svg")):
        text = svg.read_text(encoding="utf-8")
        width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', text).group(1))
        sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)px"', text)]
        assert sizes, f"{svg.name}: no text size found"
        shown = min(sizes) * min(1.0, fonts.NOTEBOOK_WIDTH / width)
        if shown < fonts.MIN_TEXT_PX:
            small.append(f"{svg.name}: {min(sizes):g} px at width {width:g} shows {shown:.1f} px")
    assert small == []


@pytest.mark.slow
def test_another_font_folder_changes_no_byte(tmp_path):
    """Fonts a machine adds (here: a folder of DejaVu Serif and Liberation Sans, registered
    before the render) change no byte of the figures."""
    extra = tmp_path / "extra"
    extra.mkdir()
    for f in Path("/usr/share/fonts").rglob("*.ttf"):
        if f.name in ("DejaVuSerif.ttf", "LiberationSans-Regular.ttf", "DejaVuSans.ttf"):
            shutil.copy(f, extra / f.name)
    if not any(extra.iterdir()):
        pytest.skip("no system TTF to register")
    assert _render(tmp_path) == _render(tmp_path, str(extra))


@pytest.mark.slow
@pytest.mark.skipif(not _can_hide_fonts(), reason="needs unshare -m and mount (root)")
def test_a_machine_without_fonts_draws_the_same_bytes(tmp_path):
    """With every font folder of the machine hidden, the figures are the same bytes: nothing
    of the machine's is measured or drawn. The control: a chart that names no font of ours does
    change when the machine's fonts go (so this test can fail)."""
    assert _render(tmp_path) == _render(tmp_path, hide_fonts=True)
    assert _render(tmp_path, pinned=False) != _render(tmp_path, pinned=False, hide_fonts=True)
