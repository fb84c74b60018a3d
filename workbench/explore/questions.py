"""The workshop's questions, as its parts ask them: thirteen predictions, easy to hard, on two
stores (a target where similarity-only loses the chain and DSGC keeps it, then a profile store
that one hop of DSGC loses), each with its answer computed from the runs when a reveal first asks
for it, and a question for the room after it. `workshop.Workshop` draws them as widgets in the
notebook, the room server (`sessions`, `server`) sends them to its pages; `lessons` holds what
both hosts share (the question and answer shapes, a participant's session).

Before a reveal the page names blocks by neutral ids (B01, B02, ... in a seeded shuffle), so an id
such as c2 or h1 cannot give a block's kind away, and nothing a question holds says what the
answer is.
"""

from __future__ import annotations

import html

from workbench.dsgc import viewdata
from workbench.dsgc.trace import Setting, Trace, run_setting, verdict_line
from workbench.explore.lessons import (
    HOPS,
    LAMBDAS,
    NONE,
    SWEEP_COLUMNS,
    Answer,
    Question,
    find_seed,
    first_rescue,
    html_table,
    kept,
    neutral_ids,
    sweep_rows,
)

OUTSIDE, BOTH = "outside", "both"
LABELS = {"similarity": "similarity-only", "recency": "recency"}
BUDGETS = (2.5, 3.0, 4.0, 5.0)  # part 7: the budgets similarity-only is tried at
FIX_LAMBDA, FIX_BUDGET, FIX_TAU = 3.0, 3.0, 0.1  # part 12: the single changes tried
COUNT_BINS = ((0, 4), (5, 8), (9, 12), (13, 10**6))  # part 1: blocks kept (every count has a bin)
SEED_BINS = ((0, 3), (4, 7), (8, 11), (12, 15))  # out of 15 seeds


def _bin(n: int, bins) -> str:
    """The bin's label that holds n."""
    return next(_label(lo, hi) for lo, hi in bins if lo <= n <= hi)


def _label(lo: int, hi: int) -> str:
    return f"{lo} or more" if hi >= 10**6 else f"{lo}-{hi}"


def _bins(bins) -> tuple:
    return tuple((_label(lo, hi), _label(lo, hi)) for lo, hi in bins)


def sweep_answer(value, said: str, what: str, rows, discuss: str, *extra) -> Answer:
    """A sweep's reveal: the value found (NONE when none), what it says, the sweep's table, then
    `extra` parts, and the room's discussion prompt."""
    table = _html(CSS + html_table([what, *SWEEP_COLUMNS], rows))
    return Answer(NONE if value is None else value, said, (table, *extra), discuss)


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
.wb-discuss {margin: 8px 0 2px; padding: 6px 10px; border-left: 4px solid #CC79A7; background: #fbf3f8;}
</style>"""


class Questions:
    """The workshop's two stores and thirteen parts: each part's question (no answer in it)
    and its answer, computed on the first reveal that asks for it and kept."""

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
        self._questions: dict[str, tuple] = {}  # key -> (Question, reveal)
        self._answers: dict[str, Answer] = {}

    @property
    def memory_key(self) -> str:
        """Where a page keeps this workshop's predictions and reveals (localStorage)."""
        s, h = self.state, self.hop_state
        return f"wb-workshop/{s.encoder}/{s.template}/{s.seed}/{h.seed}/{s.multiplier:g}"

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
    # thirteen predictions, easy to hard, in the five steps of the notebook (plan.STEPS): the
    # first store (parts 1-8), then the one-hop store (parts 9-13); no reveal shows the answer of
    # a later part of the same store
    PARTS = tuple(str(k) for k in range(1, 14))
    BEFORE_EXPLORER = ("9", "10", "11", "12", "13")  # the explorer opens on their store
    SEEDS = range(15)  # "how many of 15 seeds": seeds 0-14 of the part's template

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

    def _count(self, state: Setting, **changes) -> int:
        """In how many of SEEDS is the whole chain kept (state with each seed and `changes`)?"""
        return sum(kept(state.with_(seed=s), **changes) for s in self.SEEDS)

    def _seed_table(self, state: Setting, **changes) -> tuple[str, str]:
        """Kept or lost, seed by seed (SEEDS), as a folded table."""
        rows = []
        for s in self.SEEDS:
            t = run_setting(state.with_(seed=s), **changes)
            rows.append([s, "yes" if t.full_chain_retained else "no", ",".join(t.displaced) or "-"])
        return _html(
            "<details><summary>seed by seed</summary>"
            + html_table(["seed", "whole chain kept", "evicted chain blocks"], rows)
            + "</details>"
        )

    # --- 0. the setting: the budget, before any policy's choice ---
    def part1(self):
        state = self.state

        def reveal() -> Answer:
            t = run_setting(state, policy="similarity")
            n = len(t.kept_ids)
            return Answer(
                _bin(n, COUNT_BINS),
                f"similarity-only keeps {n} of the {len(t.scenario.blocks)} blocks "
                f"({t.retention.used} of the {t.retention.budget} tokens)",
                (
                    _html(
                        f"<p>The budget is twice the chain's tokens (M = {state.multiplier:g}), "
                        "so the chain alone would fill half of it; the rest goes to whatever "
                        "else the policy ranks high.</p>"
                    ),
                ),  # fmt: skip
                "the budget is fixed before the query is answered: what decides which blocks "
                "use it, and what happens to the rest?",
            )

        q = (
            self.store(state)
            + "<p><b>Predict (a warm-up):</b> blocks are kept best first until the next one no "
            "longer fits the budget. How many of the store's blocks does similarity-only keep?</p>"
        )
        return Question("1", q, _bins(COUNT_BINS)), reveal

    # --- 1. predict the eviction ---
    def part2(self):
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
            why = "; ".join(
                f"{c} resembles the query less than {wit}, the block that depends on it"
                for c, wit in t.indirect.items()
                if c in t.displaced
            )
            return Answer(
                ans,
                said,
                (
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    ("chart", "similarity", viewdata.landscape_data(t), 760, "wb-chart-eviction"),
                    self.identities(t),
                    _html(
                        "<p>The evicted block is <i>needed</i> (the chain breaks without it) but "
                        "shares few words with the query. Definition 1 calls it a structurally "
                        "indirect prerequisite; its witness is the dependent the query does "
                        f"resemble{': ' + html.escape(why) if why else ''}.</p>"
                    ),
                ),
                "a retriever run after this eviction cannot find the block, however good it is. "
                "Where in a real agent's memory would such a block come from?",
            )

        q = (
            "<p>Same store. <b>Predict:</b> similarity-only keeps the blocks most like the query "
            "until the budget is full (a block that does not fit is skipped). Which block of the "
            "chain will it evict?</p>"
        )
        return Question("2", q, tuple(self.chain_choices(state))), reveal

    def part3(self):
        state = self.state

        def reveal() -> Answer:
            t = run_setting(state, policy="similarity")
            names, top = neutral_ids(t.scenario), t.ranking[0]
            inside = top in t.scenario.chain
            kind = t.scenario.block(top).kind
            return Answer(
                names[top] if inside else OUTSIDE,
                f"similarity-only ranks {names[top]} (= {top}, a {kind} block) first",
                (self.identities(t),),
                "the block most like the query is not always the one the answer needs first: "
                "which words made it rank first, and would a person have ranked it there?",
            )

        q = (
            "<p>Same store. <b>Predict:</b> which block does similarity-only rank first (the one "
            "most like the query)?</p>"
        )
        choices = [*self.chain_choices(state)[:-1], ("a block outside the chain", OUTSIDE)]
        return Question("3", q, tuple(choices)), reveal

    def part4(self):
        state = self.state

        def reveal() -> Answer:
            n = self._count(state, policy="similarity")
            return Answer(
                _bin(n, SEED_BINS),
                f"similarity-only keeps the whole chain in {n} of {len(self.SEEDS)} seeds",
                (self._seed_table(state, policy="similarity"),),
                "is this store an unlucky draw or the rule? What do the seeds that keep the "
                "chain have in common?",
            )

        q = (
            f"<p><b>Predict:</b> the same template with {len(self.SEEDS)} seeds (seeds 0-"
            f"{len(self.SEEDS) - 1}: other sentences, the same kind of chain). In how many does "
            "similarity-only keep the whole chain?</p>"
        )
        return Question("4", q, _bins(SEED_BINS)), reveal

    # --- 2. rescue by propagation ---
    def part5(self):
        state = self.state

        def reveal() -> Answer:
            got = {p: kept(state, policy=p) for p in ("similarity", "recency")}
            both, which = all(got.values()), [p for p, k in got.items() if k]
            ans = BOTH if both else (which[0] if which else NONE)
            rows = [[LABELS[p], "yes" if k else "no"] for p, k in got.items()]
            return Answer(
                ans,
                "; ".join(
                    f"{LABELS[p]} {'keeps' if k else 'loses'} the chain" for p, k in got.items()
                ),  # fmt: skip
                (_html(html_table(["policy", "whole chain kept"], rows)),),
                "neither ranking knows that one block needs another. What would a policy have "
                "to know about the blocks to keep the chain?",
            )

        q = (
            "<p>Same store. Two policies need no graph: similarity-only, and recency (the newest "
            "blocks first, as a sliding window keeps them).</p><p><b>Predict:</b> which of them "
            "keeps the whole chain?</p>"
        )
        choices = (("similarity-only", "similarity"), ("recency", "recency"),
                   ("both", BOTH), ("neither", NONE))  # fmt: skip
        return Question("5", q, choices), reveal

    def part6(self):
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
                                "is a larger λ always better? What does it cost the blocks that "
                                "no one depends on?",
                                ("chart", "rescue", data, 420, "wb-chart-lambda"),
                                _html(f"<p>Is a larger λ always better? {html.escape(more)}</p>"))  # fmt: skip

        q = (
            "<p>DSGC scores each block I = r + λ·π: its own relevance r plus λ times the relevance "
            "π of the blocks that depend on it. Same store.</p><p><b>Predict:</b> what is the "
            "smallest λ (from the list) that keeps the whole chain?</p>"
        )
        choices = [(f"λ = {lam:g}", lam) for lam in LAMBDAS] + [("none of these", NONE)]
        return Question("6", q, tuple(choices)), reveal

    def part7(self):
        state = self.state.with_(policy="similarity")

        def reveal() -> Answer:
            first = first_rescue(state, "multiplier", BUDGETS)
            rows = sweep_rows(state, "multiplier", BUDGETS)
            said = (
                f"similarity-only first keeps the whole chain at M = {first:g}"
                if first is not None
                else f"no budget up to M = {BUDGETS[-1]:g} keeps the whole chain"
            )
            return sweep_answer(first, said, "M", rows,
                                "a bigger budget is the fix everyone reaches for first. What "
                                "does it cost an agent, and does it scale to a store of a "
                                "thousand blocks?")  # fmt: skip

        q = (
            "<p>Same store, similarity-only, with more room: the budget M times the chain's "
            "tokens.</p><p><b>Predict:</b> from which budget on does similarity-only keep the "
            "whole chain?</p>"
        )
        choices = [(f"M = {m:g}", m) for m in BUDGETS] + [(f"none up to M = {BUDGETS[-1]:g}", NONE)]
        return Question("7", q, tuple(choices)), reveal

    def part8(self):
        state = self.state.with_(policy="dsgc")

        def reveal() -> Answer:
            n = self._count(state)
            return Answer(
                _bin(n, SEED_BINS),
                f"DSGC (λ = {state.lam:g}, one hop) keeps the whole chain in {n} of "
                f"{len(self.SEEDS)} seeds",
                (self._seed_table(state),),
                "compare this count with part 4's. Which seeds, if any, does DSGC still lose, "
                "and what do they share?",
            )

        q = (
            f"<p><b>Predict:</b> the {len(self.SEEDS)} seeds of part 4 again, now under DSGC (λ = "
            f"{state.lam:g}, one hop). In how many is the whole chain kept?</p>"
        )
        return Question("8", q, _bins(SEED_BINS)), reveal

    # --- 3-4. the one-hop boundary ---
    def part9(self):
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
            before = run_setting(state, policy="no-graph")
            return Answer(
                ans,
                said,
                (
                    _html(f"<p><b>{html.escape(verdict_line(t))}</b></p>"),
                    ("chart", "valley", viewdata.valley_data(before, t), 460, "wb-chart-one-hop"),
                    self.identities(t),
                ),
                "one hop lifts a block by the relevance of the blocks that depend on it "
                "directly. Which block of this chain gets nothing from the one the query "
                "resembles?",
            )

        q = (
            self.store(state)
            + "<p>A new store (a different scenario). DSGC at λ = 1, one hop.</p><p><b>Predict:"
            "</b> which block of the chain does it evict, if any?</p>"
        )
        return Question("9", q, tuple(self.chain_choices(state))), reveal

    def part10(self):
        state = self.hop_state

        def reveal() -> Answer:
            t = run_setting(state)
            chain, pos = list(t.scenario.chain), t.scenario.index()
            sims = {c: float(t.retention.sims[pos[c]]) for c in chain}
            top = max(chain, key=lambda c: sims[c])
            lost = t.displaced[0] if t.displaced else None
            links = None if lost is None else abs(chain.index(lost) - chain.index(top))
            names = neutral_ids(t.scenario)
            rows = [[names[c], c, f"{sims[c]:.3f}"] for c in chain]
            return Answer(
                NONE if links is None else links,
                "nothing was evicted"
                if lost is None
                else f"{names[lost]} (= {lost}) is {links} link{'s' if links != 1 else ''} from "
                f"{names[top]} (= {top}), the chain block most like the query",
                (_html(html_table(["block", "real id", "cosine to the query"], rows)),),
                "how far does relevance travel in one hop, and what would carry it further?",
            )

        q = (
            "<p>Same store as part 9. <b>Predict:</b> the block one hop loses sits how many links "
            "along the chain from the chain block most like the query?</p>"
        )
        choices = [("1 link", 1), ("2 links", 2), ("3 links", 3), ("nothing is lost", NONE)]
        return Question("10", q, tuple(choices)), reveal

    def part11(self):
        state = self.hop_state

        def reveal() -> Answer:
            best = first_rescue(state, "hops", HOPS)
            rows = sweep_rows(state, "hops", HOPS)
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
                "a second hop reaches further, and also lifts whatever sits two links from a "
                "relevant block. When would that hurt?",
                _html(
                    "<p>A second (damped) hop reaches a block two links away, at the price of "
                    "lifting whatever else sits two links from a relevant block.</p>"
                ),
            )

        q = (
            "<p>Same store. Propagation can go further: with two hops a block also gets (half) "
            "the relevance of the blocks two links away.</p><p><b>Predict:</b> how many hops keep "
            "the whole chain?</p>"
        )
        choices = [(f"{h} hop{'s' if h > 1 else ''}", h) for h in HOPS] + [
            ("none: not even 3", NONE)
        ]
        return Question("11", q, tuple(choices)), reveal

    def part12(self):
        state = self.hop_state
        fixes = (  # (label, the choice's value, the changes)
            (f"λ = {FIX_LAMBDA:g} (one hop)", "lambda", {"lam": FIX_LAMBDA}),
            (f"a budget of M = {FIX_BUDGET:g}", "budget", {"multiplier": FIX_BUDGET}),
            ("recency instead of DSGC", "recency", {"policy": "recency"}),
            (f"a sharper relevance, τ = {FIX_TAU:g}", "tau", {"tau": FIX_TAU}),
        )

        def reveal() -> Answer:
            rows, right = [], []
            for label, key, changes in fixes:
                t = run_setting(state, **changes)
                rows.append([label, "yes" if t.full_chain_retained else "no",
                             ",".join(t.displaced) or "-"])  # fmt: skip
                if t.full_chain_retained:
                    right.append(key)
            said = (
                "kept by " + " and by ".join(lab for lab, k, _ in fixes if k in right)
                if right
                else "none of them keeps the chain"
            )
            return Answer(
                right or NONE,
                said,
                (_html(html_table(["one change", "whole chain kept", "evicted"], rows)),),
                "each fix has a price: a larger λ lifts every block someone depends on, a "
                "bigger budget costs tokens, a sharper τ lets the top blocks take everything. "
                "Which would you ship?",
            )

        q = (
            "<p>Same store, DSGC at one hop, which loses the chain. <b>Predict:</b> which one "
            "change (everything else as it was) keeps it?</p>"
        )
        choices = [(label, key) for label, key, _ in fixes] + [("none of these", NONE)]
        return Question("12", q, tuple(choices)), reveal

    def part13(self):
        state = self.hop_state.with_(total_blocks=50)

        def reveal() -> Answer:
            n = len(self.SEEDS) - self._count(state)
            two = len(self.SEEDS) - self._count(state, hops=2)
            return Answer(
                _bin(n, SEED_BINS),
                f"one hop loses the chain in {n} of {len(self.SEEDS)} seeds at 50 blocks "
                f"(two hops: {two})",
                (self._seed_table(state),),
                "more blocks means more distractors two links from something relevant. Does the "
                "paper's claim hold at the size of a real agent's memory?",
            )

        q = (
            f"<p><b>Predict (the hardest):</b> the same template with 50 blocks instead of 20, "
            f"{len(self.SEEDS)} seeds, DSGC at one hop. In how many seeds is the chain lost?</p>"
        )
        return Question("13", q, _bins(SEED_BINS)), reveal
