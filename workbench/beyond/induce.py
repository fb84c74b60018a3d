"""Induce a DSGC graph from the text alone.

- `mentions` (recommended, the default): blocks that share a rare mention (a code in any style,
  a name, a number with its unit, a content-word pair) are linked, weighted by the mention's
  rarity in the scenario, directed by mention order then the query (`workbench.beyond.mentions`);
  every edge carries a confidence.
- `gated-knn`: embedding nearest neighbours (as `knn`), kept only where the two blocks also
  share a mention, each edge's confidence its cosine: an embedding pairing that cannot swamp the
  ranking with pairs the text gives no reason for.
- `handles`: a block that names an identifier another block defines depends on that block (the
  closure study's rule, `workbench.common.handles.Patterns`, with patterns written from this
  benchmark's generator: they find nothing in text written otherwise).
- `knn`: each block is linked to its k most similar other blocks whose cosine is at least a
  threshold; the more query-similar block of a pair depends on the less similar one.

Edges are `(dependent, prerequisite)` block ids, sorted by store position, like a scenario's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.beyond.mentions import FALLBACK, mentions
from workbench.beyond.rules import links as rule_links
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns
from workbench.common.options import check_number
from workbench.dsgc.generator import PROJECTS, SERVICES, USERS
from workbench.dsgc.scenario import Scenario

# --- the handle rule ---------------------------------------------------------------------------

# The benchmark's identifiers: change tickets (RT-123), one capital and one or two digits (access
# bundles K47, clearances R3, relay profiles Q47, machine units, and also meeting rooms B12, which
# no chain uses), and the generator's user, service and project names.
_NAMES = "|".join(sorted(map(re.escape, (*USERS, *SERVICES, *PROJECTS))))
IDENTIFIER = rf"RT-\d{{3}}|[A-Z]\d{{1,2}}|{_NAMES}"
BENCHMARK_PATTERNS = Patterns(
    handle=rf"\b(?:{IDENTIFIER})\b",
    # defined where it is introduced as the object of "in / onto / under / names", with up to two
    # lowercase words between ("placed in access bundle K47", "names relay profile Q47"); every
    # other mention is a reference
    definition=rf"\b(?:in|onto|under|names)\s+(?:[a-z]+\s+){{0,2}}({IDENTIFIER})\b",
    tombstone=r"(?!)",  # blocks carry no tombstones
)
"""The default patterns: how this benchmark's generator writes and introduces identifiers."""


def check_patterns(patterns: Patterns) -> Patterns:
    """The patterns, if they compile with the shape `scan` needs (handle: no capturing group;
    definition: exactly one, the handle); else a ValueError saying which."""
    for name, want in (("handle", 0), ("definition", 1), ("tombstone", 1)):
        text = getattr(patterns, name)
        try:
            rx = re.compile(text)
        except re.error as e:
            raise ValueError(f"{name} pattern {text!r} does not compile: {e}") from None
        if name != "tombstone" and rx.groups != want:
            raise ValueError(
                f"{name} pattern {text!r} must have {want} capturing group(s), has {rx.groups}"
            )
    return patterns


def _scans(scenario: Scenario, patterns: Patterns, memo: dict | None) -> list:
    """(refs, defs, tombstones) per block, each distinct text scanned once (`memo` may be shared
    across scenarios: the benchmark's fillers and honeypots repeat)."""
    memo = {} if memo is None else memo
    for b in scenario.blocks:
        if b.text not in memo:
            memo[b.text] = patterns.scan(b.text)
    return [memo[b.text] for b in scenario.blocks]


def handle_edges(
    scenario: Scenario, patterns: Patterns = BENCHMARK_PATTERNS, _memo: dict | None = None
) -> tuple[tuple[str, str], ...]:
    """(dependent, prerequisite) pairs: a block referencing a handle it does not define itself
    depends on every other block that defines it (store order carries no time here)."""
    scans = _scans(scenario, patterns, _memo)
    definers: dict[str, list[int]] = {}
    for i, (_, defs, _) in enumerate(scans):
        for h in defs:
            definers.setdefault(h, []).append(i)
    edges = set()
    for i, (refs, defs, _) in enumerate(scans):
        for h in refs - defs:
            edges.update((i, j) for j in definers.get(h, ()) if j != i)
    ids = scenario.ids
    return tuple((ids[d], ids[p]) for d, p in sorted(edges))


@dataclass(frozen=True)
class Identifiers:
    """What one true edge's two blocks share: any identifier, and a hand-off (the dependent
    references an identifier the prerequisite defines)."""

    shared: bool
    handed_off: bool


def identifiers_on_edges(
    scenario: Scenario, patterns: Patterns = BENCHMARK_PATTERNS, _memo: dict | None = None
) -> list[Identifiers]:
    """For each of the scenario's own edges: do its blocks share / hand off an identifier?"""
    pos = scenario.index()
    scans = _scans(scenario, patterns, _memo)
    out = []
    for d, p in scenario.edges:
        (rd, dd, _), (rp, dp, _) = scans[pos[d]], scans[pos[p]]
        out.append(Identifiers(bool(rd & rp), bool((rd - dd) & dp)))
    return out


# --- the nearest-neighbour rule ------------------------------------------------------------------

KNN_K = 2
# Chosen once on seeds 1000:1100 of the two targets at 20 and 50 blocks (seeds the notebook never
# evaluates): direction 'query', the (k, threshold) with the best directed edge F1 over k in
# {1, 2, 3} and thresholds 0.1, 0.2, ..., 0.9 (`knn_tuning`; the record is
# data/results/beyond_knn_tuning.csv). Cosines run higher under the lexical encoder's shared
# function words, hence one threshold per encoder.
KNN_THRESHOLDS = {"lexical": 0.2, "sentence": 0.4}
DIRECTIONS = ("query", "store", "both")


def knn_pairs(
    emb: np.ndarray,
    q: np.ndarray,
    k: int = KNN_K,
    threshold: float = 0.3,
    direction: str = "query",
) -> list[np.ndarray]:
    """The kNN rule on a stack of scenarios of one size: `emb` (S, N, d), `q` (S, d); for each
    scenario an (|E|, 2) array of (dependent, prerequisite) positions, sorted."""
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; choose one of {', '.join(DIRECTIONS)}")
    k = check_number("k", k)
    s, n, _ = emb.shape
    if n < 2:
        return [np.zeros((0, 2), dtype=np.int64) for _ in range(s)]
    sim = np.einsum("snd,smd->snm", emb, emb)  # every pair, every scenario (no BLAS threads)
    diag = np.arange(n)
    sim[:, diag, diag] = -np.inf
    near = np.argsort(-sim, axis=2, kind="stable")[:, :, : min(k, n - 1)]  # ties: store order
    row, blk, slot = np.nonzero(np.take_along_axis(sim, near, 2) >= threshold)
    other = near[row, blk, slot]
    key = np.unique((row * n + np.minimum(blk, other)) * n + np.maximum(blk, other))
    row, a, b = key // (n * n), (key // n) % n, key % n  # each linked pair once, a < b
    if direction == "both":
        row, dep, pre = np.concatenate([row, row]), np.concatenate([a, b]), np.concatenate([b, a])
    elif direction == "store":
        dep, pre = b, a  # the later block depends on the earlier one
    else:
        qs = (emb @ q[:, :, None])[..., 0]
        later = qs[row, b] >= qs[row, a]  # the more query-similar block depends (ties: later)
        dep, pre = np.where(later, b, a), np.where(later, a, b)
    order = np.lexsort((pre, dep, row))
    row, dep, pre = row[order], dep[order], pre[order]
    cuts = np.searchsorted(row, np.arange(s + 1))
    pairs = np.stack([dep, pre], axis=1)
    return [pairs[cuts[i] : cuts[i + 1]] for i in range(s)]


def knn_edges(
    scenario: Scenario,
    emb: np.ndarray,
    q: np.ndarray,
    k: int = KNN_K,
    threshold: float = 0.3,
    direction: str = "query",
) -> tuple[tuple[str, str], ...]:
    """Link each block to its k most similar other blocks (cosine of normalized rows, ties by
    store order) when the cosine is at least `threshold`; each linked pair becomes one edge.

    direction 'query': the more query-similar block depends on the less similar one (support
    flows from query-facing blocks down to the valley, as DSGC's does; ties: the later block
    depends on the earlier); 'store': the later block depends on the earlier one; 'both': each
    pair gives two edges, one each way.
    """
    (pairs,) = knn_pairs(emb[None], q[None], k, threshold, direction)
    ids = scenario.ids
    return tuple((ids[d], ids[p]) for d, p in pairs.tolist())


def knn_threshold(encoder: str) -> float:
    """The default kNN cosine threshold for an encoder name (0.3 for an unknown encoder)."""
    return KNN_THRESHOLDS.get(encoder, 0.3)


# --- paraphrase, gated --------------------------------------------------------------------------

# A paraphrase link (the sentence encoder's, between blocks no mention joins): from each of the
# PARA_SOURCES blocks nearest the query to the block no mention joins it to that is most like it
# and least like the query (cosine to it minus cosine to the query: what the query-facing block
# says that the query does not), when the two are at least PARA_MIN alike; at most one a scenario
# (the most alike), at PARA_WEIGHT times the cosine, so it is weaker than any mention link
# (MIN_CONFIDENCE) and cannot swamp the ranking. Chosen, not tuned: the record in
# data/calibration/inducer.md gives what it does on every tier.
PARA_SOURCES = 2
PARA_MIN = 0.35
PARA_WEIGHT = 0.4


def paraphrase_link(
    emb: np.ndarray, q: np.ndarray, joined: set[tuple[int, int]]
) -> tuple[int, int, float] | None:
    """(dependent, prerequisite, confidence) of one scenario's paraphrase link, or None: `emb`
    its blocks' normalized sentence embeddings (N, d), `q` the query's, `joined` the pairs
    (a, b), a < b, that a mention already links."""
    if len(emb) < 2:
        return None
    qs = emb @ q
    best = None
    for i in np.argsort(-qs, kind="stable")[:PARA_SOURCES].tolist():
        sim = emb @ emb[i]  # one row a source: no all-pairs matrix
        r = sim - qs
        r[i] = -np.inf
        r[[b if a == i else a for a, b in joined if i in (a, b)]] = -np.inf
        j = int(np.argmax(r))
        if sim[j] >= PARA_MIN and (best is None or sim[j] > best[2]):
            best = (i, j, float(sim[j]))
    if best is None:
        return None
    return best[0], best[1], round(min(PARA_WEIGHT * best[2], PARA_WEIGHT), 6)


# --- every method, over a list of scenarios ------------------------------------------------------

METHODS = ("mentions", "gated-knn", "handles", "knn")
RECOMMENDED = "mentions"


def induce(scenarios: Sequence[Scenario], *args, **kw) -> list[tuple[tuple[str, str], ...]]:
    """One induced edge list per scenario (the arguments of `induce_weighted`, which gives the
    confidences too)."""
    return [e for e, _ in induce_weighted(scenarios, *args, **kw)]


def induce_weighted(
    scenarios: Sequence[Scenario], *args, **kw
) -> list[tuple[tuple[tuple[str, str], ...], tuple[float, ...] | None]]:
    """(edges, confidence per edge or None) per scenario: `induce_ruled` (its arguments) without
    the rules."""
    return [(e, c) for e, c, _ in induce_ruled(scenarios, *args, **kw)]


def induce_ruled(
    scenarios: Sequence[Scenario],
    method: str = RECOMMENDED,
    encoder=None,
    patterns: Patterns = BENCHMARK_PATTERNS,
    k: int = KNN_K,
    threshold: float | None = None,
    direction: str = "query",
    paraphrase=None,
    fallback: str = FALLBACK,
):
    """(edges, confidence per edge or None, the rule that decided each edge's direction or None)
    per scenario. `encoder` is needed by the knn methods (its threshold defaults to the encoder's
    `KNN_THRESHOLDS` entry); the mentions method gives each edge a `mentions.RULES` name or
    'paraphrase': `paraphrase` (a sentence encoder) adds its gated link (`paraphrase_link`), and
    `fallback` is its direction where no role decides (`mentions.FALLBACK`)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method == "mentions":
        if paraphrase is not None:
            texts = sorted({t for sc in scenarios for t in [sc.query, *sc.texts]})
            row = {t: i for i, t in enumerate(texts)}
            emb = paraphrase(texts)  # one batch: every unique text once
        out = []
        for sc in scenarios:
            links = rule_links(sc.texts, sc.query, fallback)
            ids = sc.ids
            edges = [(ids[x.dependent], ids[x.prerequisite]) for x in links]
            conf = [x.confidence for x in links]
            rules = [x.rule for x in links]
            if paraphrase is not None:
                joined = {tuple(sorted((x.dependent, x.prerequisite))) for x in links}
                e = emb[[row[t] for t in sc.texts]]
                found = paraphrase_link(e, emb[row[sc.query]], joined)
                if found:
                    edges.append((ids[found[0]], ids[found[1]]))
                    conf.append(found[2])
                    rules.append("paraphrase")
            pos = sc.index()
            order = sorted(range(len(edges)), key=lambda i: (pos[edges[i][0]], pos[edges[i][1]]))
            out.append(tuple(tuple(x[i] for i in order) for x in (edges, conf, rules)))
        return out
    if method == "handles":
        check_patterns(patterns)
        memo: dict = {}
        return [(handle_edges(sc, patterns, memo), None, None) for sc in scenarios]
    if encoder is None:
        raise ValueError(f"the {method} inducer needs an encoder")
    if threshold is None:
        threshold = knn_threshold(encoder.name)
    texts = sorted({t for sc in scenarios for t in [sc.query, *sc.texts]})
    row = {t: i for i, t in enumerate(texts)}
    emb = encoder(texts)  # one batch: every unique text once
    out: list = [None] * len(scenarios)
    groups: dict[int, list[int]] = {}
    for i, sc in enumerate(scenarios):
        groups.setdefault(len(sc.blocks), []).append(i)
    for members in groups.values():  # one stacked pass per store size
        blocks = np.array([[row[t] for t in scenarios[i].texts] for i in members])
        queries = np.array([row[scenarios[i].query] for i in members])
        found = knn_pairs(emb[blocks], emb[queries], k, threshold, direction)
        for i, pairs, b in zip(members, found, blocks, strict=True):
            ids = scenarios[i].ids
            pairs = pairs.tolist()
            if method == "gated-knn":  # only pairs the text gives a reason for
                ms = [mentions(t) for t in scenarios[i].texts]
                pairs = [(d, q) for d, q in pairs if ms[d] & ms[q]]
                cos = [float(np.clip(emb[b[d]] @ emb[b[q]], 1e-6, 1.0)) for d, q in pairs]
                out[i] = (
                    tuple((ids[d], ids[q]) for d, q in pairs),
                    tuple(round(c, 6) for c in cos),
                    None,
                )
            else:
                out[i] = (tuple((ids[d], ids[q]) for d, q in pairs), None, None)
    return out


def graph_source(method: str):
    """A graph source for the protocol runner (`runs.run_protocol(..., sources=...)`): the
    inducer `method` as a function (scenarios, encoder name) -> [(edges, confidence)]."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")

    def source(scenarios, encoder: str):
        if method in ("knn", "gated-knn"):
            return induce_weighted(scenarios, method, get_encoder(encoder))
        return induce_weighted(scenarios, method)

    return source


SOURCES = {m: graph_source(m) for m in METHODS}  # every inducer, by the name a protocol gives


def with_induced(
    scenario: Scenario, edges, method: str, confidence=None, rules=None, **params
) -> Scenario:
    """The scenario with induced edges (and their confidences, written as `edge_confidence`, and
    the rule that decided each one's direction as `edge_rule`); its given edges (if any) kept as
    metadata `given_edges`."""
    out = scenario.with_edges(edges, confidence)
    meta = out.metadata
    meta.pop("edge_rule", None)  # a rule list of earlier edges says nothing of these
    if rules is not None:
        meta["edge_rule"] = list(rules)
    if scenario.edges and "given_edges" not in meta:
        meta["given_edges"] = [list(e) for e in scenario.edges]
    meta["induced"] = {"method": method, **params}
    return out


@dataclass(frozen=True)
class EdgeScore:
    """Induced edges against the true ones (directed): counts, precision and recall."""

    induced: int
    true: int
    hit: int

    @property
    def precision(self) -> float:
        return self.hit / self.induced if self.induced else float("nan")

    @property
    def recall(self) -> float:
        return self.hit / self.true if self.true else float("nan")

    def __repr__(self) -> str:
        return f"EdgeScore({self.hit} of {self.induced} induced edges true, {self.hit} of {self.true} true edges found)"


def score_edges(induced, true) -> EdgeScore:
    """Directed edge precision and recall of one induced edge list against the true one."""
    a, b = set(map(tuple, induced)), set(map(tuple, true))
    return EdgeScore(len(a), len(b), len(a & b))


def score_pairs(induced, true) -> EdgeScore:
    """As score_edges, with each edge taken as an unordered pair of blocks (direction ignored)."""
    a, b = {frozenset(e) for e in induced}, {frozenset(e) for e in true}
    return EdgeScore(len(a), len(b), len(a & b))


def knn_tuning(
    scenarios: Sequence[Scenario],
    encoder,
    ks=(1, 2, 3),
    thresholds=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    direction: str = "query",
):
    """Directed edge precision, recall and F1 (pooled) of the kNN inducer at each k x threshold:
    how the defaults were chosen (run it on seeds outside the study)."""
    rows = []
    for k in ks:
        for th in thresholds:
            lists = induce(scenarios, "knn", encoder, k=k, threshold=th, direction=direction)
            tot = [0, 0, 0]
            for sc, es in zip(scenarios, lists, strict=True):
                s = score_edges(es, sc.edges)
                tot = [tot[0] + s.induced, tot[1] + s.true, tot[2] + s.hit]
            p = tot[2] / tot[0] if tot[0] else 0.0
            r = tot[2] / tot[1] if tot[1] else 0.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            rows.append((encoder.name, direction, k, th, tot[0] / len(scenarios), p, r, f1))
    cols = ["encoder", "direction", "k", "threshold", "edges_per_scenario"]
    return pd.DataFrame(rows, columns=[*cols, "precision", "recall", "f1"])
