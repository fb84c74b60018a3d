"""The room against a participant who means harm, or whose laptop misbehaves: a flood
and leaving, a flood while another page works, a page that never reads, slow and large requests
without the token, one address taking every seat, guessing the token, the token in the logs, a
cookie across a restart, a made-up session id, and what an upload may cost and write. Plain HTTP,
raw sockets and websockets against the real server process (`browserkit.serve`); the markup of an
uploaded scenario is checked in Chromium in test_room_browser.py."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import time

import browserkit
import pytest
import tornado.httpclient
import tornado.websocket
from test_room import TOKEN, Page, _get, _status, _wait

from workbench.dsgc.scenario import dumps
from workbench.dsgc.trace import scenario_for
from workbench.explore import guard, sessions

OTHER = "127.0.0.2"  # a second laptop: the loopback network answers every 127.x address


async def _socket(served, sid: str, cookie: str, source: str = "127.0.0.1"):
    url = served.url.replace("http", "ws") + f"socket/{sid}"
    req = tornado.httpclient.HTTPRequest(url, headers={"Cookie": cookie}, network_interface=source)
    return await tornado.websocket.websocket_connect(req)


async def _closed(ws, timeout: float = 15) -> int:
    """The close code of a websocket the server closes (messages before it are skipped)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if await asyncio.wait_for(ws.read_message(), left) is None:
            return ws.close_code
    raise AssertionError("the server never closed the websocket")


async def _explorers(served, n: int) -> list[Page]:
    """n explorer pages, each connected and showing its first view."""
    pages = [Page(served, "explorer") for _ in range(n)]
    for p in pages:
        await p.connect()
        await p.send({"type": "hello", "query": ""})
        await p.until(lambda m: m.get("new"))
    return pages


def _set(seq: int, **changes) -> str:
    content = {"type": "set", "changes": changes, "seq": seq}
    return json.dumps({"type": "model", "model": "page", "content": content})


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    log = tmp_path_factory.mktemp("hostile") / "room.log"
    args = (
        "--no-warm-cache",
        "--seats=6",
        "--first-connect=3",
        "--ping=30",
        "--max-unsent=400000",
        "--header-timeout=2",
    )
    with browserkit.serve(*args, log=log, token=TOKEN, per_address=None) as served:
        yield served, log


# --- bounded work per page ----------------------------------------------------------------------


def test_a_flood_then_leaving_costs_the_server_nothing_after(room):
    """20,000 changes sent as fast as a socket takes them, then the page leaves: the server
    closes the page past its burst, drops what was pending, and spends (almost) nothing after;
    the log holds no traceback."""
    served, log = room

    async def scenario():
        (p,) = await _explorers(served, 1)
        for i in range(20_000):
            try:
                await p.ws.write_message(_set(i + 1, seed=i % 30))
            except tornado.websocket.WebSocketClosedError:
                break
        p.ws.close()

    asyncio.run(scenario())
    time.sleep(0.5)
    cpu = browserkit.cpu(served.pid)
    time.sleep(3)
    assert browserkit.cpu(served.pid) - cpu < 0.3  # nothing left working for a page already gone
    st = _status(served)
    assert st["counts"]["closed: flood"] >= 1 and st["taken"] == 0
    assert "Traceback" not in log.read_text()


def test_a_page_s_changes_coalesce_and_another_page_keeps_its_pace(room):
    """A page that sends 150 changes at once (under the burst) gets answers for fewer, the last
    one its newest; a second page changing meanwhile is answered each time."""
    served, _ = room

    async def scenario():
        a, b = await _explorers(served, 2)
        before = _status(served)["counts"].get("merged: changes coalesced", 0)
        for i in range(150):
            await a.ws.write_message(_set(i + 1, seed=i % 30, lam=round((i % 10) / 10, 1)))
        seeds = []  # the other page, answered each time (its pace: scripts/hostile_room.py)
        for k in range(5):
            await b.ws.write_message(_set(k + 1, seed=k + 3))
            m = await b.until(
                lambda m, k=k: m.get("fields", {}).get("payload", {}).get("seq") == k + 1
            )
            seeds.append(m["fields"]["payload"]["state"]["seed"])
        last = await a.until(lambda m: m.get("fields", {}).get("payload", {}).get("seq") == 150)
        answers = sum("payload" in m.get("fields", {}) for m in a.got)
        merged = _status(served)["counts"].get("merged: changes coalesced", 0) - before
        a.ws.close()
        b.ws.close()
        return last, answers, merged, seeds

    last, answers, merged, seeds = asyncio.run(scenario())
    assert last["fields"]["payload"]["state"]["seed"] == 149 % 30
    assert answers < 149 and merged > 0
    assert seeds == [3, 4, 5, 6, 7]  # each of its own changes, not the other page's


def test_a_page_that_never_reads_its_answers_is_closed(room):
    """A socket that sends requests and never reads what it is sent is closed once the unread
    answers pass the bound (here 0.4 MB), and the server's memory does not follow it."""
    served, log = room
    code, sid, cookie = served.page("explorer", "127.0.0.1")
    raw = browserkit.raw_websocket(served, sid, cookie, rcvbuf=4096)
    raw.sendall(browserkit.ws_frame(json.dumps({"type": "hello", "query": ""})))
    before = _status(served)["counts"].get("closed: flood", 0)
    rss = browserkit.rss(served.pid)
    for i in range(400):  # views of 20 and 50 blocks: more MB of answers than buffers hold
        try:
            raw.sendall(
                browserkit.ws_frame(_set(i + 1, total_blocks=50 if i % 2 else 20, seed=i % 30))
            )
        except OSError:
            break  # closed by the server
        time.sleep(0.025)  # under the message rate: a page that only never reads
    _wait(served, lambda st: st["counts"].get("closed: flood", 0) > before, timeout=30)
    _wait(served, lambda st: st["taken"] == 0, timeout=5)  # its seat is freed with it
    assert browserkit.rss(served.pid) - rss < 60e6
    raw.close()
    assert "Traceback" not in log.read_text()


# --- requests without the token -----------------------------------------------------------------


def test_a_large_body_without_the_token_is_never_read(room):
    """A 50 MiB POST without the token: refused on its headers (the body limit is 16 KB), the
    connection closed, the server's memory unchanged."""
    served, _ = room
    host, port = served.host_port
    rss = browserkit.rss(served.pid)
    raw = socket.create_connection((host, port), timeout=10)
    raw.sendall(
        f"POST /explorer HTTP/1.1\r\nHost: {host}\r\nContent-Length: {50 << 20}\r\n\r\n".encode()
    )
    sent = 0
    chunk = b"x" * (1 << 16)
    with pytest.raises(OSError):  # the server closes the connection: the rest cannot be sent
        while sent < 50 << 20:
            raw.sendall(chunk)
            sent += len(chunk)
    raw.close()
    assert sent < 20 << 20  # the kernel's buffers took some; the server read none of it
    assert browserkit.rss(served.pid) - rss < 5e6


def test_slow_and_idle_connections_are_cut_and_a_second_address_still_gets_in(room):
    """60 connections from one address that never finish their headers: past the address's
    bound they are closed at once, the rest within the header timeout (2 s here); a page from another
    address is served meanwhile."""
    served, _ = room
    host, port = served.host_port
    conns = []
    for _ in range(60):
        s = socket.create_connection((host, port), timeout=15)
        s.sendall(b"GET /explorer HTTP/1.1\r\nHost: x\r\n")  # ... and nothing more
        conns.append(s)
    code, sid, _ = served.page("explorer", OTHER)
    assert code == 200 and sid
    closed = 0
    for s in conns:
        try:
            if s.recv(1) == b"":
                closed += 1
        except OSError:
            closed += 1
        s.close()
    assert closed == 60  # every one of them: past the bound at once, the others on the timeout
    counts = _status(served)["counts"]
    assert counts["closed: too many connections from one address"] >= 60 - (
        guard.PER_ADDRESS_CONNECTIONS * 3 + 8
    )


# --- seats belong to people ---------------------------------------------------------------------


def test_one_address_cannot_take_every_seat_and_the_instructor_frees_seats(room):
    served, log = room
    _wait(served, lambda st: st["taken"] == 0)

    async def scenario():
        mine = [served.page(k, "127.0.0.1") for k in ("explorer", "workshop", "explorer")]
        assert [c for c, _, _ in mine] == [200, 200, 200]
        code, headers, body = served.request(f"workshop?token={served.token}")
        assert code == 503 and headers["Retry-After"] == "20" and "pages" in body
        sockets = [await _socket(served, sid, cookie) for _, sid, cookie in mine]
        code, sid, cookie = served.page("explorer", OTHER)  # another laptop gets in
        assert code == 200
        # a made-up session id takes no seat and is told to reload
        ws = await _socket(served, "madeupmadeupmadeup", cookie)
        assert await _closed(ws) == 4001
        # another address's session id is not this address's to use
        ws = await _socket(served, sid, mine[0][2])
        assert await _closed(ws) == 4001
        theirs = await _socket(served, sid, cookie, OTHER)
        st = _status(served)
        assert st["taken"] == 4 and st["counts"]["refused: not served"] >= 2
        # the instructor sees the seats by address and frees this address's
        key = browserkit.instructor_key(log)
        assert served.request("instructor?key=wrong-key-0123456789")[0] == 403
        assert served.request(f"instructor?token={served.token}")[0] == 403  # not the room's
        code, _, html = served.request(f"instructor?key={key}")
        assert code == 200 and html.count("free this seat") == 4 and OTHER in html
        code, _, body = served.request(f"instructor?key={key}&format=json")
        seats = json.loads(body)["seats"]
        assert sorted(s["address"] for s in seats) == ["127.0.0.1"] * 3 + [OTHER]
        code, _, body = served.request(
            "instructor?format=json",
            method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert code == 403  # a form without the key frees nothing
        conn_host, port = served.host_port
        c = http.client.HTTPConnection(conn_host, port, timeout=10)
        c.request("POST", f"/instructor?format=json&key={key}&address=127.0.0.1", body="x" * 100)
        assert json.loads(c.getresponse().read())["freed"] == 3
        for ws in sockets:
            assert await _closed(ws) == 4002
        st = _status(served)
        assert st["taken"] == st["connected"] == 1
        assert st["counts"]["freed: by the instructor"] == 3
        # a freed page cannot come back on its old id: it reloads (a new GET)
        ws = await _socket(served, mine[0][1], mine[0][2])
        assert await _closed(ws) == 4001
        theirs.close()

    asyncio.run(scenario())
    _wait(served, lambda st: st["taken"] == 0, timeout=15)


# --- a token worth its name ---------------------------------------------------------------------


def test_the_token_is_strong_guesses_are_slowed_and_no_log_line_carries_it(room, tmp_path):
    served, log = room
    from workbench.explore import app

    assert len(app.room_token()) >= 22  # 128 bits, urlsafe
    weak = subprocess.run(
        [sys.executable, "-m", "workbench.explore.app", "--token=a", "--no-warm-cache"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert weak.returncode == 2 and "at least 16" in weak.stderr
    # guessing: past the guesses allowed, an address is refused without a check
    source = "127.0.0.3"
    codes = [served.request(f"?token=guess-{i:020d}", source)[0] for i in range(guard.GUESSES + 5)]
    assert codes[: guard.GUESSES] == [403] * guard.GUESSES and set(codes[guard.GUESSES :]) == {429}
    code, headers, _ = served.request(f"?token={served.token}", source)
    assert code == 429 and int(headers["Retry-After"]) > 0  # even the right one, for a while
    assert served.request(f"?token={served.token}", "127.0.0.4")[0] == 200  # others are not
    # every answer is behind the token and carries the headers; HEAD is answered
    for path, want in (("no-such-page", 403), (f"no-such-page?token={served.token}", 404)):
        code, headers, _ = served.request(path)
        assert code == want and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    taken = _status(served)["taken"]
    for path in ("", "explorer", "workshop", "static/room.js"):
        code, _, body = served.request(f"{path}?token={served.token}", method="HEAD")
        assert code == 200 and body == ""
    assert _status(served)["taken"] == taken  # HEAD takes no seat
    lines = log.read_text().splitlines()
    said = [line for line in lines if not line.startswith(">>")]  # (the links it printed)
    assert any(" 404 GET /no-such-page (" in f" {line}" for line in said)  # logged ...
    assert not [line for line in said if served.token in line]  # ... never with the token


def test_a_cookie_dies_with_its_server(tmp_path):
    with browserkit.serve(token=TOKEN) as first:
        _, headers, _ = _get(first.link())
        cookie = headers["Set-Cookie"].split(";")[0]
        assert TOKEN not in cookie
        assert _get(first.url, cookie)[0] == 200
    with browserkit.serve(token=TOKEN) as second:  # the same token, started again
        assert _get(second.url, cookie)[0] == 403


# --- uploads ------------------------------------------------------------------------------------


def _jsonl(n_scenarios: int, blocks: int = 20) -> str:
    out = []
    for i in range(n_scenarios):
        sc = scenario_for("role", i % 50, blocks)
        out.append(dumps(sc).replace(f'"id": "{sc.id}"', f'"id": "up-{i}"', 1))
    return "\n".join(out) + "\n"


def test_an_upload_is_read_off_the_worker_and_capped(room):
    """A large upload is read in the upload thread: another page's changes stay quick while it
    is read; a file past a page's share is refused in one line; a page keeps at most
    `sessions.FILES` files."""
    served, _ = room
    big = _jsonl(1)  # one scenario of 20 blocks
    text = "".join(_jsonl(1).replace('"up-0"', f'"up-{i}"') for i in range(1000))

    async def scenario():
        a, b = await _explorers(served, 2)
        content = {"type": "upload", "name": "many.jsonl", "text": text, "seq": 1}
        t_upload = time.perf_counter()
        await a.send({"type": "model", "model": "page", "content": content})
        times = []
        for k in range(6):
            t = time.perf_counter()
            await b.ws.write_message(_set(k + 1, seed=k + 5))
            await b.until(lambda m, k=k: m.get("fields", {}).get("payload", {}).get("seq") == k + 1)
            times.append(time.perf_counter() - t)
        m = await a.until(lambda m: "error" in m.get("fields", {}) and m["fields"]["error"], 60)
        too_many, read_s = m["fields"]["error"], time.perf_counter() - t_upload
        huge = "x" * (sessions.ROOM_UPLOADS // 6 + 10)
        content = {"type": "upload", "name": "huge.jsonl", "text": huge, "seq": 2}
        await a.send({"type": "model", "model": "page", "content": content})
        m = await a.until(lambda m: "too large" in (m.get("fields", {}).get("error") or ""), 60)
        for k in range(4):  # four files: the page keeps the newest three
            content = {"type": "upload", "name": f"f{k}.jsonl", "text": big, "seq": 3 + k}
            await a.send({"type": "model", "model": "page", "content": content})
            m = await a.until(
                lambda m, k=k: m.get("fields", {}).get("payload", {}).get("seq") == 3 + k
            )
        opts = [o[0] for o in m["fields"]["payload"]["controls"]["template"]["options"]]
        a.ws.close()
        b.ws.close()
        return times, too_many, opts, read_s

    times, too_many, opts, read_s = asyncio.run(scenario())
    assert "1,000 scenarios" in too_many and "at most 500" in too_many
    assert sum(times) < read_s, (times, read_s)  # all six answered while the file was read
    assert "file:f3.jsonl" in opts
    st = _status(served)
    assert st["uploads"]["per_page"] == sessions.ROOM_UPLOADS // 6


def test_a_room_s_caches_are_held_in_memory(tmp_path):
    """After `hold`, encoding new texts writes no cache file and keeps at most `extra` of them;
    the rows are the same as without it."""
    import numpy as np

    from workbench.common.encoders import CachedEncoder, LexicalEncoder

    class Base(LexicalEncoder):
        cache_name = "probe"
        recompute = False

    free = CachedEncoder(Base(), tmp_path / "a")
    held = CachedEncoder(Base(), tmp_path / "b")
    free.encode(["warm one", "warm two"])
    held.encode(["warm one", "warm two"])
    assert (tmp_path / "b" / "probe.npz").exists()
    stamp = (tmp_path / "b" / "probe.npz").stat().st_mtime_ns
    held.hold(3)
    texts = [f"uploaded text {i}" for i in range(10)]
    assert np.array_equal(held.encode(texts), free.encode(texts))
    assert (tmp_path / "b" / "probe.npz").stat().st_mtime_ns == stamp  # nothing written
    assert len(held) == 2 + 3 and held.has_all(["warm one", "warm two"])
    assert np.array_equal(held.encode(texts[:2]), free.encode(texts[:2]))  # dropped: again


@pytest.mark.sentence
@pytest.mark.slow
def test_an_upload_under_the_sentence_encoder_writes_nothing(tmp_path):
    """A page on the sentence encoder uploads a file of texts no cache has: the page is
    answered, and neither the machine's sentence cache nor the temporary folder gains a file."""
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir()
    tmp.mkdir()
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cache), TMPDIR=str(tmp), HF_HUB_OFFLINE="1")
    obj = scenario_for("role", 3, 20).to_dict()  # its texts changed: no cache has them
    obj["query"] = "Wer entscheidet? " + obj["query"]
    for b in obj["blocks"]:
        b["text"] = "Notiz: " + b["text"]
    text = json.dumps(obj) + "\n"
    with browserkit.serve(env=env, token=TOKEN) as served:

        async def scenario():
            p = Page(served, "explorer")
            await p.connect()
            await p.send({"type": "hello", "query": "encoder=sentence"})
            await p.until(lambda m: m.get("new"), 180)
            await p.until(lambda m: m.get("fields", {}).get("ready"), 180)
            content = {"type": "upload", "name": "mine.jsonl", "text": text, "seq": 1}
            await p.send({"type": "model", "model": "page", "content": content})
            m = await p.until(lambda m: m.get("fields", {}).get("payload", {}).get("seq") == 1, 180)
            p.ws.close()
            return m["fields"]["payload"]

        got = asyncio.run(scenario())
    assert got["state"]["encoder"] == "sentence" and got["state"]["template"] == "file:mine.jsonl"
    assert sorted(p.name for p in cache.rglob("*")) == [] and list(tmp.rglob("*")) == []


def test_near_its_file_limit_the_room_neither_spins_nor_fills_its_log(tmp_path):
    """A room allowed 80 open files, 150 connections from several addresses that never finish
    a request: the server closes what it cannot hold, spends little CPU meanwhile, writes a few
    log lines (not one a connection), and answers a normal page once they are cut."""
    log = tmp_path / "room.log"
    with browserkit.serve(log=log, token=TOKEN, files=80, per_address=None) as served:
        host, port = served.host_port
        time.sleep(1)
        cpu = browserkit.cpu(served.pid)
        held = []
        for i in range(150):
            try:
                s = socket.create_connection((host, port), timeout=5,
                                             source_address=(f"127.0.1.{i % 50 + 1}", 0))  # fmt: skip
                s.sendall(b"GET / HTTP/1.1\r\n")
                held.append(s)
            except OSError:
                pass
        time.sleep(3)
        spent = browserkit.cpu(served.pid) - cpu
        lines = len(log.read_text().splitlines())
        for s in held:
            s.close()
        time.sleep(0.5)
        code, _, _ = _get(served.link())
    assert spent < 1.0 and lines < 40, (spent, lines)
    assert code == 200


EMFILE_SERVER = """
import asyncio, resource, sys, tornado.web
from workbench.explore import guard
resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
class H(tornado.web.RequestHandler):
    def get(self): self.write("ok")
async def main():
    srv = guard.RoomHTTPServer(tornado.web.Application([(r"/", H)]), idle_connection_timeout=2)
    srv.listen(int(sys.argv[1]), address="127.0.0.1")
    print("ready", flush=True)
    await asyncio.sleep(float(sys.argv[2]))
    print("counts", dict(srv.counts), flush=True)
asyncio.run(main())
"""


def test_out_of_file_descriptors_the_accept_loop_pauses_instead_of_spinning(tmp_path):
    """With no bound on connections and 40 files, 100 connections run the process out of file
    descriptors: accepting pauses a second at a time (one log line a pause, almost no CPU), and
    a request is answered once they are gone."""
    port = browserkit.free_port()
    log = tmp_path / "emfile.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", EMFILE_SERVER, str(port), "7"], stdout=out, stderr=out
        )
    try:
        while "ready" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        cpu = browserkit.cpu(proc.pid)
        held = []
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\n")
            held.append(s)
        time.sleep(2)
        spent = browserkit.cpu(proc.pid) - cpu
        for s in held:  # the slow clients go: the server answers again
            s.close()
        time.sleep(1.5)
        ok = socket.create_connection(("127.0.0.1", port), timeout=5)
        ok.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = ok.recv(64)
        ok.close()
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert answer.startswith(b"HTTP/1.1 200")
    assert spent < 0.5 and "'paused: out of file descriptors'" in text
    assert text.count("out of file descriptors: not accepting") <= 10
    assert "Traceback" not in text


def test_a_page_is_told_what_is_wrong_never_an_exception_s_text(room):
    served, _ = room
    bad = [
        ({"__class__": 1}, "no control named '__class__'"),
        ({"seed": [1]}, "seed must be a whole number"),
        ({"seed": 1e400}, "seed must be a whole number"),
        ({"scenario": "x"}, "scenario must be a whole number"),
    ]

    async def scenario():
        (p,) = await _explorers(served, 1)
        got = []
        for k, (changes, _) in enumerate(bad):
            content = {"type": "set", "changes": changes, "seq": k + 1}
            await p.ws.write_message(
                json.dumps({"type": "model", "model": "page", "content": content})
            )
            m = await p.until(lambda m: (m.get("fields", {}).get("error") or "") != "")
            got.append(m["fields"]["error"])
        await p.ws.write_message("[" * 100_000 + "]" * 100_000)  # nesting past the parser
        deep = (await p.until(lambda m: m.get("type") == "error"))["text"]
        p.ws.close()
        return got, deep

    got, deep = asyncio.run(scenario())
    for (_, want), text in zip(bad, got, strict=True):
        assert want in text and "Error" not in text, text
    assert deep.startswith("bad message") and "RecursionError" not in deep


def test_a_mailbox_merges_changes_bounds_what_waits_and_drops_it_at_close():
    def change(seq, model="page", **changes):
        content = {"type": "set", "changes": changes, "seq": seq}
        return guard.Pending("model", {"model": model, "content": content}, float(seq))

    async def scenario():
        box = guard.Mailbox(limit=4, large=1)
        assert box.put(change(1, seed=1)) and box.put(change(2, lam=0.5))  # merged into one
        assert box.put(change(3, model="explorer", seed=2))  # another explorer's: its own
        assert box.put(guard.Pending("reveal", {"part": "1"}, 4.0))
        assert box.put(change(5, seed=3))  # after a reveal: not merged across it
        assert not box.put(guard.Pending("hello", {}, 6.0))  # four wait: the fifth is refused
        first = await box.get()
        assert first.msg["content"] == {"type": "set", "changes": {"seed": 1, "lam": 0.5}, "seq": 2}
        assert first.merged == 2 and first.t0 == 1.0  # timed from the oldest it stands for
        assert box.put(guard.Pending("raw", "x" * 10, 7.0))
        assert not box.put(guard.Pending("raw", "y" * 10, 8.0))  # one large message waits
        assert box.close() == 4 and await box.get() is None

    asyncio.run(scenario())


def test_an_upload_past_a_page_s_share_is_refused_unread(room):
    served, _ = room
    share = sessions.UploadBudget(6).per_page

    async def scenario():
        (p,) = await _explorers(served, 1)
        content = {"type": "upload", "name": "big.jsonl", "text": "x" * (2 * share + 70_000)}
        await p.send({"type": "model", "model": "page", "content": content})
        m = await p.until(lambda m: m.get("type") == "error")
        p.ws.close()
        return m["text"]

    text = asyncio.run(scenario())
    assert f"at most {share:,}" in text
