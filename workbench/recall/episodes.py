"""Streaming-recall episodes: seeded synthetic fact streams (SQuAD v1.1-format streams: `squad`).

An episode is a stream of N observations (facts and distractors) followed by Q queries; each
query targets one non-distractor fact. Texts live in one table (`Episodes.texts`) and episodes
hold indices into it, so an encoder sees each unique text once. An observation answers a query
when its text is the target's text (`Episodes.required`): a fact restated later in the stream
answers from either copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.common.encoders import tokenize
from workbench.common.seeds import rng

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


def episode_rng(seed: int, name: str, episode: int) -> np.random.Generator:
    """The generator for one (purpose, episode): adding a rule or an episode changes no other draw."""
    return rng(seed, name, episode)


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


class Streams:
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
    st = Streams(episodes, n_items, n_queries)
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


def token_sets(texts: Sequence[str]) -> list[frozenset[str]]:
    """The token set of each text (the lexical encoder's tokenizer)."""
    return [frozenset(tokenize(t)) for t in texts]
