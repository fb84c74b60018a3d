"""The room's pages over HTTP (the server, `workbench.explore.server`, adds each page's
websocket and serves them): what every request gets first (`Guarded`: the security headers, then
the token, the typed join code or the room's cookie), the front page, the two pages (each takes a
seat), their own files, `/status`, and the instructor's page (`Instructor`, behind its own key).
"""

from __future__ import annotations

import hmac
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlencode

import tornado.web

from workbench.explore.plan import STEPS, total_minutes
from workbench.explore.seats import Room, same_code

PAGES = {"explorer": "05_explorer.ipynb", "workshop": "06_workshop.ipynb"}
HERE = Path(__file__).resolve().parent
STATIC_DIR, TEMPLATES = HERE / "static", HERE / "templates"
STATIC = ("room.js", "room.css", "view.js", "view.css", "vega-bundle.js", "specs.json",
          "instructor.js")  # fmt: skip
LOADED = ("view.js", "specs.json", "vega-bundle.js")  # what room.js loads itself, by address
COOKIE = "wb-room"
INSTRUCTOR_COOKIE = "wb-instructor"


# --- pages --------------------------------------------------------------------------------------

CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self' data: blob:; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'"
)


@lru_cache(maxsize=1)
def inline_css() -> str:
    """room.css, for the page a request without the token gets: it may load nothing."""
    return (STATIC_DIR / "room.css").read_text(encoding="utf-8")


NO_TOKEN = (
    "This room needs its link or its code: scan the code on the projector, or type the room's "
    "code below. Nothing was started."
)
GUESSED = "Too many wrong links from this laptop: wait a minute, then open the link you were given."
FULL = "Every seat of this room is taken. This page tries again on its own as seats free."
ADDRESS = (
    "This laptop already has {n} pages of this room open: close one (or ask the instructor to "
    "free one). This page tries again on its own."
)


class Guarded:
    """What every request of the room gets first: the security headers, then the token (a
    request with neither the token nor the room's signed cookie gets a short page saying so,
    403; an address past its wrong guesses gets 429 without a check)."""

    room: Room
    cookie_name = COOKIE

    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CSP)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Cache-Control", "no-store")

    def secret_given(self) -> str | None:
        """The token the request carries; a typed join code (`?code=`) stands for it when it is
        the room's (a wrong one counts as a wrong token)."""
        code = self.get_query_argument("code", None)
        if code is not None and self.get_query_argument("token", None) is None:
            return self.room.token if same_code(code, self.room.code) else ""
        return self.get_query_argument("token", None)

    def secret(self) -> str:
        return self.room.token

    def admitted(self) -> str:
        """ "" when this request may go on, else why not ("guess", "wrong", "none")."""
        if self.get_signed_cookie(self.cookie_name, max_age_days=2) is not None:
            return ""
        given, ip = self.secret_given(), self.request.remote_ip
        if given is None:
            return "none"
        if self.room.guesses.blocked(ip):
            return "guess"
        if hmac.compare_digest(given.encode(), self.secret().encode()):
            self.set_signed_cookie(self.cookie_name, "1", expires_days=None, httponly=True,
                                   samesite="Lax")  # fmt: skip
            return ""
        self.room.guesses.failed(ip)
        return "wrong"

    def refusal(self, why: str) -> int:
        """Count a refused request; its status (429: past the guesses, else 403)."""
        self.room.counts[f"refused: {'guessing' if why == 'guess' else 'no token'}"] += 1
        return 429 if why == "guess" else 403

    def prepare(self) -> None:
        why = self.admitted()
        if not why:
            return
        self.set_status(self.refusal(why))
        if why == "guess":
            self.set_header(
                "Retry-After", str(int(self.room.guesses.blocked(self.request.remote_ip)))
            )
            text = GUESSED
        else:
            text = NO_TOKEN
        if self.request.method == "HEAD":
            self.finish()
        else:
            self.finish(self.message("This room needs its link", text, kind="refused"))

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

    def _request_summary(self) -> str:  # tornado's log lines: the path, never the query
        return f"{self.request.method} {self.request.path} ({self.request.remote_ip})"


@tornado.web.stream_request_body  # the token is checked on the headers, before any body
class Handler(Guarded, tornado.web.RequestHandler):
    def initialize(self, room: Room) -> None:
        self.room = room

    def data_received(self, chunk: bytes) -> None:  # no request of the room has a body to read
        pass

    def page(self, text, status: int = 200) -> None:
        self.set_status(status)
        self.finish(None if self.request.method == "HEAD" else text)

    def head(self, *args) -> None:
        self.get(*args)


class Index(Handler):
    def get(self) -> None:
        links = [(kind, self.room.pages[kind].title) for kind in PAGES]
        self.page(self.render_string("index.html", **self.shell("The retention workbench",
                                                                 "plain"), links=links))  # fmt: skip


class PageHandler(Handler):
    def head(self, kind: str) -> None:  # takes no seat
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.finish()

    def get(self, kind: str) -> None:
        seat, why = self.room.take(kind, self.request.remote_ip)
        if seat is None:
            self.set_header("Retry-After", "20")
            text = FULL if why == "full" else ADDRESS.format(n=self.room.per_address)
            self.page(self.message("The room is full" if why == "full" else "One laptop, "
                                   f"{self.room.per_address} pages", text, retry=20), 503)  # fmt: skip
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

    def admitted(self) -> str:
        """The page's own files are the instructor's page's too (its own cookie admits them)."""
        if self.get_signed_cookie(INSTRUCTOR_COOKIE, max_age_days=2) is not None:
            return ""
        return super().admitted()

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "private, max-age=31536000, immutable"
                        if self.get_query_argument("v", None) else "private, no-cache")  # fmt: skip

    @classmethod
    def get_absolute_path(cls, root: str, path: str) -> str:
        if path not in STATIC:  # only the page's files, by name: nothing else is here (404)
            raise tornado.web.HTTPError(404)
        return super().get_absolute_path(root, path)


class StatusHandler(Handler):
    def get(self) -> None:
        self.finish(self.room.status(recent=self.get_query_argument("recent", None) is not None))


class NotFound(Handler):
    def get(self, *args) -> None:
        raise tornado.web.HTTPError(404)

    post = put = delete = patch = options = get


class Instructor(Handler):
    """The instructor's page, behind the instructor's key (printed in the instructor's terminal
    only), not the room token: the join link as a QR code with the typed code beside it, the
    session's plan (each step's minutes, points and expected misconceptions, `plan.STEPS`) with the
    room's predictions for each part (bars shown on the projector only when the instructor says),
    and the seats, each with a button that frees it. `?view=projector`: the join code and the
    bars shown, large; `?format=json`: the seats, the status and the tally, as JSON (the page
    reads it every two seconds)."""

    cookie_name = INSTRUCTOR_COOKIE

    def secret_given(self) -> str | None:
        return self.get_argument("key", None)

    def secret(self) -> str:
        return self.room.instructor

    def get(self) -> None:
        seats = self.room.seat_list()
        if self.get_query_argument("format", "") == "json":
            return self.finish({"seats": seats, "status": self.room.status(),
                                "tally": self.room.tally.counts()})  # fmt: skip
        projector = self.get_query_argument("view", "") == "projector"
        join = self.room.links.get("room", "")
        self.page(self.render_string(
            "instructor.html",
            **self.shell("The workshop, for the instructor", "instructor"),
            seats=seats, room=self.room, urlencode=urlencode, projector=projector,
            join=join, base=join.split("/?")[0], qr=qr_svg(join) if join else "",
            steps=STEPS, parts=instructor_parts(self.room), minutes=total_minutes(),
        ))  # fmt: skip

    def post(self) -> None:
        # the form's address carries the key: a page elsewhere cannot make this browser free a
        # seat or show a tally (the cookie alone is not enough); no body is read (the access log
        # has no query)
        if not hmac.compare_digest(self.get_query_argument("key", "").encode(),
                                   self.room.instructor.encode()):  # fmt: skip
            raise tornado.web.HTTPError(403)
        part = self.get_query_argument("show", None)
        if part is not None:
            try:
                self.room.tally.show(part, self.get_query_argument("on", "1") == "1")
            except ValueError:
                raise tornado.web.HTTPError(400) from None
            return self.finish({"shown": part})
        address = self.get_query_argument("address", None)
        sids = [s["sid"] for s in self.room.seat_list() if s["address"] == address] if address \
            else [self.get_query_argument("sid", "")]  # fmt: skip
        freed = sum(self.room.evict(sid) for sid in sids)
        self.room.counts["freed by the instructor (requests)"] += 1
        if self.get_query_argument("format", "") == "json":
            return self.finish({"freed": freed})
        self.redirect("/instructor", status=303)


def qr_svg(link: str) -> str:
    """The join link as a QR code, an inline SVG (segno)."""
    import segno

    return segno.make(link, error="m").svg_inline(scale=6, border=2, dark="#000", light="#fff")


def instructor_parts(room: Room) -> dict[str, dict]:
    """Each part of the room's workshop for the instructor: what it asks (plain text), its
    choices, and the answer said in words."""
    ws = room.workshop
    if ws is None:
        return {}
    return {
        k: {"ask": ws.question(k).ask, "choices": [label for label, _ in ws.question(k).choices],
            "answer": ws.answer(k).said}
        for k in ws.PARTS
    }  # fmt: skip
