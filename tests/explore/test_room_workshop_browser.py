"""Thirty participants play the whole workshop together on `make app`'s server, each in a browser
context of its own (one headless Chromium): every page predicts every part, some change their
mind, some reload halfway, one joins by typing the room's code, and each reveals the parts its
plan says. The instructor's tally must equal what the pages sent (each person's prediction
counted once, reveals locked), the bars the instructor shows must reach the projector view, and
the QR code on the instructor's page must decode to the join link. (The room's times at thirty
pages are `make bench ARGS=--room`'s, not this test's.)"""

from __future__ import annotations

import io
import json
import random
import time

import pytest
from browserkit import CHROMIUM_ARGS, Recorder, instructor_key, is_local, serve
from test_browser import chromium_path, screenshots

from workbench.explore.workshop import Workshop

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PEOPLE = 30
TOKEN = "workshop-room-token-0123456789"


def plan(k: int, ws: Workshop) -> dict:
    """Person k's workshop: a first pick and a final pick per part, and the parts revealed."""
    rng = random.Random(f"person-{k}")
    out = {}
    for key in ws.PARTS:
        n = len(ws.question(key).choices)
        first, final = rng.randrange(n), rng.randrange(n)
        out[key] = {"first": first, "final": final, "reveal": rng.random() < 0.6}
    return out


def test_thirty_people_play_the_workshop_and_the_tally_is_what_they_sent(tmp_path):
    from playwright.sync_api import sync_playwright

    ws = Workshop()  # the room's own workshop: the notebook's parameters are the defaults
    plans = [plan(k, ws) for k in range(PEOPLE)]
    reloads = set(range(4, PEOPLE, 7))  # these reload their page after picking, before revealing
    typed = 1  # this one joins by typing the room's code, not by the link
    log = tmp_path / "room.log"
    with (
        serve("--no-warm-cache", f"--seats={PEOPLE + 4}", log=log, token=TOKEN) as room,
        sync_playwright() as p,
    ):
        key = instructor_key(log)
        code = next(line.split("type the code ")[1].split(",")[0]
                    for line in log.read_text().splitlines() if "type the code" in line)  # fmt: skip
        browser = p.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        contexts = [browser.new_context(viewport={"width": 1280, "height": 800})
                    for _ in range(PEOPLE)]  # fmt: skip
        recs = [Recorder(c) for c in contexts]
        pages = [c.new_page() for c in contexts]
        for k, page in enumerate(pages):
            if k == typed:
                page.goto(room.url)  # no token: the page asks for the room's code
                page.fill("input[name=code]", code.lower().replace("-", " "))  # as typed
                page.click(".wb-join-form button")
                page.wait_for_selector('a[href="/workshop"]')
                page.goto(f"{room.url}workshop")
            else:
                page.goto(room.link("workshop"), wait_until="commit")
        last = ws.PARTS[-1]
        for page in pages:
            page.wait_for_selector(f".wb-part-{last} .wb-reveal", timeout=120_000)

        def pick(page, part: str, choice: int) -> None:
            page.select_option(f".wb-part-{part} .wb-predict select", value=str(choice))

        for part in ws.PARTS:  # the room goes part by part: everyone picks, then reveals
            for k, page in enumerate(pages):
                pick(page, part, plans[k][part]["first"])
                if plans[k][part]["final"] != plans[k][part]["first"]:
                    pick(page, part, plans[k][part]["final"])  # changed their mind
            if part == "7":  # halfway, some reload: their picks and reveals come back
                for k in reloads:
                    pages[k].reload()
                    pages[k].wait_for_selector(f".wb-part-{last} .wb-reveal", timeout=60_000)
            for k, page in enumerate(pages):
                if plans[k][part]["reveal"]:
                    page.click(f".wb-part-{part} button.wb-reveal")
            for k, page in enumerate(pages):
                if plans[k][part]["reveal"]:
                    page.wait_for_selector(f".wb-part-{part} .wb-discuss", timeout=60_000)

        want = {}
        for part in ws.PARTS:
            counts = [0] * len(ws.question(part).choices)
            for pl in plans:
                counts[pl[part]["final"]] += 1
            revealed = sum(pl[part]["reveal"] for pl in plans)
            want[part] = {"counts": counts, "predicted": PEOPLE, "revealed": revealed}

        def tally() -> dict:
            status, _, body = room.request(f"instructor?key={key}&format=json")
            assert status == 200
            return json.loads(body)["tally"]

        deadline = time.monotonic() + 30
        while True:
            got = tally()
            seen = {k: {f: v[f] for f in ("counts", "predicted", "revealed")}
                    for k, v in got["parts"].items()}  # fmt: skip
            if seen == want or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert got["participants"] == PEOPLE  # a reload is the same person
        assert seen == want

        # the instructor's page: the QR code is the join link; a part shown reaches the projector
        ins_ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        ins_rec = Recorder(ins_ctx)
        ins = ins_ctx.new_page()
        ins.goto(f"{room.url}instructor?key={key}")
        assert decoded_qr(ins.locator(".wb-qr").screenshot()) == room.link()
        assert ins.locator(".wb-code").text_content().strip() == code
        bars = ins.locator('.wb-tally[data-part="2"] .wb-bars')
        assert bars.is_hidden()  # nothing shown before the instructor says
        ins.click('.wb-show[data-part="2"]')
        ins.wait_for_function(
            "() => !document.querySelector('.wb-tally[data-part=\"2\"] .wb-bars').hidden"
        )
        projector = ins_ctx.new_page()
        projector.goto(f"{room.url}instructor?view=projector")
        projector.wait_for_selector('.wb-tallies-shown .wb-tally[data-part="2"]')
        shown = projector.locator('.wb-tallies-shown .wb-tally[data-part="2"] .wb-bar-n')
        projector.wait_for_function(
            "n => [...document.querySelectorAll('.wb-tallies-shown .wb-bar-n')]"
            ".reduce((a, e) => a + Number(e.textContent), 0) === n",
            arg=PEOPLE,
        )
        assert [int(t) for t in shown.all_text_contents()] == want["2"]["counts"]
        assert projector.locator('.wb-tallies-shown .wb-tally[data-part="3"]').count() == 0
        screenshots(projector, "projector")
        screenshots(ins, "instructor", scroll_to='.wb-tally[data-part="2"]')
        for k, rec in enumerate([*recs, ins_rec]):  # (the typed join starts on the 403 page)
            errors = [e for e in rec.errors if not (k == typed and "403" in e)]
            assert errors == [], errors
            assert [u for u in rec.requests if not is_local(u)] == []
        browser.close()


def decoded_qr(png: bytes) -> str:
    """The text of the one QR code in a PNG (zxing-cpp)."""
    import zxingcpp
    from PIL import Image

    found = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)).convert("L"))
    assert len(found) == 1, f"{len(found)} codes found"
    return found[0].text
