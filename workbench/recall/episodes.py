"""Streaming-recall episodes: seeded synthetic fact streams and SQuAD v1.1-format streams.

An episode is a stream of N observations (facts and distractors) followed by Q queries; each
query targets one non-distractor fact. Texts live in one table (`Episodes.texts`) and episodes
hold indices into it, so an encoder sees each unique text once.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.encoders import tokenize
from workbench.io import InputError

# Single-token slots and values keep every fact exactly four tokens long, so Jaccard ties
# under the uninformative query are exact (the QUERY == RECENCY result depends on it).
FACT_SLOTS = (
    "color",
    "city",
    "password",
    "animal",
    "code",
    "fruit",
    "planet",
    "metal",
    "river",
    "mountain",
    "instrument",
    "flower",
    "tool",
    "gem",
    "sport",
    "drink",
    "bird",
    "tree",
    "vehicle",
    "fabric",
    "spice",
    "dance",
    "language",
    "currency",
    "island",
    "season",
    "weekday",
    "shape",
    "author",
    "composer",
    "painter",
    "element",
    "country",
    "street",
    "hotel",
    "airline",
    "bridge",
    "castle",
    "lake",
    "desert",
)
DISTRACTOR_SLOTS = (
    "weather",
    "noise",
    "mood",
    "traffic",
    "temperature",
    "lighting",
    "smell",
    "crowd",
    "queue",
    "breeze",
    "humidity",
    "rumor",
    "gossip",
    "draft",
    "echo",
    "glare",
    "dust",
    "clutter",
    "buzz",
    "chatter",
)
VALUES = (
    "amber",
    "cobalt",
    "maple",
    "orchid",
    "granite",
    "falcon",
    "harbor",
    "juniper",
    "lantern",
    "meadow",
    "nimbus",
    "quartz",
)
INFORMATIVE = "What is the {slot} ?"
UNINFORMATIVE = "What is the value?"  # one token differs; "value" appears in no fact
MARKER = "[distractor]"  # the literal marker of the artifact study
QUERY_FORMS = ("informative", "uninformative")


def stream_tag(name: str) -> int:
    """A stable integer for a named random stream (crc32; never Python's salted hash())."""
    return zlib.crc32(name.encode("utf-8"))


def episode_rng(seed: int, name: str, episode: int) -> np.random.Generator:
    """The generator for one (purpose, episode): adding a rule or an episode changes no other draw."""
    return np.random.default_rng([seed, stream_tag(name), episode])


@dataclass(frozen=True, eq=False, repr=False)
class Episodes:
    """A batch of streams: (E, N) text ids and distractor flags, (E, Q) query ids and targets."""

    texts: tuple[str, ...]  # unique observation texts; text_id indexes this
    queries: tuple[str, ...]  # unique query texts; query_id indexes this
    text_id: np.ndarray  # (E, N) int, stream order
    distractor: np.ndarray  # (E, N) bool
    query_id: np.ndarray  # (E, Q) int
    target: np.ndarray  # (E, Q) int stream position of the required fact
    answers: np.ndarray  # (E, Q) object: the gold answer string
    source: str = "synthetic"
    params: dict = field(default_factory=dict)

    @property
    def n_episodes(self) -> int:
        return self.text_id.shape[0]

    @property
    def n_items(self) -> int:
        return self.text_id.shape[1]

    @property
    def n_queries(self) -> int:
        return self.query_id.shape[1]

    @property
    def delay(self) -> np.ndarray:
        """(E, Q) observations that arrived after the target (0 = the last one)."""
        return self.n_items - 1 - self.target

    def stream(self, e: int) -> list[str]:
        """The texts of episode e in arrival order."""
        return [self.texts[i] for i in self.text_id[e]]

    def __repr__(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return (
            f"Episodes({self.source}, {self.n_episodes} x {self.n_items} items, "
            f"{self.n_queries} queries each, {len(self.texts)} unique texts; {extra})"
        )


class _Table:
    """Interns strings into a tuple in first-seen order."""

    def __init__(self):
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def values(self) -> tuple[str, ...]:
        return tuple(self.index)


class _Streams:
    """The arrays of a batch of episodes, filled one episode at a time, then frozen."""

    def __init__(self, episodes: int, n_items: int, n_queries: int):
        self.texts, self.queries = _Table(), _Table()
        self.text_id = np.empty((episodes, n_items), dtype=np.int64)
        self.distractor = np.zeros((episodes, n_items), dtype=bool)
        self.query_id = np.empty((episodes, n_queries), dtype=np.int64)
        self.target = np.empty((episodes, n_queries), dtype=np.int64)
        self.answers = np.empty((episodes, n_queries), dtype=object)

    def place(self, e: int, d_pos: np.ndarray) -> np.ndarray:
        """Mark episode e's distractor positions; returns its fact positions."""
        self.distractor[e, d_pos] = True
        return np.flatnonzero(~self.distractor[e])

    def done(self, source: str, params: dict) -> Episodes:
        return Episodes(
            self.texts.values(),
            self.queries.values(),
            self.text_id,
            self.distractor,
            self.query_id,
            self.target,
            self.answers,
            source,
            params,
        )


def n_distractors(density: float, n_items: int) -> int:
    """Distractors per stream: round(density * N), at least one fact left."""
    if not 0.0 <= density < 1.0:
        raise ValueError(f"density must be in [0, 1), got {density}")
    n = int(round(density * n_items))
    if n >= n_items:
        raise ValueError(f"density {density} leaves no facts in a stream of {n_items}")
    return n


def make_episodes(
    episodes: int = 300,
    n_items: int = 10,
    n_queries: int = 2,
    density: float = 0.3,
    queries: str = "informative",
    marker: bool = False,
    seed: int = 0,
) -> Episodes:
    """Synthetic streams of "The <slot> is <value>." with disjoint distractor slots.

    Episode e is drawn from its own generator, so the first 40 of 300 episodes equal a 40-episode
    run, and the query form and marker change texts only (same slots, values and targets).
    """
    if queries not in QUERY_FORMS:
        raise ValueError(f"queries must be one of {QUERY_FORMS}, got {queries!r}")
    if episodes < 1 or n_queries < 1:
        raise ValueError("need at least one episode and one query")
    n_d = n_distractors(density, n_items)
    n_f = n_items - n_d
    if n_f > len(FACT_SLOTS) or n_d > len(DISTRACTOR_SLOTS):
        raise ValueError(f"a stream of {n_items} needs more unique slots than the vocabulary has")
    st = _Streams(episodes, n_items, n_queries)
    for e in range(episodes):
        rng = episode_rng(seed, "episode", e)
        d_pos = np.sort(rng.choice(n_items, n_d, replace=False))
        slots = rng.choice(len(FACT_SLOTS), n_f, replace=False)
        d_slots = rng.choice(len(DISTRACTOR_SLOTS), n_d, replace=False)
        values = rng.integers(len(VALUES), size=n_items)
        which = rng.integers(n_f, size=n_queries)  # uniform over non-distractor facts
        f_pos = st.place(e, d_pos)
        slot_at = np.empty(n_items, dtype=object)
        slot_at[f_pos] = [FACT_SLOTS[i] for i in slots]
        slot_at[d_pos] = [DISTRACTOR_SLOTS[i] for i in d_slots]
        for n in range(n_items):
            text = f"The {slot_at[n]} is {VALUES[values[n]]}."
            if marker and st.distractor[e, n]:
                text = f"{MARKER} {text}"
            st.text_id[e, n] = st.texts(text)
        st.target[e] = f_pos[which]
        for q, pos in enumerate(st.target[e]):
            form = (
                INFORMATIVE.format(slot=slot_at[pos]) if queries == "informative" else UNINFORMATIVE
            )
            st.query_id[e, q] = st.queries(form)
            st.answers[e, q] = VALUES[values[pos]]
    params = {"density": density, "queries": queries, "marker": marker, "seed": seed}
    return st.done("synthetic", params)


# --- SQuAD v1.1 format ----------------------------------------------------------------------

_SENT_END = re.compile(r"[.!?][\"')\]]*\s+")


@dataclass(frozen=True)
class SquadPool:
    """Answer-bearing sentences (with one question each) and answer-free sentences of a file."""

    path: str
    targets: tuple[tuple[str, str, str, str], ...]  # (sentence, question, answer, article)
    unrelated: tuple[tuple[str, str], ...]  # (sentence, article)

    def __repr__(self) -> str:
        return (
            f"SquadPool({Path(self.path).name}: {len(self.targets)} answer sentences, "
            f"{len(self.unrelated)} unrelated sentences)"
        )


def sentence_spans(context: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of a paragraph."""
    spans, start = [], 0
    for m in _SENT_END.finditer(context):
        spans.append((start, m.end()))
        start = m.end()
    if start < len(context):
        spans.append((start, len(context)))
    return [(a, b) for a, b in spans if context[a:b].strip()]


def load_squad(path: str | Path) -> SquadPool:
    """Read a SQuAD v1.1-format JSON file; a malformed file raises InputError naming the field."""
    path = str(path)

    def err(msg: str, fld: str | None = None) -> InputError:
        return InputError(msg, path=path, field=fld)

    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise err(f"cannot open: {e.strerror}") from None
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise InputError(
            f"invalid JSON ({e.msg} at column {e.colno})", path=path, line=e.lineno
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise err("must be a list of articles (SQuAD v1.1 format)", "data")
    targets, unrelated, seen = [], [], set()
    for a, art in enumerate(doc["data"]):
        where = f"data[{a}]"
        if not isinstance(art, dict) or not isinstance(art.get("paragraphs"), list):
            raise err("must be a list of paragraphs", f"{where}.paragraphs")
        title = art.get("title", where)
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
            for q, qa in enumerate(par["qas"]):
                qw = f"{pw}.qas[{q}]"
                question = qa.get("question") if isinstance(qa, dict) else None
                if not isinstance(question, str) or not question.strip():
                    raise err("must be a non-empty string", f"{qw}.question")
                ans = qa.get("answers")
                if not isinstance(ans, list) or not ans:
                    raise err("must be a non-empty list", f"{qw}.answers")
                first = (None, None)
                for i, an in enumerate(ans):
                    text = an.get("text") if isinstance(an, dict) else None
                    start = an.get("answer_start") if isinstance(an, dict) else None
                    if not isinstance(text, str) or not text:
                        raise err("must be a non-empty string", f"{qw}.answers[{i}].text")
                    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
                        raise err(
                            "must be a non-negative integer", f"{qw}.answers[{i}].answer_start"
                        )
                    if ctx[start : start + len(text)] != text:
                        raise err(
                            f"context has {ctx[start : start + len(text)]!r} there, "
                            f"not the answer {text!r}",
                            f"{qw}.answers[{i}].answer_start",
                        )
                    if i == 0:
                        first = (start, text)
                start, text = first
                hit = [j for j, (s, t) in enumerate(spans) if s < start + len(text) and start < t]
                if not hit:
                    raise err("answer lies in no sentence", f"{qw}.answers[0].answer_start")
                answered[hit] = True
                sentence = ctx[spans[hit[0]][0] : spans[hit[-1]][1]].strip()
                if sentence not in seen:  # one question per target sentence
                    seen.add(sentence)
                    targets.append((sentence, question.strip(), text, str(title)))
            for j in np.flatnonzero(~answered):
                unrelated.append((ctx[spans[j][0] : spans[j][1]].strip(), str(title)))
    if not targets:
        raise err("holds no answerable questions", "data")
    return SquadPool(path, tuple(targets), tuple(unrelated))


def squad_episodes(
    pool: SquadPool,
    episodes: int = 150,
    n_items: int = 10,
    n_queries: int = 2,
    density: float = 0.3,
    seed: int = 0,
) -> Episodes:
    """Streams of answer sentences (targets) and unrelated sentences (distractors); queries are the questions."""
    n_d = n_distractors(density, n_items)
    n_f = n_items - n_d
    if len(pool.targets) < n_f or len(pool.unrelated) < n_d:
        raise InputError(
            f"needs {n_f} answer sentences and {n_d} unrelated sentences per "
            f"stream, the file has {len(pool.targets)} and {len(pool.unrelated)}",
            path=pool.path,
            field="data",
        )
    st = _Streams(episodes, n_items, n_queries)
    for e in range(episodes):
        rng = episode_rng(seed, "squad-episode", e)
        d_pos = np.sort(rng.choice(n_items, n_d, replace=False))
        facts = rng.choice(len(pool.targets), n_f, replace=False)
        others = rng.choice(len(pool.unrelated), n_d, replace=False)
        which = rng.integers(n_f, size=n_queries)
        f_pos = st.place(e, d_pos)
        for pos, i in zip(f_pos, facts, strict=True):
            st.text_id[e, pos] = st.texts(pool.targets[i][0])
        for pos, i in zip(d_pos, others, strict=True):
            st.text_id[e, pos] = st.texts(pool.unrelated[i][0])
        st.target[e] = f_pos[which]
        for q, w in enumerate(which):
            _, question, answer, _ = pool.targets[facts[w]]
            st.query_id[e, q] = st.queries(question)
            st.answers[e, q] = answer
    params = {"density": density, "queries": "questions", "seed": seed}
    return st.done(f"squad:{Path(pool.path).name}", params)


def token_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """The token set of each text (the lexical encoder's tokenizer)."""
    return [frozenset(tokenize(t)) for t in texts]
