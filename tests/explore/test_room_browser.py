"""Pages of a room at once in a real Chromium: five pages (three explorers, two
workshops) opened together through the room's token links, as `make app` serves them. Every page
is usable (each explorer answers, one on the seed its link names; each workshop shows every part
and reveals one), a page that waits says for what with the seconds counting, a page whose
connection drops says so and comes back by itself, a chart that cannot be drawn says so and is
drawn again, nothing is requested off the machine and no console error is logged, a request
without the token or for another notebook starts nothing, every seat is freed once the pages
close, and nothing is written in the checkout."""

from __future__ import annotations

import json
import os
import time
import urllib.request

import browserkit
import pytest
from test_browser import TIMEOUT_MS, chromium_path
from test_room import _checkout_state

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TOKEN = "five-pages-token-0123456789"


def _status(served) -> dict:
    with urllib.request.urlopen(served.link("status"), timeout=30) as r:
        return json.loads(r.read())


def _wait(served, what, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while not what(st := _status(served)):
        assert time.monotonic() < deadline, f"the room never got there: {st}"
        time.sleep(0.2)
    return st


WAITING = r"""() => { const s = document.querySelector('.wb-status');
  return !!s && !s.hidden && /^preparing this page on the room server… [2-9] s$/.test(s.textContent); }"""


class Held:
    """A page's websocket whose messages to the server are held back until `release`."""

    def __init__(self):
        self.msgs, self.server, self.open = [], None, False

    def route(self, ws) -> None:
        self.server = ws.connect_to_server()
        ws.on_message(lambda m: self.server.send(m) if self.open else self.msgs.append(m))

    def release(self) -> None:
        self.open = True
        for m in self.msgs:
            self.server.send(m)


def test_five_pages_at_once_all_usable_and_freed(tmp_path):
    from playwright.sync_api import sync_playwright

    before = _checkout_state()
    with browserkit.serve(log=tmp_path / "room.log", token=TOKEN) as served:
        with sync_playwright() as p:
            ctx = browserkit.chromium(p, chromium_path(), viewport=(1280, 720))
            rec = browserkit.Recorder(ctx)
            kinds = ["explorer", "workshop", "explorer", "workshop", "explorer"]
            links = [served.link(k) for k in kinds]
            links[2] = served.link("explorer", "seed=7")
            pages = [ctx.new_page() for _ in kinds]
            held = Held()  # the last page's hello, held back: the page says what it waits for
            pages[-1].route_web_socket("**/socket/**", held.route)
            for page, link in zip(pages, links, strict=True):  # all five arrive together
                page.goto(link, wait_until="commit", timeout=TIMEOUT_MS)
            pages[-1].wait_for_function(WAITING, timeout=TIMEOUT_MS)
            held.release()
            st = _status(served)
            assert st["taken"] == 5  # one seat a page, and nothing else started
            for k, (page, kind) in enumerate(zip(pages, kinds, strict=True)):
                if kind == "explorer":
                    page.wait_for_selector(".wbx[data-wb-seq] .wb-verdict-text", timeout=TIMEOUT_MS)
                else:
                    page.wait_for_selector(".wb-part-13 .wb-reveal", timeout=TIMEOUT_MS)
                    for part in "1234":
                        assert page.locator(f".wb-part-{part} .wb-reveal").count() == 1
                    page.select_option(".wb-part-2 .wb-predict select", index=1)
                    page.click(".wb-part-2 button.wb-reveal")
                    page.wait_for_selector(".wb-part-2 .wb-compare-line", timeout=TIMEOUT_MS)
                    page.wait_for_selector(".wb-part-2 [data-wb-drawn]", timeout=TIMEOUT_MS)
                assert page.locator(".wb-status").is_hidden(), k  # gone once the page shows
                assert page.locator(".wb-wait").count() == 0, k
            assert "/seed=7/" in pages[2].inner_text(".wb-verdict-text")  # its link decides
            assert _status(served)["connected"] == 5

            assert rec.errors == [], rec.errors  # the five pages logged no error
            # a request without the token (a browser that never had it), or for another
            # notebook (with it), starts nothing
            stranger = browserkit.chromium(p, chromium_path(), viewport=(1280, 720))
            bare = stranger.new_page()
            r = bare.goto(served.url + "explorer", timeout=TIMEOUT_MS)
            assert r.status == 403 and "needs its link" in bare.inner_text("body")
            stranger.close()
            other = ctx.new_page()
            for path in ("voila/render/01_failure_mode.ipynb", "api/kernels", "notebooks/"):
                assert other.goto(served.url + path, timeout=TIMEOUT_MS).status == 404
            other.close()
            assert _status(served)["taken"] == 5

            assert rec.offsite() == [], rec.offsite()
            assert all("404" in e for e in rec.errors), rec.errors  # the refused requests' own
            for page in pages:
                page.close()  # no unload event needed: the websocket closes
            _wait(served, lambda st: st["taken"] == 0, timeout=60)
            ctx.close()
    assert _checkout_state() == before


def test_a_dropped_connection_and_a_failed_drawing_say_so_and_recover(tmp_path):
    """The room's Wi-Fi drops a page's websocket: the page says so, connects again on its own
    and answers the next change. The chart library fails to load once: the page says the
    explorer could not be drawn, and draws it on its own a few seconds later."""
    from playwright.sync_api import sync_playwright

    with browserkit.serve(log=tmp_path / "room.log", token=TOKEN) as served:
        with sync_playwright() as p:
            ctx = browserkit.chromium(p, chromium_path(), viewport=(1280, 720))
            page = ctx.new_page()
            failed = []

            def fail_once(route):
                if not failed:
                    failed.append(route.request.url)
                    return route.fulfill(status=500, body="down for a moment")
                return route.continue_()

            page.route("**/static/vega-bundle.js*", fail_once)
            sockets = []
            page.route_web_socket("**/socket/**", lambda ws: sockets.append(ws.connect_to_server()))
            page.goto(served.link("explorer"), timeout=TIMEOUT_MS)
            page.wait_for_function(
                "() => /could not be drawn.*drawing them again in 3 s/"
                ".test(document.querySelector('.wbx-err')?.textContent)",
                timeout=TIMEOUT_MS,
            )
            page.wait_for_selector(".wbx[data-wb-seq] .wb-verdict-text", timeout=TIMEOUT_MS)
            assert failed and page.inner_text(".wbx-err") == ""

            sockets[0].close()  # the server side of the page's websocket goes away
            page.wait_for_function(
                "() => /connection to the room server was lost/"
                ".test(document.querySelector('.wb-status').textContent)",
                timeout=TIMEOUT_MS,
            )
            page.wait_for_function(
                "() => document.querySelector('.wb-status').hidden", timeout=TIMEOUT_MS
            )
            assert len(sockets) == 2  # it connected again by itself
            seed = page.locator(".wb-control-seed input")
            seed.focus()
            seed.press("ArrowRight")
            page.wait_for_function(
                "() => /seed=1\\//.test(document.querySelector('.wb-verdict-text').textContent)",
                timeout=TIMEOUT_MS,
            )
            ctx.close()


def test_a_full_room_says_so_counts_down_and_lets_the_page_in_when_a_seat_frees(tmp_path):
    from playwright.sync_api import sync_playwright

    with browserkit.serve(
        "--no-warm-cache", "--seats=1", log=tmp_path / "room.log", token=TOKEN
    ) as srv:
        with sync_playwright() as p:
            ctx = browserkit.chromium(p, chromium_path(), viewport=(1280, 720))
            rec = browserkit.Recorder(ctx)
            first = ctx.new_page()
            first.goto(srv.link("workshop"), timeout=TIMEOUT_MS)
            first.wait_for_selector(".wb-part-13 .wb-reveal", timeout=TIMEOUT_MS)
            second = ctx.new_page()
            r = second.goto(srv.link("explorer"), timeout=TIMEOUT_MS)
            assert r.status == 503 and "The room is full" in second.inner_text("h1")
            second.wait_for_function(
                "() => /Trying again in 1[0-8] s/.test(document.body.innerText)",
                timeout=TIMEOUT_MS,
            )
            assert _status(srv)["taken"] == 1  # nothing started for the second page
            first.close()
            second.wait_for_selector(".wbx[data-wb-seq] .wb-verdict-text", timeout=60_000)
            # the 503 itself is the only error: the refused page's own request
            assert [e for e in rec.errors if "503" not in e] == []
            ctx.close()


def _explorer_page(p, served):
    """(context, recorder, page) of the room's explorer in a fresh Chromium, its first view drawn."""
    ctx = browserkit.chromium(p, chromium_path(), viewport=(1280, 720))
    rec = browserkit.Recorder(ctx)
    page = ctx.new_page()
    page.goto(served.link("explorer"), timeout=TIMEOUT_MS)
    page.wait_for_selector(".wbx[data-wb-seq] .wb-verdict-text", timeout=TIMEOUT_MS)
    return ctx, rec, page


MARKUP = '"><img src=x onerror="document.title=1"><b onmouseover="x()">k</b><div style="position:fixed;inset:0;background:red" class="'


def test_markup_in_an_uploaded_scenario_stays_text(tmp_path):
    """An uploaded scenario whose block kinds, ids and texts are markup (an image with a
    handler, an element with `on*`, a full-page overlay): in the room page in Chromium nothing of
    it becomes an element; the rows' kind classes are the known kinds (or `other`), and the
    texts are shown as written."""
    from playwright.sync_api import sync_playwright

    from workbench.dsgc.trace import scenario_for

    obj = scenario_for("role", 2, 20).to_dict()
    obj["id"] = "markup" + MARKUP[:20]
    for k, b in enumerate(obj["blocks"][:4]):
        b["kind"] = MARKUP if k % 2 == 0 else "chain x" + MARKUP
        b["text"] = MARKUP + " " + b["text"]
    upload = tmp_path / "markup.jsonl"
    upload.write_text(json.dumps(obj) + "\n")
    with browserkit.serve(log=tmp_path / "room.log", token=TOKEN) as served:
        with sync_playwright() as p:
            ctx, rec, page = _explorer_page(p, served)
            before = page.evaluate("() => document.querySelectorAll('*').length")
            page.set_input_files(".wb-control-upload input", str(upload))
            page.wait_for_function(
                "() => /markup/.test(document.querySelector('.wb-verdict-text').textContent)",
                timeout=TIMEOUT_MS,
            )
            found = page.evaluate(
                """() => ({
                  img: document.querySelectorAll('img').length,
                  handlers: [...document.querySelectorAll('*')].filter(e =>
                    [...e.attributes].some(a => a.name.startsWith('on'))).length,
                  fixed: [...document.querySelectorAll('div[style]')].filter(e =>
                    e.style.position === 'fixed').length,
                  classes: [...document.querySelectorAll('.wb-ranking tbody tr')].map(
                    tr => tr.className),
                  texts: [...document.querySelectorAll('.wb-ranking tbody td')].map(
                    td => td.textContent).filter(t => t.includes('onerror')).length,
                  title: document.title,
                })"""
            )
            after = page.evaluate("() => document.querySelectorAll('*').length")
            ctx.close()
    assert found["img"] == 0 and found["handlers"] == 0 and found["fixed"] == 0, found
    kinds = {c.split("wb-kind-")[1] for c in found["classes"]}
    assert kinds <= {"chain", "honeypot", "filler", "other"} and "other" in kinds, kinds
    assert found["texts"] >= 4  # the markup is shown, as text (its kind and its text columns)
    assert found["title"] != "1" and after - before < 50
    assert rec.errors == [] and rec.offsite() == [], (rec.errors, rec.offsite())


def test_the_page_warns_for_a_query_the_lexical_encoder_cannot_read(tmp_path):
    """In Chromium: an uploaded scenario with a Russian query and no edges shows both
    warnings under the verdict (the rule of `workbench evaluate`, dsgc.unseen), as text."""
    from playwright.sync_api import sync_playwright

    from workbench.dsgc.trace import scenario_for

    obj = scenario_for("role", 2, 20).to_dict()
    obj.update(id="ru", query="Кто может удалить зашифрованную копию?", edges=[])
    upload = tmp_path / "ru.jsonl"
    upload.write_text(json.dumps(obj, ensure_ascii=False) + "\n", encoding="utf-8")
    with browserkit.serve(log=tmp_path / "room.log", token=TOKEN) as served:
        with sync_playwright() as p:
            ctx, rec, page = _explorer_page(p, served)
            assert page.locator(".wb-warn").count() == 0
            page.set_input_files(".wb-control-upload input", str(upload))
            page.wait_for_selector(".wb-warn", timeout=TIMEOUT_MS)
            warns = page.locator(".wb-warn").all_text_contents()
            if os.environ.get("WB_SHOT"):
                page.screenshot(path=os.environ["WB_SHOT"])
            assert any("reads no word of the query" in w for w in warns), warns
            assert any("run `workbench induce` first" in w for w in warns), warns
            assert rec.errors == [] and rec.offsite() == [], (rec.errors, rec.offsite())
            ctx.close()
