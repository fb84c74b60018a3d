"""The room server: the explorer and the workshop served to a room from one Python process.

Why not a kernel per page (Voila): a Voila page costs its browser seconds of CPU before its first
view (JupyterLab's bundles), and every page also needs a kernel of its own, executing its notebook
(docs/room.md, "Why one process, not a kernel per page", has the measurements). Here a
page is its notebook's prose (`pages.read_page`), `static/room.js` and the explorer's own front end
(`static/view.js`, vega): a few requests, about 0.3 MB without vega's bundle. Every page's state is
a small session object in this process (`ExplorerSession`, `WorkshopSession`), computed in one
worker thread from caches shared by the whole room: a view already computed for anyone is answered
from memory, a workshop's answers are computed once, and the sentence embeddings come from the
machine's disk cache (`app.warm_room_cache`), so the model is loaded at most once in the process,
and only when a page needs a text the cache lacks.

What a room gets:
- `/` (the two links), `/explorer`, `/workshop`, `/static/...` (the page's own files), the page's
  websocket `/socket/SID`, `/status` (seats in use and answer times, as JSON), and `/instructor`
  (behind the instructor's own key: the join link as a QR code and a typed code, the session's
  plan, the room's predictions per part, the seats with a button that frees each);
  every other path is 404, every response is behind the token and carries the security headers,
  and no request runs code;
- a room token of at least 128 bits, or the room's typed join code (`?code=`, 8 characters
  read off the projector, about 40 bits; a wrong one counts as a wrong token): a request carrying
  `?token=` (checked in constant time) gets
  a cookie signed with a secret drawn at each start (so a cookie dies with its server), and a
  request with neither gets a short page saying so (403) and starts nothing; an address that
  sends `guard.GUESSES` wrong tokens a minute is refused (429) until the minute passes; no log
  line carries the token (`guard.redact`);
- at most `seats` pages at once and `per_address` from one address: a page takes a seat when it
  is served, and only a page the server served may connect (its session id was issued by that
  GET); past the seats a request gets "the room is full" (503 with Retry-After), which tries
  again on its own every 20 s; a seat is freed when its page's websocket closes (a closed tab, a
  reload), when its websocket has not answered a ping (a laptop gone to sleep: pings every 15 s,
  the seat freed within 35 s), when its page never connected within `first_connect` seconds (a
  plain GET), or by the instructor;
- bounded work per page: a page's pending changes coalesce, at most `guard.PENDING` messages
  (`guard.PENDING_LARGE` of them uploads)
  wait, a page past `guard.BURST` messages at once is closed, its pending work is dropped the
  moment its socket closes, and a page that does not read what it is sent is closed past
  `guard.MAX_UNSENT` bytes; a request's headers and body have 10 s each and a body at most 16 KB
  (`guard`); an upload is read and encoded in a thread of its own (`uploads`), not the worker
  every page's answers come from, and a page keeps at most `sessions.FILES` files;
- nothing written: no page writes a file anywhere (an upload is read in memory, as `workbench
  evaluate` reads a file, and the embeddings it needs stay in memory, `app.hold_caches`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import tornado.web
import tornado.websocket

from workbench.dsgc.trace import Setting
from workbench.explore import guard, messages
from workbench.explore.explorer import from_query
from workbench.explore.handlers import (
    PAGES,
    STATIC_DIR,
    TEMPLATES,
    Guarded,
    Index,
    Instructor,
    NotFound,
    PageHandler,
    Static,
    StatusHandler,
)
from workbench.explore.lessons import WorkshopSession
from workbench.explore.pages import Page, read_page
from workbench.explore.seats import Room, Seat
from workbench.explore.sessions import (
    RoomExplorer,
    cached_workshop,
    explorer_fields,
    workshop_args,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
MAX_MESSAGE = 32 * 1024 * 1024  # an upload travels in one message (explorer.MAX_UPLOAD chars)
LARGE = 64 * 1024  # a message this long is read in the upload thread, not the server's loop
TRACEBACKS = 3  # a page's failures logged with their traceback (the rest are counted)
log = guard.log

# why a page's websocket was closed: its code, and what the page says (room.js)
CLOSED = {
    "full": 4000,  # every seat is taken: the page tries again on its own
    "not served": 4001,  # a session id the room never issued: the page says to reload
    "freed": 4002,  # the instructor freed the seat
    "elsewhere": 4003,  # the same page connected again (another tab): this one stops
    "address": 4004,  # this address holds its seats already: the page tries again
    "flood": 4008,  # past the message rate, the pending bound or the unread bound
}


# --- a page's live sessions ---------------------------------------------------------------------


class Socket(Guarded, tornado.websocket.WebSocketHandler):
    """A page's live channel: the first message (`hello`) builds the page's session; then its
    messages are answered in the room's worker thread, in order, a change coalesced with the
    changes that follow it (`guard.Mailbox`)."""

    def initialize(self, room: Room) -> None:
        self.room = room
        self.seat: Seat | None = None
        self.models: dict[str, object] = {}  # "page" / "explorer" -> session
        self.workshop: WorkshopSession | None = None
        self.participant: str | None = None  # the room's tally's id for this page's person
        self.box = guard.Mailbox()
        self.bucket = guard.Bucket()
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self.unsent = 0  # bytes written to the socket and not yet taken by the network
        self.received = 0
        self.failures = 0

    def prepare(self):
        why = self.admitted()
        if why:
            raise tornado.web.HTTPError(self.refusal(why))

    def open(self, sid: str) -> None:
        address = self.request.remote_ip
        issued = self.room.issued.get(sid)
        if issued is None or issued[1] != address:  # a made-up id, or another address's page
            self.room.counts["refused: not served"] += 1
            return self.shut("not served", "this page was not served by the room: reload it")
        seat = self.room.taken.get(sid)
        if seat is not None and seat.socket is not None:  # the same page again: the newest wins
            old, old.seat, seat.socket = seat.socket, None, None
            old.shut("elsewhere", "this page connected again elsewhere")
        if seat is None:  # its seat was freed (a dropped connection): take one again
            seat, why = self.room.take(issued[0], address, sid)
            if seat is None:
                self._write({"type": "full"})
                return self.shut(why, "the room is full")
        seat.socket = self  # (tornado checks the websocket's Origin is this host)
        self.seat = seat
        self.worker = asyncio.ensure_future(self._answer())

    def shut(self, why: str, reason: str) -> None:
        """Close this page's socket (`CLOSED[why]`), dropping what it has pending."""
        self.room.counts[f"closed: {why}"] += 1
        self._release()
        self.close(CLOSED[why], reason)

    def _release(self) -> None:
        if self.closed:
            return
        self.closed = True
        dropped = self.box.close()
        if dropped:
            self.room.counts["dropped: pending when the page left"] += dropped
        if self.seat is not None:
            if self.room.taken.get(self.seat.sid) is self.seat:
                self.seat.socket = None
                self.room.free(self.seat.sid, "page closed")
            self.seat = None
        for model in self.models.values():
            model.live = False
        self.room.budget.release(id(self))

    def on_close(self) -> None:
        self._release()

    def on_message(self, text) -> None:
        if self.closed:
            return
        self.received += 1
        if not self.bucket.take():
            return self.shut("flood", "too many messages")
        t0 = time.perf_counter()
        if len(text) > LARGE:  # read in the upload thread, not in the loop every page shares
            if len(text) > 2 * self.room.budget.per_page + LARGE:  # past any file it may keep
                return self.post("page", {"type": "error", "text": TOO_LARGE.format(
                    n=len(text), most=self.room.budget.per_page)})  # fmt: skip
            item = guard.Pending("raw", text, t0)
        else:
            try:
                kind, msg = _read(text)
            except ValueError as e:  # (json's errors are ValueErrors too)
                return self.post("page", {"type": "error", "text": f"bad message: {e}"})
            item = guard.Pending(kind, msg, t0)
        before = self.box.merged
        if not self.box.put(item):
            return self.shut("flood", "too many messages waiting")
        if self.box.merged > before:
            self.room.counts["merged: changes coalesced"] += 1

    def _poster(self, model: str):
        return lambda msg: self.post(model, msg)

    def post(self, model: str, msg: dict) -> None:
        """Send a message to the page from any thread (dropped once the page is gone)."""
        if not self.closed:
            self.loop.call_soon_threadsafe(self._write, {**msg, "model": model})

    def _write(self, msg: dict) -> None:
        if self.closed:
            return
        data = json.dumps(msg, separators=(",", ":"))
        if self.unsent + len(data) > self.room.max_unsent:  # a page that does not read its answers
            return self.shut("flood", "this page does not read its answers")
        try:
            sent = self.write_message(data)
        except tornado.websocket.WebSocketClosedError:
            return self._release()
        n = len(data)
        self.unsent += n
        sent.add_done_callback(lambda f: self._sent(f, n))

    def _sent(self, f, n: int) -> None:
        self.unsent -= n
        if not f.cancelled() and f.exception() is not None:  # the page left: said once, at close
            self._release()

    async def _answer(self) -> None:
        while (item := await self.box.get()) is not None:
            try:
                if item.kind == "raw":
                    kind, msg = await self.room.off_worker(_read, item.msg)
                else:
                    kind, msg = item.kind, item.msg
                if kind == "model" and msg["content"].get("type") == "upload":
                    await self.upload(msg)
                else:
                    await self.room.run(self.handle, kind, msg)
            except ValueError as e:
                self.post("page", {"type": "error", "text": f"bad message: {e}"})
            except Exception:  # never an exception's text to the page: the log has it
                self.failures += 1
                self.room.counts["failed: answers"] += 1
                if self.failures <= TRACEBACKS:
                    log.exception("a page's message failed (%s)", item.kind)
                self.post("page", {"type": "error", "text": FAILED})
            if self.closed:
                break
            self.room.times.append((time.perf_counter() - item.t0) * 1000)
            self.room.answered += item.merged

    async def upload(self, msg: dict) -> None:
        """An explorer's upload: checked against the page's and the room's bounds, read (and its
        shown scenario encoded) in the upload thread, then given to the session in the worker."""
        model = self.models.get(msg["model"])
        if not isinstance(model, RoomExplorer):
            raise ValueError(f"message 'model': no explorer {msg['model']!r} on this page")
        content = msg["content"]
        owner = (id(self), msg["model"])
        got = await self.room.off_worker(model.read_file, content, self.room.budget, owner)
        await self.room.run(model.take_file, got, self.room.budget, owner)

    # --- in the worker thread ---
    def handle(self, kind: str, msg: dict) -> None:
        """One message of `messages.ROOM`, read; a workshop's message to an explorer page (or
        the reverse) is refused by name."""
        if self.closed:
            return None
        if kind == "hello":
            return self.hello(msg)
        if kind == "model":
            model = self.models.get(msg["model"])
            if not isinstance(model, RoomExplorer):
                raise ValueError(f"message 'model': no explorer {msg['model']!r} on this page")
            return model.handle(msg["content"])
        if self.workshop is None:
            raise ValueError(f"message '{kind}': this page has no workshop")
        if kind == "predict":  # a pick before its reveal: the room's tally follows it
            self.workshop.check(msg["part"], msg["choice"])
            self.room.tally.predict(self.participant, msg["part"], msg["choice"])
            return None
        if kind == "reveal":
            answer = self.workshop.reveal(msg["part"], msg["choice"])
            self.room.tally.predict(self.participant, answer["part"], answer["choice"], lock=True)
            self.post("page", answer)
            return self.post("page", self.workshop.score())
        if kind == "restore":  # what the page kept, after a reload
            for key, choice in self.workshop.choices(msg["kept"]).items():
                self.room.tally.predict(self.participant, key, choice)
            for answer in self.workshop.restore(msg["kept"]):
                self.room.tally.predict(self.participant, answer["part"], answer["choice"],
                                        lock=True)  # fmt: skip
                self.post("page", answer)
            return self.post("page", self.workshop.score())
        # open-explorer: on the store of parts 9-13; after a reconnect, at the view the page showed
        note = self.workshop.explorer_note()
        if note:
            return self.post("page", {"type": "note", "html": note})
        setting, notes = from_query(msg["query"], self.workshop.workshop.hop_state)
        return self.open_explorer("explorer", setting, notes)

    def hello(self, msg: dict) -> None:
        query = msg["query"].lstrip("?")
        query = urlencode([(k, v) for k, v in parse_qsl(query) if k != "token"])
        page = self.room.pages[self.seat.kind] if self.seat else None
        if page is None:
            return
        if self.seat.kind == "explorer":
            setting, notes = from_query(query, Setting(**page.arguments(Setting)))
            self.open_explorer("page", setting, notes)
        else:
            args, notes = workshop_args(page, query)
            self.workshop = WorkshopSession(cached_workshop(args))
            ws = self.workshop.workshop
            # the room's tally counts the pages on the room's own workshop (a link that changes
            # it asks other questions): a participant the room issued, or a new one
            if args == self.room.own:
                given = msg["participant"]
                self.participant = (
                    given if self.room.tally.knows(given) else self.room.tally.issue()
                )
            self.post(
                "page",
                {
                    "type": "questions",
                    "parts": self.workshop.questions(),
                    "memory": ws.memory_key,
                    "notes": notes,
                    "participant": self.participant,
                },
            )

    def open_explorer(self, model: str, setting: Setting, notes: list[str]) -> None:
        """An explorer session for the page (`page`: the explorer page's own, whose address
        follows its state; `explorer`: the one the workshop opens), sent whole at once."""
        session = RoomExplorer(self._poster(model), self.room.worker.submit, setting, notes,
                               encode=self.room.uploads.submit)  # fmt: skip
        self.models[model] = session
        lib = self.static_url("vega-bundle.js")
        fields = explorer_fields(session, lib, self.room.token, follow=model == "page")
        self.post(model, {"type": "state", "fields": fields, "new": True})
        session.live = True


TOO_LARGE = "a message of {n:,} characters: a page of this room may upload at most {most:,}"
FAILED = "the server could not answer this message (its log says why); the rest of the page works"


def _read(text: str) -> tuple[str, dict]:
    """A page's message, read (ValueError names what is wrong with it)."""
    try:
        return messages.read(json.loads(text), messages.ROOM)
    except RecursionError:
        raise ValueError("the message nests too deeply") from None


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
            (r"/instructor", Instructor, kw),
            (r"/socket/([A-Za-z0-9_-]{8,40})", Socket, kw),
        ],
        default_handler_class=NotFound,
        default_handler_args=kw,
        static_path=str(STATIC_DIR),
        static_handler_class=Static,
        static_handler_args={"room": room},  # (tornado adds "path" to this dict)
        template_path=str(TEMPLATES),
        cookie_secret=room.secret,
        compress_response=True,
        log_function=guard.log_request,
        websocket_ping_interval=room.ping,
        websocket_ping_timeout=room.ping,
        websocket_max_message_size=MAX_MESSAGE,
    )


async def serve_room(room: Room, ip: str, port: int, ready=None) -> None:
    """Serve the room until cancelled; frees seats never connected every few seconds."""
    guard.redact_logs()
    limit = guard.raise_fd_limit()
    per = guard.PER_ADDRESS_CONNECTIONS * room.per_address + 8 if room.per_address else 0
    server = guard.RoomHTTPServer(
        application(room),
        idle_connection_timeout=room.header_timeout,
        body_timeout=room.header_timeout,
        max_body_size=guard.MAX_BODY,
        max_header_size=16 * 1024,
        per_address=per,
        total=max(limit - guard.FD_RESERVE, 16),
    )
    server.listen(port, address=ip)
    room.server = server
    if ready is not None:
        ready()
    try:
        while True:
            await asyncio.sleep(min(5.0, room.first_connect / 2))
            room.sweep()
    finally:
        server.stop()
        room.worker.shutdown(wait=False, cancel_futures=True)
        room.uploads.shutdown(wait=False, cancel_futures=True)
