"""JupyterLab as `make explore` starts it (workbench.explore.lab), in headless Chromium at
1280x800 with the file browser open, over a git copy of the checkout's notebooks, figures and
data: the notebooks open unmodified and without the news prompt; Run All (twice), the explorer's
every column and its controls in view, the controls from the keyboard, a save and an autosave that
leave `git status` clean (widget state saving on), a kernel restart that shows the banner and
disables the controls, nothing requested off the machine and no console error. (The time each
takes is measured by scripts/bench_explorer.py --lab.)"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from browserkit import LAB_READY, LAB_STATE, Recorder, chromium, is_local, lab, lab_wait
from test_browser import chromium_path

from workbench.dsgc.trace import Setting
from workbench.explore.explorer import payload
from workbench.explore.workshop import Workshop

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 180_000
VIEWPORT = (1280, 800)  # a laptop's screen, JupyterLab's file browser open
SETTINGS = {
    "@jupyterlab/docmanager-extension:plugin": {"autosaveInterval": 2},
    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
}
VERDICT = "() => (document.querySelector('.wb-verdict-text') || {}).textContent"
# Run All is over: every code cell has run (a queued one has no count) and the kernel is idle
# (it is idle between two cells, too)
IDLE = (
    "() => { const w = window.jupyterapp.shell.currentWidget;"
    " const ran = w.content.widgets.every(c => c.model.type !== 'code'"
    " || c.model.executionCount !== null);"
    " return ran && w.sessionContext.session.kernel.status === 'idle'; }"
)


def git(copy: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=copy, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture()
def checkout(tmp_path) -> Path:
    """A git repository holding what JupyterLab serves and the notebooks write."""
    copy = tmp_path / "checkout"
    copy.mkdir()
    for rel in ("notebooks", "figures", "data"):
        shutil.copytree(ROOT / rel, copy / rel, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(ROOT / ".gitignore", copy / ".gitignore")
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "base")
    return copy


def open_and_run(page, server, rel: str) -> None:
    page.goto(server.notebook(rel), timeout=TIMEOUT_MS)
    page.wait_for_function(LAB_READY, timeout=TIMEOUT_MS)


def run_all(page) -> None:
    """Run All, as the menu does: JupyterLab's command resolves once every cell has run, true when
    none failed (false or nothing: a cell failed, or no notebook took the command)."""
    ran = page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    assert ran is True, f"Run All answered {ran!r}; the notebook: {page.evaluate(LAB_STATE)}"


def restart(page) -> float:
    t = time.monotonic()
    page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()"
    )
    return t


def test_explorer_in_jupyterlab(checkout):
    exe = chromium_path()
    from playwright.sync_api import sync_playwright

    rel = "notebooks/05_explorer.ipynb"
    with lab(checkout, SETTINGS) as server, sync_playwright() as p:
        ctx = chromium(p, exe, viewport=VIEWPORT)
        rec = Recorder(ctx)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        open_and_run(page, server, rel)
        assert page.evaluate("() => !window.jupyterapp.shell.leftCollapsed")  # the file browser
        # before Run All the stored output is the static view (no widget model to look for)
        assert page.locator(".wb-static").first.is_visible()
        saves = server.saves(rel)
        run_all(page)
        lab_wait(page, server, ".wbx[data-wb-seq]", TIMEOUT_MS)
        lab_wait(page, server, IDLE, TIMEOUT_MS, selector=False)
        assert not page.locator(".wb-static").first.is_visible()  # the live view replaces it
        # Run All scrolled to the last cell as it started; the explorer brought its controls back
        box = (
            "() => { const r = document.querySelector('.wbx-side').getBoundingClientRect();"
            " const v = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer')"
            ".getBoundingClientRect(); return [r.top, v.top, v.bottom]; }"
        )
        try:  # the controls' top is in view
            page.wait_for_function(f"() => {{ const b = ({box})(); return b[1] - 1 <= b[0] "
                                   "&& b[0] < b[2]; }", timeout=10_000)  # fmt: skip
        except Exception:
            raise AssertionError(f"the controls are out of view: {page.evaluate(box)}") from None
        # every column of the ranking table shows beside the controls, none scrolled away
        fit = page.evaluate(
            "() => { const d = document.querySelector('.wbx-tdetails');"
            " const right = d.getBoundingClientRect().right;"
            " return [d.scrollWidth, d.clientWidth, [...d.querySelectorAll('th')]"
            ".filter(th => th.getBoundingClientRect().right > right + 1).map(th => th.textContent)]; }"
        )
        assert fit[0] <= fit[1] and fit[2] == [], fit

        start = Setting("profile", 0, "lexical", "dsgc", 2.0, 1.0, 0.25, 1, 20)
        slider = page.locator('.wbx-ctl[data-key="seed"] input')
        assert slider.get_attribute("data-lm-suppress-shortcuts") == "true"
        slider.focus()
        for key, seed in (("ArrowRight", 1), ("ArrowRight", 2), ("PageUp", 12), ("End", 99)):
            page.keyboard.press(key)
            want = payload(start.with_(seed=seed))["verdict"]
            page.wait_for_function(f"v => ({VERDICT})() === v", arg=want, timeout=30_000)
            assert slider.input_value() == str(seed)
            assert page.evaluate("() => document.activeElement.tagName") == "INPUT"
        policy = page.locator('.wbx-ctl[data-key="policy"] select')
        policy.focus()
        page.keyboard.press("ArrowDown")
        moved = policy.input_value()
        assert moved != "dsgc"
        want = payload(start.with_(seed=99, policy=moved))["verdict"]
        page.wait_for_function(f"v => ({VERDICT})() === v", arg=want, timeout=30_000)

        # autosaves (every 2 s here) store the run (its outputs made the notebook dirty), then a
        # save: the record and its .py stay as committed
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000
        )
        assert server.saves(rel) > saves, "the run was never autosaved"
        assert settled(checkout) == "", git(checkout, "diff")
        save(page, server, rel)
        assert settled(checkout) == "", git(checkout, "diff")
        # Run All again (the kernel counts on: 7, 8, ...), then a save: still as committed
        counts = (
            "() => window.jupyterapp.shell.currentWidget.content.widgets"
            ".filter(c => c.model.type === 'code').map(c => c.model.executionCount)"
        )
        first = max(page.evaluate(counts))
        run_all(page)
        page.wait_for_function(  # every code cell ran again (a cell still queued has no count)
            f"n => ({counts})().every(c => c !== null && c > n)", arg=first, timeout=TIMEOUT_MS
        )
        lab_wait(page, server, IDLE, TIMEOUT_MS, selector=False)
        page.wait_for_function(f"v => ({VERDICT})() === v", arg=payload(start)["verdict"],
                               timeout=60_000)  # fmt: skip
        save(page, server, rel)
        assert settled(checkout) == "", git(checkout, "diff")

        # a restart: the banner, and every control off
        restart(page)
        page.wait_for_selector(".wbx .wb-dead", timeout=20_000)
        assert "the kernel is not running" in page.locator(".wbx .wb-dead").text_content()
        assert page.evaluate(
            "() => [...document.querySelectorAll('.wbx input, .wbx select, .wbx button')]"
            ".every(e => e.disabled)"
        )
        before = slider.input_value()
        page.keyboard.press("ArrowRight")
        assert slider.input_value() == before
        time.sleep(1)
        assert rec.errors == [], rec.errors
        assert [u for u in rec.requests if not is_local(u)] == []
        ctx.close()


def test_workshop_in_jupyterlab(checkout):
    exe = chromium_path()
    from playwright.sync_api import sync_playwright

    with lab(checkout, SETTINGS) as server, sync_playwright() as p:
        ctx = chromium(p, exe, viewport=VIEWPORT)
        rec = Recorder(ctx)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        open_and_run(page, server, "notebooks/06_workshop.ipynb")
        statics = page.locator(".wb-static-part")
        parts = len(Workshop.PARTS)
        assert statics.count() == parts and statics.first.is_visible()
        run_all(page)
        lab_wait(page, server, f".wb-part-{Workshop.PARTS[-1]} .wb-predict select", TIMEOUT_MS)
        lab_wait(page, server, IDLE, TIMEOUT_MS, selector=False)
        watched = "() => document.querySelectorAll('.wb-part.wb-live[data-wb-watched]').length"
        page.wait_for_function(f"() => ({watched})() === {parts}", timeout=60_000)
        assert not statics.first.is_visible()

        pick = page.locator(".wb-part-1 .wb-predict select")
        assert pick.get_attribute("data-lm-suppress-shortcuts") == "true"
        pick.focus()
        for _ in range(3):  # from no selection (-1) or the placeholder to the first prediction
            page.keyboard.press("ArrowDown")
            if pick.evaluate("e => e.selectedIndex") == 1:
                break
        assert pick.evaluate("e => e.selectedIndex") == 1
        # the kernel took it: the page's memory (written by the kernel) holds part 1's choice
        kept = (
            "() => Object.keys(localStorage).filter(k => k.startsWith('wb-workshop/'))"
            ".map(k => JSON.parse(localStorage.getItem(k))['1'])"
        )
        page.wait_for_function(f"() => ({kept})().some(p => p && p.choice === 0)", timeout=30_000)

        restart(page)
        dead = "() => document.querySelectorAll('.wb-part.wb-live > .wb-dead').length"
        try:
            page.wait_for_function(f"() => ({dead})() === {parts}", timeout=20_000)
        except Exception:
            raise AssertionError(
                f"banners: {page.evaluate(dead)} of {parts}; watched: {page.evaluate(watched)}"
            ) from None
        assert page.evaluate(
            "() => [...document.querySelectorAll('.wb-part.wb-live select,"
            " .wb-part.wb-live button')].every(e => e.disabled)"
        )
        save(page, server, "notebooks/06_workshop.ipynb")  # (a save mid-run stores a half run)
        assert settled(checkout) == "", git(checkout, "diff")
        assert rec.errors == [], rec.errors
        assert [u for u in rec.requests if not is_local(u)] == []
        ctx.close()


def test_notebooks_open_unmodified_without_the_news_prompt(checkout):
    """Opening a paper notebook (its kernel started) changes nothing in it, JupyterLab asks
    nothing about news, and a figure is shown at the output width the figures are drawn for
    (fonts.NOTEBOOK_WIDTH: their every text at least fonts.MIN_TEXT_PX there)."""
    from playwright.sync_api import sync_playwright

    from workbench.common import fonts

    exe = chromium_path()
    with lab(checkout, {}) as server, sync_playwright() as p:
        ctx = chromium(p, exe, viewport=VIEWPORT)
        rec = Recorder(ctx)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        for rel in ("notebooks/02_main_suite.ipynb", "notebooks/06_workshop.ipynb",
                    "notebooks/10_beyond_the_paper.ipynb"):  # fmt: skip
            open_and_run(page, server, rel)
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                "?.kernel?.status === 'idle'",
                timeout=TIMEOUT_MS,
            )
            time.sleep(2)  # (a kernelspec JupyterLab rewrites marks the notebook dirty by now)
            dirty = "() => window.jupyterapp.shell.currentWidget.context.model.dirty"
            assert page.evaluate(dirty) is False, f"{rel} opened modified"
        img = page.locator("img[src*='beyond_graph.svg']").first
        img.scroll_into_view_if_needed()
        page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
        shown, natural, area = img.evaluate(
            "i => [i.clientWidth, i.naturalWidth, i.closest('.jp-OutputArea-output').clientWidth]"
        )
        assert area >= fonts.NOTEBOOK_WIDTH and shown == min(natural, area), (shown, natural, area)
        toasts = page.evaluate(
            "() => [...document.querySelectorAll('.Toastify__toast')].map(t => t.textContent)"
        )
        assert not [t for t in toasts if "news" in t.lower()], toasts
        assert rec.errors == [], rec.errors
        assert [u for u in rec.requests if not is_local(u)] == []
        ctx.close()


def settled(copy: Path, seconds: float = 10) -> str:
    """`git status` once the server has finished writing (the log line comes before the write,
    and a write goes through a temporary file): what it says within `seconds`, clean or not."""
    deadline = time.monotonic() + seconds
    while (status := git(copy, "status", "--porcelain")) and time.monotonic() < deadline:
        time.sleep(0.3)
    return status


def save(page, server, rel: str) -> None:
    """Save now and wait until the server has written the file."""
    saves = server.saves(rel)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + 30
    while server.saves(rel) == saves and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server.saves(rel) > saves, f"{rel} was not saved in 30 s"
