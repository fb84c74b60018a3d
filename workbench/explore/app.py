"""Serve the explorer and the workshop with Voila, offline: `python -m workbench.explore.app [--port N]`
(`make app`). The browser test and the bench start Voila through `voila_command` too, so every
page they measure is served the way a workshop room gets it.

- template `wb` (package data under workbench/explore/share/jupyter): Voila's lab template without its
  Font Awesome CDN links;
- `?template=` in a URL cannot switch the template back (allow_template_override=NO);
- the jupytext labextension is not loaded into Voila pages (it is for JupyterLab's editor, and in
  a Voila page it only throws a console error); jupytext itself is untouched.
"""

from __future__ import annotations

import argparse
import os
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(target, env: dict | None = None, log=None, timeout: float = 120) -> Iterator[str]:
    """Voila serving `target` on a free 127.0.0.1 port; yields the base URL. The server runs in
    its own process group and is stopped by that group's id (it and its kernels, nothing else)."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        voila_command(target, port),
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
    ap.add_argument("--ip", default="127.0.0.1")
    ap.add_argument("folder", nargs="?", default=str(NOTEBOOKS))
    a = ap.parse_args(argv)
    base = f"http://{a.ip}:{a.port}/voila/render"
    print(f">> explorer: {base}/05_explorer.ipynb", flush=True)
    print(f">> workshop: {base}/06_workshop.ipynb", flush=True)
    cmd = voila_command(a.folder, a.port, a.ip)
    os.execve(cmd[0], cmd, voila_env())
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
