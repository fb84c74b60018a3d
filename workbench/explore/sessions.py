"""The room server's sessions: what one page of a room holds, with no widget and no kernel.

An explorer page holds a `RoomExplorer` (the notebook explorer's own `ExplorerSession`, its fields
sent to the page over its websocket); a workshop page holds the notebook workshop's own
`lessons.WorkshopSession` (the parts it revealed, with their predictions and the score). What
every page shares is computed once for the whole room and kept: a setting's view (`cached_view`)
and a workshop's scenarios, questions and answers (`cached_workshop`); `preheat` computes the
pages' first views before anyone arrives.
"""

from __future__ import annotations

import time
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode

from workbench.common.encoders import ENCODERS
from workbench.common.options import SLIDERS, check_choice, check_slider
from workbench.dsgc.trace import Setting
from workbench.explore.explorer import ExplorerSession, view
from workbench.explore.pages import Page
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
    "tpl": ("template", lambda v: check_choice("template", v, ("role", "profile"))),
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


class RoomExplorer(ExplorerSession):
    """An explorer session whose fields go to its page over the websocket (`out`), answered from
    the room's view cache; the sentence model's warm-up calls back through `submit` (into the
    room's worker thread, where every session's state changes)."""

    def __init__(self, out, submit, setting: Setting, notes: list[str]):
        self.out, self.submit = out, submit
        self.live = False  # the page gets the whole state first (Socket.open_explorer)
        super().__init__(setting, notes, warm=False)

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
