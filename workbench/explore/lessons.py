"""What the workshop asks and answers, as data: each part's question (HTML with no answer in it,
and the predictions to pick from) and its answer (the right prediction, the answer in words, and
what the reveal shows), the runs behind them, the comparison of a prediction with the answer, and
the score line; and `WorkshopSession`, one participant's workshop: what they revealed, each
prediction locked by its reveal, the score, and what a reload brings back. The session is the
workshop's only state: the notebook's widgets (`workbench.explore.workshop`) and the room server's
pages (`workbench.explore.sessions`, `static/room.js`) are two hosts that render it, so a reveal,
a lock and a score read the same in both.

Before a reveal the page names blocks by neutral ids (B01, B02, ... in a seeded shuffle), so an id
such as c2 or h1 cannot give a block's kind away.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import pandas as pd

from workbench.common.seeds import Draw
from workbench.dsgc.scenario import Scenario
from workbench.dsgc.trace import Setting, run_setting

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
HOPS = (1, 2, 3)
NONE = "none"


# --- the runs behind the reveals ------------------------------------------------------------------


def knob_sweep(state: Setting, knob: str, values) -> pd.DataFrame:
    """One row per value of a knob: chain kept?, displaced blocks, verdict (for workshop reveals)."""
    rows = []
    for v in values:
        t = run_setting(state, **{knob: v})
        rows.append(
            {
                knob: v,
                "full_chain_retained": t.full_chain_retained,
                "displaced_text": ",".join(t.displaced) or "-",
                "ranks": " ".join(f"{c}:{r}" for c, r in t.chain_ranks.items()),
                "margin": t.margin,
                "verdict": t.verdict(),
            }
        )
    return pd.DataFrame(rows)


def find_seed(state: Setting, condition, seeds=range(100)) -> int | None:
    """The first seed whose (state with that seed) satisfies condition(state) -> bool."""
    for s in seeds:
        if condition(state.with_(seed=s)):
            return s
    return None


def kept(state: Setting, **changes) -> bool:
    """Is the full chain retained in this state (with changes)?"""
    return run_setting(state, **changes).full_chain_retained


def first_rescue(state: Setting, knob: str, values):
    """The first value of a knob (in the order given) at which the full chain is kept, or None."""
    for v in values:
        if kept(state, **{knob: v}):
            return v
    return None


def neutral_ids(scenario: Scenario) -> dict[str, str]:
    """Block id -> a neutral id (B01, B02, ...) in a seeded shuffle of the store, so neither the
    id nor the position in the list tells a chain block, a honeypot and a filler apart."""
    order = Draw("workshop-neutral-ids", scenario.id).shuffle(scenario.ids)
    width = len(str(len(order)))
    return {bid: f"B{k + 1:0{max(width, 2)}d}" for k, bid in enumerate(order)}


def html_table(columns: list[str], rows: list[list], cls: str = "") -> str:
    """A small HTML table: friendly headers, no index column, every cell escaped."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>" for r in rows
    )
    return f"<table class='wb-ws-table {cls}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _margin(m) -> str:
    return "-" if m is None or m != m else f"{m:.3f}"  # m != m: NaN


def sweep_rows(state: Setting, knob: str, values) -> list[list[str]]:
    """A sweep as friendly rows: value, whole chain kept, evicted chain blocks, ranks, margin."""
    df = knob_sweep(state, knob, list(values))
    return [
        [
            f"{r[knob]:g}",
            "yes" if r["full_chain_retained"] else "no",
            r["displaced_text"],
            r["ranks"],
            _margin(r["margin"]),
        ]
        for r in df.to_dict("records")
    ]


SWEEP_COLUMNS = ["whole chain kept", "evicted chain blocks", "chain ranks", "margin"]


def score_html(results: dict[str, bool | None]) -> str:
    """The score line: right predictions out of the parts revealed with a prediction, and each
    revealed part's mark."""
    scored = {p: r for p, r in results.items() if r is not None}
    marks = " · ".join(
        f"part {p}: {'no prediction' if r is None else ('right' if r else 'wrong')}"
        for p, r in results.items()
    )
    return (
        f"<div class='wb-score-line'><b>Score: {sum(scored.values())} of {len(scored)} "
        f"predictions right</b> ({marks or 'nothing revealed yet'})</div>"
    )


@dataclass(frozen=True)
class Question:
    """One part before its reveal: its key, the question (HTML, no answer in it) and the
    predictions to pick from, as (label, value)."""

    key: str
    html: str
    choices: tuple[tuple[str, object], ...]

    def label(self, guess) -> str | None:
        return next((lab for lab, v in self.choices if v == guess), None)

    @property
    def ask(self) -> str:
        """What it asks, as plain text: its words from "Predict" on (the store it shows left
        out), for the instructor's page."""
        text = html.unescape(re.sub(r"<[^>]+>", "", self.html))
        return " ".join(text[text.index("Predict") :].split())

    def __repr__(self) -> str:
        return f"Question(part {self.key}: {len(self.choices)} choices)"


@dataclass(frozen=True)
class Answer:
    """One part's reveal: the right prediction (a value, or a list of right values), the answer in
    words, what the reveal shows (("html", text) and ("chart", spec name, rows, width, class)
    items, in order) and the question the room discusses after it (`shown` puts it last)."""

    value: object
    said: str
    items: tuple[tuple, ...]
    discuss: str

    def __post_init__(self):
        if not self.discuss.strip():
            raise ValueError(f"the answer '{self.said}' has no discussion prompt")

    @property
    def shown(self) -> tuple[tuple, ...]:
        """What a reveal shows: its items, then the discussion prompt."""
        prompt = f"<div class='wb-discuss'><b>Discuss:</b> {html.escape(self.discuss)}</div>"
        return (*self.items, ("html", prompt))

    def __repr__(self) -> str:
        return f"Answer({self.said})"


def judge(question: Question, guess, answer: Answer) -> tuple[bool | None, str]:
    """(right? - None without a prediction, the comparison line as HTML)."""
    right = None if guess is None else _same(guess, answer.value)
    said = (
        "You made no prediction." if guess is None else f"You predicted: {question.label(guess)}."
    )
    verdict = "" if right is None else (" Right!" if right else " Not this time.")
    return right, (
        f"<div class='wb-compare-line {'wb-right' if right else 'wb-wrong'}'>"
        f"{html.escape(said)} The answer: {html.escape(answer.said)}.<b>{verdict}</b></div>"
    )


def explorer_note(revealed, needed) -> str | None:
    """Why the free-exploration explorer cannot open yet (None: it can): it opens on the store of
    the parts `needed`, and its verdict would give their answers away before their reveals."""
    left = [p for p in needed if p not in revealed]
    if not left:
        return None
    return (
        f"<p>Reveal part{'s' if len(left) > 1 else ''} {', '.join(left)} first: "
        "the explorer opens on their store, and its verdict would give the answer away.</p>"
    )


def _same(guess, answer) -> bool:
    if isinstance(answer, list | tuple | set):
        return guess in answer
    return guess == answer


def item_json(item: tuple) -> dict:
    """A reveal's item for a host: {"html": ...} or {"chart": spec name, "data", "width", "cls"}."""
    if item[0] == "html":
        return {"html": item[1]}
    _, spec, data, width, cls = item
    return {"chart": spec, "data": data, "width": width, "cls": cls}


def _is_choice(choice, question: Question) -> bool:
    """`choice` is the index of one of the question's predictions (a bool is no index)."""
    return (
        isinstance(choice, int)
        and not isinstance(choice, bool)
        and 0 <= choice < len(question.choices)
    )


class WorkshopSession:
    """One participant's workshop: the parts they revealed, each with its prediction (a reveal
    locks it) and whether it was right. `workshop` gives the parts (`PARTS`), their questions and
    their answers (computed once per workshop, never before a reveal asks). A host keeps what the
    page chose and revealed ({key: {"choice": index, "revealed": bool}}, e.g. in localStorage) and
    hands it back after a reload (`restore`, `choices`)."""

    def __init__(self, workshop):
        self.workshop = workshop
        self.revealed: dict[str, dict] = {}  # key -> the message that answered the reveal

    def results(self) -> dict[str, bool | None]:
        return {k: m["right"] for k, m in self.revealed.items()}

    def questions(self) -> dict[str, dict]:
        """Each part's question and choice labels (a page shows them before any reveal)."""
        out = {}
        for key in self.workshop.PARTS:
            q = self.workshop.question(key)
            out[key] = {"html": q.html, "choices": [label for label, _ in q.choices]}
        return out

    def choice_index(self, key, value) -> int | None:
        """The index of a prediction's value among part `key`'s choices (None: no prediction)."""
        values = [v for _, v in self.workshop.question(str(key)).choices]
        return values.index(value) if value in values else None

    def check(self, key, choice) -> None:
        """A prediction a page picked (index `choice` of part `key`'s, None: none), checked:
        ValueError for a part or a choice that does not exist."""
        q = self.workshop.question(str(key))
        if choice is not None and not _is_choice(choice, q):
            raise ValueError(f"part {key}: no prediction {choice!r}")

    def reveal(self, key, choice) -> dict:
        """Reveal part `key` with the prediction at index `choice` of its choices (None: no
        prediction); a part already revealed answers as it did (its prediction stays locked)."""
        key = str(key)
        q = self.workshop.question(key)  # ValueError for a part that does not exist
        if key in self.revealed:
            return self.revealed[key]
        self.check(key, choice)
        guess = None if choice is None else q.choices[choice][1]
        answer = self.workshop.answer(key)
        right, compare = judge(q, guess, answer)
        msg = {
            "type": "revealed",
            "part": key,
            "choice": choice,
            "right": right,
            "compare": compare,
            "items": [item_json(i) for i in answer.shown],
        }
        self.revealed[key] = msg
        return msg

    def score(self) -> dict:
        return {"type": "score", "html": score_html(self.results())}

    def kept(self, choices: dict) -> dict:
        """What a host keeps for a reload: each part's choice ({key: index or None}, the page's
        unrevealed picks) with the revealed parts' locked choices over them."""
        out = {k: {"choice": c, "revealed": False} for k, c in choices.items()}
        for k, m in self.revealed.items():
            out[k] = {"choice": m["choice"], "revealed": True}
        return out

    def choices(self, kept) -> dict[str, int]:
        """The unrevealed parts' picks in what a page kept, where each is a valid choice."""
        out = {}
        if not isinstance(kept, dict):
            return out
        for key in self.workshop.PARTS:
            k = kept.get(key)
            if key in self.revealed or not isinstance(k, dict):
                continue
            c = k.get("choice")
            if _is_choice(c, self.workshop.question(key)):
                out[key] = c
        return out

    def restore(self, kept) -> list[dict]:
        """What the page kept: its reveals made again, in part order; anything malformed or
        unknown is skipped."""
        out = []
        if not isinstance(kept, dict):
            return out
        for key in self.workshop.PARTS:
            k = kept.get(key)
            if isinstance(k, dict) and k.get("revealed") is True:
                try:
                    out.append(self.reveal(key, k.get("choice")))
                except ValueError:
                    continue
        return out

    def explorer_note(self) -> str | None:
        """Why the free-exploration explorer cannot open yet, or None."""
        return explorer_note(self.revealed, self.workshop.BEFORE_EXPLORER)

    def __repr__(self) -> str:
        return (
            f"WorkshopSession({self.workshop!r}: revealed {', '.join(self.revealed) or 'nothing'})"
        )
