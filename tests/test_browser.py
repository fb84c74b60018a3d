"""The explorer in a real browser: Voila serves notebooks/05_explorer.ipynb on 127.0.0.1, headless
Chromium moves the seed and lambda sliders, and the page must show exactly what
`explorer.update` computes for the new state."""

from __future__ import annotations

import ast
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.explorer import table_cells, update
from workbench.trace import Setting

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "05_explorer.ipynb"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 90_000


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "Chromium is not on PATH (install it: apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run the browser test")
        pytest.skip(reason)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook_state() -> Setting:
    """The explorer's starting state, read from the notebook's parameters cell."""
    import papermill as pm

    p = {k: ast.literal_eval(v["default"]) for k, v in pm.inspect_notebook(str(NOTEBOOK)).items()}
    return Setting(
        p["TEMPLATE"],
        p["SEED"],
        p["ENCODER"],
        p["POLICY"],
        p["BUDGET_MULTIPLIER"],
        p["LAMBDA"],
        p["TAU"],
        p["HOPS"],
        p["TOTAL_BLOCKS"],
    )


@pytest.fixture
def voila(request, tmp_path):
    """Voila serving the explorer on a free local port; terminated when the test ends."""
    port = free_port()
    log = open(tmp_path / "voila.log", "w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "voila"),
            str(NOTEBOOK),
            f"--port={port}",
            "--no-browser",
            "--Voila.ip=127.0.0.1",
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def stop():
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    request.addfinalizer(stop)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"voila exited early:\n{(tmp_path / 'voila.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.3)
    else:
        pytest.fail("voila did not start listening within 60 s")
    return f"http://127.0.0.1:{port}/"


def page_view(page) -> tuple[str, list[list[str]]]:
    verdict = page.inner_text(".wb-verdict").strip()
    rows = page.eval_on_selector_all(
        ".wb-ranking table tr",
        "rows => rows.map(r => Array.from(r.children).map(c => c.textContent))",
    )
    return verdict, rows


def expected(state: Setting) -> tuple[str, list[list[str]]]:
    table, _, _, verdict = update(state)
    return verdict, table_cells(table)


def settled_view(page, want, timeout_s: float = TIMEOUT_MS / 1000):
    """The page's (verdict, ranking rows) once they equal `want`, or the last seen on timeout.

    Widget updates reach the page one message at a time, so a read between two of them can
    see the new verdict beside the old table; poll until the whole view has settled."""
    deadline = time.monotonic() + timeout_s
    view = page_view(page)
    while view != want and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        view = page_view(page)
    return view


def wait_for_verdict(page, verdict: str):
    page.wait_for_function(
        "v => { const e = document.querySelector('.wb-verdict');"
        " return e && e.innerText.trim() === v; }",
        arg=verdict,
        timeout=TIMEOUT_MS,
    )


def nudge(page, control: str, key: str, times: int = 1):
    handle = page.locator(f".wb-control-{control} .noUi-handle")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def test_explorer_sliders_drive_ranking_and_verdict(voila, tmp_path):
    from playwright.sync_api import sync_playwright

    start = notebook_state()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.goto(voila, timeout=TIMEOUT_MS)
            page.wait_for_selector(".wb-verdict .wb-verdict-text", timeout=TIMEOUT_MS)

            verdict0, rows0 = settled_view(page, expected(start))
            assert (verdict0, rows0) == expected(start)

            # seed slider one step right: a new scenario, a new ranking
            seeded = start.with_(seed=start.seed + 1)
            nudge(page, "seed", "ArrowRight")
            wait_for_verdict(page, expected(seeded)[0])
            verdict1, rows1 = settled_view(page, expected(seeded))
            assert (verdict1, rows1) == expected(seeded)
            assert verdict1 != verdict0 and rows1 != rows0

            # lambda slider two steps left (step 0.25): same scenario, new scores
            lowered = seeded.with_(lam=start.lam - 0.5)
            nudge(page, "lam", "ArrowLeft", times=2)
            wait_for_verdict(page, expected(lowered)[0])
            verdict2, rows2 = settled_view(page, expected(lowered))
            assert (verdict2, rows2) == expected(lowered)
            assert rows2 != rows1  # the I column moves with lambda

            page.screenshot(path=str(tmp_path / "explorer.png"), full_page=True)
            keep = os.environ.get("WORKBENCH_SCREENSHOT")
            if keep:
                page.screenshot(path=keep, full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "explorer.png").stat().st_size > 10_000
