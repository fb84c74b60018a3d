"""Large stores: deterministic bytes, LexicalEncoder's rows bit for bit, checked like any
scenario file, and the retention over a store equals the scenario path."""

import hashlib
import json

import numpy as np
import pytest

from workbench.common.encoders import LexicalEncoder
from workbench.common.seeds import Stream
from workbench.common.sweep import TableEncoder
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.trace import run
from workbench.scale import bigstore as B
from workbench.scale import layout as L


def _digest(folder) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        for p in sorted(folder.iterdir())
        if not p.name.startswith(".")
    }


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("store")
    B.generate_store(3000, out, seed=7, extra_edges=500)
    return out


def test_draws_are_counter_based_and_pinned():
    """The stream is part of the file format: its draws never change (a golden digest, big
    endian so it holds on every platform), and drawing in pieces gives the same draws."""
    s = Stream("workbench-store-v1", "pinned")
    assert np.array_equal(np.concatenate([s.u64(3), s.u64(997)]), L._stream("pinned").u64(1000))
    draws = L._stream("pinned").u64(1000).astype(">u8").tobytes()
    assert hashlib.sha256(draws).hexdigest()[:16] == "6eb988693361b7df"


def test_a_store_is_pinned(store_dir):
    """A golden digest of a small store: a change to the generator must be deliberate."""
    assert _digest(store_dir) == {
        "lexical.npy": "2f199417f4372d5b",
        "lexical.queries.npy": "d641d24f003cd884",
        "store.jsonl": "a0dcfcde92534717",
    }


def test_a_seed_gives_the_same_bytes(store_dir, tmp_path):
    B.generate_store(3000, tmp_path, seed=7, extra_edges=500)
    assert _digest(tmp_path) == _digest(store_dir)
    B.generate_store(3000, tmp_path / "other", seed=8, extra_edges=500)
    assert _digest(tmp_path / "other")["store.jsonl"] != _digest(store_dir)["store.jsonl"]


def test_the_store_holds_chains_honeypots_and_fillers(store_dir):
    st = B.read_store(store_dir)
    assert len(st.ids) == 3000 and len(st.queries) == 150  # one chain per 20 blocks
    assert set(st.queries.template) == set(L.STORE_TEMPLATES)
    kinds = {k: st.kinds.count(k) for k in set(st.kinds)}
    depth = {t: len(L.STORE_TEMPLATES[t].chain) for t in L.STORE_TEMPLATES}
    chains = sum(depth[t] for t in st.queries.template)
    assert kinds["chain"] == chains and kinds["honeypot"] > 0 and kinds["filler"] > 1500
    # entities are fresh: no two role chains name the same bundle
    role = [
        st.texts[p[0]]
        for p, t in zip(st.queries.chain_pos, st.queries.template, strict=True)
        if t == "role"
    ]
    assert len(set(role)) == len(role)
    chain_edges = sum(d - 1 for d in (depth[t] for t in st.queries.template))
    assert chain_edges < len(st.edges) <= chain_edges + 500


def test_lexical_rows_are_the_encoders_bit_for_bit(store_dir):
    st = B.read_store(store_dir)
    emb, q = st.embeddings("lexical")
    assert emb.dtype == np.float32 and isinstance(emb, np.memmap)
    enc = LexicalEncoder()
    assert np.array_equal(emb, enc.encode(st.texts).astype(np.float32))
    assert np.array_equal(q, enc.encode(list(st.queries["query"])).astype(np.float32))


def test_a_store_exports_a_valid_scenario(store_dir):
    st = B.read_store(store_dir)
    sc = st.scenario(st.queries.id[0])
    assert len(sc.blocks) == 3000 and sc.chain == st.queries.chain[0]
    assert sc.edge_index().tolist() == st.edges.tolist()


def _lines(folder):
    return (folder / "store.jsonl").read_text().splitlines()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda ls: ls.__setitem__(2, ls[1]), "line 3: field 'block': duplicate block id"),
        (lambda ls: ls.insert(len(ls) - 1, '{"edge": ["f1", "nope"]}'), "field 'edge'"),
        (lambda ls: ls.__setitem__(0, ls[0].replace('"blocks": 3000', '"blocks": 9')), "line 1"),
        (lambda ls: ls.__setitem__(5, '{"block": "x", "text": " "}'), "line 6: field 'text'"),
        (lambda ls: ls.append('{"query": "q?", "id": "new", "chain": ["zz"]}'), "field 'chain'"),
        (lambda ls: ls.__setitem__(0, "{}"), "workbench-store/1 header"),
    ],
)
def test_bad_store_lines_name_the_file_line_and_field(store_dir, tmp_path, edit, message):
    lines = _lines(store_dir)
    edit(lines)
    (tmp_path / "store.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(B.StoreError, match="store.jsonl") as e:
        B.read_store(tmp_path)
    assert message in str(e.value)


def test_store_retention_equals_the_scenario_path(store_dir):
    """Each query's row (budget, kept chain, c1's rank) equals running the exported scenario
    through trace.run with the store's own float32 rows."""
    df = B.store_retention(store_dir, "lexical", templates=("role", "expense"), queries=4, chunk=3)
    assert len(df) == 2 * 4 * 2 and list(df.policy[:2]) == ["similarity", "dsgc"]
    st = B.read_store(store_dir)
    emb, qemb = st.embeddings("lexical")
    texts = [*st.texts, *st.queries["query"]]
    table = TableEncoder("lexical", texts, np.concatenate([emb, qemb]))
    for r in df.itertuples():
        sc = st.scenario(r.query)
        ret = run(sc, table, PolicySetting(r.policy), 2.0)
        pos = sc.index()
        assert r.budget == sc.budget(2.0)
        assert r.full_chain_retained == all(ret.kept[pos[c]] for c in sc.chain)
        assert r.c1_rank == ret.ranks[pos[sc.chain[0]]]


def test_header_line(store_dir):
    head = json.loads(_lines(store_dir)[0])
    assert head["format"] == B.FORMAT and head["blocks"] == 3000 and head["seed"] == 7
