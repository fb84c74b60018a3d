"""Execute the paper notebooks through papermill with small parameters and check what they record
against an independent, slow re-computation of the paper's rule (plain Python loops)."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.encoders import get_encoder
from workbench.explorer import verdict_line
from workbench.generator import generate, worked_example
from workbench.notebook import read_records
from workbench.reproduce import NOTEBOOK_DIR, NotebookFailed, execute
from workbench.trace import Setting, run_setting

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


# --- the independent computation --------------------------------------------------------------


def slow_run(sc, encoder="lexical", policy="dsgc", lam=1.0, tau=0.25, multiplier=2.0, hops=1):
    """The paper's procedure, one block at a time: scores, stable ranking, skip-and-continue walk.
    Returns (chain ranks, kept ids, full chain kept)."""
    enc = get_encoder(encoder)
    emb, q = enc(sc.texts), enc([sc.query])[0]
    n, idx = len(sc.blocks), sc.index()
    sims = [float(sum(a * b for a, b in zip(emb[i], q, strict=True))) for i in range(n)]
    if policy == "similarity":
        score = sims
    else:
        lam = 0.0 if policy == "no-graph" else lam
        z = [math.exp(s / tau) for s in sims]
        r = [v / sum(z) for v in z]
        pi, wave = [0.0] * n, r
        for h in range(hops):
            nxt = [0.0] * n
            for dep, pre in sc.edges:
                nxt[idx[pre]] += wave[idx[dep]]
            pi = [p + 0.5**h * w for p, w in zip(pi, nxt, strict=True)]
            wave = nxt
        score = [r[i] + lam * pi[i] for i in range(n)]
    order = sorted(range(n), key=lambda i: (-round(score[i], 12), -round(sims[i], 12), i))
    mass = sum(sc.blocks[idx[c]].cost for c in sc.chain)
    room = max(mass, math.ceil(multiplier * mass - 1e-9))
    kept = []
    for i in order:
        if sc.blocks[i].cost <= room:
            kept.append(sc.ids[i])
            room -= sc.blocks[i].cost
    ranks = {c: order.index(idx[c]) + 1 for c in sc.chain}
    return ranks, kept, set(sc.chain) <= set(kept)


def slow_retention(template, seeds, **kw) -> float:
    return float(np.mean([slow_run(generate(template, s), **kw)[2] for s in seeds]))


# --- running notebooks ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outdir(tmp_path_factory):
    return tmp_path_factory.mktemp("notebooks")


def run_notebook(outdir: Path, name: str, **params) -> tuple[dict, Path]:
    """Execute notebooks/NAME.ipynb into outdir with figures and results redirected there too."""
    nb = NOTEBOOK_DIR / f"{name}.ipynb"
    before = nb.read_bytes()
    params.update(FIGURES_DIR=str(outdir / "figures"), RESULTS_DIR=str(outdir / "results"))
    out = execute(nb, outdir / f"{name}.ipynb", params, progress=False)
    assert nb.read_bytes() == before, "executing into another folder must not touch the original"
    return read_records(out), outdir


def test_failure_mode(outdir):
    rec, d = run_notebook(outdir, "01_failure_mode", TEMPLATE="role", SEED=3)
    # the worked example behaves as section 2.2 says
    assert rec["worked_c2_kept"] == {"similarity": False, "dsgc": True}
    assert rec["worked_indirect"] == {"c2": "c3"}
    assert rec["worked_failures"] == {"similarity": [["c2", "c3"]], "dsgc": []}
    sc = worked_example()
    assert "c2" not in slow_run(sc, policy="similarity")[1]
    assert "c2" in slow_run(sc, policy="dsgc")[1]
    # the generated seed's records match the slow re-computation
    sc = generate("role", 3)
    for policy in ("similarity", "dsgc"):
        ranks, _, full = slow_run(sc, policy=policy)
        assert rec["seed_chain_ranks"][policy] == ranks
        assert rec["seed_kept"][policy] == full
    for name in ("failure_worked_valley", "failure_seed_valley", "failure_seed_landscape"):
        assert (d / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (d / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert (d / "results" / "failure_mode_chain.csv").read_text().startswith("scenario,block,")


def test_main_suite(outdir):
    rec, d = run_notebook(outdir, "02_main_suite", ENCODERS="lexical", SEEDS=4)
    t1, t2 = rec["table1"], rec["table2"]
    for policy in ("similarity", "no-graph", "dsgc"):
        assert t1[f"lexical/control/{policy}"] == 1.0  # controls are retrieval-friendly
    assert t1["lexical/target/similarity"] == t1["lexical/target/no-graph"]
    assert rec["similarity_equals_no_graph"] is True
    # every target cell equals the slow computation over seeds 0..3
    for template in ("role", "profile"):
        for policy in ("similarity", "dsgc"):
            want = slow_retention(template, range(4), policy=policy)
            assert t2[f"lexical/{template}/{policy}"] == pytest.approx(want, abs=1e-4)
    target = (t2["lexical/role/dsgc"] + t2["lexical/profile/dsgc"]) / 2
    assert t1["lexical/target/dsgc"] == pytest.approx(target, abs=1e-4)
    assert t1["lexical/target/dsgc"] >= t1["lexical/target/similarity"]
    csv = (d / "results" / "table1.csv").read_text().splitlines()
    assert csv[0].startswith("encoder,regime,policy,n,mean,std") and len(csv) == 7


def test_trace_diagnostics(outdir):
    rec, _ = run_notebook(outdir, "03_trace_diagnostics", SEEDS=8)
    failing = []
    for seed in range(8):
        ranks, kept, full = slow_run(generate("profile", seed))
        if not full:
            failing.append((seed, ranks))
    assert [r["seed"] for r in rec["table3"]] == [s for s, _ in failing]
    for row, (_, ranks) in zip(rec["table3"], failing, strict=True):
        assert row["ranks"] == "(" + ",".join(str(ranks[c]) for c in ("c1", "c2", "c3")) + ")"
        assert row["margin"] > 0  # the displacer outranks the displaced block
    land = rec["landscape"]
    assert land["seed"] == (failing[0][0] if failing else 0)
    t = run_setting(Setting(template="profile", seed=land["seed"]))
    assert land["kept"] == t.kept_ids and land["displaced"] == t.displaced
    if t.displaced:
        margin = t.score(t.top_non_chain) - t.score(t.displaced[0])
        assert land["margin"] == pytest.approx(margin, abs=1e-4)


def test_robustness(outdir):
    rec, d = run_notebook(
        outdir,
        "04_robustness",
        ENCODERS="lexical",
        SEEDS=3,
        LAMBDAS=[0.0, 1.0],
        MULTIPLIERS=[2.0, 5.0],
        SIZES=[20],
    )
    t4, t5, t6 = rec["table4"], rec["table5"], rec["table6"]
    assert set(t4) == {f"lexical/{t}/{lam}" for t in ("role", "profile") for lam in ("0", "1")}
    for template in ("role", "profile"):
        # lambda = 0 is no-graph DSGC, which ranks exactly like similarity-only
        assert t4[f"lexical/{template}/0"] == pytest.approx(
            slow_retention(template, range(3), policy="similarity"), abs=1e-4
        )
        assert t4[f"lexical/{template}/1"] == t6[f"lexical/{template}/20"]
        assert t5[f"{template}/5/dsgc"] == pytest.approx(
            slow_retention(template, range(3), multiplier=5.0), abs=1e-4
        )
    assert set(rec["window"]) == {"recency", "similarity", "dsgc"}
    for name in ("robust_lambda", "robust_budget", "robust_scale"):
        assert (d / "figures" / f"{name}.png").exists()


def test_explorer_notebook(outdir):
    rec, d = run_notebook(outdir, "05_explorer", TEMPLATE="role", SEED=2, LAMBDA=0.5)
    state = Setting(template="role", seed=2, lam=0.5)
    t = run_setting(state)
    assert rec["verdict"] == verdict_line(t)
    assert rec["kept"] == t.kept_ids
    ranks, kept, _ = slow_run(generate("role", 2), lam=0.5)
    assert rec["chain_ranks"] == ranks and sorted(rec["kept"]) == sorted(kept)
    assert (d / "figures" / "explorer_landscape.png").exists()


def test_workshop(outdir):
    rec, _ = run_notebook(outdir, "06_workshop")
    seed = rec["part1"]["seed"]
    sc = generate("role", seed)
    assert not slow_run(sc, policy="similarity")[2] and slow_run(sc)[2]
    assert rec["part1"]["displaced"]  # something was evicted, and it is a chain block
    lams = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
    kept = [slow_run(sc, lam=lam)[2] for lam in lams]
    assert rec["part2"]["kept"] == kept
    assert rec["part2"]["rescue_lambda"] == next(
        lam for lam, k in zip(lams, kept, strict=True) if k
    )
    hop = generate("profile", rec["part3"]["seed"])
    assert rec["part3"]["kept_by_hops"] == [slow_run(hop, hops=h)[2] for h in (1, 2, 3)]


# --- the reproduce runner ---------------------------------------------------------------------


def test_reproduce_failure_names_cell_and_keeps_notebook(tmp_path):
    """A failing notebook stops the run, names the cell and the error, and leaves files alone."""
    original = NOTEBOOK_DIR / "01_failure_mode.ipynb"
    before = original.read_bytes()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "reproduce",
            "--quiet",
            "--notebook",
            "01",
            "-p",
            "TEMPLATE",
            "no-such-template",
            "-p",
            "FIGURES_DIR",
            str(tmp_path / "f"),
            "-p",
            "RESULTS_DIR",
            str(tmp_path / "r"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "01_failure_mode.ipynb: cell" in proc.stderr
    assert "ValueError" in proc.stderr and "no-such-template" in proc.stderr
    assert original.read_bytes() == before
    assert not (tmp_path / "out" / "01_failure_mode.ipynb").exists()

    # in place: the (copied) notebook keeps its bytes when a cell fails
    copy = tmp_path / "01_failure_mode.ipynb"
    shutil.copy(original, copy)
    with pytest.raises(NotebookFailed, match=r"cell \d+ failed: ValueError"):
        execute(
            copy,
            copy,
            {
                "TEMPLATE": "no-such-template",
                "FIGURES_DIR": str(tmp_path / "f"),
                "RESULTS_DIR": str(tmp_path / "r"),
            },
            progress=False,
        )
    assert copy.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".ipynb") == [copy.name]
