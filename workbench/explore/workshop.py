"""The workshop, for a room: every part asks for a prediction, a Reveal button shows the answer
only when clicked and compares it with the guess, and a score runs across the parts.

Before a reveal the page names blocks by neutral ids (B01, B02, ... in a seeded shuffle), so an id
such as c2 or h1 cannot give a block's kind away, and nothing the page holds says what the answer
is: a reveal is computed when its button is clicked. The workshop writes no file (a room of
participants shares one checkout), and its charts are drawn in the browser like the explorer's.
"""

from __future__ import annotations

import html
from functools import cached_property

import ipywidgets as w

from workbench.common.notebook import record
from workbench.dsgc import viewdata
from workbench.dsgc.trace import Setting, Trace, run_setting, verdict_line
from workbench.explore.explorer import explorer
from workbench.explore.lessons import (
    HOPS,
    LAMBDAS,
    NONE,
    SWEEP_COLUMNS,
    Answer,
    Question,
    WorkshopSession,
    find_seed,
    first_rescue,
    html_table,
    kept,
    knob_sweep,
    neutral_ids,
    sweep_rows,
)
from workbench.explore.widgets import ChartView, KernelWatch, Memory, show_live


def sweep_answer(value, said: str, what: str, rows, *extra) -> Answer:
    """A sweep's reveal: the value found (NONE when none), what it says, the sweep's table, then
    `extra` parts."""
    table = _html(CSS + html_table([what, *SWEEP_COLUMNS], rows))
    return Answer(NONE if value is None else value, said, (table, *extra))


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
            for i in answer.items
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


def _html(text: str, cls: str = "wb-reveal-text") -> tuple[str, str]:
    return ("html", f"<div class='{cls}'>{text}</div>")


CSS = """<style>
.wb-ws-table {border-collapse: collapse; font: 12px/1.3 ui-monospace, monospace; margin: 4px 0;}
.wb-ws-table th, .wb-ws-table td {padding: 1px 8px; border-bottom: 1px solid #e4e4e4;
  text-align: left; white-space: nowrap;}
.wb-ws-table td:last-child {white-space: normal; max-width: 640px;}
.wb-compare-line {padding: 6px 10px; margin: 6px 0; border-left: 5px solid #999; background: #f6f6f6;}
.wb-compare-line.wb-right {border-left-color: #009E73; background: #f3faf7;}
.wb-compare-line.wb-wrong {border-left-color: #D55E00; background: #fdf3ee;}
.wb-score-line {font-size: 15px; padding: 6px 10px; border: 1px solid #0072B2; display: inline-block;}
.wb-question p {margin: 4px 0;}
</style>"""


class Workshop:
    """The four parts' scenarios, questions and answers; parts are widgets, built on request."""

    def __init__(
        self,
        encoder: str = "lexical",
        template: str = "role",
        seed: int = -1,
        hop_seed: int = -1,
        multiplier: float = 2.0,
    ):
        base = Setting(template=template, encoder=encoder, multiplier=multiplier)
        if seed < 0:
            seed = find_seed(base, lambda s: not kept(s, policy="similarity") and kept(s))
        self.state = base.with_(seed=0 if seed is None else seed)
        profile = Setting(template="profile", encoder=encoder, multiplier=multiplier)
        if hop_seed < 0:
            hop_seed = find_seed(profile, lambda s: not kept(s) and kept(s, hops=2))
        self.hop_state = profile.with_(seed=0 if hop_seed is None else hop_seed)
        self.parts: dict[str, Part] = {}
        self._questions: dict[str, tuple] = {}  # key -> (Question, reveal)
        self._answers: dict[str, Answer] = {}

    @property
    def memory_key(self) -> str:
        """Where a page keeps this workshop's predictions and reveals (localStorage)."""
        s, h = self.state, self.hop_state
        return f"wb-workshop/{s.encoder}/{s.template}/{s.seed}/{h.seed}/{s.multiplier:g}"

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

    # --- what a participant sees before any reveal ---
    def store(self, state: Setting) -> str:
        """The query, the budget, the chain and every block, under neutral ids only."""
        t = run_setting(state)
        sc, names = t.scenario, neutral_ids(t.scenario)
        rows = sorted([names[b.id], b.cost, b.text] for b in sc.blocks)
        chain = " → ".join(names[c] for c in sc.chain)
        return (
            f"{CSS}<p><b>query:</b> {html.escape(sc.query)}<br><b>budget C = "
            f"{t.retention.budget} tokens</b> (the store holds {int(sc.costs.sum())} tokens in "
            f"{len(sc.blocks)} blocks)<br><b>the answer needs:</b> {chain} (each block depends on "
            "the one before it; the other blocks' kinds are hidden)</p>"
            + html_table(["block", "cost (tokens)", "text"], rows)
        )

    def chain_choices(self, state: Setting) -> list[tuple[str, str]]:
        sc = run_setting(state).scenario
        names = neutral_ids(sc)
        return [*((names[c], names[c]) for c in sc.chain), ("none: the whole chain is kept", NONE)]

    def identities(self, trace: Trace) -> tuple[str, str]:
        """After a reveal: the ranking with each neutral id's real id and kind."""
        names = neutral_ids(trace.scenario)
        rows = [
            [r, names[i], i, trace.scenario.block(i).kind, s]
            for r, (i, s) in enumerate(
                zip(trace.ranking, viewdata.statuses(trace), strict=True), start=1
            )
        ]
        return _html(
            "<details><summary>every block, in ranking order (neutral id, real id, kind)</summary>"
            + html_table(["rank", "block", "real id", "kind", "after the walk"], rows)
            + "</details>"
        )

    # --- the parts: a question, and its answer computed only when asked for ---
    PARTS = ("1", "2", "3", "4")

    def question(self, key) -> Question:
        """Part `key`'s question (no answer in it)."""
        return self._build(str(key))[0]

    def answer(self, key) -> Answer:
        """Part `key`'s answer (computed on the first reveal, then kept: it never changes)."""
        key = str(key)
        if key not in self._answers:
            self._answers[key] = self._build(key)[1]()
        return self._answers[key]

    def _build(self, key: str):
        if key not in self._questions:
            if key not in self.PARTS:
                raise ValueError(f"no part {key!r}; the parts are {', '.join(self.PARTS)}")
            self._questions[key] = getattr(self, f"part{key}")()
        return self._questions[key]

    def part(self, n: int) -> Part:
        """Part n as widgets (the notebook's cells)."""
        self.question(str(n))  # ValueError for a part that does not exist
        p = Part(self.session, str(n), self._keep)
        self.parts[p.key] = p
        return p

    def part1(self):
        state = self.state

        def reveal() -> Answer:
            t = run_setting(state, policy="similarity")
            names = neutral_ids(t.scenario)
            ans = [names[c] for c in t.displaced] or NONE
            said = (
                f"similarity-only evicted {', '.join(f'{names[c]} (= {c})' for c in t.displaced)}"
                if t.displaced
                else "similarity-only kept the whole chain"
            )
            witness = t.indirect
            why = "; ".join(
                f"{c} resembles the query less than {wit}, the block that depends on it"
                for c, wit in witness.items()
                if c in t.displaced
            )
            data = viewdata.landscape_data(t)
            return Answer(
                ans,
                said,
                (
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    ("chart", "similarity", data, 760, "wb-chart-eviction"),
                    self.identities(t),
                    _html(
                        "<p>Discuss: the evicted block is <i>needed</i> (the chain breaks without "
                        "it) but shares few words with the query. Definition 1 calls it a "
                        "structurally indirect prerequisite; its witness is the dependent the "
                        f"query does resemble{': ' + html.escape(why) if why else ''}.</p>"
                    ),
                ),
            )

        q = (
            self.store(state)
            + "<p><b>Predict:</b> similarity-only keeps the blocks most like the query until the "
            "budget is full (a block that does not fit is skipped). Which block of the chain "
            "will it evict?</p>"
        )
        return Question("1", q, tuple(self.chain_choices(state))), reveal

    def part2(self):
        state = self.state.with_(policy="dsgc")

        def reveal() -> Answer:
            rescue = first_rescue(state, "lam", LAMBDAS)
            rows = sweep_rows(state, "lam", LAMBDAS)
            lost_again = [
                r[0] for r in rows if rescue is not None and float(r[0]) > rescue and r[1] == "no"
            ]
            data = viewdata.rescue_data(
                [
                    {"lam": lam, "full_chain_retained": r[1] == "yes", "displaced_text": r[2]}
                    for lam, r in zip(LAMBDAS, rows, strict=True)
                ],
                "lam",
                f"{state.template} seed {state.seed}",
                "Does the chain survive as λ grows?",
            )
            more = (
                f"No: at λ = {', '.join(lost_again)} the chain is lost again."
                if lost_again
                else "Here, every λ from the first rescue on keeps the chain."
            )
            said = (
                f"the smallest λ that keeps the whole chain is {rescue:g}"
                if rescue is not None
                else "no λ in the list keeps the whole chain"
            )
            return sweep_answer(rescue, said, "λ", rows,
                                ("chart", "rescue", data, 420, "wb-chart-lambda"),
                                _html(f"<p>Is a larger λ always better? {html.escape(more)}</p>"))  # fmt: skip

        q = (
            "<p>DSGC scores each block I = r + λ·π: its own relevance r plus λ times the relevance "
            "π of the blocks that depend on it. Same store as in part 1.</p><p><b>Predict:</b> "
            "what is the smallest λ (from the list) that keeps the whole chain?</p>"
        )
        choices = [(f"λ = {lam:g}", lam) for lam in LAMBDAS] + [("none of these", NONE)]
        return Question("2", q, tuple(choices)), reveal

    def part3(self):
        state = self.hop_state

        def reveal() -> Answer:
            t = run_setting(state)
            names = neutral_ids(t.scenario)
            ans = [names[c] for c in t.displaced] or NONE
            said = (
                f"with one hop DSGC evicts {', '.join(f'{names[c]} (= {c})' for c in t.displaced)}"
                if t.displaced
                else "with one hop DSGC keeps the whole chain"
            )
            before, after = run_setting(state, policy="no-graph"), t
            return Answer(
                ans,
                said,
                (
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    (
                        "chart",
                        "valley",
                        viewdata.valley_data(before, after),
                        460,
                        "wb-chart-one-hop",
                    ),
                    self.identities(t),
                    _html(
                        "<p>Discuss: one hop lifts a block by the relevance of the blocks that "
                        "depend on it directly; a block two links away from the query-like block "
                        "gets nothing from it.</p>"
                    ),
                ),
            )

        q = (
            self.store(state)
            + "<p>A new store (a different scenario). DSGC at λ = 1, one hop.</p><p><b>Predict:"
            "</b> which block of the chain does it evict, if any?</p>"
        )
        return Question("3", q, tuple(self.chain_choices(state))), reveal

    def part4(self):
        state = self.hop_state

        def reveal() -> Answer:
            best = first_rescue(state, "hops", HOPS)
            rows = sweep_rows(state, "hops", HOPS)
            scale = []
            for blocks in (20, 50):
                t = run_setting(state, total_blocks=blocks)
                if t.displaced:
                    d = t.displaced[0]
                    scale.append(
                        f"at {blocks} blocks {d} is ranked {t.chain_ranks[d]} and evicted, "
                        f"{t.top_non_chain} outscoring it by {t.margin:.3f}"
                    )
                else:
                    scale.append(f"at {blocks} blocks the whole chain is kept")
            said = (
                f"{best} hop{'s' if best != 1 else ''} keep{'s' if best == 1 else ''} the chain"
                if best is not None
                else "no number of hops up to 3 keeps the chain"
            )
            return sweep_answer(
                best,
                said,
                "hops",
                rows,
                _html(
                    "<p>A second (damped) hop reaches a block two links away, at the price of "
                    "lifting whatever else sits two links from a relevant block. With more "
                    f"blocks in the store (one hop): {html.escape('; '.join(scale))}.</p>"
                ),
            )

        q = (
            "<p>Same store as part 3. Propagation can go further: with two hops a block also gets "
            "(half) the relevance of the blocks two links away.</p><p><b>Predict:</b> how many "
            "hops keep the whole chain?</p>"
        )
        choices = [(f"{h} hop{'s' if h > 1 else ''}", h) for h in HOPS] + [
            ("none: not even 3", NONE)
        ]
        return Question("4", q, tuple(choices)), reveal

    def free_exploration(self) -> w.VBox:
        """Part 5: the explorer, opened on request, on the store of parts 3-4, and only once
        both are revealed (its verdict would give their answers away)."""
        button = w.Button(description="Open the explorer").add_class("wb-open-explorer")
        note = w.HTML().add_class("wb-free-note")
        box = Live(
            [button, note, KernelWatch()],
            "<p><b>Part 5, free exploration:</b> the explorer on the store of parts 3-4 opens "
            "here once both are revealed (it needs the running notebook).</p>",
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
            "part1",
            {"seed": s.seed, "displaced": sim.displaced, "indirect": sim.indirect},
            shown=False,
        )
        lam = knob_sweep(s.with_(policy="dsgc"), "lam", list(LAMBDAS))
        record(
            "part2",
            {
                "seed": s.seed,
                "rescue_lambda": first_rescue(s.with_(policy="dsgc"), "lam", LAMBDAS),
                "kept": lam.full_chain_retained.tolist(),
            },
            shown=False,
        )
        hops = knob_sweep(h, "hops", list(HOPS))
        record(
            "part3",
            {
                "seed": h.seed,
                "kept_by_hops": hops.full_chain_retained.tolist(),
                "displaced_one_hop": run_setting(h).displaced,
            },
            shown=False,
        )

    def __repr__(self) -> str:
        return f"Workshop({self.state.template} seed {self.state.seed}, profile seed {self.hop_state.seed})"
