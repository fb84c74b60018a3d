"""Serve the explorer and the workshop to a room: `python -m workbench.explore.app [--ip ADDR]
[--port N] [--token T] [--seats N]` (`make app IP=... TOKEN=... SEATS=...`). The browser tests and
the bench start it as a process too (`tests/browserkit.serve`), so every page they measure is
served the way a room gets it.

What it does, in order: fills this machine's sentence cache with every text the explorer can show
(`warm_room_cache`: 4,777 texts, about 30 s the first time on a machine, then nothing; a page
switched to the sentence encoder then reads its embeddings and never waits for the model);
computes the pages' first views and the workshop's answers (`sessions.preheat`); prints the links
(with the room's token); and serves the room from this one process (`workbench.explore.server`:
only the explorer and the workshop, behind the token, at most `--seats` pages at once, a seat
freed when its page closes or goes silent).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import socket
import sys
import time

from workbench.common.encoders import (
    ENCODERS,
    EncoderUnavailable,
    default_cache_dir,
    get_encoder,
)
from workbench.common.io import InputError
from workbench.explore import guard, seats, server, sessions
from workbench.explore.explorer import ROOM_PORT, every_text

ROOM_TOKEN_ENV = "WORKBENCH_ROOM_TOKEN"


HELD_TEXTS = 20_000  # embeddings a room keeps beyond its warm cache (uploads'), per encoder


def room_token(given: str | None = None) -> str:
    """The room token: given, else the environment's, else a random one of 128 bits; one
    shorter than `seats.MIN_TOKEN` characters is refused (ValueError)."""
    return seats.check_token(given or os.environ.get(ROOM_TOKEN_ENV) or secrets.token_urlsafe(16))


def hold_caches(extra: int = HELD_TEXTS) -> None:
    """From here on the room writes no cache file: the embeddings a page needs beyond the warm
    cache (an upload's texts) stay in this process's memory, at most `extra` texts per encoder,
    the oldest dropped first."""
    for name in ENCODERS:
        get_encoder(name).hold(extra)


def warm_room_cache(say=print) -> tuple[int, int]:
    """Sentence embeddings of every text the room's explorer can show, in this machine's disk
    cache (`default_cache_dir()`), before the first page arrives: a page switched to the
    sentence encoder then reads them and never loads the model, so the model is loaded at most
    once per machine (here, and only while the cache lacks a text). Returns (texts, encoded
    now); (0, 0) when the disk cache is off or the model cannot be loaded (said, not raised:
    the room still serves the lexical encoder)."""
    if default_cache_dir() is None:
        say(">> sentence cache off (WORKBENCH_CACHE_DIR): a page that asks loads the model")
        return 0, 0
    enc = get_encoder("sentence")
    texts = every_text()
    if enc.has_all(texts):
        say(f">> sentence embeddings of the explorer's {len(texts):,} texts: cached")
        return len(texts), 0
    say(
        f">> encoding the explorer's {len(texts):,} texts with the sentence model, once per machine"
    )
    t0, before = time.monotonic(), enc.encoded
    try:
        enc.encode(texts)
    except EncoderUnavailable as e:
        say(f">> the sentence model is unavailable ({e}); the room serves the lexical encoder")
        return 0, 0
    now = enc.encoded - before
    say(f">> {now:,} encoded in {time.monotonic() - t0:.0f} s, kept in {enc.cache_dir}")
    return len(texts), now


def lan_address() -> str:
    """This machine's address on its network (the one a route out would use; no packet is
    sent), or 127.0.0.1 when it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def reach(ip: str, port: int) -> list[str]:
    """What the room's address means for the people in it: on a loopback address no other
    device can open the pages, said plainly with the address to use instead."""
    if ip.startswith("127.") or ip in ("localhost", "::1"):
        lan = lan_address()
        where = (
            f"this laptop's address on its network is {lan}: make app IP={lan}"
            if lan != "127.0.0.1"
            else "this laptop has no network address now: join the room's Wi-Fi first"
        )
        return [
            f"!! {ip} serves this laptop only: no participant can open these links. For a "
            f"room, {where} (or IP=0.0.0.0 for every address), then check from a phone "
            "(docs/room.md, 'Before the room arrives')."
        ]
    return [f">> participants reach it at {lan_address() if ip in ('0.0.0.0', '') else ip}:"
            f"{port} (check from a phone on the room's Wi-Fi before they arrive)"]  # fmt: skip


def room_links(ip: str, port: int, token: str) -> dict[str, str]:
    """The links to give a room: its front page and the two pages, each with the token."""
    host = lan_address() if ip in ("0.0.0.0", "") else ip
    base = f"http://{host}:{port}"
    return {
        "room": f"{base}/?token={token}",
        "explorer": f"{base}/explorer?token={token}",
        "workshop": f"{base}/workshop?token={token}",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m workbench.explore.app", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--port", type=int, default=ROOM_PORT)
    ap.add_argument(
        "--ip",
        default="127.0.0.1",
        help="address to listen on: the laptop's address on the room's network for a room "
        "(0.0.0.0: every address); 127.0.0.1 for yourself",
    )
    ap.add_argument(
        "--token", default=None, help=f"room token (default: ${ROOM_TOKEN_ENV}, else random)"
    )
    ap.add_argument("--seats", type=int, default=seats.SEATS, help="pages at most at once")
    ap.add_argument(
        "--per-address",
        type=int,
        default=seats.PER_ADDRESS,
        help="pages one address may hold at once (0: no bound, for a benchmark that runs every "
        "browser on one machine)",
    )
    ap.add_argument(
        "--first-connect",
        type=float,
        default=seats.FIRST_CONNECT,
        help="seconds a served page has to connect before its seat is freed",
    )
    ap.add_argument(
        "--no-warm-cache",
        action="store_true",
        help="do not fill the sentence cache with the explorer's texts before serving",
    )
    ap.add_argument("--notebooks", default=str(server.NOTEBOOKS), help=argparse.SUPPRESS)
    ap.add_argument("--ping", type=float, default=seats.PING, help=argparse.SUPPRESS)
    ap.add_argument("--header-timeout", type=float, default=guard.HEADER_TIMEOUT,
                    help=argparse.SUPPRESS)  # fmt: skip
    ap.add_argument("--max-unsent", type=int, default=guard.MAX_UNSENT, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.seats < 1:
        ap.error("--seats must be at least 1")
    if a.per_address < 0:
        ap.error("--per-address must be 0 (no bound) or more")
    try:
        token = room_token(a.token)
    except ValueError as e:
        ap.error(str(e))
    try:
        pages = server.room_pages(a.notebooks)
    except InputError as e:  # a notebook the room cannot read as a page: say which, and where
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not a.no_warm_cache:
        warm_room_cache()
    hold_caches()  # nothing a page does writes a file
    room = seats.Room(pages, token, a.seats, a.first_connect, a.ping, a.per_address,
                      a.header_timeout, a.max_unsent)  # fmt: skip
    sessions.preheat(pages)
    links = room.links = room_links(a.ip, a.port, token)
    base = links["room"].split("/?")[0]
    instructor = f"{base}/instructor?key={room.instructor}"

    def ready() -> None:
        print(
            f">> serving the explorer and the workshop to {a.seats} seats (nothing else; the "
            "token or the code is required)",
            flush=True,
        )
        for line in reach(a.ip, a.port):
            print(line, flush=True)
        print(f">> participants open {base} and type the code {room.code}, or the link:",
              flush=True)  # fmt: skip
        for name, link in links.items():
            print(f">>   {name}: {link}", flush=True)
        print(f">> your page (the QR code, the plan, the room's predictions, the seats; keep this "
              f"link to yourself): {instructor}", flush=True)  # fmt: skip

    try:
        asyncio.run(server.serve_room(room, a.ip, a.port, ready))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.exit(main())
