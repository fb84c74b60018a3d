"""The workshop, for a room: every part asks for a prediction, a Reveal button shows the answer
only when clicked and compares it with the guess, and a score runs across the parts.

Before a reveal the page names blocks by neutral ids (B01, B02, ... in a seeded shuffle), so an id
such as c2 or h1 cannot give a block's kind away, and nothing the page holds says what the answer
is: a reveal is computed when its button is clicked. The workshop writes no file (a room of
participants shares one checkout), and its charts are drawn in the browser like the explorer's.
"""

from __future__ import annotations

import html

import ipywidgets as w
import pandas as pd

from workbench.common.notebook import record
from workbench.common.seeds import Draw
from workbench.dsgc import viewdata
from workbench.dsgc.scenario import Scenario
from workbench.dsgc.trace import Setting, Trace, run_setting, verdict_line
from workbench.explore.explorer import explorer
from workbench.explore.widgets import ChartView, Memory, in_voila

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


class Score(w.HTML):
    """Right predictions out of the parts revealed with a prediction (one widget, shown anywhere)."""

    def __init__(self):
        super().__init__()
        self.results: dict[str, bool | None] = {}
        self.add_class("wb-score")
        self.show()

    def add(self, part: str, right: bool | None) -> None:
        self.results[part] = right
        self.show()

    def show(self) -> None:
        scored = {p: r for p, r in self.results.items() if r is not None}
        marks = " · ".join(
            f"part {p}: {'no prediction' if r is None else ('right' if r else 'wrong')}"
            for p, r in self.results.items()
        )
        self.value = (
            f"<div class='wb-score-line'><b>Score: {sum(scored.values())} of {len(scored)} "
            f"predictions right</b> ({marks or 'nothing revealed yet'})</div>"
        )

    def __repr__(self) -> str:
        return "Score(right predictions across the parts)"


class Part(w.VBox):
    """One exercise: the question (no answer in it), a prediction, Reveal, then the answer."""

    def __init__(self, key: str, question: str, choices, reveal, score: Score, on_change=None):
        self.key, self._reveal, self.score, self._on_change = key, reveal, score, on_change
        self.labels = {v: label for label, v in choices}
        self.predict = w.Dropdown(
            options=[("- pick your prediction -", None), *choices],
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
                w.HTML(question).add_class("wb-question"),
                w.HBox([self.predict, self.button]),
                self.compare,
                self.answer,
            ]
        )
        self.add_class("wb-part").add_class(f"wb-part-{key}")

    def _on_reveal(self, _button=None) -> None:
        guess = self.predict.value
        self.predict.disabled = self.button.disabled = (
            True  # a guess cannot change after the reveal
        )
        answer, answer_text, children = self._reveal()
        right = None if guess is None else _same(guess, answer)
        said = (
            "You made no prediction." if guess is None else f"You predicted: {self.labels[guess]}."
        )
        verdict = "" if right is None else (" Right!" if right else " Not this time.")
        self.compare.value = (
            f"<div class='wb-compare-line {'wb-right' if right else 'wb-wrong'}'>"
            f"{html.escape(said)} The answer: {html.escape(answer_text)}.<b>{verdict}</b></div>"
        )
        self.answer.children = children
        self.score.add(self.key, right)
        self._changed()

    @property
    def revealed(self) -> bool:
        return self.button.disabled

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()

    def restore(self, kept: dict) -> None:
        """Back to what the page kept: the prediction, and the reveal (which locks it)."""
        if self.revealed:
            return
        guess = kept.get("guess")
        if guess in self.labels:
            self.predict.value = guess
        if kept.get("revealed"):
            self._on_reveal()

    def __repr__(self) -> str:
        return f"Part({self.key}: predict, then reveal)"


def _same(guess, answer) -> bool:
    if isinstance(answer, list | tuple | set):
        return guess in answer
    return guess == answer


def _html(text: str, cls: str = "wb-reveal-text") -> w.HTML:
    return w.HTML(f"<div class='{cls}'>{text}</div>")


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
        self.score = Score()
        self.parts: dict[str, Part] = {}
        s, h = self.state, self.hop_state
        self.memory = Memory(  # predictions and reveals survive a reload of the page
            key=f"wb-workshop/{s.encoder}/{s.template}/{s.seed}/{h.seed}/{s.multiplier:g}"
        )
        self.memory.observe(self._restore, "restored")

    def _keep(self) -> None:
        self.memory.state = {
            k: {"guess": p.predict.value, "revealed": p.revealed} for k, p in self.parts.items()
        }

    def _restore(self, change) -> None:
        for key in sorted(change["new"]):
            part = self.parts.get(key)
            if part is not None and isinstance(change["new"][key], dict):
                part.restore(change["new"][key])

    def scoreboard(self) -> w.VBox:
        """The score, and the page's memory of the predictions and reveals (shown once, after
        the parts: a reload brings back every locked prediction and so the score)."""
        return w.VBox([self.score, self.memory])

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

    def identities(self, trace: Trace) -> w.HTML:
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

    # --- the parts ---
    def part(self, n: int) -> Part:
        p = {1: self.part1, 2: self.part2, 3: self.part3, 4: self.part4}[n]()
        p._on_change = self._keep
        self.parts[p.key] = p
        return p

    def part1(self) -> Part:
        state = self.state

        def reveal():
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
            return (
                ans,
                said,
                [
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    ChartView("similarity", data, width=760).add_class("wb-chart-eviction"),
                    self.identities(t),
                    _html(
                        "<p>Discuss: the evicted block is <i>needed</i> (the chain breaks without "
                        "it) but shares few words with the query. Definition 1 calls it a "
                        "structurally indirect prerequisite; its witness is the dependent the "
                        f"query does resemble{': ' + html.escape(why) if why else ''}.</p>"
                    ),
                ],
            )

        q = (
            self.store(state)
            + "<p><b>Predict:</b> similarity-only keeps the blocks most like the query until the "
            "budget is full (a block that does not fit is skipped). Which block of the chain "
            "will it evict?</p>"
        )
        return Part("1", q, self.chain_choices(state), reveal, self.score)

    def part2(self) -> Part:
        state = self.state.with_(policy="dsgc")

        def reveal():
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
            return (
                NONE if rescue is None else rescue,
                said,
                [
                    _html(CSS + html_table(["λ", *SWEEP_COLUMNS], rows)),
                    ChartView("rescue", data, width=420).add_class("wb-chart-lambda"),
                    _html(f"<p>Is a larger λ always better? {html.escape(more)}</p>"),
                ],
            )

        q = (
            "<p>DSGC scores each block I = r + λ·π: its own relevance r plus λ times the relevance "
            "π of the blocks that depend on it. Same store as in part 1.</p><p><b>Predict:</b> "
            "what is the smallest λ (from the list) that keeps the whole chain?</p>"
        )
        choices = [(f"λ = {lam:g}", lam) for lam in LAMBDAS] + [("none of these", NONE)]
        return Part("2", q, choices, reveal, self.score)

    def part3(self) -> Part:
        state = self.hop_state

        def reveal():
            t = run_setting(state)
            names = neutral_ids(t.scenario)
            ans = [names[c] for c in t.displaced] or NONE
            said = (
                f"with one hop DSGC evicts {', '.join(f'{names[c]} (= {c})' for c in t.displaced)}"
                if t.displaced
                else "with one hop DSGC keeps the whole chain"
            )
            before, after = run_setting(state, policy="no-graph"), t
            return (
                ans,
                said,
                [
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    ChartView("valley", viewdata.valley_data(before, after), width=460).add_class(
                        "wb-chart-one-hop"
                    ),
                    self.identities(t),
                    _html(
                        "<p>Discuss: one hop lifts a block by the relevance of the blocks that "
                        "depend on it directly; a block two links away from the query-like block "
                        "gets nothing from it.</p>"
                    ),
                ],
            )

        q = (
            self.store(state)
            + "<p>A new store (a different scenario). DSGC at λ = 1, one hop.</p><p><b>Predict:"
            "</b> which block of the chain does it evict, if any?</p>"
        )
        return Part("3", q, self.chain_choices(state), reveal, self.score)

    def part4(self) -> Part:
        state = self.hop_state

        def reveal():
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
            return (
                NONE if best is None else best,
                said,
                [
                    _html(CSS + html_table(["hops", *SWEEP_COLUMNS], rows)),
                    _html(
                        "<p>A second (damped) hop reaches a block two links away, at the price of "
                        "lifting whatever else sits two links from a relevant block. With more "
                        f"blocks in the store (one hop): {html.escape('; '.join(scale))}.</p>"
                    ),
                ],
            )

        q = (
            "<p>Same store as part 3. Propagation can go further: with two hops a block also gets "
            "(half) the relevance of the blocks two links away.</p><p><b>Predict:</b> how many "
            "hops keep the whole chain?</p>"
        )
        choices = [(f"{h} hop{'s' if h > 1 else ''}", h) for h in HOPS] + [
            ("none: not even 3", NONE)
        ]
        return Part("4", q, choices, reveal, self.score)

    def free_exploration(self) -> w.VBox:
        """Part 5: the explorer, opened on request, on the store of parts 3-4, and only once
        both are revealed (its verdict would give their answers away)."""
        button = w.Button(description="Open the explorer").add_class("wb-open-explorer")
        note = w.HTML().add_class("wb-free-note")
        box = w.VBox([button, note]).add_class("wb-free")

        def open_explorer(_b=None):
            left = [p for p in ("3", "4") if p not in self.score.results]
            if left:
                note.value = (
                    f"<p>Reveal part{'s' if len(left) > 1 else ''} {' and '.join(left)} first: "
                    "the explorer opens on their store, and its verdict would give the answer "
                    "away.</p>"
                )
                return
            box.children = [explorer(self.hop_state, url=False)]

        button.on_click(open_explorer)
        return box

    # --- for the tests (never shown: the stored text says only that a key was recorded) ---
    def record_key(self) -> None:
        """Record the answer key (papermill tests read it back); nothing visible under Voila."""
        if in_voila():
            return
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
