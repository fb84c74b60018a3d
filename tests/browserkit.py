"""Helpers for the tests and benches that drive a real browser against a real room server:
start the room (`serve`, its own process on a free 127.0.0.1 port, stopped by its process
group), a headless Chromium with a fresh profile (`chromium`), and a record of every request,
websocket and console error of its pages (`Recorder`). Kept with the tests: the workbench never
needs them. The benches in scripts/ import this module from here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlparse


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Served:
    """A room server started by `serve`: its base URL, token and process id."""

    url: str
    token: str
    pid: int

    def link(self, kind: str = "", query: str = "") -> str:
        """A page's address with the token (and more of a query string)."""
        return f"{self.url}{kind}?token={self.token}{'&' + query.lstrip('?&') if query else ''}"


def app_command(port: int, token: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "workbench.explore.app",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--token={token}",
        *args,
    ]


@contextmanager
def serve(
    *args: str, env: dict | None = None, log=None, timeout: float = 120, token: str = "test-room"
) -> Iterator[Served]:
    """The room server (`python -m workbench.explore.app ARGS`, by default without warming the
    sentence cache) on a free 127.0.0.1 port; yields it once it listens. It runs in its own
    process group and is stopped by that group's id."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    args = args or ("--no-warm-cache",)
    proc = subprocess.Popen(
        app_command(port, token, *args),
        env=dict(os.environ if env is None else env),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the room server exited early (code {proc.returncode}); log: {log}"
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the room server did not listen within {timeout:g} s"
                    ) from None
                time.sleep(0.1)
        yield Served(f"http://127.0.0.1:{port}/", token, proc.pid)
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
