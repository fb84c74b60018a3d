"""The room server: the explorer and the workshop served to a room from one Python process.

Why not a kernel per page (Voila): measured on the 2-core machine (docs/room.md, "Why one
process, not a kernel per page"), a Voila page costs its browser 3-10 CPU seconds before its
first view (about 100 requests, 5 MB of JupyterLab bundles), and every page also needs a kernel
(190 MB, executing its notebook). Here a
page is its notebook's prose (`pages.read_page`), `static/room.js` and the explorer's own front end
(`static/view.js`, vega): a few requests, about 0.3 MB without vega's bundle. Every page's state is
a small session object in this process (`ExplorerSession`, `WorkshopSession`), computed in one
worker thread from caches shared by the whole room: a view already computed for anyone is answered
from memory, a workshop's answers are computed once, and the sentence embeddings come from the
machine's disk cache (`app.warm_room_cache`), so the model is loaded at most once in the process,
and only when a page needs a text the cache lacks.

What a room gets:
- `/` (the two links), `/explorer`, `/workshop`, `/static/...` (the page's own files), the page's
  websocket `/socket/SID`, and `/status` (seats in use and answer times, as JSON, for the
  instructor and the tests); every other path is 404, and no request runs code;
- a room token: a request carrying `?token=` (checked in constant time) gets a cookie, and a
  request with neither the token nor the cookie gets a short page saying so (403) and starts
  nothing;
- at most `seats` pages at once: a page takes a seat when it is served, and past the seats a
  request gets "the room is full" (503), which tries again on its own every 20 s; a seat is
  freed when its page's websocket closes (a closed tab, a reload), when its websocket has not
  answered a ping (a laptop gone to sleep: pings every 15 s, the seat freed within 35 s), or when its page never
  connected within `first_connect` seconds (a plain GET);
- nothing written: no page writes a file anywhere (an upload is read from a temporary folder,
  as `workbench evaluate` reads a file).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import numpy as np
import tornado.web
import tornado.websocket

from workbench.dsgc.trace import Setting
from workbench.explore import messages
from workbench.explore.explorer import from_query
from workbench.explore.lessons import WorkshopSession
from workbench.explore.pages import Page, read_page
from workbench.explore.sessions import (
    RoomExplorer,
    cached_workshop,
    explorer_fields,
    workshop_args,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PAGES = {"explorer": "05_explorer.ipynb", "workshop": "06_workshop.ipynb"}
HERE = Path(__file__).resolve().parent
STATIC_DIR, TEMPLATES = HERE / "static", HERE / "templates"
STATIC = ("room.js", "room.css", "view.js", "view.css", "vega-bundle.js", "specs.json")
LOADED = ("view.js", "specs.json", "vega-bundle.js")  # what room.js loads itself, by address
SEATS = 30
FIRST_CONNECT = 45  # seconds a seat waits for its page's websocket (then a plain GET is freed)
PING = 15  # seconds between pings; a websocket that answers none within as long is closed
COOKIE = "wb-room"
MAX_MESSAGE = 32 * 1024 * 1024  # an upload travels in one message (explorer.MAX_UPLOAD chars)
TIMES_KEPT = 5000  # answer times kept for /status


# --- seats --------------------------------------------------------------------------------------


@dataclass
class Seat:
    """One page's place in the room: its kind, when it was taken, and its websocket once the page
    connected."""

    sid: str
    kind: str
    taken: float
    socket: Socket | None = None

    def __repr__(self) -> str:
        return f"Seat({self.kind}, {'connected' if self.socket else 'waiting'})"


@dataclass
class Room:
    """The pages, the token, the seats, and the one worker thread every computation runs in."""

    pages: dict[str, Page]
    token: str
    seats: int = SEATS
    first_connect: float = FIRST_CONNECT
    ping: float = PING
    taken: dict[str, Seat] = field(default_factory=dict)
    counts: collections.Counter = field(default_factory=collections.Counter)
    times: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TIMES_KEPT))
    answered: int = 0  # messages answered since the room opened

    def __post_init__(self):
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="wb-room")
        self.cookie = hashlib.sha256(f"wb-room:{self.token}".encode()).hexdigest()

    def __repr__(self) -> str:
        return f"Room({len(self.taken)} of {self.seats} seats taken)"

    def take(self, kind: str, sid: str | None = None) -> Seat | None:
        """A seat for a page (None: the room is full)."""
        self.sweep()
        if len(self.taken) >= self.seats:
            self.counts["full"] += 1
            return None
        sid = sid or secrets.token_urlsafe(12)
        seat = self.taken[sid] = Seat(sid, kind, time.monotonic())
        self.counts["seated"] += 1
        return seat

    def free(self, sid: str, why: str) -> None:
        if self.taken.pop(sid, None) is not None:
            self.counts[f"freed: {why}"] += 1

    def sweep(self) -> None:
        """Free the seats whose page never connected in time."""
        now = time.monotonic()
        for sid, seat in list(self.taken.items()):
            if seat.socket is None and now - seat.taken > self.first_connect:
                self.free(sid, "never connected")

    async def run(self, fn, *args):
        """fn(*args) in the room's worker thread (every session's state changes there)."""
        return await asyncio.get_running_loop().run_in_executor(self.worker, fn, *args)

    def status(self, recent: bool = False) -> dict:
        """Seats in use, what happened to pages (seated, freed and why, refused, full), and the
        server's answer times in ms (arrival of a page's message to its answer sent: queueing
        in the worker included); `recent`: also each of the last answer times, in order."""
        self.sweep()
        kept = list(self.times)
        p50, p95, top = np.percentile(kept, [50, 95, 100]) if kept else (0, 0, 0)
        return {
            "seats": self.seats,
            "taken": len(self.taken),
            "connected": sum(s.socket is not None for s in self.taken.values()),
            "pages": dict(collections.Counter(s.kind for s in self.taken.values())),
            "counts": dict(sorted(self.counts.items())),
            "answers": self.answered,
            "answer_ms": {
                "p50": round(float(p50), 2),
                "p95": round(float(p95), 2),
                "max": round(float(top), 2),
            }
            if kept
            else {},  # fmt: skip
            **({"recent_ms": [round(t, 2) for t in kept]} if recent else {}),
        }

    def allowed(self, token: str | None, cookie: str | None) -> bool:
        if token is not None:
            return hmac.compare_digest(token.encode(), self.token.encode())
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie.encode())


# --- pages --------------------------------------------------------------------------------------

CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self' data: blob:; frame-ancestors 'none'"
)


@lru_cache(maxsize=1)
def inline_css() -> str:
    """room.css, for the page a request without the token gets: it may load nothing."""
    return (STATIC_DIR / "room.css").read_text(encoding="utf-8")


NO_TOKEN = (
    "This room needs its link: ask the instructor for the address with <code>?token=…</code> "
    "(the link <code>make app</code> printed). Nothing was started."
)
FULL = "Every seat of this room is taken. This page tries again on its own as seats free."


class Guarded:
    """What every request of the room gets first: the security headers, then the token (a
    request with neither the token nor the room's cookie gets a short page saying so, 403)."""

    room: Room

    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CSP)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")

    def prepare(self) -> None:
        token = self.get_query_argument("token", None)
        if not self.room.allowed(token, self.get_cookie(COOKIE)):
            self.room.counts["refused: no token"] += 1
            self.set_status(403)
            self.set_header("Cache-Control", "no-store")
            self.finish(self.message("This room needs its link", NO_TOKEN, kind="refused"))
            return
        if token is not None:
            self.set_cookie(COOKIE, self.room.cookie, httponly=True, samesite="Lax")

    def message(self, title: str, text: str, retry: int | None = None, kind="message") -> bytes:
        """A short page saying what is wrong (no token, the room is full); with `retry`, it
        tries again on its own every `retry` seconds for five minutes, counting down."""
        config = {"kind": "retry", "retry": retry} if retry else None
        return self.render_string("message.html", **self.shell(title, kind, config), text=text,
                                  retry=retry)  # fmt: skip

    def shell(self, title: str, kind: str, config: dict | None = None) -> dict:
        """The arguments of templates/shell.html (a live page's config carries the addresses
        of the files its script loads)."""
        if config is not None and kind in PAGES:
            config = {**config, "urls": {name: self.static_url(name) for name in LOADED}}
        return {"title": title, "kind": kind, "config": config, "inline_css": inline_css()}


class Handler(Guarded, tornado.web.RequestHandler):
    def initialize(self, room: Room) -> None:
        self.room = room

    def page(self, text, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Cache-Control", "no-store")
        self.finish(text)


class Index(Handler):
    def get(self) -> None:
        links = [(kind, self.room.pages[kind].title) for kind in PAGES]
        self.page(self.render_string("index.html", **self.shell("The retention workbench",
                                                                 "plain"), links=links))  # fmt: skip


class PageHandler(Handler):
    def get(self, kind: str) -> None:
        seat = self.room.take(kind)
        if seat is None:
            self.page(self.message("The room is full", FULL, retry=20), 503)
            return
        page = self.room.pages[kind]
        config = {"kind": kind, "sid": seat.sid}
        self.page(self.render_string("page.html", **self.shell(page.title, kind, config),
                                     sections=page.sections))  # fmt: skip


class Static(Guarded, tornado.web.StaticFileHandler):
    """The page's own files (STATIC only), behind the token: tornado's static files (versioned
    addresses from `static_url`, kept by the browser until they change; gzip by the app)."""

    def initialize(self, path: str, room: Room) -> None:
        super().initialize(path)
        self.room = room

    @classmethod
    def get_absolute_path(cls, root: str, path: str) -> str:
        if path not in STATIC:  # only the page's files, by name: nothing else is here (404)
            raise tornado.web.HTTPError(404)
        return super().get_absolute_path(root, path)


class StatusHandler(Handler):
    def get(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.finish(self.room.status(recent=self.get_query_argument("recent", None) is not None))


class NotFound(tornado.web.RequestHandler):
    def prepare(self) -> None:
        raise tornado.web.HTTPError(404)


# --- a page's live sessions ---------------------------------------------------------------------


class Socket(tornado.websocket.WebSocketHandler):
    """A page's live channel: the first message (`hello`) builds the page's session; then each
    message is answered in the room's worker thread, in order."""

    def initialize(self, room: Room) -> None:
        self.room = room
        self.seat: Seat | None = None
        self.models: dict[str, object] = {}  # "page" / "explorer" -> session
        self.workshop: WorkshopSession | None = None
        self.queue: asyncio.Queue = asyncio.Queue()
        self.loop = asyncio.get_running_loop()

    def prepare(self):
        if not self.room.allowed(self.get_query_argument("token", None), self.get_cookie(COOKIE)):
            self.room.counts["refused: no token"] += 1
            raise tornado.web.HTTPError(403)

    def open(self, sid: str) -> None:
        seat = self.room.taken.get(sid)
        if seat is None or seat.socket is not None:  # freed while the page loaded, or a 2nd tab
            kind = self.get_query_argument("kind", "explorer")
            seat = self.room.take(kind if kind in PAGES else "explorer")
            if seat is None:
                self.write_message({"type": "full"})
                self.close(4000, "the room is full")
                return
        seat.socket = self  # (tornado checks the websocket's Origin is this host)
        self.seat = seat
        self.worker = asyncio.ensure_future(self._answer())

    def on_close(self) -> None:
        if self.seat is not None:
            self.room.free(self.seat.sid, "page closed")
            self.seat = None
        self.queue.put_nowait(None)

    def on_message(self, text) -> None:
        self.queue.put_nowait((time.perf_counter(), text))

    def _poster(self, model: str):
        return lambda msg: self.post(model, msg)

    def post(self, model: str, msg: dict) -> None:
        """Send a message to the page from any thread."""
        self.loop.call_soon_threadsafe(self._write, {**msg, "model": model})

    def _write(self, msg: dict) -> None:
        with contextlib.suppress(tornado.websocket.WebSocketClosedError):
            self.write_message(json.dumps(msg, separators=(",", ":")))

    async def _answer(self) -> None:
        while (item := await self.queue.get()) is not None:
            t0, text = item
            try:
                kind, msg = messages.read(json.loads(text), messages.ROOM)
                await self.room.run(self.handle, kind, msg)
            except ValueError as e:
                self.post("page", {"type": "error", "text": f"bad message: {e}"})
            except Exception as e:  # noqa: BLE001  (said in the page; the session goes on)
                self.post("page", {"type": "error", "text": f"the server failed: {e!r}"})
            self.room.times.append((time.perf_counter() - t0) * 1000)
            self.room.answered += 1

    # --- in the worker thread ---
    def handle(self, kind: str, msg: dict) -> None:
        """One message of `messages.ROOM`, read; a workshop's message to an explorer page (or
        the reverse) is refused by name."""
        if kind == "hello":
            return self.hello(msg)
        if kind == "model":
            model = self.models.get(msg["model"])
            if not isinstance(model, RoomExplorer):
                raise ValueError(f"message 'model': no explorer {msg['model']!r} on this page")
            return model.handle(msg["content"])
        if self.workshop is None:
            raise ValueError(f"message '{kind}': this page has no workshop")
        if kind == "reveal":
            self.post("page", self.workshop.reveal(msg["part"], msg["choice"]))
            return self.post("page", self.workshop.score())
        if kind == "restore":  # what the page kept, after a reload
            for answer in self.workshop.restore(msg["kept"]):
                self.post("page", answer)
            return self.post("page", self.workshop.score())
        # open-explorer: on the store of parts 3-4; after a reconnect, at the view the page showed
        note = self.workshop.explorer_note()
        if note:
            return self.post("page", {"type": "note", "html": note})
        setting, notes = from_query(msg["query"], self.workshop.workshop.hop_state)
        return self.open_explorer("explorer", setting, notes)

    def hello(self, msg: dict) -> None:
        query = msg["query"].lstrip("?")
        query = urlencode([(k, v) for k, v in parse_qsl(query) if k != "token"])
        page = self.room.pages[self.seat.kind]
        if self.seat.kind == "explorer":
            setting, notes = from_query(query, Setting(**page.arguments(Setting)))
            self.open_explorer("page", setting, notes)
        else:
            args, notes = workshop_args(page, query)
            self.workshop = WorkshopSession(cached_workshop(args))
            ws = self.workshop.workshop
            self.post(
                "page",
                {
                    "type": "questions",
                    "parts": self.workshop.questions(),
                    "memory": ws.memory_key,
                    "notes": notes,
                },
            )

    def open_explorer(self, model: str, setting: Setting, notes: list[str]) -> None:
        """An explorer session for the page (`page`: the explorer page's own, whose address
        follows its state; `explorer`: the one the workshop opens), sent whole at once."""
        session = RoomExplorer(self._poster(model), self.room.worker.submit, setting, notes)
        self.models[model] = session
        lib = self.static_url("vega-bundle.js")
        fields = explorer_fields(session, lib, self.room.token, follow=model == "page")
        self.post(model, {"type": "state", "fields": fields, "new": True})
        session.live = True


# --- the application ----------------------------------------------------------------------------


def room_pages(notebooks: str | os.PathLike = NOTEBOOKS) -> dict[str, Page]:
    return {kind: read_page(Path(notebooks) / name) for kind, name in PAGES.items()}


def application(room: Room) -> tornado.web.Application:
    kw = {"room": room}
    return tornado.web.Application(
        [
            (r"/", Index, kw),
            (r"/(explorer|workshop)", PageHandler, kw),
            (r"/status", StatusHandler, kw),
            (r"/socket/([A-Za-z0-9_-]{8,40})", Socket, kw),
        ],
        default_handler_class=NotFound,
        static_path=str(STATIC_DIR),
        static_handler_class=Static,
        static_handler_args={"room": room},  # (tornado adds "path" to this dict)
        template_path=str(TEMPLATES),
        compress_response=True,
        websocket_ping_interval=room.ping,
        websocket_ping_timeout=room.ping,
        websocket_max_message_size=MAX_MESSAGE,
    )


async def serve_room(room: Room, ip: str, port: int, ready=None) -> None:
    """Serve the room until cancelled; frees seats never connected every few seconds."""
    app = application(room)
    server = app.listen(port, address=ip)
    if ready is not None:
        ready()
    try:
        while True:
            await asyncio.sleep(min(5.0, room.first_connect / 2))
            room.sweep()
    finally:
        server.stop()
        room.worker.shutdown(wait=False, cancel_futures=True)
