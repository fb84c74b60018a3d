"""Streaming-recall episodes from a file in SQuAD v1.1's format: answer-bearing sentences are the
facts, answer-free sentences the distractors, the questions the queries."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.common.io import InputError, read_json
from workbench.recall.episodes import Episodes, Streams, episode_rng, n_distractors

_SENT_END = re.compile(r"[.!?][\"')\]]*\s+")
# A full stop after an abbreviation or an initial ("U.S.", "J.", "Dr.", "Jan.") ends no sentence.
# The cost: a sentence that really ends in "U.S." is joined to the next one.
_NO_SPLIT = re.compile(
    r"(?:^|[\s(])(?:(?:[A-Z]\.)*[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Capt|Rev|Mt|Ft|"
    r"vs|etc|approx|ca|c|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Inc|Co|Corp|Ltd|No)\.$"
)
FIXTURE_KEY = (
    "workbench_source"  # a file may label itself; the project's invented fixture says "fixture"
)


@dataclass(frozen=True)
class SquadTarget:
    """One answer-bearing sentence, its question, every annotator's answer and the question id."""

    sentence: str
    question: str
    golds: tuple[str, ...]
    id: str
    article: str


@dataclass(frozen=True)
class SquadPool:
    """Answer-bearing sentences (one question each) and answer-free sentences of a file."""

    path: str
    source: str  # "fixture" when the file says so, else its path
    targets: tuple[SquadTarget, ...]
    unrelated: tuple[tuple[str, str], ...]  # (sentence, article)
    counts: dict = field(default_factory=dict)  # what was skipped or repaired, by kind

    def __repr__(self) -> str:
        extra = f"; {self.counts}" if self.counts else ""
        return (
            f"SquadPool({self.source}: {len(self.targets)} answer sentences, "
            f"{len(self.unrelated)} unrelated sentences{extra})"
        )


def sentence_spans(context: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of a paragraph (abbreviations do not split)."""
    spans, start = [], 0
    for m in _SENT_END.finditer(context):
        if context[m.start()] == "." and _NO_SPLIT.search(context[start : m.start() + 1]):
            continue
        spans.append((start, m.end()))
        start = m.end()
    if start < len(context):
        spans.append((start, len(context)))
    return [(a, b) for a, b in spans if context[a:b].strip()]


def _align(ctx: str, text: str, start: int) -> int | None:
    """answer_start if the text is there, else the nearest occurrence of the text, else None."""
    if ctx[start : start + len(text)] == text:
        return start
    found = [m.start() for m in re.finditer(re.escape(text), ctx)]
    return min(found, key=lambda i: (abs(i - start), i)) if found else None


def load_squad(path: str | Path) -> SquadPool:
    """Read a SQuAD v1.1-format JSON file (data -> paragraphs -> context, qas).

    Every annotator's answer marks its sentence as answered and is kept as a gold. An
    answer_start that misses its text is moved to the nearest occurrence of the text (counted);
    an answer_start that puts the answer past the end of its context, or a text that is nowhere
    in its context, is an InputError naming the field. Questions without
    answers (SQuAD 2.0's unanswerable ones) are skipped and counted, and so is a second question
    on a sentence that already has one. A sentence holding any answer text of its paragraph is
    never a distractor.
    """
    path = str(path)

    def err(msg: str, fld: str | None = None) -> InputError:
        return InputError(msg, path=path, field=fld)

    doc = read_json(path)  # bytes decoded as UTF-8, depth bounded: errors name file and line
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise err("must be a list of articles (SQuAD v1.1 format)", "data")
    targets, unrelated, seen = [], [], set()
    counts: dict[str, int] = {}

    def count(kind: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1

    for a, art in enumerate(doc["data"]):
        where = f"data[{a}]"
        if not isinstance(art, dict) or not isinstance(art.get("paragraphs"), list):
            raise err("must be a list of paragraphs", f"{where}.paragraphs")
        title = str(art.get("title", where))
        for p, par in enumerate(art["paragraphs"]):
            pw = f"{where}.paragraphs[{p}]"
            if not isinstance(par, dict):
                raise err("must be an object with context and qas", pw)
            ctx = par.get("context")
            if not isinstance(ctx, str) or not ctx.strip():
                raise err("must be a non-empty string", f"{pw}.context")
            if not isinstance(par.get("qas"), list):
                raise err("must be a list of questions", f"{pw}.qas")
            spans = sentence_spans(ctx)
            answered = np.zeros(len(spans), dtype=bool)
            texts_here: set[str] = set()
            for q, qa in enumerate(par["qas"]):
                qw = f"{pw}.qas[{q}]"
                question = qa.get("question") if isinstance(qa, dict) else None
                if not isinstance(question, str) or not question.strip():
                    raise err("must be a non-empty string", f"{qw}.question")
                ans = qa.get("answers")
                if not isinstance(ans, list):
                    raise err("must be a list of answers", f"{qw}.answers")
                if not ans or qa.get("is_impossible"):
                    count("question without an answer")
                    continue
                located = []
                for i, an in enumerate(ans):
                    text = an.get("text") if isinstance(an, dict) else None
                    start = an.get("answer_start") if isinstance(an, dict) else None
                    if not isinstance(text, str) or not text.strip():
                        raise err("must be a non-empty string", f"{qw}.answers[{i}].text")
                    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
                        raise err(
                            "must be a non-negative integer", f"{qw}.answers[{i}].answer_start"
                        )
                    if start + len(text) > len(ctx):
                        raise err(
                            f"{start} puts the answer ({len(text)} characters) past the end of "
                            f"its context ({len(ctx)} characters)",
                            f"{qw}.answers[{i}].answer_start",
                        )
                    at = _align(ctx, text, start)
                    if at is None:
                        raise err(
                            f"the answer {text!r} is not in the context", f"{qw}.answers[{i}].text"
                        )
                    if at != start:
                        count("answer_start moved to its text")
                    texts_here.add(text)
                    hit = [j for j, (s, t) in enumerate(spans) if s < at + len(text) and at < t]
                    answered[hit] = True
                    located.append((hit, text))
                hit, _ = located[0]  # the first annotator's span picks the target sentence
                sentence = ctx[spans[hit[0]][0] : spans[hit[-1]][1]].strip()
                if sentence in seen:
                    count("second question on a target sentence")
                    continue
                seen.add(sentence)
                golds = tuple(dict.fromkeys(t for _, t in located))
                qid = qa.get("id")
                targets.append(
                    SquadTarget(
                        sentence,
                        question.strip(),
                        golds,
                        str(qid if qid is not None else qw),
                        title,
                    )
                )
            for j in np.flatnonzero(~answered):
                sent = ctx[spans[j][0] : spans[j][1]].strip()
                if any(t in sent for t in texts_here):
                    count("sentence with an answer text kept out of the distractors")
                    continue
                unrelated.append((sent, title))
    if not targets:
        raise err("holds no answerable questions", "data")
    source = "fixture" if doc.get(FIXTURE_KEY) == "fixture" else path
    return SquadPool(path, source, tuple(targets), tuple(unrelated), counts)


def squad_episodes(
    pool: SquadPool,
    episodes: int = 150,
    n_items: int = 10,
    n_queries: int = 2,
    density: float = 0.3,
    seed: int = 0,
) -> Episodes:
    """Streams of answer sentences (targets) and unrelated sentences (distractors); queries are the questions.

    A distractor never contains a gold answer of a fact in its own stream (streams mix articles).
    Gold answers are tuples of every annotator's text.
    """
    n_d = n_distractors(density, n_items)
    n_f = n_items - n_d
    if len(pool.targets) < n_f or len(pool.unrelated) < n_d:
        raise InputError(
            f"needs {n_f} answer sentences and {n_d} unrelated sentences per "
            f"stream, the file has {len(pool.targets)} and {len(pool.unrelated)}",
            path=pool.path,
            field="data",
        )
    st = Streams(episodes, n_items, n_queries)
    for e in range(episodes):
        rng = episode_rng(seed, "squad-episode", e)
        d_pos = np.sort(rng.choice(n_items, n_d, replace=False))
        facts = rng.choice(len(pool.targets), n_f, replace=False)
        golds = [g for i in facts for g in pool.targets[i].golds]
        others = [
            i
            for i in rng.permutation(len(pool.unrelated))
            if not any(g in pool.unrelated[i][0] for g in golds)
        ][:n_d]
        if len(others) < n_d:
            raise InputError(
                f"too few sentences free of the stream's answers for episode {e}",
                path=pool.path,
                field="data",
            )
        which = rng.integers(n_f, size=n_queries)
        f_pos = st.place(e, d_pos)
        for pos, i in zip(f_pos, facts, strict=True):
            st.text_id[e, pos] = st.texts(pool.targets[i].sentence)
        for pos, i in zip(d_pos, others, strict=True):
            st.text_id[e, pos] = st.texts(pool.unrelated[i][0])
        st.target[e] = f_pos[which]
        for q, w in enumerate(which):
            t = pool.targets[facts[w]]
            st.query_id[e, q] = st.queries(t.question)
            st.answers[e, q] = t.golds
    params = {"density": density, "queries": "questions", "seed": seed}
    return st.done(pool.source, params)


def independent_streams(
    pool: SquadPool, episodes: int, n_items: int = 10, density: float = 0.3
) -> bool:
    """May episodes drawn from this pool be resampled as independent draws? Only when the pool
    holds at least as many answer sentences as the streams use in all (few streams then share a
    sentence); a small pool (the 14-sentence fixture) repeats each sentence in many streams, and
    an episode bootstrap over them would say nothing about text."""
    n_f = n_items - n_distractors(density, n_items)
    return len(pool.targets) >= episodes * n_f


def pool_note(pool: SquadPool, episodes: int, n_items: int = 10, density: float = 0.3) -> str:
    """What a run on this pool can say: its size, and whether intervals were drawn."""
    n_f = n_items - n_distractors(density, n_items)
    head = (
        f"This run read **{pool.source}**: {len(pool.targets)} answer sentences and "
        f"{len(pool.unrelated)} answer-free ones, in {episodes} streams of {n_items}. "
    )
    if independent_streams(pool, episodes, n_items, density):
        return head + (
            "The pool is large enough that streams rarely share a sentence: intervals are an "
            "episode bootstrap."
        )
    return head + (
        f"The streams use {episodes * n_f} answer-sentence slots from {len(pool.targets)} "
        "sentences, so each sentence recurs in many streams: the numbers above are shown "
        "without intervals, and say nothing about real text."
    )
