"""The room's seats: who holds one (`Seat`), and the room itself (`Room`: its pages, token and
typed join code, seats, the issued session ids a page may connect with, the room's predictions
(`tally.Tally`), and the two threads its work runs in). The server (`server.py`) serves them;
the bounds are in docs/room.md."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from workbench.explore import guard
from workbench.explore.pages import Page
from workbench.explore.sessions import UploadBudget, cached_workshop, workshop_args
from workbench.explore.tally import Tally

SEATS = 30
PER_ADDRESS = 3  # pages one address may hold (the explorer, the workshop and a reload's overlap)
FIRST_CONNECT = 45  # seconds a seat waits for its page's websocket (then a plain GET is freed)
PING = 15  # seconds between pings; a websocket that answers none within as long is closed
TIMES_KEPT = 5000  # answer times kept for /status
MIN_TOKEN = 16  # characters a room token must have (a generated one has 22: 128 bits)
# the typed join code: 8 characters a person reads off a projector without mistaking one for
# another (no 0/O, 1/I/L), about 40 bits; wrong codes count as wrong tokens (guard.GUESSES)
CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8


# --- seats --------------------------------------------------------------------------------------


@dataclass
class Seat:
    """One page's place in the room: its kind, its address, when it was taken, and its
    websocket once the page connected."""

    sid: str
    kind: str
    address: str
    taken: float
    socket: object | None = None  # its server.Socket

    def __repr__(self) -> str:
        return f"Seat({self.kind}, {'connected' if self.socket else 'waiting'})"


def check_token(token: str) -> str:
    """A room token, or ValueError when it is too short to keep a room's Wi-Fi out."""
    if len(token) < MIN_TOKEN:
        raise ValueError(
            f"the room token has {len(token)} characters; a room needs at least {MIN_TOKEN} "
            "(leave --token out and the room draws one of 128 bits)"
        )
    return token


def join_code() -> str:
    """A new typed join code, shown as two groups of four ("K7QM-2XPA")."""
    code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
    return f"{code[:4]}-{code[4:]}"


def same_code(given: str, code: str) -> bool:
    """Is `given` the join code, as a person types it (any case, with or without the dash or
    spaces)? Compared in constant time."""

    def norm(text: str) -> bytes:
        return "".join(ch for ch in text.upper() if ch.isalnum()).encode()

    return secrets.compare_digest(norm(given), norm(code))


@dataclass
class Room:
    """The pages, the token, the seats, and the one worker thread every session's state changes
    in (uploads are read and encoded in a second, low-priority thread)."""

    pages: dict[str, Page]
    token: str
    seats: int = SEATS
    first_connect: float = FIRST_CONNECT
    ping: float = PING
    per_address: int = PER_ADDRESS  # 0: no bound (the benchmark runs every browser on one host)
    header_timeout: float = guard.HEADER_TIMEOUT
    max_unsent: int = guard.MAX_UNSENT
    taken: dict[str, Seat] = field(default_factory=dict)
    counts: collections.Counter = field(default_factory=collections.Counter)
    times: collections.deque = field(default_factory=lambda: collections.deque(maxlen=TIMES_KEPT))
    answered: int = 0  # messages answered since the room opened

    def __post_init__(self):
        check_token(self.token)
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="wb-room")
        self.uploads = ThreadPoolExecutor(1, thread_name_prefix="wb-upload",
                                          initializer=_low_priority)  # fmt: skip
        self.secret = secrets.token_bytes(32)  # signs the cookies of this start only
        self.instructor = secrets.token_urlsafe(16)
        self.guesses = guard.Guesses()
        self.budget = UploadBudget(self.seats)
        self.issued: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
        self.server = None  # the RoomHTTPServer, once listening
        self.code = join_code()
        self.links: dict[str, str] = {}  # what participants open (app.room_links), once known
        # the room's own workshop (the notebook's arguments; a link may ask for another): the
        # one its tally counts and its instructor's page shows
        self.own = (
            workshop_args(self.pages["workshop"], "")[0] if "workshop" in self.pages else None
        )
        self.workshop = cached_workshop(self.own) if self.own is not None else None
        ws = self.workshop
        parts = {k: len(ws.question(k).choices) for k in ws.PARTS} if ws is not None else {}
        self.tally = Tally(parts, most=4 * self.seats + 16)

    def __repr__(self) -> str:
        return f"Room({len(self.taken)} of {self.seats} seats taken)"

    def take(self, kind: str, address: str, sid: str | None = None) -> tuple[Seat | None, str]:
        """(a seat for a page, "") or (None, why not: "full" or "address")."""
        self.sweep()
        if self.per_address and sum(s.address == address for s in self.taken.values()) >= (
            self.per_address
        ):
            self.counts["refused: seats per address"] += 1
            return None, "address"
        if len(self.taken) >= self.seats:
            self.counts["full"] += 1
            return None, "full"
        sid = sid or secrets.token_urlsafe(16)
        seat = self.taken[sid] = Seat(sid, kind, address, time.monotonic())
        self.issued[sid] = (kind, address)
        self.issued.move_to_end(sid)
        while len(self.issued) > 4 * self.seats + 64:  # the served pages a reconnect may resume
            self.issued.popitem(last=False)
        self.counts["seated"] += 1
        return seat, ""

    def free(self, sid: str, why: str) -> None:
        if self.taken.pop(sid, None) is not None:
            self.counts[f"freed: {why}"] += 1

    def sweep(self) -> None:
        """Free the seats whose page never connected in time."""
        now = time.monotonic()
        for sid, seat in list(self.taken.items()):
            if seat.socket is None and now - seat.taken > self.first_connect:
                self.free(sid, "never connected")

    def evict(self, sid: str) -> bool:
        """The instructor frees a seat: its page is closed and may not come back without a
        reload."""
        seat = self.taken.pop(sid, None)
        self.issued.pop(sid, None)
        if seat is None:
            return False
        self.counts["freed: by the instructor"] += 1
        if seat.socket is not None:
            seat.socket.shut("freed", "the instructor freed this seat")
        return True

    async def run(self, fn, *args):
        """fn(*args) in the room's worker thread (every session's state changes there)."""
        return await asyncio.get_running_loop().run_in_executor(self.worker, fn, *args)

    async def off_worker(self, fn, *args):
        """fn(*args) in the upload thread (reading and encoding a file)."""
        return await asyncio.get_running_loop().run_in_executor(self.uploads, fn, *args)

    def status(self, recent: bool = False) -> dict:
        """Seats in use, what happened to pages (seated, freed and why, refused, full), and the
        server's answer times in ms (arrival of a page's message to its answer sent: queueing
        in the worker included); `recent`: also each of the last answer times, in order."""
        self.sweep()
        kept = list(self.times)
        p50, p95, top = np.percentile(kept, [50, 95, 100]) if kept else (0, 0, 0)
        counts = collections.Counter(self.counts)
        if self.server is not None:
            counts.update(self.server.counts)
        return {
            "seats": self.seats,
            "per_address": self.per_address,
            "taken": len(self.taken),
            "connected": sum(s.socket is not None for s in self.taken.values()),
            "pages": dict(collections.Counter(s.kind for s in self.taken.values())),
            "counts": dict(sorted(counts.items())),
            "answers": self.answered,
            "uploads": self.budget.status(),
            "answer_ms": {
                "p50": round(float(p50), 2),
                "p95": round(float(p95), 2),
                "max": round(float(top), 2),
            }
            if kept
            else {},  # fmt: skip
            **({"recent_ms": [round(t, 2) for t in kept]} if recent else {}),
        }

    def seat_list(self) -> list[dict]:
        """Every seat, for the instructor: address, page, connected, seconds held, messages."""
        now = time.monotonic()
        return [
            {"sid": s.sid, "address": s.address, "page": s.kind, "connected": s.socket is not None,
             "seconds": int(now - s.taken), "messages": s.socket.received if s.socket else 0}
            for s in sorted(self.taken.values(), key=lambda s: (s.address, s.taken))
        ]  # fmt: skip


def _low_priority() -> None:
    """The upload thread runs at the lowest CPU priority: a file being encoded never takes the
    cores from the pages' answers (Linux: a thread id is a valid PRIO_PROCESS target)."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
