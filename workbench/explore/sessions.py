"""The room server's sessions: what one page of a room holds, with no widget and no kernel.

An explorer page holds a `RoomExplorer` (the notebook explorer's own `ExplorerSession`, its fields
sent to the page over its websocket); a workshop page holds the notebook workshop's own
`lessons.WorkshopSession` (the parts it revealed, with their predictions and the score). What
every page shares is computed once for the whole room and kept: a setting's view (`cached_view`)
and a workshop's scenarios, questions and answers (`cached_workshop`); `preheat` computes the
pages' first views before anyone arrives.
"""

from __future__ import annotations

import threading
import time
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode

from workbench.common.encoders import ENCODERS, get_encoder
from workbench.common.io import InputError
from workbench.common.options import SLIDERS, check_choice, check_slider
from workbench.dsgc.trace import Setting
from workbench.explore import messages
from workbench.explore.explorer import MAX_UPLOAD, ExplorerSession, read_upload, upload_name, view
from workbench.explore.pages import Page
from workbench.explore.parameters import TARGETS
from workbench.explore.warmup import WARMUP
from workbench.explore.widgets import specs
from workbench.explore.workshop import Workshop

# --- what the room shares ---------------------------------------------------------------------


@lru_cache(maxsize=1024)
def cached_view(setting: Setting):
    """A setting's (trace, payload), computed once for the whole room (a Setting is frozen)."""
    return view(setting)


def _seed(name: str):
    _, lo, hi, _ = SLIDERS["seed"]

    def check(raw: str) -> int:
        if not raw.lstrip("-").isdigit() or not (int(raw) == -1 or lo <= int(raw) <= hi):
            raise ValueError(f"{name} must be -1 (the first seed that fits) or in [{lo}, {hi}]")
        return int(raw)

    return check


# the workshop's constructor arguments a link may change: query key -> (argument, check)
WORKSHOP_KEYS = {
    "encoder": ("encoder", lambda v: check_choice("encoder", v, ENCODERS)),
    "tpl": ("template", lambda v: check_choice("template", v, TARGETS)),
    "seed": ("seed", _seed("seed")),
    "hop_seed": ("hop_seed", _seed("hop_seed")),
    "M": ("multiplier", lambda v: check_slider("multiplier", float(v), label="M")),
}


@lru_cache(maxsize=16)
def cached_workshop(args: tuple) -> Workshop:
    """A workshop's scenarios, questions and answers, shared by every page that asks for it."""
    return Workshop(**dict(args))


def preheat(pages: dict[str, Page], say=print) -> float:
    """Compute what the first arrivals ask for before anyone comes: each page's starting view
    (the explorer's setting, the workshop's scenarios and its four answers); returns seconds."""
    t = time.perf_counter()
    cached_view(Setting(**pages["explorer"].arguments(Setting)))
    ws = cached_workshop(workshop_args(pages["workshop"], "")[0])
    for key in Workshop.PARTS:
        ws.answer(key)
    cached_view(ws.hop_state)  # the free exploration's first view
    seconds = time.perf_counter() - t
    say(f">> the pages' first views and the workshop's answers computed in {seconds:.2f} s")
    return seconds


# --- an explorer page ---------------------------------------------------------------------------


# --- what a room's uploads may cost ------------------------------------------------------------

ROOM_UPLOADS = 40_000_000  # characters of uploaded files the whole room keeps at once
PAGE_UPLOADS = 1_000_000  # ... and one page at least, however many seats (a file for a room is
# far smaller: the paper's 1000-block scenarios are about 0.2 M characters)
FILES = 3  # files one page keeps (a new one drops the page's oldest)
SCENARIOS = 500  # scenarios in one uploaded file
BLOCKS_PER_SCENARIO = 2000  # blocks in one scenario of an uploaded file (the page lists each)


class UploadBudget:
    """The characters of uploaded files each page keeps, against the room's and a page's share
    (`ROOM_UPLOADS` over the seats, at least `PAGE_UPLOADS`); called from the upload thread, the
    worker and the server's loop."""

    def __init__(self, seats: int):
        self.per_page = min(MAX_UPLOAD, max(PAGE_UPLOADS, ROOM_UPLOADS // max(seats, 1)))
        self.kept: dict[tuple, int] = {}  # (page, explorer) -> characters kept
        self.lock = threading.Lock()

    def check(self, owner: tuple, chars: int) -> None:
        """ValueError when a file of `chars` characters cannot be kept now."""
        if chars > self.per_page:
            raise ValueError(
                f"file too large for this room ({chars:,} characters; a page may upload at "
                f"most {self.per_page:,})"
            )
        with self.lock:
            others = sum(v for k, v in self.kept.items() if k[0] != owner[0])
        if others + chars > ROOM_UPLOADS:
            raise ValueError(
                "the room holds as many uploaded files as it can now: try a smaller file, "
                "or again after others leave"
            )

    def set(self, owner: tuple, chars: int) -> None:
        with self.lock:
            self.kept[owner] = chars

    def release(self, page: int) -> None:
        """A page left: what it kept is the room's again."""
        with self.lock:
            for k in [k for k in self.kept if k[0] == page]:
                del self.kept[k]

    def status(self) -> dict:
        with self.lock:
            return {"pages": len({k[0] for k in self.kept}), "characters": sum(self.kept.values()),
                    "per_page": self.per_page}  # fmt: skip


class RoomExplorer(ExplorerSession):
    """An explorer session whose fields go to its page over the websocket (`out`), answered from
    the room's view cache; the sentence model's warm-up calls back through `submit` (into the
    room's worker thread, where every session's state changes), and an uploaded file is read
    and its texts encoded through `encode` (the room's upload thread), never in the worker."""

    def __init__(self, out, submit, setting: Setting, notes: list[str], encode=None):
        self.out, self.submit, self.encode = out, submit, encode
        self.live = False  # the page gets the whole state first (Socket.open_explorer)
        self.sizes: dict[str, int] = {}  # characters of each kept file
        self.encoding = False
        self.waiting: int | None = None  # the request waiting for its texts to be encoded
        super().__init__(setting, notes, warm=False)

    # --- an upload (Socket.upload): read in the upload thread, then kept in the worker ---
    def read_file(self, content: dict, budget: UploadBudget, owner: tuple) -> tuple:
        """In the upload thread: ("file", name, scenarios, characters, seq), or ("error", text,
        seq) when the file breaks the format or the room's bounds."""
        _, m = messages.read(content, messages.EXPLORER)
        name, text, seq = upload_name(m["name"]), m["text"], m["seq"]
        try:
            budget.check(owner, len(text))
            scenarios = read_upload(name, text, budget.per_page)
            if len(scenarios) > SCENARIOS:
                raise ValueError(f"{name}: {len(scenarios):,} scenarios; a page shows at most "
                                 f"{SCENARIOS}")  # fmt: skip
            for sc in scenarios:
                if len(sc.blocks) > BLOCKS_PER_SCENARIO:
                    raise ValueError(f"{name}: scenario {sc.id!r} has {len(sc.blocks):,} blocks; "
                                     f"a page shows at most {BLOCKS_PER_SCENARIO:,}")  # fmt: skip
        except (InputError, ValueError) as e:
            return ("error", str(e), seq)
        if self.setting.encoder == "sentence" and WARMUP.ready:  # its first view's texts
            get_encoder("sentence").encode([*scenarios[0].texts, scenarios[0].query])
        return ("file", name, scenarios, len(text), seq)

    def take_file(self, got: tuple, budget: UploadBudget, owner: tuple) -> None:
        """In the worker: keep a file read by `read_file` (dropping the page's oldest past
        `FILES`) and show it, or say why it was refused."""
        if got[0] == "error":
            return self.fail(got[1], got[2])
        _, name, scenarios, chars, seq = got
        self.files.pop(name, None)
        self.sizes.pop(name, None)
        while self.files and (
            len(self.files) >= FILES or sum(self.sizes.values()) + chars > budget.per_page
        ):  # the page's oldest files make room for the new one
            oldest = next(iter(self.files))
            del self.files[oldest]
            self.sizes.pop(oldest, None)
        self.sizes[name] = chars
        budget.set(owner, sum(self.sizes.values()))
        self.add_file(name, scenarios, seq)

    def refresh(self, seq: int) -> None:
        """As the explorer's, but an uploaded scenario's texts the sentence model has not seen
        are encoded in the upload thread first (the page is told it is busy meanwhile)."""
        sc = self.upload.scenario if self.upload is not None else None
        if (self.encode is not None and sc is not None and self.setting.encoder == "sentence"
                and WARMUP.ready and not get_encoder("sentence").has_all([*sc.texts, sc.query])):  # fmt: skip
            self.waiting = seq
            self._set(busy=True)
            if not self.encoding:
                self.encoding = True
                self.encode(self._encode, [*sc.texts, sc.query])
            return
        super().refresh(seq)

    def _encode(self, texts: list[str]) -> None:  # in the upload thread
        try:
            get_encoder("sentence").encode(texts)
        finally:
            self.submit(self._encoded)

    def _encoded(self) -> None:  # back in the worker
        self.encoding = False
        seq, self.waiting = self.waiting, None
        if seq is not None:
            self.refresh(seq)

    def compute(self, setting, upload, seq):
        if upload is not None:
            return view(setting, upload, seq)
        trace, p = cached_view(setting)
        return trace, {**p, "seq": seq}

    def _set(self, **changes) -> None:
        super()._set(**changes)
        if self.live:
            self.out({"type": "state", "fields": changes})

    def send(self, content: dict) -> None:
        if self.live:
            self.out({"type": "custom", "content": content})

    def _warmed(self, error: str | None) -> None:  # from the warm-up thread: into the worker
        self.submit(super()._warmed, error)


def explorer_fields(session: RoomExplorer, lib: str, token: str, follow: bool) -> dict:
    """Everything a page's explorer draws from, for its first state message (`lib`: where the
    page imports vega from); with `follow` the page's address follows the state (a reload keeps
    the view); a copied link opens the room's explorer page, token included."""
    return {
        **session.fields(),
        "kind": "explorer",
        "specs": specs(),
        "lib": lib,
        "follow": follow,
        "link_base": "/explorer",
        "link_extra": urlencode({"token": token}),
    }


def workshop_args(page: Page, query: str) -> tuple[tuple, list[str]]:
    """The workshop's constructor arguments: the notebook's, changed by the link's keys
    (`WORKSHOP_KEYS`); a bad value is reported and the notebook's kept."""
    out = page.arguments(Workshop)
    problems = []
    for key, raw in parse_qsl(query or "", keep_blank_values=True):
        if key in WORKSHOP_KEYS:
            name, check = WORKSHOP_KEYS[key]
            try:
                out[name] = check(raw)
            except ValueError as e:
                problems.append(f"link: {key}={raw!r} ignored ({e})")
    return tuple(sorted(out.items())), problems
