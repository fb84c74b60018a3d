"""The room against one laptop that means harm or misbehaves (issue 35), measured as a participant
on the room's Wi-Fi would try it: `python scripts/hostile_room.py [--checkout DIR]` starts the
room server of a checkout (default: this one; another one, e.g. a `git worktree` of an older
commit, to measure before a change) with 6 seats on 127.0.0.1 and prints one line per attack:

- flood, then leave: 20,000 changes as fast as the socket takes them, then close; the server's
  CPU seconds in the next 10 s;
- flood while another page works: a second page's change times (p50 / max) during a flood;
- unread answers: a socket that asks for 300 views and reads none; the server's memory after;
- a 50 MiB POST without the token: bytes the server took before closing, its memory after;
- one address, every seat: six pages from one address, then a page from a second address; and a
  socket with a made-up session id (does it take a seat?);
- guessing: 200 wrong tokens from one address (seconds, how many refused without a check);
- the token in the log (lines other than the printed links), and a cookie across a restart;
- an upload under the sentence encoder: files written in the sentence cache folder.

Nothing here is a test (tests/explore/test_room_hostile.py is): these are the figures the issue quotes,
taken again the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # browserkit
import browserkit  # noqa: E402

TOKEN = "hostile-room-token-0123456789"
OTHER = "127.0.0.2"


async def connect(served, sid, cookie, source="127.0.0.1"):
    import tornado.httpclient
    import tornado.websocket

    url = served.url.replace("http", "ws") + f"socket/{sid}?kind=explorer"
    req = tornado.httpclient.HTTPRequest(url, headers={"Cookie": cookie}, network_interface=source)
    return await tornado.websocket.websocket_connect(req)


def set_msg(seq, **changes):
    return json.dumps(
        {
            "type": "model",
            "model": "page",
            "content": {"type": "set", "changes": changes, "seq": seq},
        }
    )


async def until_seq(ws, seq, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = await asyncio.wait_for(ws.read_message(), deadline - time.monotonic())
        if text is None:
            return None
        m = json.loads(text)
        if m.get("fields", {}).get("payload", {}).get("seq") == seq or m.get("new"):
            return m
    return None


async def opened(served, source="127.0.0.1"):
    code, sid, cookie = served.page(source=source)
    ws = await connect(served, sid, cookie, source)
    await ws.write_message(json.dumps({"type": "hello", "query": ""}))
    await until_seq(ws, -1)  # the first state
    return ws


def flood_then_leave(served):
    async def go():
        ws = await opened(served)
        for i in range(20_000):
            try:
                await ws.write_message(set_msg(i + 1, seed=i % 30))
            except Exception:  # noqa: BLE001  (closed by the server)
                break
        ws.close()

    asyncio.run(go())
    c0 = browserkit.cpu(served.pid)
    time.sleep(10)
    return f"server CPU in the 10 s after: {browserkit.cpu(served.pid) - c0:.2f} s"


def flood_while_working(served):
    async def go():
        a, b = await opened(served), await opened(served)

        async def flood():
            for i in range(20_000):
                try:
                    await a.write_message(set_msg(i + 1, seed=i % 30))
                except Exception:  # noqa: BLE001
                    return
                if i % 100 == 0:
                    await asyncio.sleep(0)

        task = asyncio.ensure_future(flood())
        times = []
        for k in range(10):
            t = time.perf_counter()
            await b.write_message(set_msg(k + 1, seed=(k + 7) % 30))
            await until_seq(b, k + 1)
            times.append((time.perf_counter() - t) * 1000)
        await task
        a.close()
        b.close()
        return times

    times = asyncio.run(go())
    return (
        f"the other page's change: p50 {statistics.median(times):.0f} ms, max {max(times):.0f} ms"
    )


def unread(served):
    code, sid, cookie = served.page()
    raw = browserkit.raw_websocket(served, sid, cookie, rcvbuf=4096)

    m0 = browserkit.rss(served.pid) / 2**20
    sent = 0
    raw.sendall(browserkit.ws_frame(json.dumps({"type": "hello", "query": ""})))
    for i in range(300):
        try:
            raw.sendall(
                browserkit.ws_frame(set_msg(i + 1, total_blocks=50 if i % 2 else 20, seed=i % 30))
            )
            sent += 1
        except OSError:
            break
        time.sleep(0.025)
    time.sleep(3)
    grown = browserkit.rss(served.pid) / 2**20 - m0
    raw.close()
    return f"{sent} requests sent, none read: server memory +{grown:.0f} MB"


def big_post(served):
    host, port = served.host_port
    m0 = browserkit.rss(served.pid) / 2**20
    raw = socket.create_connection((host, port), timeout=20)
    raw.sendall(
        f"POST /explorer HTTP/1.1\r\nHost: {host}\r\nContent-Length: {50 << 20}\r\n\r\n".encode()
    )
    sent, chunk = 0, b"x" * (1 << 16)
    try:
        while sent < 50 << 20:
            raw.sendall(chunk)
            sent += len(chunk)
        raw.settimeout(20)
        answer = raw.recv(100).split(b"\r\n")[0].decode()
    except OSError:
        answer = "closed"
    raw.close()
    time.sleep(0.5)
    return f"{sent / 2**20:.1f} MiB taken, then: {answer or 'closed'}; server memory +{browserkit.rss(served.pid) / 2**20 - m0:.0f} MB"


def seats(served):
    async def go():
        _, _, cookie = served.page(source=OTHER)  # (a cookie; the seat it took frees itself)
        time.sleep(0.2)
        before = status(served)["taken"]
        try:  # a socket with a session id no page was given
            fake = await connect(served, "madeupmadeupmadeup", cookie)
            await asyncio.sleep(0.5)
            took = status(served)["taken"] - before
            fake.close()
        except Exception:  # noqa: BLE001
            took = 0
        mine = []
        for _ in range(6):
            code, sid, cookie = served.page()
            if code != 200:
                break
            mine.append(await connect(served, sid, cookie))
        code_other = served.page(source=OTHER)[0]
        for ws in mine:
            ws.close()
        return len(mine), code_other, took

    n, other, took = asyncio.run(go())
    time.sleep(1)
    return (
        f"one address got {n} of 6 seats; a second address then got {other}; "
        f"a made-up session id took {took} seat(s)"
    )


def status(served):
    with urllib.request.urlopen(served.link("status"), timeout=30) as r:
        return json.loads(r.read())


def guessing(served):
    t = time.perf_counter()
    codes = [served.request(f"?token=wrong-guess-{i:020d}", "127.0.0.5")[0] for i in range(200)]
    seconds = time.perf_counter() - t
    return f"200 wrong tokens in {seconds:.2f} s: {codes.count(403)} checked (403), {codes.count(429)} refused unchecked (429)"


def log_and_cookie(served, log, args):
    served.request(f"no-such-page?token={served.token}")
    served.request(f"?token=wrong-{served.token}")
    lines = [line for line in log.read_text().splitlines() if not line.startswith(">>")]
    leaked = sum(served.token in line for line in lines)
    _, headers, _ = served.request(f"?token={served.token}")
    cookie = headers.get("Set-Cookie", "").split(";")[0]
    return leaked, cookie


def after_restart(cookie, args, env):
    with browserkit.serve(*args, env=env, token=TOKEN, **_per_address(args)) as again:
        code, _, _ = again.request("", headers={"Cookie": cookie})
    return code


def sentence_upload(checkout, env):
    cache = Path(tempfile.mkdtemp(prefix="hostile-cache-"))
    env = {**env, "WORKBENCH_CACHE_DIR": str(cache)}
    sys.path.insert(0, str(checkout))
    from workbench.dsgc.trace import scenario_for

    obj = scenario_for("role", 3, 20).to_dict()
    for b in obj["blocks"]:
        b["text"] = "Notiz: " + b["text"]
    text = json.dumps(obj) + "\n"
    args = ("--no-warm-cache", "--seats=6")
    with browserkit.serve(*args, env=env, token=TOKEN, **_per_address(args)) as served:

        async def go():
            code, sid, cookie = served.page()
            ws = await connect(served, sid, cookie)
            await ws.write_message(json.dumps({"type": "hello", "query": "encoder=sentence"}))
            deadline = time.monotonic() + 240
            ready = False
            while not ready and time.monotonic() < deadline:
                m = json.loads(await asyncio.wait_for(ws.read_message(), 240))
                ready = bool(m.get("fields", {}).get("ready")) and bool(
                    m.get("fields", {}).get("payload")
                )
            content = {"type": "upload", "name": "mine.jsonl", "text": text, "seq": 1}
            await ws.write_message(
                json.dumps({"type": "model", "model": "page", "content": content})
            )
            await until_seq(ws, 1, 240)
            ws.close()

        asyncio.run(go())
        time.sleep(1)
    files = sorted(p.name for p in cache.rglob("*") if p.is_file())
    return f"files in the sentence cache folder after: {files or 'none'}"


def _per_address(args):
    return {"per_address": None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", default=str(ROOT), help="the checkout whose room is measured")
    ap.add_argument("--no-sentence", action="store_true", help="skip the sentence upload")
    a = ap.parse_args(argv)
    checkout = Path(a.checkout).resolve()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if checkout != ROOT:  # the server imports that checkout's workbench, not the installed one
        site = Path(tempfile.mkdtemp(prefix="hostile-site-"))
        (site / "sitecustomize.py").write_text(
            "import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path\n"
            "                    if '__editable__' not in getattr(f, '__module__', '')]\n"
            f"sys.path.insert(0, {str(checkout)!r})\n"
        )
        env["PYTHONPATH"] = str(site)
        os.chdir(checkout)  # (python -m puts its working folder first on the path)
    args = ("--no-warm-cache", "--seats=6")
    log = Path(tempfile.mkdtemp(prefix="hostile-")) / "room.log"
    print(f"room of {checkout} (6 seats, 127.0.0.1), {time.strftime('%Y-%m-%d %H:%M')}")
    with browserkit.serve(*args, env=env, log=log, token=TOKEN, **_per_address(args)) as served:
        for name, fn in (
            ("flood, then leave", flood_then_leave),
            ("flood while another page works", flood_while_working),
            ("unread answers", unread),
            ("50 MiB POST without the token", big_post),
            ("one address, every seat", seats),
            ("guessing the token", guessing),
        ):
            print(f"- {name}: {fn(served)}", flush=True)
        leaked, cookie = log_and_cookie(served, log, args)
        print(f"- the token in the log: {leaked} line(s) other than the printed links carry it")
        print(f"- server memory at the end: {browserkit.rss(served.pid) / 2**20:.0f} MB")
    print(f"- the cookie after a restart: {after_restart(cookie, args, env)}")
    if not a.no_sentence:
        print(f"- an upload under the sentence encoder: {sentence_upload(checkout, env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
