"""The room server: `make app` serves only the explorer and the workshop, behind a token,
from one process; a page takes a seat, and its seat is freed when the page closes, goes silent,
or never connects; past the seats a page is told the room is full and nothing starts; no file is
written in the checkout. Plain HTTP and websockets against the real server (the browser tests
drive the pages)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import browserkit
import pytest
import tornado.httpclient
import tornado.websocket

from workbench.dsgc.trace import Setting, run_setting
from workbench.explore import app
from workbench.explore.explorer import payload
from workbench.explore.lessons import neutral_ids
from workbench.explore.plan import STEPS
from workbench.explore.workshop import Workshop

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "room-test-token-of-32-characters"


def _get(url: str, cookie: str | None = None, method: str = "GET") -> tuple[int, dict, str]:
    """(status, headers, body) of a request."""
    req = urllib.request.Request(url, method=method, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8", "replace")


def _status(served) -> dict:
    code, _, body = _get(served.link("status"))
    assert code == 200
    return json.loads(body)


def _wait(served, what, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        st = _status(served)
        if what(st):
            return st
        assert time.monotonic() < deadline, f"the room never got there: {st}"
        time.sleep(0.2)


def _checkout_state() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


class Page:
    """One page as a browser holds it: the served HTML (its seat), then its websocket."""

    def __init__(self, served, kind: str, query: str = ""):
        self.served, self.kind = served, kind
        self.code, headers, self.html = _get(served.link(kind, query))
        self.cookie = headers.get("Set-Cookie", "").split(";")[0]
        self.sid = None
        if self.code == 200:
            cfg = self.html.split('id="wb-room-config">')[1].split("</script>")[0]
            self.sid = json.loads(cfg.replace("&amp;", "&"))["sid"]
        self.ws = None
        self.got: list[dict] = []

    async def connect(self, sid: str | None = None) -> None:
        url = self.served.url.replace("http", "ws") + f"socket/{sid or self.sid}?kind={self.kind}"
        req = tornado.httpclient.HTTPRequest(url, headers={"Cookie": self.cookie})
        self.ws = await tornado.websocket.websocket_connect(req)

    async def send(self, msg: dict) -> None:
        await self.ws.write_message(json.dumps(msg))

    async def until(self, test, timeout: float = 30) -> dict:
        """The first message (received from now on, or already kept) that passes `test`."""
        for m in self.got:
            if test(m):
                self.got.remove(m)
                return m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no such message; got {self.got}"
            text = await asyncio.wait_for(self.ws.read_message(), left)
            assert text is not None, "the server closed the page's websocket"
            m = json.loads(text)
            if test(m):
                return m
            self.got.append(m)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    before = _checkout_state()
    log = tmp_path_factory.mktemp("room") / "room.log"
    args = ("--no-warm-cache", "--seats=3", "--first-connect=2", "--ping=1")
    with browserkit.serve(*args, log=log, token=TOKEN) as served:
        yield served
    assert _checkout_state() == before  # nothing written in the checkout


def test_the_room_serves_its_two_pages_and_nothing_else(room):
    code, _, index = _get(room.link())
    assert code == 200 and 'href="/explorer"' in index and 'href="/workshop"' in index
    for kind in ("explorer", "workshop"):
        page = Page(room, kind)
        assert page.code == 200 and page.sid
        assert "cdn" not in page.html.lower() and "https://" not in page.html
    cookie = page.cookie
    for path in (
        "api/kernels",
        "api/sessions",
        "api/contents",
        "voila/render/01_failure_mode.ipynb",
        "voila/render/05_explorer.ipynb",
        "notebooks/01_failure_mode.ipynb",
        "tree",
        "lab",
        "files/README.md",
        "static/app.py",
        "static/../server.py",
        "static/vega-bundle.js/../../app.py",
        "01_failure_mode",
    ):
        assert _get(room.url + path, cookie)[0] == 404, path
    assert _get(room.link(), method="POST")[0] == 405
    assert _get(room.link("explorer"), method="POST")[0] == 405
    assert _get(room.url + "static/room.js", cookie)[0] == 200
    assert _get(room.url + "static/room.js")[0] == 403  # the page's files need the token too


def test_without_the_token_nothing_starts(room):
    _wait(room, lambda st: st["taken"] == 0)  # the pages of the test before never connected
    before = _status(room)["counts"].get("refused: no token", 0)
    for path in ("", "explorer", "workshop", "status", "static/room.js"):
        code, _, body = _get(room.url + path)
        assert code == 403 and (path.startswith(("static", "status")) or "needs its link" in body)
        assert "stylesheet" not in body  # the refusal loads nothing from the room
        code, _, _ = _get(f"{room.url}{path}?token=wrong{TOKEN}")
        assert code == 403
    st = _status(room)
    assert st["taken"] == 0 and st["counts"]["refused: no token"] == before + 10

    async def socket_without_cookie():
        page = Page(room, "explorer")
        page.cookie = ""
        with pytest.raises(tornado.httpclient.HTTPClientError) as e:
            await page.connect()
        return e.value.code

    assert asyncio.run(socket_without_cookie()) == 403


def test_a_page_that_never_connects_has_its_seat_freed(room):
    _wait(room, lambda st: st["taken"] == 0)
    t = time.monotonic()
    Page(room, "explorer")  # a plain GET: served, never connected
    assert _status(room)["taken"] == 1
    _wait(room, lambda st: st["taken"] == 0)
    assert time.monotonic() - t >= 2  # not before its first-connect time


def test_past_the_seats_the_room_is_full_and_nothing_starts_until_a_seat_frees(room):
    async def scenario():
        _wait(room, lambda st: st["taken"] == 0)
        pages = [Page(room, k) for k in ("explorer", "workshop", "explorer")]
        for p in pages:
            await p.connect()
        full = Page(room, "workshop")
        assert full.code == 503 and "The room is full" in full.html and "data-retry" in full.html
        st = _status(room)
        assert st["taken"] == st["connected"] == 3 and st["counts"]["full"] >= 1
        pages[0].ws.close()  # a closed tab frees its seat at once
        _wait(room, lambda st: st["taken"] == 2, timeout=5)
        again = Page(room, "workshop")
        assert again.code == 200
        for p in pages[1:]:
            p.ws.close()

    asyncio.run(scenario())
    _wait(room, lambda st: st["taken"] == 0, timeout=10)


def test_a_silent_page_has_its_seat_freed():
    """A page whose connection goes silent (a laptop shut, the Wi-Fi gone: no answer to the
    server's pings) is freed within two ping intervals and the 5 s a closing websocket is given
    (35 s at the room's 15 s pings); here the page is a bare socket that did the websocket
    handshake and then never reads or answers, and the pings are 1 s apart."""
    with browserkit.serve("--no-warm-cache", "--ping=1", token=TOKEN) as served:
        page = Page(served, "explorer")
        raw = browserkit.raw_websocket(served, page.sid, page.cookie)
        st = _wait(served, lambda st: st["connected"] == 1, timeout=10)
        t = time.monotonic()
        _wait(served, lambda st: st["taken"] == 0, timeout=10)
        assert time.monotonic() - t < 2 * 1 + 5 + 1 and st["taken"] == 1
        raw.close()


def test_the_pages_answer_over_their_sockets(room):
    """The explorer answers each change with the library's view; the workshop's questions hold
    no answer, a reveal locks its prediction and scores it, a reload's restore brings the
    reveals back, the room's tally counts each person's prediction once, and the free
    exploration's explorer opens only after parts 9-13."""
    ws = Workshop()

    async def scenario():
        _wait(room, lambda st: st["taken"] == 0)
        ex = Page(room, "explorer", "seed=4&tpl=role")
        await ex.connect()
        await ex.send({"type": "hello", "query": "?seed=4&tpl=role&token=x"})
        first = await ex.until(lambda m: m.get("new"))
        s = Setting(seed=4, template="role")
        assert first["fields"]["payload"]["verdict"] == payload(s)["verdict"]
        assert first["fields"]["ready"] and "vega-bundle.js" in first["fields"]["lib"]
        assert first["fields"]["link_extra"] == f"token={TOKEN}"
        await ex.send(
            {
                "type": "model",
                "model": "page",
                "content": {"type": "set", "changes": {"lam": 0}, "seq": 1},
            }
        )
        m = await ex.until(lambda m: "payload" in m.get("fields", {}))
        assert m["fields"]["payload"]["seq"] == 1
        assert m["fields"]["payload"]["verdict"] == payload(s.with_(lam=0.0))["verdict"]
        await ex.send(
            {
                "type": "model",
                "model": "page",
                "content": {"type": "set", "changes": {"lam": 9}, "seq": 2},
            }
        )
        m = await ex.until(lambda m: "error" in m.get("fields", {}))
        assert "lam must be in" in m["fields"]["error"]
        await ex.ws.write_message("not json")
        assert "bad message" in (await ex.until(lambda m: m["type"] == "error"))["text"]
        await ex.send({"model": "page", "content": {}})  # no type: refused by name
        assert "unknown message type" in (await ex.until(lambda m: m["type"] == "error"))["text"]
        await ex.send({"type": "reveal", "part": "1"})  # a workshop's message on an explorer page
        assert "no workshop" in (await ex.until(lambda m: m["type"] == "error"))["text"]

        w = Page(room, "workshop")
        await w.connect()
        await w.send({"type": "hello", "query": ""})
        q = await w.until(lambda m: m["type"] == "questions")
        assert list(q["parts"]) == list(ws.PARTS) and q["memory"] == ws.memory_key
        assert "evicted" not in json.dumps(q["parts"])
        person = q["participant"]  # the room's tally knows this page's person by it
        sim = run_setting(ws.state, policy="similarity")
        right = neutral_ids(sim.scenario)[sim.displaced[0]]
        choice = q["parts"]["2"]["choices"].index(right)
        await w.send({"type": "predict", "part": "2", "choice": (choice + 1) % 3})
        await w.send({"type": "predict", "part": "2", "choice": choice})  # changed its mind
        await w.send({"type": "reveal", "part": "2", "choice": choice})
        r = await w.until(lambda m: m["type"] == "revealed")
        assert r["right"] is True and "Right!" in r["compare"]
        assert any("chart" in i for i in r["items"]) and "Discuss:" in r["items"][-1]["html"]
        assert "Score: 1 of 1" in (await w.until(lambda m: m["type"] == "score"))["html"]
        await w.send({"type": "reveal", "part": "2", "choice": choice + 1})  # locked: as before
        assert (await w.until(lambda m: m["type"] == "revealed"))["choice"] == choice
        await w.send({"type": "open-explorer"})
        note = await w.until(lambda m: m["type"] == "note")
        assert "Reveal parts 9, 10, 11, 12, 13 first" in note["html"]
        await w.send({"type": "reveal", "part": "99", "choice": None})
        assert "no part" in (await w.until(lambda m: m["type"] == "error"))["text"]
        await w.send({"type": "predict", "part": "99", "choice": 0})
        assert "no part" in (await w.until(lambda m: m["type"] == "error"))["text"]
        w.ws.close()

        again = Page(room, "workshop")  # a reload: the page sends back what it kept
        await again.connect()
        await again.send({"type": "hello", "query": "", "participant": person})
        assert (await again.until(lambda m: m["type"] == "questions"))["participant"] == person
        kept = {k: {"choice": 0, "revealed": True} for k in ("9", "10", "11", "12", "13")}
        kept["2"] = {"choice": choice + 1, "revealed": True}  # locked before: counted once
        kept["6"] = {"choice": "junk", "revealed": True}
        kept["1"] = {"choice": 2, "revealed": False}  # a pick, not revealed
        await again.send({"type": "restore", "kept": kept})
        got = [await again.until(lambda m: m["type"] == "revealed") for _ in range(6)]
        assert [g["part"] for g in got] == ["2", "9", "10", "11", "12", "13"]
        # the instructor's tally: one participant, each prediction counted once, part 2 locked
        # at the choice revealed first, part 1's pick counted, part 6 (junk) not
        status, _, body = room.request(f"instructor?key={browserkit.instructor_key(room.log)}"
                                       "&format=json")  # fmt: skip
        tally = json.loads(body)["tally"]
        assert status == 200 and tally["participants"] == 1
        two = tally["parts"]["2"]
        assert two["counts"][choice] == 1 and sum(two["counts"]) == 1 and two["revealed"] == 1
        assert tally["parts"]["1"]["counts"][2] == 1 and tally["parts"]["1"]["revealed"] == 0
        assert tally["parts"]["6"]["predicted"] == 0 and not two["shown"]
        other = Page(room, "workshop")  # a made-up participant id is not taken
        await other.connect()
        await other.send({"type": "hello", "query": "", "participant": "made-up-id-123"})
        assert (await other.until(lambda m: m["type"] == "questions"))["participant"] not in (
            "made-up-id-123",
            person,
        )
        other.ws.close()
        await again.send({"type": "open-explorer"})
        opened = await again.until(lambda m: m.get("model") == "explorer" and m.get("new"))
        assert opened["fields"]["payload"]["verdict"] == payload(ws.hop_state)["verdict"]
        assert opened["fields"]["follow"] is False  # the workshop's address stays the workshop's
        # a page that reconnects asks again for its open explorer, at the view it showed
        await again.send({"type": "open-explorer", "query": "seed=5&hops=2"})
        back = await again.until(lambda m: m.get("model") == "explorer" and m.get("new"))
        shown = ws.hop_state.with_(seed=5, hops=2)
        assert back["fields"]["payload"]["verdict"] == payload(shown)["verdict"]
        ex.ws.close()
        again.ws.close()

    asyncio.run(scenario())


def test_the_links_carry_the_token():
    links = app.room_links("192.168.1.20", 8866, "abc")
    assert links["explorer"] == "http://192.168.1.20:8866/explorer?token=abc"
    assert links["workshop"] == "http://192.168.1.20:8866/workshop?token=abc"
    assert links["room"] == "http://192.168.1.20:8866/?token=abc"
    assert "0.0.0.0" not in app.room_links("0.0.0.0", 8866, "abc")["room"]


PROBE = """
import random
from workbench.common.encoders import get_encoder
from workbench.dsgc.trace import Setting, run_setting
from workbench.explore.explorer import BLOCKS, SLIDERS, TEMPLATE_CHOICES, needs_model
rng = random.Random(7)
_, lo, hi, _ = SLIDERS["seed"]
needed = 0
for _ in range(40):
    s = Setting(template=rng.choice(TEMPLATE_CHOICES), seed=rng.randint(lo, hi),
                total_blocks=rng.choice(BLOCKS), encoder="sentence")
    needed += needs_model(s)
    run_setting(s)
print("needed the model:", needed, "model loaded:", get_encoder("sentence").base.loaded)
"""


@pytest.mark.sentence
@pytest.mark.slow
def test_the_room_warms_the_sentence_cache_so_no_page_loads_the_model(tmp_path):
    """`make app` fills the machine's sentence cache with every text the explorer can show
    before it serves: a fresh process switched to the sentence encoder, at any template, seed
    and size, reads its embeddings and never loads the model (the model is loaded once per
    machine, by the warm-up). Without the warm-up the same probe loads it."""
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(tmp_path), HF_HUB_OFFLINE="1")

    def run(code):
        return subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout

    cold = run(PROBE)  # nothing cached yet: the probe needs the model
    assert "model loaded: True" in cold
    for f in tmp_path.iterdir():
        f.unlink()
    warm = run("from workbench.explore import app; print(app.warm_room_cache())")
    assert "once per machine" in warm and "kept in" in warm
    again = run("from workbench.explore import app; print(app.warm_room_cache())")
    assert "cached" in again and ", 0)" in again  # the second room encodes nothing
    assert "needed the model: 0 model loaded: False" in run(PROBE)


# --- the pages and sessions, without a server ---------------------------------------------------


def test_a_room_page_is_its_notebook():
    from workbench.explore.pages import read_page

    ex = read_page(ROOT / "notebooks" / "05_explorer.ipynb")
    assert [s.kind for s in ex.sections] == ["md", "explorer", "md"]  # the stored part is hidden
    assert ex.title.startswith("5. Explorer")
    assert "The starting view, stored" not in "".join(s.arg for s in ex.sections)
    names = ("TEMPLATE", "SEED", "ENCODER", "POLICY", "BUDGET_MULTIPLIER", "LAMBDA", "TAU")
    want = Setting(*(ex.params[n] for n in (*names, "HOPS", "TOTAL_BLOCKS")))
    assert Setting(**ex.arguments(Setting)) == want  # the page starts where the notebook does
    ws = read_page(ROOT / "notebooks" / "06_workshop.ipynb")
    live = [(s.kind, s.arg) for s in ws.sections if s.kind != "md"]
    assert live == [("part", k) for k in Workshop.PARTS] + [
        ("score", "ws"),
        ("free", "ws"),
    ]
    assert ws.arguments(Workshop)["encoder"] == ws.params["ENCODER"]
    headings = [s.arg for s in ws.sections if s.kind == "md" and "<h2>" in s.arg]
    for page in (ex, ws):  # a participant's page says nothing meant for the one who runs it
        words = " ".join(s.arg for s in page.sections if s.kind == "md")
        assert "make " not in words and "docs/" not in words, page.name
    source = (ROOT / "notebooks" / "06_workshop.py").read_text()
    for step in STEPS:  # every step of the plan: its heading and its row, with the plan's minutes
        assert any(f"{step.title} ({step.time} min)" in h for h in headings), step
        parts = f"{step.parts[0]}-{step.parts[-1]}" if len(step.parts) > 1 else "".join(step.parts)
        assert f"| {step.title} | {step.time} | {parts} |" in source, step


def test_a_notebook_the_room_cannot_read_is_a_clear_error(tmp_path):
    from workbench.explore.pages import PageError, read_page

    def notebook(*cells) -> Path:
        path = tmp_path / "nb.ipynb"
        path.write_text(json.dumps({"cells": list(cells)}))
        return path

    def code(src, tags=()):
        return {"cell_type": "code", "source": src, "metadata": {"tags": list(tags)}}

    params = code('TEMPLATE = "role"', ["parameters"])
    with pytest.raises(PageError, match=r"nb.ipynb: cell 1: NOPE is not a parameter"):
        read_page(notebook(params, code("state = Setting(TEMPLATE, NOPE)")))
    with pytest.raises(PageError, match=r"nb.ipynb: line 1: cell 0"):
        read_page(notebook(code("def (")))
    with pytest.raises(PageError, match="not a notebook"):
        read_page(tmp_path / "missing.ipynb")
    with pytest.raises(PageError, match="explorer\\(other\\): other is not built"):
        read_page(notebook(params, code("explorer(other)")))
    # `make app` with such a notebook says so, naming the file and the cell, and serves nothing
    folder = tmp_path / "nbs"
    folder.mkdir()
    (folder / "05_explorer.ipynb").write_text(
        notebook(params, code("state = Setting(NOPE)")).read_text()
    )
    (folder / "06_workshop.ipynb").write_text("{}")
    err = subprocess.run(
        [sys.executable, "-m", "workbench.explore.app", f"--notebooks={folder}", "--no-warm-cache"],
        capture_output=True,
        text=True,
    )
    assert err.returncode == 2 and "05_explorer.ipynb: cell 1: NOPE" in err.stderr
    assert "Traceback" not in err.stderr
    md = {"cell_type": "markdown", "source": "# T\n\n<script>alert(1)</script> *x*", "metadata": {}}
    page = read_page(notebook(md))
    assert "<script>" not in page.sections[0].arg and "&lt;script&gt;" in page.sections[0].arg


def test_a_workshop_session_checks_what_a_page_sends():
    from workbench.explore.lessons import WorkshopSession
    from workbench.explore.sessions import cached_workshop

    session = WorkshopSession(cached_workshop(tuple(sorted({"encoder": "lexical"}.items()))))
    for bad in (True, -1, 99, "1", 1.5):
        with pytest.raises(ValueError, match="no prediction"):
            session.reveal("1", bad)
    with pytest.raises(ValueError, match="no part"):
        session.reveal("14", None)
    first = session.reveal("2", None)
    assert first["right"] is None and "You made no prediction" in first["compare"]
    assert session.reveal("2", 0) is first  # a reveal locks the prediction
    assert session.restore("junk") == [] and session.restore({"3": "x"}) == []
    assert "part 2: no prediction" in session.score()["html"]


def test_the_join_code_is_read_as_a_person_types_it():
    from workbench.explore.seats import CODE_LETTERS, join_code, same_code

    code = join_code()
    assert len(code) == 9 and code[4] == "-" and set(code.replace("-", "")) <= set(CODE_LETTERS)
    assert not set("01OIL") & set(CODE_LETTERS)  # nothing read off a projector twice
    for typed in (code, code.lower(), code.replace("-", ""), f" {code[:4]} {code[5:]} "):
        assert same_code(typed, code), typed
    assert not same_code(code[:-1], code) and not same_code("", code)
    assert len({join_code() for _ in range(50)}) == 50


def test_the_tally_counts_each_issued_person_once_and_a_reveal_locks():
    from workbench.explore.tally import Tally

    t = Tally({"1": 3, "2": 4}, most=2)
    a, b = t.issue(), t.issue()
    assert a and b and a != b and t.issue() is None  # at most `most` people
    assert not t.predict("made-up", "1", 0)  # only an issued id counts
    assert t.predict(a, "1", 0) and t.predict(a, "1", 2)  # a change of mind replaces
    assert t.predict(b, "1", 2, lock=True)
    assert not t.predict(b, "1", 0)  # locked by the reveal
    assert not t.predict(a, "1", 3) and not t.predict(a, "9", 0)  # no such choice, no such part
    assert t.predict(a, "2", 1) and t.predict(a, "2", None)  # a pick taken back
    got = t.counts()
    assert got["participants"] == 2
    assert got["parts"]["1"] == {"counts": [0, 0, 2], "predicted": 2, "revealed": 1, "shown": False}
    assert got["parts"]["2"]["predicted"] == 0
    t.show("1", True)
    assert t.counts()["parts"]["1"]["shown"]
    with pytest.raises(ValueError):
        t.show("9", True)


def test_make_app_says_plainly_when_no_one_else_can_reach_it(monkeypatch):
    monkeypatch.setattr(app, "lan_address", lambda: "192.168.1.20")
    (line,) = app.reach("127.0.0.1", 8866)
    assert line.startswith("!! 127.0.0.1 serves this laptop only") and "IP=192.168.1.20" in line
    assert "192.168.1.20:8866" in app.reach("0.0.0.0", 8866)[0]
    assert "10.0.0.5:8866" in app.reach("10.0.0.5", 8866)[0]
    monkeypatch.setattr(app, "lan_address", lambda: "127.0.0.1")
    assert "no network address" in app.reach("127.0.0.1", 8866)[0]
