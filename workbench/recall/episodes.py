"""Streaming-recall episodes: seeded synthetic fact streams and SQuAD v1.1-format streams.

An episode is a stream of N observations (facts and distractors) followed by Q queries; each
query targets one non-distractor fact. Texts live in one table (`Episodes.texts`) and episodes
hold indices into it, so an encoder sees each unique text once. An observation answers a query
when its text is the target's text (`Episodes.required`): a fact restated later in the stream
answers from either copy.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.common.encoders import tokenize
from workbench.common.io import InputError, read_json

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
# Variants of the distractor construction, for the RQ3 study of dense type filtering (see
# grid.dense_construction_study). "ambient" is the default above. The others were picked to
# span kinds of nouns (people, invented words, discourse fillers); none is the seed's, which
# it does not publish.
DISTRACTOR_VOCABULARIES = {
    "ambient": DISTRACTOR_SLOTS,
    "kin": (
        "aunt",
        "uncle",
        "cousin",
        "nephew",
        "niece",
        "grandson",
        "granddaughter",
        "stepfather",
        "stepmother",
        "godson",
        "goddaughter",
        "brother",
        "sister",
        "father",
        "mother",
        "grandfather",
        "grandmother",
        "husband",
        "wife",
        "son",
    ),
    "pseudo": (
        "blick",
        "wug",
        "dax",
        "fep",
        "toma",
        "zorp",
        "kiki",
        "bouba",
        "glorp",
        "snib",
        "tulver",
        "frimble",
        "quonk",
        "vesh",
        "plim",
        "drabe",
        "yorl",
        "mib",
        "skee",
        "grint",
    ),
    "filler": (
        "thing",
        "stuff",
        "situation",
        "matter",
        "point",
        "case",
        "deal",
        "issue",
        "story",
        "part",
        "way",
        "kind",
        "sort",
        "bit",
        "lot",
        "fact",
        "side",
        "end",
        "rest",
        "whole",
    ),
}
# Distractor values that no fact uses (an option; by default distractors draw from VALUES).
DISJOINT_VALUES = (
    "mild",
    "loud",
    "gloomy",
    "faint",
    "steady",
    "sparse",
    "heavy",
    "damp",
    "bright",
    "stale",
    "brisk",
    "dull",
)
INFORMATIVE = "What is the {slot} ?"
UNINFORMATIVE = "What is the value?"  # one token differs; "value" appears in no fact
MARKER = "[distractor]"  # the literal marker of the artifact study
QUERY_FORMS = ("informative", "uninformative")
SYNTHETIC = "synthetic"  # the source label of generated streams


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
    target: np.ndarray  # (E, Q) int stream position of the required fact (its last copy)
    answers: np.ndarray  # (E, Q) object: the gold answer, a string or a tuple of strings
    source: str = SYNTHETIC  # "synthetic", "fixture" or the path of a data file
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

    @property
    def required(self) -> np.ndarray:
        """(E, Q, N) which observations answer each query: every copy of the target's text."""
        tid = np.take_along_axis(self.text_id, self.target, axis=1)  # (E, Q)
        return self.text_id[:, None, :] == tid[:, :, None]

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


def _restatements(rng: np.random.Generator, n_f: int, repeats: int) -> np.ndarray:
    """(n_f,) which earlier fact each fact position states: itself, or an earlier original.

    `repeats` of the fact positions after the first restate a uniformly drawn earlier original.
    """
    source = np.arange(n_f)
    if repeats:
        later = np.sort(rng.choice(np.arange(1, n_f), repeats, replace=False))
        for j in later:
            originals = np.flatnonzero(source[:j] == np.arange(j))
            source[j] = rng.choice(originals)
    return source


def make_episodes(
    episodes: int = 300,
    n_items: int = 10,
    n_queries: int = 2,
    density: float = 0.3,
    queries: str = "informative",
    marker: bool = False,
    seed: int = 0,
    repeats: int = 0,
    distractor_slots: str = "ambient",
    distractor_values: str = "shared",
) -> Episodes:
    """Synthetic streams of "The <slot> is <value>." with disjoint distractor slots.

    Slots and values are unique within a stream (a wrong fact never carries the right value).
    Episode e is drawn from its own generators, so the first 40 of 300 episodes equal a
    40-episode run, and the query form and marker change texts only (same slots, values and
    targets). Options beyond the seed's construction, all off by default: `repeats` fact
    observations restate an earlier fact of the stream (something for the frequency rule to
    count; targets are then uniform over the distinct facts and sit at their last copy);
    `distractor_slots` names a DISTRACTOR_VOCABULARIES entry; `distractor_values="disjoint"`
    gives distractors values from DISJOINT_VALUES instead of VALUES.
    """
    if queries not in QUERY_FORMS:
        raise ValueError(f"queries must be one of {QUERY_FORMS}, got {queries!r}")
    if episodes < 1 or n_queries < 1:
        raise ValueError("need at least one episode and one query")
    if distractor_slots not in DISTRACTOR_VOCABULARIES:
        raise ValueError(
            f"distractor_slots must be one of {tuple(DISTRACTOR_VOCABULARIES)}, "
            f"got {distractor_slots!r}"
        )
    if distractor_values not in ("shared", "disjoint"):
        raise ValueError(f"distractor_values must be shared or disjoint, got {distractor_values!r}")
    d_vocab = DISTRACTOR_VOCABULARIES[distractor_slots]
    n_d = n_distractors(density, n_items)
    n_f = n_items - n_d
    if not 0 <= repeats < n_f:
        raise ValueError(f"repeats must be in [0, {n_f}) for {n_f} facts a stream, got {repeats}")
    if n_f > len(FACT_SLOTS) or n_d > len(d_vocab):
        raise ValueError(f"a stream of {n_items} needs more unique slots than the vocabulary has")
    disjoint = distractor_values == "disjoint"
    if n_items > len(VALUES) or (disjoint and n_d > len(DISJOINT_VALUES)):
        raise ValueError(f"a stream of {n_items} needs more unique values than the vocabulary has")
    st = _Streams(episodes, n_items, n_queries)
    for e in range(episodes):
        rng = episode_rng(seed, "episode", e)
        d_pos = np.sort(rng.choice(n_items, n_d, replace=False))
        slots = rng.choice(len(FACT_SLOTS), n_f, replace=False)
        d_slots = rng.choice(len(d_vocab), n_d, replace=False)
        # Values once were drawn here with replacement; the draw is kept (unused) so that the
        # targets below stay the same draws, and the values come from their own stream.
        rng.integers(len(VALUES), size=n_items)
        which = rng.integers(n_f, size=n_queries)  # uniform over non-distractor facts
        vrng = episode_rng(seed, "values", e)
        f_pos = st.place(e, d_pos)
        # one value per position, unique in the stream; disjoint distractors then take theirs
        # from DISJOINT_VALUES, so facts keep the same values in every variant
        word = np.array([VALUES[i] for i in vrng.permutation(len(VALUES))[:n_items]], dtype=object)
        if disjoint:
            word[d_pos] = [DISJOINT_VALUES[i] for i in vrng.permutation(len(DISJOINT_VALUES))[:n_d]]
        slot_at = np.empty(n_items, dtype=object)
        slot_at[f_pos] = [FACT_SLOTS[i] for i in slots]
        slot_at[d_pos] = [d_vocab[i] for i in d_slots]
        if repeats:  # restated facts copy an earlier fact's slot and value; targets are redrawn
            rrng = episode_rng(seed, "repeats", e)
            src = f_pos[_restatements(rrng, n_f, repeats)]
            slot_at[f_pos], word[f_pos] = slot_at[src], word[src]
            distinct = f_pos[src == f_pos]
            last = {p: f_pos[src == p].max() for p in distinct}
            st.target[e] = [last[p] for p in distinct[rrng.integers(len(distinct), size=n_queries)]]
        else:
            st.target[e] = f_pos[which]
        for n in range(n_items):
            text = f"The {slot_at[n]} is {word[n]}."
            if marker and st.distractor[e, n]:
                text = f"{MARKER} {text}"
            st.text_id[e, n] = st.texts(text)
        for q, pos in enumerate(st.target[e]):
            form = (
                INFORMATIVE.format(slot=slot_at[pos]) if queries == "informative" else UNINFORMATIVE
            )
            st.query_id[e, q] = st.queries(form)
            st.answers[e, q] = word[pos]
    params = {"density": density, "queries": queries, "marker": marker, "seed": seed}
    if repeats:
        params["repeats"] = repeats
    if (distractor_slots, distractor_values) != ("ambient", "shared"):
        params["distractors"] = f"{distractor_slots}/{distractor_values}"
    return st.done(SYNTHETIC, params)


# --- SQuAD v1.1 format ----------------------------------------------------------------------

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
    a text that is nowhere in its context is an InputError naming the field. Questions without
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
    st = _Streams(episodes, n_items, n_queries)
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


def token_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """The token set of each text (the lexical encoder's tokenizer)."""
    return [frozenset(tokenize(t)) for t in texts]
