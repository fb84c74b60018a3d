"""Serve the explorer and the workshop with Voila, offline, to a room: `python -m
workbench.explore.app [--ip ADDR] [--port N] [--token T]` (`make app IP=... TOKEN=...`). The
browser test and the bench start Voila through `voila_command` too, so every page they measure is
served the way a workshop room gets it.

Room mode (what `main` serves):
- only the explorer and the workshop: both are copied into a fresh folder that Voila serves, so
  no other notebook is listed or runnable, and a kernel's working folder is outside the checkout;
- at most `--seats` live kernels (default 30); past that a page gets "the room is full" (HTTP 503,
  the `wb` template's error page) and nothing starts (`workbench.explore.room`);
- a room token (`--token`, else `WORKBENCH_ROOM_TOKEN`, else a random one) through the Jupyter
  server's own token auth: the links printed carry `?token=...`; a request without it gets the
  server's login page and starts nothing;
- a kernel whose page has gone (closed without an unload event) is culled after `cull_after`
  seconds idle (default 45, checked every 10 s: freed within 55 s of its page closing); a kernel
  whose page never opened its websocket (a plain GET, or a page still loading on a busy machine)
  after `first_connect` seconds (default 180: a room opening 30 pages at once had every kernel
  culled at 45 s before its page connected); a page that is open keeps its kernel;
- cells may wait 60 s for their output (Voila's default of 4 s loses whole workshop parts when a
  room opens its pages together);
- preheated kernels (`--pool N`; by default, on a LAN address, the seats shared by the two
  notebooks, 15 each for 30 seats, and on 127.0.0.1 one each; `--pool 0` turns it off): each notebook is executed ahead of the request in a pool of
  kernels, so a page arriving finds one ready (the explorer waits only for its link's query,
  `voila.utils.wait_for_request`); the pool takes seats too and is refilled only into free
  seats, a page whose notebook's pool is empty takes a seat from the other pool, and a kernel
  handed to a page starts its idle clock then (`workbench.explore.room`). Measured with
  `scripts/bench_room.py` on this 2-core machine (the README's table): with the pools the server
  and its kernels used 4 CPU seconds until 10 arriving pages had their first view, against 67
  without; at 30 pages (the browsers at the lowest CPU priority, standing in for the
  participants' laptops) 57 CPU seconds and no failed page;
- no page loads the sentence model until it asks for it (WORKBENCH_WARM=0 unless set), and
  before serving, the room fills the machine's sentence cache with every text the explorer can
  show (`warm_room_cache`: 4,777 texts, about 30 s once per machine, then nothing), so a page
  switched to the sentence encoder reads its embeddings and never loads the model
  (`--no-warm-cache` skips it).

- template `wb` (package data under workbench/explore/share/jupyter): Voila's lab template without its
  Font Awesome CDN links;
- `?template=` in a URL cannot switch the template back (allow_template_override=NO);
- the jupytext labextension is not loaded into Voila pages (it is for JupyterLab's editor, and in
  a Voila page it only throws a console error); jupytext itself is untouched.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from urllib.parse import urlparse

from workbench.common.encoders import EncoderUnavailable, default_cache_dir, get_encoder
from workbench.explore.explorer import every_text

TEMPLATE = "wb"
NOT_IN_VOILA = ("jupyterlab-jupytext",)  # labextensions Voila pages do not load
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def share_dir() -> str:
    """The package's share/jupyter folder (holds voila/templates/wb), for JUPYTER_PATH."""
    return str(resources.files("workbench.explore").joinpath("share", "jupyter"))


def voila_env(env: dict | None = None) -> dict:
    """The environment Voila needs: JUPYTER_PATH extended with the package's templates."""
    env = dict(os.environ if env is None else env)
    paths = [share_dir(), *[p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]]
    env["JUPYTER_PATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def voila_command(target: str | os.PathLike, port: int, ip: str = "127.0.0.1") -> list[str]:
    """The voila command line serving `target` (a notebook or a folder) on ip:port."""
    return [
        str(Path(sys.executable).parent / "voila"),
        str(target),
        f"--Voila.ip={ip}",
        f"--port={port}",
        "--no-browser",
        f"--template={TEMPLATE}",
        "--VoilaConfiguration.allow_template_override=NO",
        *[f"--VoilaConfiguration.extension_denylist={x}" for x in NOT_IN_VOILA],
    ]


ROOM = ("05_explorer.ipynb", "06_workshop.ipynb")  # what a room is served
ROOM_TOKEN_ENV = "WORKBENCH_ROOM_TOKEN"
IOPUB_TIMEOUT = 60  # seconds a cell may wait for output on a loaded machine
SEATS = 30  # live kernels at most, by default
CULL_AFTER = 45  # seconds idle before a kernel whose page is gone is freed (+ a 10 s check)
FIRST_CONNECT = 180  # ... whose page never connected (it may still be loading: room.py)
POOL = None  # preheated kernels per notebook; None: the seats shared by the room's notebooks


def room_pool(seats: int, pool: int | None = None, ip: str = "0.0.0.0") -> int:
    """Preheated kernels per notebook: `pool` if given; else, served on a LAN address (a room),
    the seats shared by the room's notebooks (30 seats: 15 explorers and 15 workshops run before
    anyone arrives), and on the loopback address (one person on their own laptop) one each."""
    if pool is not None:
        return int(pool)
    shared = max(int(seats), 0) // len(ROOM)
    loopback = ip in ("localhost", "::1") or ip.startswith("127.")
    return min(shared, 1) if loopback else shared


def room_folder(notebooks: str | os.PathLike = NOTEBOOKS) -> Path:
    """A fresh folder holding copies of the room's notebooks (nothing else is served)."""
    folder = Path(tempfile.mkdtemp(prefix="wb-room-"))
    for name in ROOM:
        shutil.copy2(Path(notebooks) / name, folder / name)
    return folder


def room_token(given: str | None = None) -> str:
    """The room token: given, else the environment's, else a random one."""
    return given or os.environ.get(ROOM_TOKEN_ENV) or secrets.token_urlsafe(12)


def room_command(
    folder: str | os.PathLike,
    port: int,
    ip: str,
    token: str,
    cull_after: int = CULL_AFTER,
    seats: int = SEATS,
    pool: int | None = None,
    first_connect: int = FIRST_CONNECT,
) -> list[str]:
    """The voila command line for a room: token auth, at most `seats` kernels (then the room's
    "full" page), idle kernels of pages that have gone culled, long output waits, and `pool`
    preheated kernels per notebook (default: `room_pool`, the seats shared by the notebooks),
    which take seats too (`room.SeatedKernelManager`)."""
    pool = room_pool(seats, POOL if pool is None else pool, ip)
    preheat = ["--preheat_kernel=True", f"--pool_size={pool}"] if pool > 0 else []
    return [
        *voila_command(folder, port, ip),
        *preheat,
        f"--Voila.token={token}",
        "--VoilaConfiguration.multi_kernel_manager_class="
        "workbench.explore.room.SeatedKernelManager",
        f"--SeatedKernelManager.seats={int(seats)}",
        f"--SeatedKernelManager.first_connect={int(first_connect)}",
        f"--MappingKernelManager.cull_idle_timeout={int(cull_after)}",
        f"--MappingKernelManager.cull_interval={max(1, min(10, int(cull_after) // 2))}",
        "--MappingKernelManager.cull_connected=False",
        f"--NotebookClient.iopub_timeout={IOPUB_TIMEOUT}",
    ]


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


def room_links(ip: str, port: int, token: str) -> dict[str, str]:
    host = "127.0.0.1" if ip in ("0.0.0.0", "") else ip
    base = f"http://{host}:{port}/voila/render"
    return {Path(n).stem.split("_", 1)[1]: f"{base}/{n}?token={token}" for n in ROOM}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(
    target, env: dict | None = None, log=None, timeout: float = 120, command=None
) -> Iterator[str]:
    """Voila serving `target` on a free 127.0.0.1 port; yields the base URL. The server runs in
    its own process group and is stopped by that group's id (it and its kernels, nothing else).
    `command(target, port)` builds another voila command line (a room's, say)."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        (command or voila_command)(target, port),
        env=voila_env(env),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"voila exited early (code {proc.returncode}); log: {log}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"voila did not listen within {timeout:g} s") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if log:
            out.close()


# --- a real browser (the test and the bench) ------------------------------------------------

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium(playwright, executable: str, viewport=(1280, 720)):
    """A headless Chromium context with a fresh profile (Playwright's sync API)."""
    return playwright.chromium.launch_persistent_context(
        tempfile.mkdtemp(prefix="wb-chromium-"),
        executable_path=executable,
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": viewport[0], "height": viewport[1]},
        accept_downloads=True,
    )


def is_local(url: str) -> bool:
    """Does a request stay on this machine (loopback, or a data:/blob: URL)?"""
    u = urlparse(url)
    if u.scheme in ("data", "blob", "about"):
        return True
    return u.hostname in ("127.0.0.1", "localhost", "::1")


class Recorder:
    """Every request and websocket a browser context opens, and every console error and
    uncaught exception of its pages."""

    def __init__(self, context):
        self.requests: list[str] = []
        self.errors: list[str] = []
        context.on("request", lambda r: self.requests.append(r.url))
        context.on("page", self._page)
        for page in context.pages:
            self._page(page)

    def _page(self, page) -> None:
        page.on("websocket", lambda ws: self.requests.append(ws.url))
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))

    def offsite(self) -> list[str]:
        return [u for u in self.requests if not is_local(u)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m workbench.explore.app", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--port", type=int, default=8866)
    ap.add_argument(
        "--ip", default="127.0.0.1", help="address to listen on (a LAN address for a room)"
    )
    ap.add_argument(
        "--token", default=None, help=f"room token (default: ${ROOM_TOKEN_ENV}, else random)"
    )
    ap.add_argument("--seats", type=int, default=SEATS, help="pages (kernels) at most at once")
    ap.add_argument(
        "--pool",
        type=int,
        default=POOL,
        help="preheated kernels per notebook, ready before anyone arrives (default: on a LAN "
        "address the seats shared by the two notebooks, on 127.0.0.1 one; they take seats; "
        "0: none)",
    )
    ap.add_argument(
        "--cull-after",
        type=int,
        default=CULL_AFTER,
        help="seconds before an idle kernel whose page is gone is freed",
    )
    ap.add_argument(
        "--first-connect",
        type=int,
        default=FIRST_CONNECT,
        help="seconds before an idle kernel whose page never connected is freed (its page may "
        "still be loading while the room arrives)",
    )
    ap.add_argument(
        "--no-warm-cache",
        action="store_true",
        help="do not fill the sentence cache with the explorer's texts before serving",
    )
    a = ap.parse_args(argv)
    if not a.no_warm_cache:
        warm_room_cache()
    token = room_token(a.token)
    folder = room_folder()
    for name, link in room_links(a.ip, a.port, token).items():
        print(f">> {name}: {link}", flush=True)
    print(
        f">> serving {', '.join(ROOM)} from {folder} to {a.seats} seats (nothing else; token "
        "required)",
        flush=True,
    )
    cmd = room_command(folder, a.port, a.ip, token, a.cull_after, a.seats, a.pool, a.first_connect)
    pool = room_pool(a.seats, a.pool, a.ip)
    if pool:
        print(
            f">> preheating {pool} kernel(s) for each notebook before anyone arrives (30 took "
            "about 95 s on the 2-core machine it was measured on); Voila says 'Kernel pool of "
            "... is filled' for each when it is ready",
            flush=True,
        )
    env = voila_env()
    env.setdefault("WORKBENCH_WARM", "0")  # no page loads the sentence model until it asks for it
    os.execve(cmd[0], cmd, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
