"""Policies: the vectorized code against a slow loop, hypothesis properties, the worked example."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.common.encoders import get_encoder
from workbench.dsgc.generator import worked_example
from workbench.dsgc.policies import PolicySetting, recency, select, similarity_only
from workbench.dsgc.trace import Trace, run

# --- an obviously-correct, slow re-computation -----------------------------------------------


def slow_dsgc(emb, q, edges, costs, budget, lam=1.0, tau=0.25, hops=1, delta=0.5):
    n = len(emb)
    sims = [sum(emb[i][k] * q[k] for k in range(len(q))) for i in range(n)]
    m = max(sims)
    ex = [math.exp((s - m) / tau) for s in sims]
    z = sum(ex)
    r = [e / z for e in ex]

    def support(i, h):  # relevance arriving at i from dependents exactly h hops away
        if h == 0:
            return r[i]
        return sum(support(d, h - 1) for d, p in edges if p == i)

    pi = [sum(delta ** (h - 1) * support(i, h) for h in range(1, hops + 1)) for i in range(n)]
    score = [r[i] + lam * pi[i] for i in range(n)]
    order = sorted(range(n), key=lambda i: (-score[i], -sims[i], i))
    kept, used = set(), 0
    for i in order:
        if used + costs[i] <= budget:
            kept.add(i)
            used += costs[i]
    return np.array(score), order, kept


def random_case(rng, n, d=6, n_edges=None):
    emb = rng.normal(size=(n, d))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.normal(size=d)
    q /= np.linalg.norm(q)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    k = n_edges if n_edges is not None else int(rng.integers(0, min(len(pairs), 2 * n) + 1))
    idx = rng.choice(len(pairs), size=min(k, len(pairs)), replace=False) if pairs else []
    edges = np.array([pairs[i] for i in sorted(idx)], dtype=np.int64).reshape(-1, 2)
    costs = rng.integers(1, 12, size=n)
    budget = int(rng.integers(0, costs.sum() + 1))
    return emb, q, edges, costs, budget


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_vectorized_equals_slow_loop(global_seed, hops):
    rng = np.random.default_rng(global_seed)
    for _ in range(40):
        n = int(rng.integers(1, 14))
        emb, q, edges, costs, budget = random_case(rng, n)
        lam = float(rng.choice([0.0, 0.5, 1.0, 2.0]))
        ret = PolicySetting("dsgc", lam=lam, hops=hops, delta=0.5)(emb, q, edges, costs, budget)
        score, order, kept = slow_dsgc(
            emb, q, edges.tolist(), costs.tolist(), budget, lam=lam, hops=hops
        )
        np.testing.assert_allclose(ret.scores, score, rtol=1e-12, atol=1e-15)
        # same ranking up to float-rounding ties: the scores read in ranking order agree
        np.testing.assert_allclose(score[ret.order], score[order], rtol=1e-12, atol=1e-15)
        if np.all(np.abs(np.diff(np.sort(score))) > 1e-12):  # no near-ties: exactly the same
            assert ret.order.tolist() == order
            assert set(np.flatnonzero(ret.kept).tolist()) == kept
        # the budget walk over the vectorized ranking equals the slow walk over it
        used, walk = 0, set()
        for i in ret.order:
            if used + costs[i] <= budget:
                walk.add(int(i))
                used += costs[i]
        assert set(np.flatnonzero(ret.kept).tolist()) == walk


def test_select_is_skip_and_continue():
    costs = np.array([5, 9, 3, 2, 4])
    kept = select(np.array([0, 1, 2, 3, 4]), costs, 10)
    assert kept.tolist() == [True, False, True, True, False]  # 9 skipped, 3 and 2 fit, 4 does not
    assert select(np.array([1, 0]), costs, 4).tolist() == [False] * 5
    assert select(np.array([0, 1, 2, 3, 4]), costs, 100).all()


def test_ties_keep_store_order():
    emb = np.array([[1.0, 0], [0, 1.0], [0, 1.0], [1.0, 0]])
    q = np.array([0.0, 1.0])
    ret = similarity_only(emb, q, np.zeros((0, 2), int), np.ones(4, int), 2)
    assert ret.order.tolist() == [1, 2, 0, 3] and ret.kept.tolist() == [False, True, True, False]


# --- hypothesis properties -------------------------------------------------------------------

cases = st.builds(
    lambda seed, n: random_case(np.random.default_rng(seed), n),
    st.integers(0, 2**32 - 1),
    st.integers(1, 25),
)


@settings(max_examples=150, deadline=None)
@given(
    cases,
    st.sampled_from(["similarity", "no-graph", "dsgc", "recency"]),
    st.floats(0, 5),
    st.integers(1, 4),
)
def test_budget_never_exceeded(case, name, lam, hops):
    emb, q, edges, costs, budget = case
    ret = PolicySetting(name, lam=lam, hops=hops)(emb, q, edges, costs, budget)
    assert ret.used <= budget
    # nothing left out would still have fitted after the walk (greedy is maximal)
    room = budget - ret.used
    assert not any(costs[i] <= room for i in np.flatnonzero(~ret.kept))


@settings(max_examples=150, deadline=None)
@given(cases, st.floats(0.01, 2.0))
def test_lambda_zero_ranks_exactly_as_similarity(case, tau):
    emb, q, edges, costs, budget = case
    a = similarity_only(emb, q, edges, costs, budget)
    b = PolicySetting("dsgc", lam=0.0, tau=tau)(emb, q, edges, costs, budget)
    assert a.order.tolist() == b.order.tolist()
    assert a.kept.tolist() == b.kept.tolist()


@settings(max_examples=150, deadline=None)
@given(cases, st.data(), st.floats(0, 3), st.integers(1, 3))
def test_added_edge_never_lowers_its_prerequisite(case, data, lam, hops):
    emb, q, edges, costs, budget = case
    n = len(emb)
    if n < 2:
        return
    dep = data.draw(st.integers(0, n - 1))
    pre = data.draw(st.integers(0, n - 1).filter(lambda x: x != dep))
    before = PolicySetting("dsgc", lam=lam, hops=hops)(emb, q, edges, costs, budget)
    more = np.vstack([edges, [[dep, pre]]]) if len(edges) else np.array([[dep, pre]])
    after = PolicySetting("dsgc", lam=lam, hops=hops)(emb, q, more, costs, budget)
    assert after.scores[pre] >= before.scores[pre] - 1e-15
    assert np.all(after.scores >= before.scores - 1e-15)  # support only ever adds


@settings(max_examples=100, deadline=None)
@given(cases, st.floats(0, 1))
def test_khop_with_one_hop_is_dsgc(case, delta):
    emb, q, edges, costs, budget = case
    one = PolicySetting("dsgc", hops=1, delta=delta)(emb, q, edges, costs, budget)
    paper = PolicySetting()(emb, q, edges, costs, budget)
    np.testing.assert_array_equal(one.scores, paper.scores)
    # and the paper's formula written out: pi_i = sum of r_j over dependents j of i
    pi = np.zeros(len(emb))
    for d, p in edges:
        pi[p] += paper.r[d]
    np.testing.assert_allclose(paper.scores, paper.r + pi, rtol=1e-12)


def test_recency_keeps_the_newest():
    costs = np.array([3, 3, 3, 3])
    ret = recency(np.eye(4), np.ones(4) / 2, np.zeros((0, 2), int), costs, 6)
    assert ret.kept.tolist() == [False, False, True, True]


def test_density_variant_divides_by_cost():
    rng = np.random.default_rng(1)
    emb, q, edges, costs, budget = random_case(rng, 8)
    plain = PolicySetting()(emb, q, edges, costs, budget)
    dens = PolicySetting("dsgc", density=1.0)(emb, q, edges, costs, budget)
    np.testing.assert_allclose(dens.scores, plain.scores / costs)


def test_unknown_policy():
    with pytest.raises(ValueError, match="policy must be one of"):
        PolicySetting("lru")


# --- the paper's worked example (section 2.2) ------------------------------------------------


@pytest.mark.parametrize(
    "encoder", ["lexical", pytest.param("sentence", marks=pytest.mark.sentence)]
)
def test_worked_example_behaves_as_the_paper_says(encoder):
    sc = worked_example()
    enc = get_encoder(encoder)
    sim = Trace(sc, run(sc, enc, PolicySetting("similarity"), 2.0), encoder)
    dsgc = Trace(sc, run(sc, enc, PolicySetting("dsgc"), 2.0), encoder)
    s = dict(zip(sc.ids, sim.retention.sims, strict=True))
    # c3 is the most query-similar chain block, c2 the least: the semantic valley
    assert s["c3"] > s["c1"] > s["c2"]
    # Definition 1: c2 is structurally indirect, witnessed by c3
    assert sim.indirect.get("c2") == "c3"
    # similarity-only evicts c2 and keeps c3: a retention-stage failure (Definition 2)
    assert sim.displaced == ["c2"] and ("c2", "c3") in sim.retention_failures
    assert sim.answer() == "unknown"
    # DSGC lifts c2 through pi = r(c3) and keeps the whole chain
    assert dsgc.full_chain_retained and not dsgc.retention_stage_failure
    assert dsgc.chain_ranks["c2"] < sim.chain_ranks["c2"]
    assert dsgc.retention.pi[sc.index()["c2"]] == pytest.approx(dsgc.retention.r[sc.index()["c3"]])
    assert dsgc.answer() == "yes"


def test_worked_example_lexical_similarities_have_the_papers_shape():
    sc = worked_example()
    enc = get_encoder("lexical")
    e, q = enc(sc.texts), enc([sc.query])[0]
    sims = dict(zip(sc.ids, e @ q, strict=True))
    assert sims["c2"] == 0.0  # shares no token with the query
    assert sims["c1"] > 0.2 and sims["c3"] > 0.4  # "alice"; "the encrypted backup"


@settings(max_examples=100, deadline=None)
@given(cases, st.integers(0, 2**32 - 1), st.floats(0, 3))
def test_an_unconnected_block_never_reorders_the_others(case, seed, lam):
    """The softmax normalizer is shared, so adding a block without edges changes every r by the
    same factor: the relative order of the other blocks stays (more blocks hurt through more
    competitors at the cutoff, not through 'diffusion' of r)."""
    emb, q, edges, costs, budget = case
    extra = np.random.default_rng(seed).normal(size=(1, emb.shape[1]))
    extra /= np.linalg.norm(extra)
    before = PolicySetting("dsgc", lam=lam)(emb, q, edges, costs, budget)
    after = PolicySetting("dsgc", lam=lam)(
        np.vstack([emb, extra]), q, edges, np.append(costs, 1), budget
    )
    assert [i for i in after.order if i < len(emb)] == before.order.tolist()
