"""Beyond the paper: the batch engine against Trace, the no-graph limit, the statistics, the
inducers, the k-hop and graph protocols, and `workbench induce`."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.beyond import studies
from workbench.beyond.induce import (
    BENCHMARK_PATTERNS,
    check_patterns,
    handle_edges,
    identifiers_on_edges,
    induce,
    induce_weighted,
    knn_edges,
    score_edges,
)
from workbench.cli import main
from workbench.common import stats
from workbench.common.encoders import get_encoder
from workbench.common.handles import Patterns
from workbench.dsgc import batch
from workbench.dsgc.generator import TEMPLATES, generate
from workbench.dsgc.noise import noisy_edges, perturb_edges
from workbench.dsgc.paper import summarize
from workbench.dsgc.policies import PolicySetting, relevance, similarity_only, waves
from workbench.dsgc.protocols import Protocol
from workbench.dsgc.runs import run_protocol
from workbench.dsgc.scenario import Block, Scenario
from workbench.dsgc.trace import Trace, run

# --- the batch engine against Trace, run by run ---------------------------------------------------


@pytest.fixture(scope="module")
def sample(global_seed):
    """A few scenarios of every template at both sizes (seeds from the global seed)."""
    seeds = range(3 * global_seed, 3 * global_seed + 3)
    return [generate(t, s, n) for n in (20, 50) for t in TEMPLATES for s in seeds]


SETTINGS = [similarity_only] + [
    PolicySetting("dsgc", lam, hops=h, delta=d)
    for lam in (1.0, 0.5)
    for h in (1, 2, 3)
    for d in (0.25, 1.0)
]


def _graphs(scenarios):
    """The oracle graph, a noisy one (half dropped, 3 spurious) and the handle graph."""
    return {
        "true": [sc.edges for sc in scenarios],
        "noisy": [noisy_edges(sc, 0.5, 3, 1) for sc in scenarios],
        "handles": induce(scenarios, "handles"),
    }


def test_batch_keeps_exactly_what_trace_keeps(sample):
    enc = get_encoder("lexical")
    for packed in batch.pack(sample, enc):
        for name, lists in _graphs(packed.scenarios).items():
            fe = batch.flat_edges(packed, lists)
            w = waves(relevance(packed.sims), fe, 3)  # shared by every setting, as evaluate does
            for st_ in SETTINGS:
                shared = w if st_.reads_graph else None
                order, kept, *_ = st_.decide(packed.sims, packed.costs, packed.budgets, w=shared)
                for k, sc in enumerate(packed.scenarios):
                    ref = run(sc.with_edges(lists[k]), enc, st_)
                    where = f"{sc.id} {name} {st_}"
                    assert order[k].tolist() == ref.order.tolist(), where
                    assert kept[k].tolist() == ref.kept.tolist(), where


def test_batch_rows_match_trace_rows(sample):
    enc = get_encoder("lexical")
    (packed, *_) = batch.pack(sample, enc)
    df = batch.evaluate(packed, SETTINGS[:4], encoder="lexical")
    assert len(df) == 4 * len(packed.scenarios)
    for r in df.itertuples():
        sc = next(s for s in packed.scenarios if s.id == r.scenario_id)
        pol = (
            similarity_only
            if r.policy == "similarity"
            else PolicySetting("dsgc", hops=r.hops, delta=r.delta)
        )
        t = Trace(sc, run(sc, enc, pol), "lexical")
        kinds = dict(zip(sc.ids, sc.kinds, strict=True))
        assert r.full_chain_retained == t.full_chain_retained
        assert r.displaced == ",".join(t.displaced)
        assert r.honeypots_kept == sum(kinds[b] == "honeypot" for b in t.kept_ids)
        assert r.fillers_kept == sum(kinds[b] == "filler" for b in t.kept_ids)


def test_run_protocol_dispatches_to_the_batch_engine():
    p = Protocol.load("khop").with_(encoders=("lexical",), seeds=(0, 6), total_blocks=(20,))
    assert p.engine == "batch" and p.deltas == (0.25, 0.5, 0.75, 1.0) and p.hops == (1, 2, 3, 4)
    df = run_protocol(p)
    assert len(df) == 4 * 6 * (1 + 4 * 4)  # templates x seeds x (similarity + hops x deltas)
    with pytest.raises(ValueError, match="no traces"):
        run_protocol(p, keep_traces=True)
    # one grid, one policy code: the trace engine runs the same settings and keeps the same
    keys = ["scenario_id", "policy", "lambda", "hops", "delta"]
    traced = run_protocol(p.with_(engine="trace")).sort_values(keys, kind="stable")
    df = df.sort_values(keys, kind="stable")
    assert traced[keys].values.tolist() == df[keys].values.tolist()
    assert traced.full_chain_retained.tolist() == df.full_chain_retained.tolist()
    assert traced.displaced.map(",".join).tolist() == df.displaced.tolist()


def test_noisy_edges_drop_true_edges_and_add_spurious_ones_to_non_chain_blocks():
    """What an imperfect graph is: the true edges kept are a subset in their order, about the
    asked share is dropped, every added edge is new, not a self-loop, and points to a non-chain
    prerequisite; the same key gives the same graph and another seed another one."""
    kept_share, differs = [], 0
    for t in TEMPLATES:
        for seed in range(40):
            sc = generate(t, seed)
            assert noisy_edges(sc, 0.0, 0, seed) == list(sc.edges)
            assert noisy_edges(sc, 1.0, 0, seed) == []
            got = noisy_edges(sc, 0.5, 3, seed)
            true = [e for e in got if e in sc.edges]
            assert true == [e for e in sc.edges if e in true]  # a subset, in order
            kept_share.append(len(true) / len(sc.edges))
            extra = got[len(true) :]
            assert len(extra) == 3 and len(set(got)) == len(got)
            assert all(d != p and p not in sc.chain for d, p in extra)
            assert noisy_edges(sc, 0.5, 3, seed) == got
            differs += noisy_edges(sc, 0.5, 3, seed + 1) != got
            assert perturb_edges(sc, 0.5, 3, seed).edges == tuple(got)
    assert 0.4 < sum(kept_share) / len(kept_share) < 0.6
    assert differs > 100


# --- the limit: no edges, no propagation ---------------------------------------------------------

WORDS = ["alice", "bundle", "clearance", "backup", "delete", "ticket", "relay", "room", "the", "x"]


@st.composite
def scenarios(draw):
    """Random scenarios: texts of random words, random chain, random edges, any encoder input."""
    n = draw(st.integers(2, 14))
    texts = [
        " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))) + f" b{i}"
        for i in range(n)
    ]
    ids = [f"n{i}" for i in range(n)]
    pairs = [(a, b) for a in ids for b in ids if a != b]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=2 * n, unique=True))
    chain = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n, unique=True))
    query = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)))
    blocks = tuple(
        Block(i, t, "chain" if i in chain else "filler") for i, t in zip(ids, texts, strict=True)
    )
    return Scenario("rand", query, blocks, tuple(edges), tuple(chain))


@settings(max_examples=120, deadline=None)
@given(scenarios(), st.integers(1, 4), st.floats(0.05, 1.0), st.floats(1.0, 4.0))
def test_every_edge_dropped_ranks_exactly_as_similarity(sc, hops, delta, mult):
    """The no-graph identity: with every edge dropped, DSGC's ranking and kept set are
    similarity-only's, in the policy and in the batch engine."""
    enc = get_encoder("lexical")
    bare = perturb_edges(sc, 1.0, 0)
    assert bare.edges == ()
    sim = run(bare, enc, similarity_only, mult)
    dsgc = run(bare, enc, PolicySetting("dsgc", hops=hops, delta=delta), mult)
    assert dsgc.order.tolist() == sim.order.tolist()
    assert dsgc.kept.tolist() == sim.kept.tolist()
    (packed,) = batch.pack([bare], enc, mult)
    order, kept, _, pi, _ = PolicySetting("dsgc", 1.0, hops=hops, delta=delta).decide(
        packed.sims, packed.costs, packed.budgets, batch.flat_edges(packed)
    )
    assert order[0].tolist() == sim.order.tolist() and kept[0].tolist() == sim.kept.tolist()
    assert not pi.any()


# --- statistics ------------------------------------------------------------------------------------


def slow_bootstrap(x, counts, level=0.95):
    """Each resample's mean by repeating every unit as often as it was drawn, then percentiles."""
    means = [np.mean(np.repeat(x, c.astype(int))) for c in counts]
    return np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])


def test_bootstrap_matches_a_slow_loop_and_is_fixed():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, size=40).astype(float)
    counts = stats.resample_counts(40, 300, seed=5)
    assert counts.shape == (300, 40) and (counts.sum(1) == 40).all()
    m, lo, hi = stats.bootstrap(x, 300, seed=5)
    np.testing.assert_allclose([lo[0], hi[0]], slow_bootstrap(x, counts))
    assert m[0] == x.mean() and lo[0] <= m[0] <= hi[0]
    again = stats.interval(x, 300, seed=5)
    assert (again.lo, again.hi) == (lo[0], hi[0])  # same seed, same resamples, same interval
    assert not np.array_equal(counts, stats.resample_counts(40, 300, seed=6))  # seed matters
    assert stats.interval(np.ones(7)) == stats.Interval(1.0, 1.0, 1.0, 7)


def test_paired_table_pairs_by_seed():
    df = pd.DataFrame(
        {
            "cell": ["a"] * 8,
            "arm": ["x"] * 4 + ["y"] * 4,
            "seed": [0, 1, 2, 3, 3, 2, 1, 0],  # the second arm in another order
            "full_chain_retained": [0, 0, 1, 1, 1, 1, 1, 0],
        }
    )
    t = stats.paired_table(df, ["cell"], "arm", "x", "y", resamples=500)
    r = t.iloc[0]
    assert (r.n, r.base, r.other, r.up, r.down) == (4, 0.5, 0.75, 1, 0)  # only seed 1 went up
    assert r["diff"] == 0.25 and r.lo >= 0 and r.hi <= 0.75
    same = stats.paired_table(
        df.assign(arm=["x"] * 4 + ["z"] * 4).replace({"z": "x"}), ["cell"], "arm", "x", "x"
    )
    assert same.empty or (same["diff"] == 0).all()


def test_interval_table_pools_rows_of_a_seed():
    df = pd.DataFrame(
        {
            "regime": ["t"] * 6,
            "template": ["role"] * 3 + ["profile"] * 3,
            "seed": [0, 1, 2] * 2,
            "full_chain_retained": [1, 1, 0, 1, 0, 0],
        }
    )
    t = stats.interval_table(df, ["regime"], resamples=200)
    assert t.n.tolist() == [3] and t["mean"].iloc[0] == pytest.approx(0.5)


def test_ratio_interval_pools_over_units():
    r = stats.ratio_interval([1, 2, 0], [2, 2, 0], resamples=200)
    assert r.mean == 0.75 and r.lo <= 0.75 <= r.hi
    assert np.isnan(stats.ratio_interval([0, 0], [0, 0]).mean)


# --- the inducers ------------------------------------------------------------------------------------


def test_handle_rule_recovers_the_true_edges_of_the_chains_that_hand_off(global_seed):
    """Measured on the generator: role and profile hand identifiers off along every edge, so the
    handle rule finds exactly their true edges; the controls' chains only share a name, so it
    finds none."""
    for t in TEMPLATES:
        for n in (20, 50):
            for s in range(global_seed * 20, global_seed * 20 + 20):
                sc = generate(t, s, n)
                got = handle_edges(sc)
                ids = identifiers_on_edges(sc)
                assert all(i.shared for i in ids)
                if t in ("role", "profile"):
                    assert set(got) == set(sc.edges), sc.id
                    assert all(i.handed_off for i in ids)
                else:
                    assert got == () and not any(i.handed_off for i in ids), sc.id


def test_handle_rule_on_the_hard_honeypots_links_them_too():
    """Hard honeypots name the chain's clearance or relay profile: the rule links them to the
    block that defines it (a false edge by the oracle's count), so precision drops below 1."""
    found = [
        score_edges(handle_edges(sc), sc.edges)
        for sc in (generate("role", s, 20, "hard") for s in range(30))
    ]
    assert all(f.hit == f.true for f in found)  # recall stays 1
    assert any(f.induced > f.true for f in found)


def test_handle_patterns_are_a_parameter():
    sc = generate("profile", 1)
    tickets_only = Patterns(
        handle=r"\bRT-\d{3}\b", definition=r"\bunder change ticket (RT-\d{3})\b", tombstone="(?!)"
    )
    assert handle_edges(sc, tickets_only) == (("c2", "c1"),)
    with pytest.raises(ValueError, match="capturing group"):
        check_patterns(Patterns(handle="(RT)-1", definition="(x)", tombstone="(?!)"))
    with pytest.raises(ValueError, match="does not compile"):
        check_patterns(Patterns(handle="[", definition="(x)", tombstone="(?!)"))
    assert check_patterns(BENCHMARK_PATTERNS) is BENCHMARK_PATTERNS


def test_knn_links_nearest_neighbours_query_facing_block_depends():
    emb = np.array([[1.0, 0, 0], [0.9, 0.436, 0], [0, 0, 1.0], [0, 0.1, 0.995]])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = np.array([0.0, 1.0, 0.0])
    sc = Scenario("k", "q", tuple(Block(f"b{i}", f"t{i}") for i in range(4)), (), ("b0",))
    e = knn_edges(sc, emb, q, k=1, threshold=0.5)
    # pairs (b0, b1) and (b2, b3); in each, the more query-similar block depends on the other
    assert set(e) == {("b1", "b0"), ("b3", "b2")}
    assert set(knn_edges(sc, emb, q, k=1, threshold=0.5, direction="store")) == {
        ("b1", "b0"),
        ("b3", "b2"),
    }
    assert len(knn_edges(sc, emb, q, k=1, threshold=0.5, direction="both")) == 4
    assert knn_edges(sc, emb, q, k=1, threshold=0.999) == ()
    with pytest.raises(ValueError, match="direction"):
        knn_edges(sc, emb, q, direction="up")
    with pytest.raises(ValueError, match="k must"):
        knn_edges(sc, emb, q, k=0)


def test_edge_quality_counts_against_the_true_graph():
    scs = [generate(t, s) for t in ("role", "expense") for s in range(4)]
    graphs = {
        "true": [(sc.edges, None) for sc in scs],
        "handles": induce_weighted(scs, "handles"),
        "reversed": [(tuple((p, d) for d, p in sc.edges), None) for sc in scs],
    }
    q = studies.edge_quality(scs, graphs, "lexical", resamples=100).set_index(["graph", "template"])
    assert q.loc[("handles", "role"), "precision"] == 1.0
    assert q.loc[("handles", "role"), "recall"] == 1.0
    assert q.loc[("handles", "expense"), "recall"] == 0.0
    assert np.isnan(q.loc[("handles", "expense"), "precision"])
    # every edge the wrong way round: right as pairs, wrong directed
    assert q.loc[("reversed", "role"), "pair_recall"] == 1.0
    assert q.loc[("reversed", "role"), "recall"] == 0.0


# --- the protocols and the study helpers --------------------------------------------------------------


def test_two_hops_recover_the_one_hop_profile_failures_without_harm():
    p = Protocol.load("khop").with_(encoders=("lexical",), seeds=(0, 40), total_blocks=(20,))
    runs = run_protocol(p)
    gain = studies.hop_gain(runs, 1, 2, resamples=200)
    prof = gain[gain.template == "profile"]
    assert (prof["down"] == 0).all() and (prof["up"] > 0).all()
    assert (gain[gain.template != "profile"][["up", "down"]] == 0).all().all()
    assert studies.unchanged_beyond(runs, 2) == 0 == studies.unchanged_beyond(runs, 3)


def test_graph_protocol_missing_edges_fall_back_spurious_edges_hurt():
    p = Protocol.load("graph").with_(encoders=("lexical",), seeds=(0, 40), total_blocks=(20,))
    runs = run_protocol(p)
    assert studies.identical_to_similarity(runs, 1.0, 0) == 1.0
    vs = studies.versus_similarity(runs, resamples=200)
    assert vs[(vs.spurious == 0)]["down"].sum() == 0  # dropping edges never goes below
    s = summarize(runs[runs.policy == "dsgc"], ["template", "drop", "spurious"]).set_index(
        ["template", "drop", "spurious"]
    )["mean"]
    assert s[("profile", 0.5, 0)] < s[("profile", 0.0, 0)]
    assert s[("expense", 0.0, 8)] < s[("expense", 0.0, 0)]  # spurious edges lift fillers


# --- workbench induce --------------------------------------------------------------------------------


def test_induce_command_writes_the_handle_graph(tmp_path, capsys):
    scen, out, res = tmp_path / "s.jsonl", tmp_path / "e.jsonl", tmp_path / "r.jsonl"
    assert main(["generate", "all", "--seeds", "0:3", "--out", str(scen)]) == 0
    lines = [json.loads(x) for x in scen.read_text().splitlines()]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({**x, "edges": []}) + "\n" for x in lines))
    assert main(["induce", str(bare), "--method", "handles", "--out", str(out)]) == 0
    assert "wrote 12 scenarios" in capsys.readouterr().out
    got = [json.loads(x) for x in out.read_text().splitlines()]
    for before, after in zip(lines, got, strict=True):
        assert after["induced"]["method"] == "handles"
        if before["template"] in ("role", "profile"):
            assert sorted(map(tuple, after["edges"])) == sorted(map(tuple, before["edges"]))
        else:
            assert after["edges"] == []
    # the induced file evaluates like any scenario file
    assert main(["evaluate", str(out), "--policy", "dsgc", "--out", str(res)]) == 0
    # a file that had edges keeps them as given_edges and reports precision and recall
    assert main(["induce", str(scen), "--method", "handles", "--out", str(out)]) == 0
    assert "precision 1.00, recall" in capsys.readouterr().out
    assert json.loads(out.read_text().splitlines()[8])["given_edges"] == lines[8]["edges"]


def test_induce_command_knn(tmp_path, capsys):
    scen, out = tmp_path / "s.jsonl", tmp_path / "e.jsonl"
    assert main(["generate", "role", "--seeds", "0:2", "--out", str(scen)]) == 0
    args = ["induce", str(scen), "--method", "knn", "--k", "1", "--threshold", "0.3"]
    assert main([*args, "--out", str(out)]) == 0
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(
        g["induced"]
        == {"method": "knn", "encoder": "lexical", "k": 1, "threshold": 0.3, "direction": "query"}
        for g in got
    )
    assert all(len(g["edges"]) > 0 for g in got)


def test_induce_command_bad_input_is_a_clear_error(tmp_path, capsys):
    out = tmp_path / "never.jsonl"
    missing = tmp_path / "nope.jsonl"
    assert main(["induce", str(missing), "--out", str(out)]) == 2
    assert "nope.jsonl" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "query": "q", "blocks": [{"id": "x", "text": "t"}], '
        '"edges": [], "chain": ["x"]}\n{"id": "b", "query": "q"}\n'
    )
    assert main(["induce", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl: line 2: field 'blocks'" in err and not out.exists()
    scen = tmp_path / "s.jsonl"
    main(["generate", "role", "--seeds", "0:1", "--out", str(scen)])
    capsys.readouterr()
    for extra, msg in (  # options out of range: usage errors (argparse exits 2)
        (["--method", "knn", "--k", "0"], "argument --k: must be an integer from 1"),
        (
            ["--method", "knn", "--threshold", "2"],
            "argument --threshold: must be a finite number in [-1, 1]",
        ),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["induce", str(scen), *extra, "--out", str(out)])
        assert exit_.value.code == 2 and msg in capsys.readouterr().err
        assert not out.exists()
    for extra, msg in (
        (["--method", "handles", "--handle", "["], "does not compile"),
        (["--method", "handles", "--definition", "no group"], "capturing group"),
        (["--handle", "x"], "--handle and --definition apply to --method handles"),
    ):
        assert main(["induce", str(scen), *extra, "--out", str(out)]) == 2, extra
        assert msg in capsys.readouterr().err
        assert not out.exists()
    with pytest.raises(SystemExit):
        main(["induce", str(scen), "--method", "magic", "--out", str(out)])


def test_stacked_knn_equals_one_scenario_at_a_time():
    scs = [generate(t, s, n) for n in (20, 50) for t in ("role", "expense") for s in range(3)]
    enc = get_encoder("lexical")
    for direction in ("query", "store", "both"):
        got = induce(scs, "knn", enc, k=2, threshold=0.2, direction=direction)
        for sc, es in zip(scs, got, strict=True):
            one = knn_edges(sc, enc(sc.texts), enc([sc.query])[0], 2, 0.2, direction)
            assert es == one, (sc.id, direction)


def test_suite_khop_command_writes_the_sweep(tmp_path, capsys):
    out = tmp_path / "khop"
    args = ["suite", "khop", "--seeds", "0:3", "--encoders", "lexical", "--out", str(out)]
    assert main(args) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert {"encoder", "template", "total_blocks", "policy", "hops", "delta", "mean"} <= set(
        summary.columns
    )
    assert len(summary) == 4 * 2 * (1 + 16)  # templates x sizes x (similarity + hops x deltas)
    assert len(pd.read_csv(out / "runs.csv")) == 3 * len(summary)
