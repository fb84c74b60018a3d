"""What keeps one client from costing the room more than its share (docs/room.md, "A room that
one laptop cannot take down"): the bounds the room server (`server.py`) puts on connections,
guesses, messages and log lines, each written once here.

- `RoomHTTPServer`: tornado's HTTP server with short header and body timeouts and a small body
  limit (set by `server.serve_room`), at most `per_address` connections from one address and
  `total` in all (a connection past them is closed at once, before a byte is read), and an
  accept loop that pauses for a second when the process runs out of file descriptors instead
  of spinning on the error and filling the log;
- `Guesses`: wrong tokens counted per address; past `GUESSES` in `GUESS_WINDOW` seconds the
  address is refused without a check until the window passes (429 with Retry-After);
- `Bucket`: a page's message rate (a burst, then a steady rate; past it the page is a flood);
- `Mailbox`: a page's pending messages, bounded; its pending changes coalesce (only the newest
  state matters) and everything pending is dropped the moment its socket closes;
- `redact`: the room's secrets (the token, the join code, the instructor's key) never reach a log line.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import logging
import re
import resource
import socket
import time
from dataclasses import dataclass

from tornado.httpserver import HTTPServer
from tornado.ioloop import IOLoop

log = logging.getLogger("workbench.room")

# --- connections --------------------------------------------------------------------------------

HEADER_TIMEOUT = 10.0  # seconds to send a request's headers, or its body (and between requests)
MAX_UNSENT = 16 * 1024 * 1024  # bytes a page may leave unread before its socket is closed
MAX_BODY = 16 * 1024  # bytes a request body may have (uploads travel by websocket)
PER_ADDRESS_CONNECTIONS = 12  # connections one address may hold for each seat it may take
FD_RESERVE = 64  # descriptors kept free for files, the model and the log
OUT_OF_FDS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def raise_fd_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


class RoomHTTPServer(HTTPServer):
    """HTTPServer with connection bounds (per address, in all) and an accept loop that survives
    running out of file descriptors (a pause, one log line, then accepting again)."""

    def initialize(self, *args, per_address: int = 0, total: int = 0, **kwargs) -> None:
        super().initialize(*args, **kwargs)
        self.per_address, self.total = per_address, total
        self.streams: dict[str, list] = collections.defaultdict(list)
        self.counts: collections.Counter = collections.Counter()
        self.paused = False

    def add_sockets(self, sockets) -> None:
        for sock in sockets:
            self._sockets[sock.fileno()] = sock
            self._handlers[sock.fileno()] = self._accepting(sock)

    def _accepting(self, sock: socket.socket):
        loop = IOLoop.current()

        def accept(fd, events) -> None:
            for _ in range(128):
                try:
                    conn, address = sock.accept()
                except BlockingIOError:
                    return
                except ConnectionAbortedError:
                    continue
                except OSError as e:
                    if e.errno not in OUT_OF_FDS:
                        raise
                    self.counts["paused: out of file descriptors"] += 1
                    if not self.paused:
                        log.warning("out of file descriptors: not accepting for 1 s")
                    self.paused = True
                    loop.remove_handler(sock)
                    loop.call_later(1.0, resume)
                    return
                self._handle_connection(conn, address)

        def resume() -> None:
            self.paused = False
            if sock.fileno() in self._sockets:
                loop.add_handler(sock, accept, IOLoop.READ)

        loop.add_handler(sock, accept, IOLoop.READ)
        return lambda: loop.remove_handler(sock)

    def handle_stream(self, stream, address) -> None:
        ip = address[0] if isinstance(address, tuple) else str(address)
        self.streams[ip] = [s for s in self.streams[ip] if not s.closed()]
        if self.total and sum(len(v) for v in self.streams.values()) >= self.total:
            self._prune()  # (the other addresses' lists may hold closed connections)
        live = self.streams[ip]
        if self.total and sum(len(v) for v in self.streams.values()) >= self.total:
            self.counts["closed: too many connections"] += 1
            stream.close()
            return
        if self.per_address and len(live) >= self.per_address:
            self.counts["closed: too many connections from one address"] += 1
            stream.close()
            return
        live.append(stream)
        super().handle_stream(stream, address)

    def _prune(self) -> None:
        for ip in list(self.streams):
            self.streams[ip] = [s for s in self.streams[ip] if not s.closed()]
            if not self.streams[ip]:
                del self.streams[ip]

    def open_connections(self) -> int:
        return sum(1 for v in self.streams.values() for s in v if not s.closed())


# --- guesses ------------------------------------------------------------------------------------

GUESSES = 10  # wrong tokens an address may send in GUESS_WINDOW seconds
GUESS_WINDOW = 60.0


class Guesses:
    """Wrong tokens per address in a sliding window (at most `keep` addresses remembered)."""

    def __init__(self, limit: int = GUESSES, window: float = GUESS_WINDOW, keep: int = 4096):
        self.limit, self.window, self.keep = limit, window, keep
        self.wrong: collections.OrderedDict[str, collections.deque] = collections.OrderedDict()

    def _times(self, ip: str) -> collections.deque:
        now = time.monotonic()
        times = self.wrong.get(ip)
        if times is None:
            return collections.deque()
        while times and now - times[0] > self.window:
            times.popleft()
        return times

    def blocked(self, ip: str) -> float:
        """Seconds until this address may try again (0: it may now)."""
        times = self._times(ip)
        if len(times) < self.limit:
            return 0.0
        return max(self.window - (time.monotonic() - times[0]), 1.0)

    def failed(self, ip: str) -> None:
        times = self._times(ip)
        times.append(time.monotonic())
        self.wrong[ip] = times
        self.wrong.move_to_end(ip)
        while len(self.wrong) > self.keep:
            self.wrong.popitem(last=False)


# --- a page's messages --------------------------------------------------------------------------

BURST = 200  # messages a page may send at once
RATE = 50.0  # messages a second after the burst (a slider's changes come a few a second)
PENDING = 32  # messages a page may have waiting (changes coalesce, so an honest page has 1-3)
PENDING_LARGE = 2  # ... of them large (an upload's): each may be megabytes


class Bucket:
    """A token bucket: `take()` is False once a sender is past its burst and rate."""

    def __init__(self, burst: int = BURST, rate: float = RATE):
        self.burst, self.rate = burst, rate
        self.left, self.at = float(burst), time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.left = min(self.burst, self.left + (now - self.at) * self.rate)
        self.at = now
        if self.left < 1:
            return False
        self.left -= 1
        return True


@dataclass
class Pending:
    kind: str  # a message type of `messages.ROOM`, or "raw" (a large message, read later)
    msg: object  # its fields (or the raw text)
    t0: float  # when the oldest message it stands for arrived (perf_counter)
    merged: int = 1  # how many messages it stands for


def _change(p: Pending) -> tuple | None:
    """(model, changes, seq) when a pending message is an explorer's `set`, else None."""
    if p.kind != "model":
        return None
    c = p.msg.get("content")
    if not (
        isinstance(c, dict) and c.get("type") == "set" and set(c) <= {"type", "changes", "seq"}
    ):
        return None
    if not isinstance(c.get("changes"), dict):
        return None
    return p.msg["model"], c["changes"], c.get("seq", 0)


class Mailbox:
    """A page's pending messages, in order, at most `limit` (`large` of them large); an
    explorer's change that follows another change of the same explorer is merged into it (its
    values win, its seq is kept); `close()` drops everything pending and wakes the reader."""

    def __init__(self, limit: int = PENDING, large: int = PENDING_LARGE):
        self.limit, self.large = limit, large
        self.items: collections.deque[Pending] = collections.deque()
        self.event = asyncio.Event()
        self.closed = False
        self.merged = 0  # messages folded into an earlier one

    def put(self, p: Pending) -> bool:
        """Queue a message; False when the page already has `limit` waiting."""
        if self.closed:
            return True
        new = _change(p)
        last = _change(self.items[-1]) if self.items and new else None
        if new and last and new[0] == last[0]:
            head = self.items[-1]
            changes = {**last[1], **new[1]}
            head.msg = {**head.msg, "content": {"type": "set", "changes": changes, "seq": new[2]}}
            head.merged += 1
            self.merged += 1
            return True
        if len(self.items) >= self.limit:
            return False
        if p.kind == "raw" and sum(q.kind == "raw" for q in self.items) >= self.large:
            return False
        self.items.append(p)
        self.event.set()
        return True

    async def get(self) -> Pending | None:
        while not self.items:
            if self.closed:
                return None
            self.event.clear()
            await self.event.wait()
        return None if self.closed else self.items.popleft()

    def close(self) -> int:
        """Drop everything pending; returns how many messages were dropped."""
        dropped = sum(p.merged for p in self.items)
        self.items.clear()
        self.closed = True
        self.event.set()
        return dropped


# --- logs ---------------------------------------------------------------------------------------

SECRET = re.compile(r"((?:token|key|code|_xsrf)=)[^&\s\"']+", re.IGNORECASE)


def redact(text: str) -> str:
    """A text with every `token=`, `key=`, `code=` and `_xsrf=` value replaced by `…`."""
    return SECRET.sub(r"\1…", text)


class Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if SECRET.search(text):
            record.msg, record.args = redact(text), ()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_logs() -> None:
    """Install `Redact` on tornado's loggers and the room's own (once)."""
    for name in ("tornado.access", "tornado.application", "tornado.general", log.name):
        lg = logging.getLogger(name)
        if not any(isinstance(f, Redact) for f in lg.filters):
            lg.addFilter(Redact())


def log_request(handler) -> None:
    """The access log's line: status, method, path (never the query), address, milliseconds."""
    status = handler.get_status()
    r = handler.request
    level = logging.INFO if status < 400 else logging.WARNING if status < 500 else logging.ERROR
    logging.getLogger("tornado.access").log(
        level, "%d %s %s (%s) %.1fms", status, r.method, r.path, r.remote_ip,
        1000.0 * r.request_time(),
    )  # fmt: skip
