"""The fast ranking and the partial sort against the reference: same kept set, same order, ties
included (adversarial ties: a handful of distinct scores and similarities, signed zeros)."""

import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.dsgc.policies import (
    PARTIAL_FROM,
    PolicySetting,
    rank,
    rank_select_partial,
    select,
    similarity_only,
    top_k,
)


def reference_rank(scores, tiebreak=None):
    """The obviously-right ranking: a stable lexsort on (-scores, -tiebreak, position)."""
    keys = [np.arange(len(scores))]
    if tiebreak is not None:
        keys.append(-tiebreak)
    keys.append(-scores)
    return np.lexsort(keys)


@st.composite
def tied_stores(draw, max_n=300):
    """Scores and similarities from tiny value sets, so ties (on both keys, at the head's cut
    too) are the common case; costs, budget, the first head size and the growth factor vary."""
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scores = rng.integers(0, draw(st.integers(1, 6)), n).astype(np.float64) / 8.0
    sims = rng.integers(0, draw(st.integers(1, 4)), n).astype(np.float64) / 4.0 - 0.25
    if draw(st.booleans()):  # signed zeros compare equal: they must tie, not split
        scores[rng.random(n) < 0.3] = -0.0
        sims[rng.random(n) < 0.3] = -0.0
    costs = rng.integers(1, draw(st.integers(2, 30)), n).astype(np.int64)
    budget = draw(st.integers(0, int(costs.sum()) + 5))
    return scores, sims, costs, budget, draw(st.integers(1, 40)), draw(st.integers(2, 5))


@settings(max_examples=150, deadline=None)
@given(tied_stores(), st.booleans())
def test_rank_equals_the_stable_lexsort(store, with_tiebreak):
    scores, sims, *_ = store
    tb = sims if with_tiebreak else None
    assert np.array_equal(rank(scores, tb), reference_rank(scores, tb))


@settings(max_examples=150, deadline=None)
@given(tied_stores(), st.integers(1, 300), st.booleans())
def test_top_k_is_exactly_the_rankings_prefix(store, k, with_tiebreak):
    scores, sims, *_ = store
    tb = sims if with_tiebreak else None
    k = min(k, len(scores))
    mask = top_k(scores, tb, k)
    assert mask.sum() == k
    assert set(np.flatnonzero(mask).tolist()) == set(reference_rank(scores, tb)[:k].tolist())


@settings(max_examples=300, deadline=None)
@given(tied_stores(), st.booleans())
def test_partial_path_keeps_what_the_full_walk_keeps(store, with_tiebreak):
    scores, sims, costs, budget, k0, grow = store
    tb = sims if with_tiebreak else None
    full = reference_rank(scores, tb)
    head, kept = rank_select_partial(scores, tb, costs, budget, k=k0, grow=grow)
    assert np.array_equal(kept, select(full, costs, budget))  # same set
    assert np.array_equal(head, full[: len(head)])  # the head is the ranking's prefix
    assert kept.sum() == kept[head].sum() or kept.all()  # what is kept lies in the head
    # same order: the kept blocks in head order are the kept blocks in full-ranking order
    assert np.array_equal(head[kept[head]], full[kept[full]][: int(kept[head].sum())])


def test_partial_walk_stops_only_when_nothing_else_can_fit():
    """A mutant that stops at the first block that does not fit would fail here: the cheap
    block far down the ranking still fits after the head's expensive ones are skipped."""
    n = 5000
    scores = np.linspace(1.0, 0.0, n)
    costs = np.full(n, 50, dtype=np.int64)
    costs[4000] = 1
    head, kept = rank_select_partial(scores, None, costs, 101, k=16)
    assert kept[4000] and kept.sum() == 3
    assert np.array_equal(kept, select(reference_rank(scores), costs, 101))


def _store(n, d, rng, dupes=False):
    emb = rng.standard_normal((n, d)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    if dupes:  # identical rows: identical similarities, ties everywhere
        emb[n // 2 :] = emb[: n - n // 2]
    q = rng.standard_normal(d)
    q /= np.linalg.norm(q)
    edges = rng.integers(0, n, size=(n, 2))
    costs = rng.integers(1, 16, size=n)
    return emb, q, edges, costs


def test_policies_on_a_large_store_equal_the_full_sort(global_seed):
    """Past PARTIAL_FROM blocks the policies sort only the head; the Retention they return
    (kept set, head, lazily completed order) equals the full sort's."""
    rng = np.random.default_rng(global_seed)
    n = 3 * PARTIAL_FROM
    emb, q, edges, costs = _store(n, 16, rng, dupes=True)
    for budget in (60, 5000, int(costs.sum())):
        for policy in (
            PolicySetting(),
            PolicySetting("no-graph"),
            similarity_only,
        ):
            ret = policy(emb, q, edges, costs, budget)
            full = reference_rank(ret.scores, None if policy is similarity_only else ret.sims)
            assert len(ret.head) < n or budget == int(costs.sum())
            assert np.array_equal(ret.kept, select(full, costs, budget))
            assert np.array_equal(ret.head, full[: len(ret.head)])
            assert np.array_equal(ret.order, full)


def test_a_float32_store_is_never_upcast():
    """The query takes the matrix's dtype: the step's extra memory stays a small fraction of a
    float32 matrix (a float64 query would allocate a float64 copy, twice the matrix)."""
    rng = np.random.default_rng(0)
    emb, q, edges, costs = _store(100_000, 64, rng)
    tracemalloc.start()
    PolicySetting()(emb, q, edges, costs, 60)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.5 * emb.nbytes, peak / emb.nbytes
