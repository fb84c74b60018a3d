"""The workshop in a notebook: every part (`questions.Questions`) asks for a prediction, a Reveal
button shows the answer only when clicked and compares it with the guess, and a score runs across
the parts. A reveal is computed when its button is clicked. The workshop writes no file (a room of
participants shares one checkout), and its charts are drawn in the browser like the explorer's.
"""

from __future__ import annotations

import html
from functools import cached_property

import ipywidgets as w

from workbench.common.notebook import record
from workbench.dsgc.trace import run_setting
from workbench.explore.explorer import explorer
from workbench.explore.lessons import (
    HOPS,
    LAMBDAS,
    WorkshopSession,
    first_rescue,
    knob_sweep,
)
from workbench.explore.questions import Questions
from workbench.explore.widgets import ChartView, KernelWatch, Memory, show_live


class Score(w.HTML):
    """The session's score line (right predictions out of the parts revealed with one)."""

    def __init__(self, session: WorkshopSession):
        super().__init__()
        self.session = session
        self.add_class("wb-score")
        self.show()

    def show(self) -> None:
        self.value = self.session.score()["html"]

    def __repr__(self) -> str:
        return "Score(right predictions across the parts)"


class Part(w.VBox):
    """One part of the session as widgets: the question (no answer in it), a prediction, Reveal,
    then the answer. The session decides (it computes the answer when Reveal is clicked and locks
    the prediction); the widgets only show what it answered."""

    def __init__(self, session: WorkshopSession, key: str, on_change=None):
        self.session, self.key, self._on_change = session, key, on_change
        self.question = session.workshop.question(key)
        self.predict = w.Dropdown(
            options=[("- pick your prediction -", None), *self.question.choices],
            value=None,
            description="I predict",
            layout=w.Layout(width="360px"),
        ).add_class("wb-predict")
        self.button = w.Button(description="Reveal", button_style="primary").add_class("wb-reveal")
        self.compare = w.HTML().add_class("wb-compare")
        self.answer = w.VBox().add_class("wb-answer")
        self.button.on_click(self._on_reveal)
        self.predict.observe(lambda _c: self._changed(), "value")
        super().__init__(
            [
                w.HTML(self.question.html).add_class("wb-question"),
                w.HBox([self.predict, self.button]),
                self.compare,
                self.answer,
                KernelWatch(),
            ]
        )
        self.add_class("wb-part").add_class(f"wb-part-{self.key}").add_class("wb-live")

    def static_html(self) -> str:
        """The part for a reader without a kernel: the question, the predictions to choose
        from, and the answer folded away (open it once you have predicted)."""
        answer = self.session.workshop.answer(self.key)  # computed, not revealed: nothing locks
        picks = "".join(f"<li>{html.escape(label)}</li>" for label, _ in self.question.choices)
        shown = "".join(
            i[1] if i[0] == "html" else "<p><i>(a chart, drawn when the notebook runs)</i></p>"
            for i in answer.shown
        )
        return (
            f"<div class='wb-static-part'><h4>Part {self.key}</h4>"
            f"{self.question.html}<p>Predictions to choose from:</p><ul>{picks}</ul>"
            "<details><summary>The answer (open it once you have made your prediction)</summary>"
            f"<p><b>The answer: {html.escape(answer.said)}.</b></p>{shown}</details></div>"
        )

    def _ipython_display_(self) -> None:
        show_live(self, self.static_html(), f"Part {self.key}")

    @property
    def choice(self) -> int | None:
        """The prediction picked, as its index among the choices."""
        return self.session.choice_index(self.key, self.predict.value)

    def _on_reveal(self, _button=None) -> None:
        self.show(self.session.reveal(self.key, self.choice))
        self._changed()

    def show(self, msg: dict) -> None:
        """Draw what the session answered for this part (its prediction locked)."""
        c = msg["choice"]
        self.predict.value = None if c is None else self.question.choices[c][1]
        self.predict.disabled = self.button.disabled = True
        self.compare.value = msg["compare"]
        self.answer.children = [_item_widget(item) for item in msg["items"]]

    @property
    def revealed(self) -> bool:
        return self.key in self.session.revealed

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def __repr__(self) -> str:
        return f"Part({self.key}: predict, then reveal)"


class Live(w.VBox):
    """A box of live widgets with a static view for readers without a kernel (show_live)."""

    def __init__(self, children, static_html: str, label: str):
        super().__init__(children)
        self.static, self.label = static_html, label
        self.add_class("wb-live")

    def _ipython_display_(self) -> None:
        show_live(self, self.static, self.label)


def _item_widget(item: dict) -> w.Widget:
    """A reveal's item (`lessons.item_json`) as a widget: HTML, or a chart drawn in the browser."""
    if "html" in item:
        return w.HTML(item["html"])
    return ChartView(item["chart"], item["data"], width=item["width"]).add_class(item["cls"])


class Workshop(Questions):
    """The workshop in a notebook: its questions (`Questions`) as widgets, built on request, one
    session holding every reveal, lock and score, and the page's memory of them."""

    @cached_property
    def parts(self) -> dict[str, Part]:
        """The parts drawn so far, by key."""
        return {}

    # the widgets, made when the notebook shows them (the room server uses none); they render
    # the one session, which holds every reveal, lock and score
    @cached_property
    def session(self) -> WorkshopSession:
        return WorkshopSession(self)

    @cached_property
    def score(self) -> Score:
        return Score(self.session)

    @cached_property
    def memory(self) -> Memory:
        """Predictions and reveals survive a reload of the page."""
        memory = Memory(key=self.memory_key)
        memory.observe(self._restore, "restored")
        return memory

    def _keep(self) -> None:
        self.score.show()
        self.memory.state = self.session.kept({k: p.choice for k, p in self.parts.items()})

    def _restore(self, change) -> None:
        kept = change["new"]
        for key, c in self.session.choices(kept).items():
            if key in self.parts:
                self.parts[key].predict.value = self.parts[key].question.choices[c][1]
        for msg in self.session.restore(kept):
            if msg["part"] in self.parts:
                self.parts[msg["part"]].show(msg)
        self._keep()

    def scoreboard(self) -> Live:
        """The score, and the page's memory of the predictions and reveals (shown once, after
        the parts: a reload brings back every locked prediction and so the score)."""
        return Live(
            [self.score, self.memory, KernelWatch()],
            "<p><b>Score:</b> kept by the live notebook (run it to predict and reveal).</p>",
            "Score",
        )

    def part(self, n: int) -> Part:
        """Part n as widgets (the notebook's cells)."""
        self.question(str(n))  # ValueError for a part that does not exist
        p = Part(self.session, str(n), self._keep)
        self.parts[p.key] = p
        return p

    def free_exploration(self) -> w.VBox:
        """Step 5: the explorer, opened on request, on the store of parts 9-13, and only once
        they are revealed (its verdict would give their answers away)."""
        button = w.Button(description="Open the explorer").add_class("wb-open-explorer")
        note = w.HTML().add_class("wb-free-note")
        box = Live(
            [button, note, KernelWatch()],
            "<p><b>Free exploration:</b> the explorer on the store of parts 9-13 opens "
            "here once they are revealed (it needs the running notebook).</p>",
            "Free exploration",
        ).add_class("wb-free")

        def open_explorer(_b=None):
            why = self.session.explorer_note()
            if why:
                note.value = why
                return
            box.children = [explorer(self.hop_state), KernelWatch()]

        button.on_click(open_explorer)
        return box

    # --- for the tests (never shown: the stored text says only that a key was recorded) ---
    def record_key(self) -> None:
        """Record the answer key (papermill tests read it back); nothing visible."""
        s, h = self.state, self.hop_state
        sim = run_setting(s, policy="similarity")
        record(
            "eviction",
            {"seed": s.seed, "displaced": sim.displaced, "indirect": sim.indirect},
            shown=False,
        )
        lam = knob_sweep(s.with_(policy="dsgc"), "lam", list(LAMBDAS))
        record(
            "lambda",
            {
                "seed": s.seed,
                "rescue_lambda": first_rescue(s.with_(policy="dsgc"), "lam", LAMBDAS),
                "kept": lam.full_chain_retained.tolist(),
            },
            shown=False,
        )
        hops = knob_sweep(h, "hops", list(HOPS))
        record(
            "hops",
            {
                "seed": h.seed,
                "kept_by_hops": hops.full_chain_retained.tolist(),
                "displaced_one_hop": run_setting(h).displaced,
            },
            shown=False,
        )
        record("answers", {k: self.answer(k).value for k in self.PARTS}, shown=False)

    def __repr__(self) -> str:
        return f"Workshop({self.state.template} seed {self.state.seed}, profile seed {self.hop_state.seed})"
