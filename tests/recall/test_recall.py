"""Tests for the retention x selection streaming-recall benchmark (seed 003)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from workbench.common import stats
from workbench.common.encoders import CachedEncoder, get_encoder
from workbench.common.io import InputError
from workbench.recall import episodes as E
from workbench.recall import grid as R
from workbench.recall import report as P
from workbench.recall import squad
from workbench.recall.episodes import DISTRACTOR_SLOTS, FACT_SLOTS, MARKER
from workbench.recall.rules import RETENTION_RULES, expose, retain, selection_scores

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "squad_tiny.json"


@pytest.fixture(scope="module")
def lexical():
    return get_encoder("lexical")


@pytest.fixture(scope="module")
def grids(global_seed, lexical):
    """Both query forms; the dense selector runs on the lexical encoder here (the sentence one has its own test)."""
    return R.run_forms(120, seed=global_seed, encoder=lexical)


# --- episodes ------------------------------------------------------------------------------


def _slot(text: str) -> str:
    return text.split()[-3]


def test_episode_properties(global_seed):
    ep = E.make_episodes(200, density=0.3, seed=global_seed)
    assert ep.text_id.shape == (200, 10) and ep.target.shape == (200, 2)
    assert (ep.distractor.sum(1) == 3).all()
    for e in range(ep.n_episodes):
        stream = ep.stream(e)
        slots = [_slot(t) for t in stream]
        assert len(set(slots)) == 10  # slots unique within a stream
        assert len({t.rstrip(".").split()[-1] for t in stream}) == 10  # so are values
        for t, d in zip(stream, ep.distractor[e], strict=True):
            assert (_slot(t) in DISTRACTOR_SLOTS) == d and (_slot(t) in FACT_SLOTS) != d
        assert not ep.distractor[e, ep.target[e]].any()  # queries target facts only
        for q in range(2):
            target_text = stream[ep.target[e, q]]
            assert ep.queries[ep.query_id[e, q]] == f"What is the {_slot(target_text)} ?"
            assert target_text.endswith(f" is {ep.answers[e, q]}.")
    # targets are uniform over the 7 facts: each fact rank gets about 1/7 of the queries
    fact_rank = np.array(
        [
            np.flatnonzero(~ep.distractor[e]).tolist().index(t)
            for e in range(200)
            for t in ep.target[e]
        ]
    )
    assert np.bincount(fact_rank, minlength=7).min() > 30


def test_uninformative_differs_by_one_token_and_value_is_in_no_fact(global_seed):
    inf = E.make_episodes(50, seed=global_seed)
    uni = E.make_episodes(50, queries="uninformative", seed=global_seed)
    assert uni.queries == ("What is the value?",)
    assert np.array_equal(inf.text_id, uni.text_id) and np.array_equal(inf.target, uni.target)
    a, b = inf.queries[0].replace("?", " ?").split(), uni.queries[0].replace("?", " ?").split()
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1
    assert not any("value" in t.lower().split() for t in uni.texts)


def test_episodes_are_seeded_and_prefix_stable(global_seed):
    a, b = E.make_episodes(40, seed=global_seed), E.make_episodes(300, seed=global_seed)
    assert a.stream(7) == b.stream(7) and np.array_equal(a.target, b.target[:40])
    assert E.make_episodes(40, seed=global_seed + 1).stream(0) != a.stream(0)


def test_marker_and_density(global_seed):
    ep = E.make_episodes(30, density=0.7, marker=True, seed=global_seed)
    assert (ep.distractor.sum(1) == 7).all()
    for e in range(30):
        for t, d in zip(ep.stream(e), ep.distractor[e], strict=True):
            assert t.startswith(MARKER) == d
    with pytest.raises(ValueError, match="density"):
        E.make_episodes(5, density=1.0)


# --- retention rules -----------------------------------------------------------------------


def _slow_retain(evict, n, K):
    """An obviously-correct online buffer: admit each item, evict via the callback when over K."""
    buf = []
    for t in range(n):
        buf.append(t)
        if len(buf) > K:
            buf.remove(evict(buf, t))
    return set(buf)


def test_recency_keeps_the_last_K(global_seed):
    ep = E.make_episodes(50, seed=global_seed)
    kept = retain("recency", ep, 5)
    assert (kept[:, 5:]).all() and not kept[:, :5].any()


def test_type_oracle_matches_a_slow_loop_and_drops_distractors_first(global_seed):
    ep = E.make_episodes(80, seed=global_seed)
    kept = retain("type_oracle", ep, 5)
    for e in range(80):
        d = ep.distractor[e]
        slow = _slow_retain(lambda buf, t, d=d: min(buf, key=lambda i: (not d[i], i)), 10, 5)
        assert set(np.flatnonzero(kept[e])) == slow
    # 7 facts, K = 5: exactly 5 facts survive, no distractor does
    assert (kept & ~ep.distractor).sum(1).tolist() == [5] * 80 and not (kept & ep.distractor).any()


@pytest.mark.parametrize("repeats", [0, 2], ids=["plain", "restated-facts"])
def test_frequency_matches_a_slow_loop(global_seed, repeats):
    ep = E.make_episodes(60, seed=global_seed, repeats=repeats)
    kept = retain("frequency", ep, 4)
    for e in range(60):
        toks = [set(t.lower().rstrip(".").split()) for t in ep.stream(e)]

        def evict(buf, t, toks=toks):
            seen = toks[: t + 1]
            score = {
                i: sum(sum(tok in s for s in seen) for tok in toks[i]) / len(toks[i]) for i in buf
            }
            return min(buf, key=lambda i: (round(score[i], 9), i))

        assert set(np.flatnonzero(kept[e])) == _slow_retain(evict, 10, 4)


def test_random_retention_is_seeded_online_and_per_rule(global_seed):
    ep = E.make_episodes(300, seed=global_seed)
    a, b = retain("random", ep, 5, seed=1), retain("random", ep, 5, seed=1)
    assert np.array_equal(a, b) and (a.sum(1) == 5).all()
    assert not np.array_equal(a, retain("random", ep, 5, seed=2))
    assert a[:, 9].mean() > a[:, 0].mean()  # random replacement favours recent arrivals
    # the first 40 episodes do not depend on how many follow
    assert np.array_equal(
        retain("random", E.make_episodes(40, seed=global_seed), 5, seed=1), a[:40]
    )


def test_unbounded_and_large_K_keep_everything(global_seed):
    ep = E.make_episodes(20, seed=global_seed)
    assert retain("unbounded", ep, 2).all()
    for rule in RETENTION_RULES:
        assert retain(rule, ep, 10).all()


# --- selection rules -----------------------------------------------------------------------


def test_select_exposes_top_k_survivors_newest_on_ties():
    scores = np.array([[[0.9, 0.1, 0.5, 0.5, 0.5]]])
    kept = np.array([[False, True, True, True, True]])
    exposed, rank = expose(scores, kept, 2)
    assert exposed[0, 0].tolist() == [
        False,
        False,
        False,
        True,
        True,
    ]  # 0.9 was evicted; tie -> newer
    assert rank[0, 0, 0] == 4  # dropped items rank last


def test_selection_rules(global_seed, grids):
    g = grids["informative"]
    ep = g.episodes
    s = {name: g.scores[i] for i, name in enumerate(g.selection_rules)}
    # oracle marks the target; query (Jaccard) scores the target strictly highest
    assert np.array_equal(s["oracle"].argmax(-1), ep.target)
    top = np.take_along_axis(s["query"], ep.target[..., None], -1)
    assert ((s["query"] < top) | (np.arange(10) == ep.target[..., None])).all()
    assert np.isclose(top, 3 / 5).all()  # {what, is, the, slot} vs {the, slot, is, value}
    # recency selection exposes the newest k survivors
    r, sr = g.cell("unbounded", "recency")
    assert g.exposed[r, sr][..., 7:].all() and not g.exposed[r, sr][..., :7].any()
    # random selection is seeded
    assert np.array_equal(s["random"], selection_scores("random", ep, global_seed))


def test_invariant_recall_never_exceeds_retention_in_any_cell(grids):
    for form, g in grids.items():
        cells = R.cells_table(g, n_boot=200)
        assert len(cells) == 25, form
        assert (cells["recall"] <= cells["retention_rate"]).all()
        assert R.invariant_holds(g)
        for r in g.retention_rules:  # oracle reaches the ceiling exactly
            assert g.recall(r, "oracle") == g.retention_rate(r)


def test_construction_ceiling_and_uninformative_query_equals_recency(grids):
    inf, uni = grids["informative"], grids["uninformative"]
    for r in inf.retention_rules:
        assert inf.recall(r, "query") == inf.retention_rate(r)
        assert R.same_hits(uni, r, "query", "recency")
    assert inf.recall("unbounded", "query") == 1.0
    assert inf.recall("recency", "recency") < inf.recall("recency", "query")


@pytest.mark.sentence
def test_dense_selector_encodes_each_unique_text_once(global_seed):
    inner = get_encoder("sentence", cache_dir=False)
    enc = CachedEncoder(inner)  # a fresh counter over the shared model
    ep = E.make_episodes(300, seed=global_seed)
    grids = {
        f: R.run_grid(E.make_episodes(300, queries=f, seed=global_seed), encoder=enc)
        for f in E.QUERY_FORMS
    }
    unique = len(set(ep.texts) | set(ep.queries) | {"What is the value?"})
    assert enc.encoded == unique
    R.run_grid(ep, K=3, encoder=enc)
    assert enc.encoded == unique  # nothing re-encoded
    g = grids["informative"]
    assert g.recall("unbounded", "dense") == 1.0  # MiniLM finds the slot-named fact


# --- bootstrap -----------------------------------------------------------------------------


def test_bootstrap_resamples_episodes_not_queries(global_seed):
    w = stats.resample_counts(50, 300, seed=global_seed)  # the one bootstrap's resamples
    assert w.shape == (300, 50) and (w.sum(1) == 50).all() and (w == np.round(w)).all()
    # two queries of one episode always move together: a per-episode value with within-episode
    # perfect correlation gives the same interval as the episode mean
    per_query = np.repeat(np.arange(50) % 2, 2).reshape(50, 2).astype(float)
    m, lo, hi = R.bootstrap_ci(per_query.mean(1), 2000, global_seed)
    assert (
        m == 0.5 and 0.33 < lo < 0.39 and 0.61 < hi < 0.67
    )  # sd of a mean of 50 episodes, not 100 queries
    assert R.bootstrap_ci(np.ones(40))[1] == 1.0


def test_cell_intervals_come_from_episode_means(grids):
    g = grids["informative"]
    cells = R.cells_table(g, n_boot=300).set_index(["retention", "selection"])
    r, s = g.cell("recency", "recency")
    m, lo, hi = R.bootstrap_ci(g.hits[r, s].mean(-1), 300, g.seed)
    assert cells.loc[("recency", "recency"), ["recall", "recall_lo", "recall_hi"]].tolist() == [
        round(100 * m, 1),
        round(100 * lo, 1),
        round(100 * hi, 1),
    ]


def test_paired_difference_and_decomposition(grids):
    g = grids["informative"]
    d = R.decomposition(g, n_boot=500).set_index("component")
    pp = lambda r, s: round(100 * g.recall(r, s), 1)  # noqa: E731
    assert (
        abs(
            d.loc["matched_access_gain", "pp"] - (pp("recency", "query") - pp("recency", "recency"))
        )
        <= 0.1
    )
    assert (
        abs(d.loc["mixed_comparison", "pp"] - (pp("unbounded", "query") - pp("recency", "recency")))
        <= 0.1
    )
    total = d.loc["matched_access_gain", "pp"] + d.loc["access_contribution", "pp"]
    assert abs(total - d.loc["mixed_comparison", "pp"]) <= 0.15
    assert (d["lo"] <= d["pp"]).all() and (d["pp"] <= d["hi"]).all() and (d["lo"] > 0).all()
    same = R.paired_difference(g, ("recency", "query"), ("recency", "oracle"))
    assert same == (0.0, 0.0, 0.0)


# --- analyses ------------------------------------------------------------------------------


def test_memory_pressure_and_delay(grids, lexical):
    ep = grids["informative"].episodes
    mp = R.memory_pressure(ep, (2, 3, 5, 20), encoder=lexical, n_boot=200)
    rec = mp.query("retention == 'recency'")
    for K in (2, 3):  # K <= k: selection is inert
        assert rec[rec["K"] == K]["recall"].nunique() == 1
    assert rec.query("K == 20")["retention_rate"].eq(100.0).all()
    dl = (
        R.delay_table(grids["informative"])
        .query("selection == 'query'")
        .set_index(["delay", "retention"])
    )
    assert (
        dl.loc[("6-9", "recency"), "recall"] == 0.0
        and dl.loc[("0-2", "recency"), "recall"] == 100.0
    )
    assert dl.loc[("6-9", "unbounded"), "recall"] == 100.0


def test_density_sweep_helps_the_type_oracle(lexical):
    ds = R.density_sweep((0.1, 0.7), episodes=80, encoder=lexical, n_boot=200).query(
        "selection == 'query'"
    )
    to = ds.query("retention == 'type_oracle'").set_index("density")["recall"]
    assert to[0.7] == 100.0 and to[0.1] < 70


def test_artifact_marker_boosts_query_only(lexical):
    art = R.artifact_study(120, encoder=lexical, n_boot=200).set_index(["retention", "selection"])
    for r in ("recency", "unbounded"):
        assert art.loc[(r, "query"), "boost_pp"] > 5 and art.loc[(r, "query"), "boost_lo"] > 0
        # marked distractors rank below every fact: only a buffer short of k facts shows one
        assert art.loc[(r, "query"), "distractor_share_marked"] < 5
        assert art.loc[(r, "query"), "distractor_share_plain"] > 20
        for s in ("recency", "random", "oracle"):
            assert art.loc[(r, s), "boost_pp"] == 0.0
    assert art.loc[("unbounded", "query"), "distractor_share_marked"] == 0.0


def test_failure_classes(grids):
    f = R.failure_table(grids["informative"]).set_index(["retention", "selection"])
    agent, blind = f.loc[("recency", "query")], f.loc[("recency", "recency")]
    assert agent["failures"] == agent["eviction"] > 0 and agent["displacement"] == 0
    assert blind["eviction"] == agent["eviction"] and blind["displacement"] > 0
    assert f.loc[("unbounded", "recency"), "eviction"] == 0
    assert (f["failures"] == f[list(R.FAILURES)].sum(axis=1)).all()
    # a query-aware selector fooled by similarity: dense under uninformative queries
    uf = R.failure_table(grids["uninformative"]).set_index(["retention", "selection"])
    assert uf.loc[("unbounded", "dense"), "similarity_confusion"] > 0
    assert uf.loc[("unbounded", "query"), "similarity_confusion"] == 0  # all ties -> displacement


def test_frequency_is_recency_when_nothing_recurs(grids):
    """Unique slots and values: every item shares only "the" and "is" with the others."""
    assert R.same_retention(grids["informative"], "frequency", "recency")


def test_restated_facts(global_seed):
    ep = E.make_episodes(200, seed=global_seed, repeats=2)
    base = E.make_episodes(200, seed=global_seed)
    assert np.array_equal(ep.distractor, base.distractor)  # the same positions and slots drawn
    req = ep.required
    for e in range(200):
        stream = ep.stream(e)
        facts = [t for t, d in zip(stream, ep.distractor[e], strict=True) if not d]
        assert len(facts) - len(set(facts)) == 2  # two facts observed twice
        for q in range(2):
            copies = np.flatnonzero(req[e, q])
            assert ep.target[e, q] == copies.max()  # the target is the last copy
            assert all(stream[c] == stream[ep.target[e, q]] for c in copies)
    # a query is answered by either copy: an oracle selector hits whenever one copy survives
    g = R.run_grid(ep, retention_rules=("recency", "frequency"), selection_rules=("oracle",))
    assert np.array_equal(g.hits[:, 0], g.retained) and not R.same_retention(
        g, "frequency", "recency"
    )
    with pytest.raises(ValueError, match="repeats"):
        E.make_episodes(2, repeats=7)


def test_delay_table_has_episode_bootstrap_intervals(grids):
    g = grids["informative"]
    d = R.delay_table(g, n_boot=300).set_index(["delay", "retention", "selection"])
    assert (d.recall_lo <= d.recall).all() and (d.recall <= d.recall_hi).all()
    assert (d.retention_lo <= d.retention_rate).all() and (d.retention_rate <= d.retention_hi).all()
    late = d.loc[("6-9", "recency", "query")]
    assert late.recall == late.recall_lo == late.recall_hi == 0.0
    mid = d.loc[("3-5", "recency", "query")]
    assert mid.recall_lo < mid.recall < mid.recall_hi  # a real interval where outcomes vary
    # the estimate is the pooled rate of the bucket's queries
    m = (g.episodes.delay >= 3) & (g.episodes.delay <= 5)
    r, s = g.cell("recency", "query")
    assert mid.recall == round(100 * g.hits[r, s][m].mean(), 1)


def test_prediction_from_exposure(grids, global_seed):
    """Exact for a perfect type filter; unbiased for any selector blind to the target."""
    ep = E.make_episodes(120, queries="uninformative", seed=global_seed)

    def type_filter(e):
        s = np.where(e.distractor, -1.0, np.arange(e.n_items) / e.n_items)[:, None, :]
        return np.broadcast_to(s, (e.n_episodes, e.n_queries, e.n_items))

    g = R.run_grid(ep, retention_rules=("unbounded",), selection_rules=(("filter", type_filter),))
    rep = R.type_filter_report(g, "unbounded", "filter")
    assert rep["exposed_distractor_share"] == 0.0
    assert rep["predicted_from_exposure"] == rep["predicted_by_type_filtering"] == 42.9
    big = E.make_episodes(2000, queries="uninformative", seed=global_seed)
    g = R.run_grid(big, retention_rules=("unbounded",), selection_rules=("random",))
    rep = R.type_filter_report(g, "unbounded", "random")
    assert abs(rep["recall"] - rep["predicted_from_exposure"]) < 2.5
    assert 25 < rep["exposed_distractor_share"] < 35  # random exposes the base rate


def test_selector_differences_are_paired(grids):
    d = R.selector_differences(grids["informative"], n_boot=200)
    assert (d[["pp", "lo", "hi"]] == 0).all().all()  # informative: dense = query = oracle
    u = R.selector_differences(grids["uninformative"], n_boot=200).set_index(
        ["retention", "minuend", "subtrahend"]
    )
    gap = u.loc[("unbounded", "query", "oracle")]
    assert gap.hi < 0 and gap.lo <= gap.pp <= gap.hi


# --- SQuAD format --------------------------------------------------------------------------


def test_squad_loader_on_the_fixture(global_seed, lexical):
    pool = squad.load_squad(FIXTURE)
    assert pool.source == "fixture"  # the invented fixture labels itself
    # "Residents of Orsk depend on it ..." holds the answer "Orsk": not a distractor
    assert len(pool.targets) == 14 and len(pool.unrelated) == 14
    assert pool.counts == {
        "second question on a target sentence": 4,
        "sentence with an answer text kept out of the distractors": 1,
    }
    t = pool.targets[0]
    assert all(g in t.sentence for g in t.golds) and t.question.endswith("?")
    assert not any(g in s for s, _ in pool.unrelated for t in pool.targets for g in t.golds)
    ep = squad.squad_episodes(pool, 40, seed=global_seed)
    assert ep.source == "fixture" and (ep.distractor.sum(1) == 3).all()
    for e in range(40):
        for q in range(2):
            assert all(g in ep.stream(e)[ep.target[e, q]] for g in ep.answers[e, q])
    g = R.run_grid(ep, encoder=lexical)
    assert R.invariant_holds(g) and g.recall("unbounded", "oracle") == 1.0


STRUCTURE = ROOT / "tests" / "fixtures" / "squad_v11_structure.json"


def test_squad_loader_on_the_real_v11_structure():
    """A hand-written file in the dev-v1.1.json structure with the real file's awkward cases."""
    pool = squad.load_squad(STRUCTURE)
    assert pool.source == str(STRUCTURE)  # a data file is labelled by its path
    by_id = {t.id: t for t in pool.targets}
    # several annotators: every distinct answer is a gold; ids are kept
    assert by_id["port_aldine-0-0"].golds == ("1821", "in 1821")
    mill = by_id["lake_vessa-2-0"]
    assert mill.sentence == "The mill by the lake ground flour." and mill.golds == (
        "flour",
        "paper",
    )
    unrelated = [s for s, _ in pool.unrelated]
    # the second annotator's sentence is answered: never a distractor
    assert "It later made paper." not in unrelated
    # a sentence of the same paragraph holding an answer text is no distractor either
    assert "A second clock from Geneva hangs in the station." not in unrelated
    # abbreviations and initials do not split sentences
    sentences = {t.sentence for t in pool.targets}
    assert "Port Aldine was founded in 1821 by Dr. Marta Quell." in sentences
    assert "The U.S. Navy kept a coaling station there until Jan. 1919." in sentences
    assert "It was built by J. R. Holm in 1932." in sentences
    # the misaligned answer_start was moved to its text and counted
    assert pool.counts["answer_start moved to its text"] == 1
    assert pool.counts["second question on a target sentence"] == 1


def test_squad_streams_keep_answers_out_of_their_distractors(global_seed):
    """ "Geneva bankers ..." (article 2) holds the answer of "Its clock was made in Geneva." (article 1)."""
    pool = squad.load_squad(STRUCTURE)
    ep = squad.squad_episodes(pool, 200, seed=global_seed)
    geneva = 0
    for e in range(ep.n_episodes):
        stream = ep.stream(e)
        facts = [t for t in pool.targets if t.sentence in stream]
        geneva += any(t.golds == ("Geneva",) for t in facts)
        for n in np.flatnonzero(ep.distractor[e]):
            assert not any(g in stream[n] for t in facts for g in t.golds)
    assert geneva > 50  # the case arises often enough to be tested


def test_squad_unanswerable_questions_are_skipped_and_missing_answers_are_errors(tmp_path):
    doc = json.loads(STRUCTURE.read_text())
    doc["data"][0]["paragraphs"][0]["qas"][1].update(answers=[], is_impossible=True)
    v2 = tmp_path / "v2.json"
    v2.write_text(json.dumps(doc))
    assert squad.load_squad(v2).counts["question without an answer"] == 1
    doc["data"][1]["paragraphs"][0]["qas"][1]["answers"][0]["text"] = "trout"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(
        InputError, match=r"data\[1\]\.paragraphs\[0\]\.qas\[1\]\.answers\[0\]\.text"
    ):
        squad.load_squad(bad)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("data"), "field 'data'"),
        (
            lambda d: d["data"][1]["paragraphs"][0].pop("context"),
            "field 'data[1].paragraphs[0].context'",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][1]["qas"][2]["answers"][0].update(answer_start=-3),
            "field 'data[0].paragraphs[1].qas[2].answers[0].answer_start'",
        ),
        (  # past the end of its context: rejected, not moved
            lambda d: d["data"][0]["paragraphs"][1]["qas"][2]["answers"][0].update(
                answer_start=10**6
            ),
            "field 'data[0].paragraphs[1].qas[2].answers[0].answer_start': 1000000 puts the answer",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][1]["qas"][2]["answers"][0].update(text="nowhere"),
            "field 'data[0].paragraphs[1].qas[2].answers[0].text'",
        ),
        (
            lambda d: d["data"][2]["paragraphs"][0]["qas"][0].pop("question"),
            "field 'data[2].paragraphs[0].qas[0].question'",
        ),
    ],
)
def test_malformed_squad_names_file_and_field(tmp_path, mutate, field):
    doc = json.loads(FIXTURE.read_text())
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        squad.load_squad(bad)
    assert str(bad) in str(err.value) and field in str(err.value)


def test_squad_not_json(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"data": [')
    with pytest.raises(InputError, match="broken.json.*invalid JSON"):
        squad.load_squad(bad)


# --- CLI -----------------------------------------------------------------------------------


def test_cli_grid_writes_cells_with_intervals(tmp_path):
    from workbench.cli import main

    out = tmp_path / "out"
    rc = main(
        [
            "recall",
            "grid",
            "--episodes",
            "60",
            "--queries",
            "both",
            "--boot",
            "300",
            "--dense-encoder",
            "lexical",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    rows = list(csv.DictReader((out / "recall_grid.csv").open()))
    assert len(rows) == 50 and {r["query_form"] for r in rows} == {"informative", "uninformative"}
    for r in rows:
        assert float(r["recall_lo"]) <= float(r["recall"]) <= float(r["recall_hi"])
        assert float(r["recall"]) <= float(r["retention_rate"])
    assert (out / "recall_decomposition.csv").exists() and (out / "recall_failures.csv").exists()


def test_cli_squad_and_bad_input(tmp_path, capsys):
    from workbench.cli import main

    rc = main(
        [
            "recall",
            "grid",
            "--squad",
            str(FIXTURE),
            "--episodes",
            "30",
            "--boot",
            "200",
            "--dense-encoder",
            "lexical",
            "--out",
            str(tmp_path / "sq"),
        ]
    )
    assert rc == 0 and len(list(csv.DictReader((tmp_path / "sq" / "recall_grid.csv").open()))) == 25
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"data": [{"paragraphs": [{"context": "x", "qas": [{}]}]}]}))
    rc = main(["recall", "grid", "--squad", str(bad), "--out", str(tmp_path / "never")])
    err = capsys.readouterr().err
    assert rc == 2 and "bad.json" in err and "data[0].paragraphs[0].qas[0].question" in err
    assert not (tmp_path / "never").exists()  # nothing half-written


# --- notebook ------------------------------------------------------------------------------


@pytest.mark.sentence
def test_the_committed_notebook_records_what_the_library_computes():
    """Notebook 08's stored records (nbval re-executes it and compares): the grid is what the
    library computes at the stored parameters, and the seed's claims hold in the records."""
    from workbench.common.notebook import read_records

    rec = read_records(ROOT / "notebooks" / "08_recall.ipynb")
    assert rec["invariant_holds"] is True and rec["squad_invariant_holds"] is True
    assert rec["query_equals_recency_uninformative"] is True
    # the stored parameters: 300 episodes, K = 5, k = 3, density 0.3, seed 0
    expected = R.recall_matrix(R.run_forms(300, encoder=get_encoder("sentence"))["informative"])
    assert rec["grid_informative"] == expected
    gain, lo, hi = rec["decomposition_pp"]["matched_access_gain"]
    assert lo <= gain <= hi and gain > 0
    assert rec["expected_stated"]["matched_access_gain"] == 20.0  # (K - k) / N
    assert rec["delay_retention_6_9"]["recency"] == 0.0
    assert rec["failures_recency"]["query"]["displacement"] == 0
    assert rec["frequency_minus_recency"]["0"] == 0.0
    for cell, v in rec["answer_accuracy"].items():  # the oracle reader: accuracy is recall
        assert v["accuracy"] == v["recall"] <= v["retention_rate"], cell
    dense = rec["dense_study_unbounded"]
    assert (
        dense["kin/disjoint"]["exposed_distractor_share"]
        < dense["ambient/shared"]["exposed_distractor_share"]
    )
    assert rec["squad_source"] == "fixture"
    assert (ROOT / "figures" / "recall_grid.png").read_bytes()[:4] == b"\x89PNG"
    for path in (ROOT / "data" / "results").glob("recall_*.csv"):
        row = next(csv.DictReader(path.open()))
        assert row["source"] and row["reader"], path.name
    squad = next(csv.DictReader((ROOT / "data" / "results" / "recall_squad_grid.csv").open()))
    assert squad["source"] == "fixture"


def test_a_small_pool_gets_no_interval(global_seed):
    """The 14-sentence fixture repeats every sentence in many streams: its episodes are not
    independent draws, so no interval is drawn for it; a pool as large as the streams' use is
    bootstrapped as before."""
    pool = squad.load_squad(FIXTURE)
    assert not squad.independent_streams(pool, 150)
    assert squad.independent_streams(pool, 2)  # 2 streams x 7 facts <= 14 sentences
    episodes = squad.squad_episodes(pool, 20, seed=global_seed)
    grid = R.run_grid(episodes, 5, 3, global_seed, encoder=get_encoder("lexical"))
    cells = R.cells_table(grid, 0)
    assert cells.recall_lo.isna().all() and cells.recall.notna().all()
    assert "no interval" in P.squad_table(R.squad_numbers(grid, n_boot=0), pool.source).iloc[0, 1]
    assert "say nothing about real text" in squad.pool_note(pool, 150)
