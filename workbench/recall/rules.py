"""Retention rules (online, capacity K) and selection rules (top-k over the survivors).

Retention sees the stream one observation at a time and never the query: each step admits the
new observation and, if the buffer holds K + 1, evicts the item with the lowest priority (the
oldest among ties). Selection scores every (query, item) pair; ranking puts survivors first,
then higher score, then newer item, and exposes the top k survivors.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.common.encoders import get_encoder
from workbench.recall.episodes import Episodes, episode_rng, token_sets

RETENTION_RULES = ("recency", "random", "frequency", "type_oracle", "unbounded")
SELECTION_RULES = ("recency", "random", "query", "dense", "oracle")
QUERY_AWARE = frozenset({"query", "dense"})  # selectors whose score is similarity to the query
DENSE_DECIMALS = 6  # cosines are rounded so float noise across machines cannot reorder near-ties


def _per_episode(seed: int, name: str, n_episodes: int, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform keys drawn episode by episode from their own generators: (E, *shape)."""
    return np.stack([episode_rng(seed, name, e).random(shape) for e in range(n_episodes)])


def _incidence(sets: list[frozenset[str]], vocab: dict[str, int]) -> np.ndarray:
    """(n, |vocab|) float32 0/1 matrix of which vocabulary tokens each set holds."""
    out = np.zeros((len(sets), len(vocab)), dtype=np.float32)
    for i, s in enumerate(sets):
        cols = [vocab[t] for t in s if t in vocab]
        out[i, cols] = 1.0
    return out


def shared_tokens(ep: Episodes) -> np.ndarray:
    """(E, N, N) number of distinct tokens items n and m of one stream share."""
    sets = token_sets(ep.texts)
    df: dict[str, int] = {}
    for s in sets:
        for t in s:
            df[t] = df.get(t, 0) + 1
    # tokens in a single unique text can only be shared with another copy of that same text
    vocab = {t: i for i, t in enumerate(sorted(t for t, c in df.items() if c > 1))}
    inc = _incidence(sets, vocab)
    private = np.array([len(s) for s in sets], dtype=np.float32) - inc.sum(1)
    x = inc[ep.text_id]  # (E, N, V)
    inter = x @ np.swapaxes(x, 1, 2)
    same = ep.text_id[:, :, None] == ep.text_id[:, None, :]
    return inter + same * private[ep.text_id][:, :, None]


def _priorities(rule: str, ep: Episodes, seed: int) -> Callable[[int], np.ndarray]:
    """For a rule, a function from step t to the (E, N) eviction priority (lowest goes first)."""
    E, N = ep.text_id.shape
    pos = np.broadcast_to(np.arange(N, dtype=np.float64), (E, N))
    if rule == "recency":
        return lambda t: pos
    if rule == "type_oracle":  # privileged: knows which items are distractors, drops them first
        low = pos - N * ep.distractor
        return lambda t: low
    if rule == "random":  # random replacement: fresh uniform keys at every step
        keys = _per_episode(seed, "retention:random", E, (N, N))
        return lambda t: keys[:, t, :]
    if rule == "frequency":  # keep items whose words recur most in the stream so far
        # With unique slots and values, items share only "the" and "is": every priority ties and
        # the rule evicts the oldest, as recency does, unless a fact is restated (repeats > 0).
        cum = np.cumsum(shared_tokens(ep), axis=2)  # (E, n, t): tokens of n seen up to step t
        size = np.array([len(s) for s in token_sets(ep.texts)], dtype=np.float64)[ep.text_id]
        size = np.maximum(size, 1.0)
        return lambda t: np.round(cum[:, :, t] / size, 9)
    raise ValueError(f"unknown retention rule {rule!r}; choose one of {', '.join(RETENTION_RULES)}")


def retain(rule: str, ep: Episodes, K: int, seed: int = 0) -> np.ndarray:
    """(E, N) bool: which observations survive the stream under the rule with capacity K."""
    if K < 1:
        raise ValueError(f"capacity K must be at least 1, got {K}")
    E, N = ep.text_id.shape
    if rule == "unbounded":
        return np.ones((E, N), dtype=bool)
    priority = _priorities(rule, ep, seed)
    kept = np.zeros((E, N), dtype=bool)
    rows = np.arange(E)
    for t in range(N):  # one vectorized step per arrival, across all episodes
        kept[:, t] = True
        over = kept.sum(1) > K
        if over.any():
            victim = np.where(kept, priority(t), np.inf).argmin(1)  # first min = oldest on ties
            kept[rows[over], victim[over]] = False
    return kept


def jaccard_scores(ep: Episodes) -> np.ndarray:
    """(E, Q, N) Jaccard overlap of query and item token sets."""
    qsets, tsets = token_sets(ep.queries), token_sets(ep.texts)
    vocab = {t: i for i, t in enumerate(sorted(set().union(*qsets)))}
    qi, ti = _incidence(qsets, vocab), _incidence(tsets, vocab)
    inter = qi[ep.query_id] @ np.swapaxes(ti[ep.text_id], 1, 2)
    qn = np.array([len(s) for s in qsets], dtype=np.float64)[ep.query_id][:, :, None]
    tn = np.array([len(s) for s in tsets], dtype=np.float64)[ep.text_id][:, None, :]
    union = qn + tn - inter
    return np.round(np.divide(inter, union, out=np.zeros_like(union), where=union > 0), 9)


def dense_scores(ep: Episodes, encoder) -> np.ndarray:
    """(E, Q, N) cosine of query and item embeddings; each unique text is encoded once, in batch."""
    tv = encoder(list(ep.texts))
    qv = encoder(list(ep.queries))
    sims = np.einsum("eqd,end->eqn", qv[ep.query_id], tv[ep.text_id])
    return np.round(sims, DENSE_DECIMALS)


def selection_scores(rule, ep: Episodes, seed: int = 0, encoder=None) -> np.ndarray:
    """(E, Q, N) scores of a selection rule (higher is better); a callable rule is fn(episodes)."""
    if callable(rule):
        return np.asarray(rule(ep), dtype=np.float64)
    E, Q, N = ep.n_episodes, ep.n_queries, ep.n_items
    shape = (E, Q, N)
    if rule == "recency":
        return np.broadcast_to(np.arange(N, dtype=np.float64), shape).copy()
    if rule == "random":
        return _per_episode(seed, "selection:random", E, (Q, N))
    if rule == "query":
        return jaccard_scores(ep)
    if rule == "dense":
        if encoder is None:
            encoder = get_encoder("sentence")
        return dense_scores(ep, encoder)
    if rule == "oracle":  # privileged: knows the required fact (every copy of it)
        return ep.required.astype(np.float64)
    raise ValueError(f"unknown selection rule {rule!r}; choose one of {', '.join(SELECTION_RULES)}")


def expose(scores: np.ndarray, kept: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k over survivors: (E, Q, N) exposed mask and 0-based rank (survivors first, newer wins ties)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    E, Q, N = scores.shape
    alive = np.broadcast_to(kept[:, None, :], (E, Q, N))
    newer = np.broadcast_to(-np.arange(N), (E, Q, N))
    order = np.lexsort((newer, -scores, ~alive), axis=-1)  # last key is the primary key
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(N), axis=-1)
    return (rank < k) & alive, rank
