"""Notebook 10 at small parameters: its recorded numbers against an independent computation
(one `Trace` per run, the reference engine the batch engine must agree with)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.beyond.induce import handle_edges
from workbench.common.encoders import get_encoder
from workbench.common.notebook import read_records
from workbench.dsgc.generator import TEMPLATES, generate
from workbench.dsgc.noise import noisy_edges
from workbench.dsgc.policies import PolicySetting, similarity_only
from workbench.dsgc.trace import Trace, run
from workbench.reproduce import NOTEBOOK_DIR, execute

pytestmark = pytest.mark.slow

SEEDS, SIZES, HOPS, DELTAS = "60:72", [20, 50], [1, 2, 3], [0.25, 1.0]
RANGE = range(60, 72)  # seed 68 at 50 blocks loses c1 even at two hops when delta = 0.25


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    out = tmp_path_factory.mktemp("nb10")
    nb = NOTEBOOK_DIR / "10_beyond_the_paper.ipynb"
    before = nb.read_bytes()
    params = {
        "SEEDS": SEEDS,
        "ENCODERS": "lexical",
        "SIZES": SIZES,
        "HOPS": HOPS,
        "DELTAS": DELTAS,
        "DROPS": [0.0, 0.5, 1.0],
        "SPURIOUS": [0, 4],
        "RESAMPLES": 200,
        "FIGURES_DIR": str(out / "figures"),
        "RESULTS_DIR": str(out / "results"),
    }
    done = execute(nb, out / nb.name, params, progress=False)
    assert nb.read_bytes() == before
    return read_records(done), out


def kept(sc, hops=None, delta=0.5, edges=None):
    """Full chain kept, by the reference engine: similarity-only (hops None) or DSGC."""
    enc = get_encoder("lexical")
    sc = sc if edges is None else sc.with_edges(edges)
    policy = similarity_only if hops is None else PolicySetting("dsgc", hops=hops, delta=delta)
    return Trace(sc, run(sc, enc, policy), "lexical").full_chain_retained


def test_khop_numbers_match_one_trace_per_run(executed):
    rec, _ = executed
    delta, k = rec["chosen"]["delta"], rec["chosen"]["hops"]
    assert delta in DELTAS and k in HOPS
    for t in TEMPLATES:
        for n in SIZES:
            scs = [generate(t, s, n) for s in RANGE]
            cell = rec["khop"][f"lexical/{t}/{n}"]
            assert cell["0"] == pytest.approx(np.mean([kept(sc) for sc in scs]), abs=1e-4)
            for h in HOPS:
                want = np.mean([kept(sc, h, delta) for sc in scs])
                assert cell[str(h)] == pytest.approx(want, abs=1e-4), (t, n, h)
            for d in DELTAS:
                one = [kept(sc, 1, d) for sc in scs]
                two = [kept(sc, 2, d) for sc in scs]
                diff, up, down = rec["gain_1_to_2"][f"lexical/{t}/{n}/{d:g}"]
                assert up == sum(b and not a for a, b in zip(one, two, strict=True))
                assert down == sum(a and not b for a, b in zip(one, two, strict=True))
                assert diff == pytest.approx(np.mean(two) - np.mean(one), abs=1e-4)


def test_lost_runs_are_the_k_hop_runs_that_break_the_chain(executed):
    rec, _ = executed
    want = []
    for n in SIZES:
        for t in TEMPLATES:
            for s in RANGE:
                sc = generate(t, s, n)
                for h in HOPS[1:]:
                    for d in DELTAS:
                        if not kept(sc, h, d):
                            want.append(["lexical", t, n, s, h, d])
    assert sorted(map(tuple, rec["lost"])) == sorted(map(tuple, want))
    assert ["lexical", "profile", 50, 68, 2, 0.25] in want  # the test sees a real loss
    assert set(rec["deeper_changes"].values()) == {0}  # chains are 3 deep: hop 3 adds nothing


def test_graph_numbers_and_the_no_graph_limit(executed):
    rec, _ = executed
    delta, k = rec["chosen"]["delta"], rec["chosen"]["hops"]
    assert rec["identical_when_all_dropped"] == 1.0
    g = rec["graph"]
    for t in ("expense", "profile"):
        scs = [generate(t, s, 20) for s in RANGE]
        for drop, spurious in ((0.5, 0), (0.0, 4), (1.0, 0)):
            for h in sorted({1, k}):
                want = np.mean(
                    [kept(sc, h, delta, noisy_edges(sc, drop, spurious, sc.seed)) for sc in scs]
                )
                key = f"lexical/{t}/20/dsgc h={h} d={delta:g}/{drop:g}/{spurious}"
                assert g[key] == pytest.approx(want, abs=1e-4), key
        sim = g[f"lexical/{t}/20/similarity/1/0"]
        assert g[f"lexical/{t}/20/dsgc h=1 d={delta:g}/1/0"] == sim


def test_induced_numbers(executed):
    rec, out = executed
    delta = rec["chosen"]["delta"]
    for t in ("role", "profile"):
        assert rec["edges"][f"lexical/handles/{t}/20"] == [1.0, 1.0]
        assert rec["identifier_sharing"][t] == [1.0, 1.0]
        scs = [generate(t, s, 50) for s in RANGE]
        want = np.mean([kept(sc, 1, delta, handle_edges(sc)) for sc in scs])
        key = f"lexical/{t}/50/handles/dsgc h=1 d={delta:g}"
        assert rec["induced"][key] == pytest.approx(want, abs=1e-4)
    for t in ("expense", "threshold"):
        assert rec["identifier_sharing"][t] == [1.0, 0.0]  # shared, never handed off
        assert rec["edges"][f"lexical/handles/{t}/20"][1] == 0.0
    preds = rec["predictions"]  # only rows that could have come out otherwise
    assert len(preds) == 7 and "a missing edge reduces DSGC to the similarity ranking" not in preds
    prose_row = "edges can be read from prose, not only from ids"  # decided by tier I
    assert preds[prose_row] == ("yes" if all(rec["register_bar"].values()) else "no")
    assert set(rec["register_bar"]) == {"lexical/20", "lexical/50", "sentence/20", "sentence/50"}
    hw = rec["handwritten"]  # tier/regime/graph -> [retention, pair precision, pair recall]
    tiers = {k.split("/")[0] for k in hw}
    assert {"hand-written (tuned on)", "worked example", "agent logs"} <= tiers and len(tiers) == 17
    for regime in ("target", "control"):  # the tier it was tuned on: never below similarity-only
        tuned = "hand-written (tuned on)"
        assert hw[f"{tuned}/{regime}/mentions"][0] >= hw[f"{tuned}/{regime}/none"][0]
        for t in tiers - {"worked example", "agent logs"}:  # the generator's rules read little
            assert hw[f"{t}/{regime}/handles"][2] <= 0.1
    below = [k for k, v in hw.items() if k.endswith("/mentions") and v[0] < hw[k[:-8] + "none"][0]]
    row = "edges can come from a lightweight parser, not an oracle"
    assert preds[row] == ("no" if below else preds[row])  # a tier below similarity-only: 'no'
    assert all(k.split("/")[1] in ("target", "control", "log") for k in hw)
    for name in ("beyond_khop", "beyond_graph", "beyond_induced"):
        assert (out / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (Path(out) / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    for name in ("khop", "graph", "graph_vs_similarity", "edges", "induced", "predictions"):
        assert (out / "results" / f"beyond_{name}.csv").read_text().count("\n") > 1
