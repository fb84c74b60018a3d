"""The explorer and the workshop in a real browser: one room server (served the way `make app`
serves a room) and one headless Chromium for the module. Every explorer control is moved and the
page must show exactly what the library computes for the new state; a good and a bad scenario
file are loaded; a copied link opens the same view; the exports are checked; the workshop is
played end to end. Every request the browser makes and every console error is recorded: none
may leave the machine, none may be an error."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from browserkit import Recorder, chromium, serve

from workbench.cli import main as cli
from workbench.dsgc.generator import generate
from workbench.dsgc.scenario import save_scenarios
from workbench.dsgc.trace import Setting, run_setting
from workbench.explore.explorer import Upload, payload, ranking_table, read_upload, to_query
from workbench.explore.lessons import LAMBDAS, neutral_ids
from workbench.explore.workshop import Workshop

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
TIMEOUT_MS = 120_000
ANSWERED = """v => { const r = document.querySelector('.wbx');
  const t = r && r.querySelector('.wb-verdict-text');
  return !!t && r.dataset.wbSeq === r.dataset.wbSent && t.textContent === v; }"""


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "Chromium is not on PATH (install it: apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run the browser test")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def server_log(tmp_path_factory):
    return tmp_path_factory.mktemp("room") / "room.log"


@pytest.fixture(scope="module")
def app(server_log):
    """The room server, as `make app` starts it (without warming the sentence cache: the tests
    fill what they need)."""
    try:
        with serve(log=server_log) as served:
            yield served
    except RuntimeError as e:
        pytest.fail(f"{e}\n{server_log.read_text()}")


@pytest.fixture(scope="module")
def browser(app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = chromium(p, chromium_path(), viewport=(1280, 720))
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=app.url.rstrip("/"))
        rec = Recorder(ctx)
        yield ctx, rec
        ctx.close()


def open_explorer(browser, app, query: str = "", link: str | None = None):
    ctx, _ = browser
    page = ctx.new_page()
    page.goto(link or app.link("explorer", query), timeout=TIMEOUT_MS)
    page.wait_for_selector(".wbx[data-wb-seq]", timeout=TIMEOUT_MS)
    return page


def shown(page) -> tuple[str, list[list[str]]]:
    verdict = page.inner_text(".wb-verdict-text")
    rows = page.eval_on_selector_all(
        ".wb-ranking table tr", "rs => rs.map(r => Array.from(r.children).map(c => c.textContent))"
    )
    return verdict, rows


def expect(page, setting: Setting, upload: Upload | None = None) -> dict:
    """Wait until the page answered every request and shows `setting`; compare verdict and
    every cell of the ranking table with the library's."""
    want = payload(setting, upload)
    page.wait_for_function(ANSWERED, arg=want["verdict"], timeout=TIMEOUT_MS)
    assert shown(page) == (want["verdict"], [want["table"]["cols"], *want["table"]["rows"]])
    return want


def key(page, control: str, k: str, times: int = 1) -> None:
    handle = page.locator(f".wb-control-{control} input")
    for _ in range(times):
        handle.focus()
        handle.press(k)


def pick(page, control: str, value) -> None:
    page.select_option(f".wb-control-{control} select", value=str(value))


def disabled(page, control: str) -> bool:
    return page.locator(f".wb-control-{control} input, .wb-control-{control} select").is_disabled()


@pytest.mark.sentence
def test_explorer_every_control_upload_share_export(app, browser, tmp_path, capsys, monkeypatch):
    s = Setting()  # the notebook's parameters are the Setting defaults
    final = s.with_(seed=2, total_blocks=50, template="role", multiplier=2.25, lam=0.5, tau=0.3)
    final = final.with_(hops=2, encoder="sentence")
    # the sentence embeddings the page will show, computed while the page loads (this fills the
    # disk cache the page's kernel reads, so neither side waits for the other)
    warm = threading.Thread(target=payload, args=(final,))
    warm.start()
    page = open_explorer(browser, app)
    expect(page, s)
    assert not disabled(page, "lam")

    moves = [
        (lambda: key(page, "seed", "ArrowRight", 2), {"seed": s.seed + 2}),
        (lambda: pick(page, "total-blocks", 50), {"total_blocks": 50}),
        (lambda: pick(page, "template", "role"), {"template": "role"}),
        (lambda: key(page, "multiplier", "ArrowRight"), {"multiplier": 2.25}),
        (lambda: key(page, "lam", "ArrowLeft", 2), {"lam": 0.5}),
        (lambda: key(page, "tau", "ArrowRight"), {"tau": 0.3}),
        (lambda: key(page, "hops", "ArrowRight"), {"hops": 2}),
        (lambda: pick(page, "policy", "similarity"), {"policy": "similarity"}),
    ]
    for move, change in moves:
        move()
        s = s.with_(**change)
        expect(page, s)
    # similarity-only: lambda, tau and hops do nothing, so they are disabled and say why
    assert all(disabled(page, c) for c in ("lam", "tau", "hops"))
    assert "not used by similarity-only" in page.inner_text(".wbx-why")
    pick(page, "policy", "no-graph")
    s = s.with_(policy="no-graph")
    expect(page, s)
    assert disabled(page, "lam") and not disabled(page, "tau")
    pick(page, "policy", "dsgc")
    s = s.with_(policy="dsgc")
    expect(page, s)
    assert page.inner_text(".wbx-why").strip() == ""

    # a good scenario file: its first scenario, then the second picked by id
    good = tmp_path / "mine.jsonl"
    save_scenarios([generate("profile", 3), generate("expense", 4)], good)
    page.set_input_files(".wb-control-upload input", str(good))
    mine = Upload(good.name, read_upload(good.name, good.read_text()))
    expect(page, s, mine)
    assert not page.locator(".wb-control-scenario").is_hidden()
    assert disabled(page, "total-blocks") and "set by the loaded file" in page.inner_text(
        ".wbx-why"
    )
    assert page.locator(".wbx-copy").is_disabled()  # a link cannot carry an uploaded file
    pick(page, "scenario", 1)
    second = Upload(good.name, mine.scenarios, 1)
    expect(page, s, second)

    # a bad file: the page shows the error `workbench evaluate` prints for it, keeps its view
    bad = tmp_path / "bad.jsonl"
    lines = good.read_text().splitlines()
    bad.write_text(lines[0] + "\n" + lines[1].replace('"query":', '"query" ', 1) + "\n")
    page.set_input_files(".wb-control-upload input", str(bad))
    page.wait_for_function(
        "() => document.querySelector('.wbx-err').textContent.length > 0", timeout=TIMEOUT_MS
    )
    shown_error = page.inner_text(".wbx-err")
    monkeypatch.chdir(tmp_path)
    assert cli(["evaluate", bad.name, "--out", "out.jsonl"]) != 0
    assert shown_error.startswith("bad.jsonl: line 2: ")
    assert shown_error in capsys.readouterr().err
    assert shown(page)[0] == payload(s, second)["verdict"]

    # back to a generated scenario, then the sentence encoder (embeddings cached above)
    pick(page, "template", "role")
    expect(page, s)
    warm.join()
    pick(page, "encoder", "sentence")
    s = s.with_(encoder="sentence")
    assert s == final
    expect(page, s)
    assert page.inner_text(".wbx-err") == ""
    screenshots(page, "explorer")

    # a copied link (the room's explorer page, with the room's token) opens the same view
    page.click(".wbx-copy")
    link = page.locator(".wbx-link input").input_value()
    assert link == f"{app.url}explorer?{to_query(s)}&token={app.token}"
    assert page.url.endswith("?" + to_query(s))  # the address bar follows the view too
    other = open_explorer(browser, app, link=link)
    expect(other, s)
    assert shown(other) == shown(page)
    other.close()

    # exports: the ranking table (CSV), the charts (SVG, PNG) and the state (JSON)
    with page.expect_download() as dl:
        page.click("[data-export=csv]")
    want = ranking_table(run_setting(s)).to_csv(
        index=False, float_format="%.4f", lineterminator="\n"
    )
    assert Path(dl.value.path()).read_text() == want
    with page.expect_download() as dl:
        page.click("[data-export='landscape.svg']")
    svg = Path(dl.value.path()).read_text()
    assert svg.startswith("<svg") and "Score landscape: role/seed=2/blocks=50" in svg
    with page.expect_download() as dl:
        page.click("[data-export='valley.png']")
    png = Path(dl.value.path()).read_bytes()
    assert dl.value.suggested_filename.endswith(".png") and png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width >= 400 and height >= 200, (width, height)  # a drawn chart at 2x, not a stub
    with page.expect_download() as dl:
        page.click("[data-export=json]")
    state = json.loads(Path(dl.value.path()).read_text())
    assert state["setting"] == asdict(s) and state["query"] == to_query(s)
    page.close()


def test_workshop_predict_reveal_score(app, browser):
    ws = Workshop()  # the notebook's parameters are the Workshop defaults
    ctx, _ = browser
    page = ctx.new_page()
    page.goto(app.link("workshop"), timeout=TIMEOUT_MS)
    page.wait_for_selector(f".wb-part-{ws.PARTS[-1]} .wb-reveal", timeout=TIMEOUT_MS)

    # before any reveal: neutral ids only, and no answer anywhere in the page
    text = page.inner_text("body")
    assert not re.search(r"\b[chf]\d+\b", text), "a real block id gives a kind away"
    assert "evicted" not in " ".join(page.locator(".wb-part").all_inner_texts())
    assert "Score: 0 of 0" in page.inner_text(".wb-score")
    assert "3-4. The one-hop boundary (20 min)" in text  # every step has its heading
    assert "make app" not in text and "docs/" not in text  # no developer text for participants

    sim = run_setting(ws.state, policy="similarity")
    names = neutral_ids(sim.scenario)
    right1 = names[sim.displaced[0]]
    reveal(page, "2", right1)
    assert f"evicted {right1} (= {sim.displaced[0]})" in page.inner_text(".wb-part-2 .wb-compare")
    assert "Right!" in page.inner_text(".wb-part-2 .wb-compare")
    assert "Discuss:" in page.inner_text(".wb-part-2 .wb-answer")
    page.wait_for_selector(".wb-part-2 .wb-answer [data-wb-drawn]", timeout=TIMEOUT_MS)

    rescue = next(lam for lam in LAMBDAS if run_setting(ws.state, lam=lam).full_chain_retained)
    wrong = next(lam for lam in LAMBDAS if lam != rescue)
    reveal(page, "6", f"λ = {wrong:g}")
    compare = page.inner_text(".wb-part-6 .wb-compare")
    assert f"smallest λ that keeps the whole chain is {rescue:g}" in compare
    assert "Not this time" in compare

    # the explorer opens on the store of parts 9-13: before their reveals it says so instead
    page.click(".wb-open-explorer")
    page.wait_for_selector(".wb-free-note p", timeout=TIMEOUT_MS)
    assert "Reveal parts 9, 10, 11, 12, 13 first" in page.inner_text(".wb-free-note")
    assert "evicted" not in page.inner_text(".wb-free")

    hop = run_setting(ws.hop_state)
    hop_names = neutral_ids(hop.scenario)
    reveal(page, "9", hop_names[hop.displaced[0]])
    assert "Right!" in page.inner_text(".wb-part-9 .wb-compare")
    best = next(h for h in (1, 2, 3) if run_setting(ws.hop_state, hops=h).full_chain_retained)
    reveal(page, "11", f"{best} hop{'s' if best > 1 else ''}")
    assert f"{best} hops keep the chain" in page.inner_text(".wb-part-11 .wb-compare")
    for key in ("10", "12", "13"):  # the right prediction, as the answer key has it
        right = ws.answer(key).value
        reveal(page, key, ws.question(key).label(right[0] if isinstance(right, list) else right))
    page.wait_for_function(  # the score line follows the last reveal's answer
        "() => document.querySelector('.wb-score').innerText"
        ".includes('Score: 6 of 7 predictions right')",
        timeout=TIMEOUT_MS,
    )
    # a reveal locks the prediction: the score cannot be gamed
    assert page.locator(".wb-part-2 .wb-predict select").is_disabled()
    # ... not even by a reload: the page keeps the predictions and reveals (localStorage)
    page.reload(timeout=TIMEOUT_MS)
    page.wait_for_function(
        "() => (document.querySelector('.wb-score') || {}).innerText"
        "?.includes('Score: 6 of 7 predictions right')",
        timeout=TIMEOUT_MS,
    )
    select = page.locator(".wb-part-2 .wb-predict select")
    assert select.is_disabled() and right1 in select.evaluate("s => s.selectedOptions[0].text")
    assert "Right!" in page.inner_text(".wb-part-2 .wb-compare")
    page.click(".wb-open-explorer")  # free exploration, opened after the reveals
    page.wait_for_function(ANSWERED, arg=payload(ws.hop_state)["verdict"], timeout=TIMEOUT_MS)
    screenshots(page, "workshop", scroll_to=".wb-part-2 .wb-compare")
    page.close()


def reveal(page, part: str, label: str) -> None:
    page.select_option(f".wb-part-{part} .wb-predict select", label=label)
    page.click(f".wb-part-{part} button.wb-reveal")
    page.wait_for_selector(f".wb-part-{part} .wb-compare-line", timeout=TIMEOUT_MS)


def screenshots(page, name: str, scroll_to: str | None = None) -> None:
    """With WORKBENCH_SCREENSHOTS=DIR: NAME_1280x720.png and NAME_1600x1200.png of the page."""
    folder = os.environ.get("WORKBENCH_SCREENSHOTS")
    if not folder:
        return
    for w, h in ((1280, 720), (1600, 1200)):
        page.set_viewport_size({"width": w, "height": h})
        page.wait_for_timeout(600)  # the charts refit to the new width (ResizeObserver)
        if scroll_to:
            page.locator(scroll_to).scroll_into_view_if_needed()
        page.screenshot(path=str(Path(folder) / f"{name}_{w}x{h}.png"))


def test_a_reloaded_or_closed_page_frees_its_seat_at_once(browser, app):
    """A reload or a closed tab frees the page's seat at once (a room of thirty reloading pages
    must not pile up sessions): the page's websocket closes, and the server frees its seat."""
    import urllib.request

    def status() -> dict:
        with urllib.request.urlopen(app.link("status"), timeout=30) as r:
            return json.loads(r.read())

    def wait_for(freed: int) -> None:
        for _ in range(100):
            if status()["counts"].get("freed: page closed", 0) >= freed:
                return
            time.sleep(0.1)
        pytest.fail(f"seats not freed: {status()}")

    before = status()["counts"].get("freed: page closed", 0)
    page = open_explorer(browser, app)
    page.reload(timeout=TIMEOUT_MS)
    page.wait_for_selector(".wbx[data-wb-seq]", timeout=TIMEOUT_MS)
    wait_for(before + 1)  # the first page's seat, at the reload
    page.close()
    wait_for(before + 2)  # the reloaded page's seat, at the close


def test_nothing_left_the_machine_and_no_console_error(browser):
    """Runs last: every request of every page above stayed on 127.0.0.1; no console error."""
    _, rec = browser
    assert len(rec.requests) > 20  # the pages really loaded (scripts, websockets, ...)
    assert rec.offsite() == []
    assert rec.errors == []
