"""Helpers for the tests and benches that drive a real browser against a real room server:
start the room (`serve`, its own process on a free 127.0.0.1 port, stopped by its process
group), a headless Chromium with a fresh profile (`chromium`), and a record of every request,
websocket and console error of its pages (`Recorder`). Kept with the tests: the workbench never
needs them. The benches in scripts/ import this module from here.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

# --- a process, as /proc sees it ------------------------------------------------------------------


def rss(pid: int) -> int:
    """A process's resident memory in bytes (0 once it is gone)."""
    try:
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _tree(root: int) -> list[int]:
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(c for c, pp in parent.items() if pp == pid)
    return out


def cpu(root: int, tree: bool = False) -> float:
    """CPU seconds (user + system) used so far by a process (`tree`: and its descendants)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in _tree(root) if tree else [root]:
        try:
            f = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except (OSError, ValueError, IndexError):
            continue
    return total / tick


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
    log: Path | None = None  # what it printed (its links), when started with a log

    def link(self, kind: str = "", query: str = "") -> str:
        """A page's address with the token (and more of a query string)."""
        return f"{self.url}{kind}?token={self.token}{'&' + query.lstrip('?&') if query else ''}"

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = urlparse(self.url).netloc.split(":")
        return host, int(port)

    def request(self, path: str, source: str = "127.0.0.1", method: str = "GET", headers=None):
        """(status, headers, body) of one request sent from `source` (an address of this
        machine: every 127.x answers, so 127.0.0.2 stands for a second laptop); a connection the
        server closes gives the status "closed"."""
        host, port = self.host_port
        conn = http.client.HTTPConnection(host, port, timeout=30, source_address=(source, 0))
        try:
            conn.request(method, "/" + path.lstrip("/"), headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace")
        except OSError:
            return "closed", {}, ""
        finally:
            conn.close()

    def page(self, kind: str = "explorer", source: str = "127.0.0.1"):
        """A page served to `source`, as a browser gets it: (status, session id or None,
        cookie)."""
        code, headers, html = self.request(f"{kind}?token={self.token}", source)
        cookie = headers.get("Set-Cookie", "").split(";")[0]
        sid = None
        if code == 200:
            sid = json.loads(html.split('id="wb-room-config">')[1].split("</script>")[0])["sid"]
        return code, sid, cookie


def instructor_key(log) -> str:
    """The instructor's key, read from the room's printed link (the log a server was started
    with); AssertionError when it is not printed within 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = re.search(r"instructor\?key=([A-Za-z0-9_-]+)", Path(log).read_text())
        if m:
            return m.group(1)
        time.sleep(0.2)
    raise AssertionError("the instructor's link was never printed")


def raw_websocket(served: Served, sid: str, cookie: str, rcvbuf: int | None = None):
    """A page's websocket as a bare socket after the handshake: a client that reads (and
    answers pings) only when the caller does; `rcvbuf`: a small receive buffer, set first."""
    host, port = served.host_port
    raw = socket.create_connection((host, port))
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.sendall(
        (
            f"GET /socket/{sid}?kind=explorer HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nCookie: {cookie}\r\n\r\n"
        ).encode()
    )
    answer = raw.recv(200)
    if b"101 Switching Protocols" not in answer:
        raise RuntimeError(f"no websocket: {answer[:60]!r}")
    return raw


def ws_frame(text: str) -> bytes:
    """A masked websocket text frame, as a client sends it (up to 64 KB)."""
    data, mask = text.encode(), b"\x01\x02\x03\x04"
    n = len(data)
    head = bytes([0x81, 0x80 | n]) if n < 126 else bytes([0x81, 0xFE]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


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


def _limit_files(n: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@contextmanager
def serve(
    *args: str,
    env: dict | None = None,
    log=None,
    timeout: float = 120,
    token: str = "test-room-token-0123456789",
    per_address: int | None = 0,
    files: int | None = None,
) -> Iterator[Served]:
    """The room server (`python -m workbench.explore.app ARGS`, by default without warming the
    sentence cache) on a free 127.0.0.1 port; yields it once it listens. It runs in its own
    process group and is stopped by that group's id. Every page a test opens comes from this
    one machine's address: `per_address` is the room's bound on them (0: none; None: the
    room's default, `seats.PER_ADDRESS`). `files`: the process's limit on open files (soft and
    hard), to try it near its limit."""
    port = free_port()
    out = open(log, "w") if log else subprocess.DEVNULL
    args = args or ("--no-warm-cache",)
    if per_address is not None:
        args = (*args, f"--per-address={per_address}")
    proc = subprocess.Popen(
        app_command(port, token, *args),
        env=dict(os.environ if env is None else env),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=None if files is None else lambda: _limit_files(files),
    )
    try:
        listening(proc, port, timeout, "the room server", log)
        yield Served(f"http://127.0.0.1:{port}/", token, proc.pid, Path(log) if log else None)
    finally:
        stop(proc, 20)
        if log:
            out.close()


def listening(proc, port: int, timeout: float, what: str, log) -> None:
    """Wait until `proc` listens on 127.0.0.1:port (RuntimeError if it exits or takes longer)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early (code {proc.returncode}); log: {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen within {timeout:g} s") from None
            time.sleep(0.1)


def stop(proc, grace: float) -> None:
    """Stop a server started in its own process group: SIGTERM, then SIGKILL after `grace` s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# --- JupyterLab, as `make explore` starts it ---------------------------------------------------

LAB_READY = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " const k = w && w.sessionContext && w.sessionContext.session"
    " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'; }"
)


@dataclass
class Lab:
    url: str  # http://127.0.0.1:PORT/
    token: str
    pid: int
    log: Path

    def notebook(self, rel: str) -> str:
        return f"{self.url}lab/tree/{rel}?token={self.token}"

    def saves(self, rel: str) -> int:
        """How many times the server has saved `rel` (its log's "Saving file at /rel")."""
        return self.log.read_text(errors="replace").count(f"Saving file at /{rel}")


# what each code cell of the open notebook did: its count (null: not run, or queued) and its
# outputs' types, with an error's name and value; the kernel's status
LAB_STATE = (
    "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
    " if (!w || !w.content) return {widget: String(w && w.title && w.title.label)};"
    " const s = w.sessionContext; const k = s && s.session && s.session.kernel;"
    " return {kernel: k ? k.status : null, cells: w.content.widgets"
    ".filter(c => c.model.type === 'code').map(c => ({n: c.model.executionCount,"
    " out: [...Array(c.model.outputs.length).keys()].map(i => c.model.outputs.get(i).toJSON())"
    ".map(o => o.output_type === 'error' ? `error ${o.ename}: ${o.evalue}` : o.output_type)}))}; }"
)


def lab_wait(page, server: Lab, what: str, timeout: float, selector: bool = True) -> None:
    """`page.wait_for_selector(what)` (or `wait_for_function(what)` if not `selector`); when it
    times out, the failure says what the notebook did meanwhile (each code cell's count and
    outputs, the kernel's status), where a screenshot is, and the server log's last lines."""
    try:
        if selector:
            page.wait_for_selector(what, timeout=timeout)
        else:
            page.wait_for_function(what, timeout=timeout)
    except Exception as err:
        if "Timeout" not in type(err).__name__:
            raise
        shot = server.log.with_name("timeout.png")
        try:
            state = page.evaluate(LAB_STATE)
            page.screenshot(path=str(shot))
        except Exception as inner:  # the page itself is gone: say so
            state = f"the page did not answer: {inner}"
        tail = server.log.read_text(errors="replace").splitlines()[-30:]
        raise AssertionError(
            f"waited {timeout / 1000:g} s for {what!r}; the notebook: {json.dumps(state)};"
            f" screenshot {shot}; JupyterLab's log ends:\n" + "\n".join(tail)
        ) from err


@contextmanager
def lab(root: Path, settings: dict | None = None, timeout: float = 120) -> Iterator[Lab]:
    """JupyterLab over the checkout `root` through `python -m workbench.explore.lab` (what
    `make explore` runs), on a free 127.0.0.1 port, no browser of its own, the app object
    exposed to the page; `settings` ({plugin id: {key: value}}) are the user's settings (e.g.
    the autosave interval). Stopped by its process group's id."""
    port, token = free_port(), "lab-test-token-0123456789"
    home = Path(tempfile.mkdtemp(prefix="wb-lab-"))
    for plugin, values in (settings or {}).items():
        pkg, name = plugin.split(":")
        path = home / "settings" / pkg / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), WORKBENCH_WARM="0")  # fmt: skip
    log = home / "lab.log"
    cmd = [sys.executable, "-m", "workbench.explore.lab", "--port", str(port), "--token", token,
           "--root", str(root), "--", "--no-browser", "--LabApp.expose_app_in_browser=True"]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        listening(proc, port, timeout, "JupyterLab", log)
        yield Lab(f"http://127.0.0.1:{port}/", token, proc.pid, log)
    finally:
        stop(proc, 30)


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
