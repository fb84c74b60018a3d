"""Check what the paper notebooks record (at their stored parameters; nbval re-executes them)
against an independent, slow re-computation of the paper's rule (plain Python loops), run one
notebook with injected parameters, and check how the reproduce runner fails."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.common.encoders import get_encoder
from workbench.common.notebook import read_records
from workbench.common.seeds import seed_range
from workbench.dsgc.generator import generate, worked_example
from workbench.dsgc.trace import Setting, run_setting, verdict_line
from workbench.reproduce import NOTEBOOK_DIR, NotebookFailed, execute

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


# --- the committed notebooks ------------------------------------------------------------------
# nbval (scripts/nbval.py, part of `make test`) re-executes every committed notebook and compares
# its outputs with the stored ones; these tests check the stored records, at the notebook's stored
# parameters, against the slow computation above. Together: what a re-execution produces is
# what an independent implementation of the paper's rule gives. Running each notebook a second
# time here, at other parameters, would double the suite's time; one test (the explorer
# notebook) still runs papermill with injected parameters, so parametrization stays tested.


def stored(name: str) -> tuple[dict, dict]:
    """(records, parameters) of the committed notebooks/NAME.ipynb: the parameters cell, then
    papermill's injected one if the notebook was last executed with parameters."""
    nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
    params: dict = {}
    for tag in ("parameters", "injected-parameters"):
        for cell in nb["cells"]:
            if tag in cell["metadata"].get("tags", []):
                exec("".join(cell["source"]), {}, params)
    return read_records(NOTEBOOK_DIR / f"{name}.ipynb"), params


def seeds_of(value) -> range:
    return seed_range(str(value))


def test_failure_mode():
    rec, p = stored("01_failure_mode")
    # the worked example behaves as section 2.2 says
    assert rec["worked_c2_kept"] == {"similarity": False, "dsgc": True}
    assert rec["worked_indirect"] == {"c2": "c3"}
    assert rec["worked_failures"] == {"similarity": [["c2", "c3"]], "dsgc": []}
    sc = worked_example()
    assert "c2" not in slow_run(sc, policy="similarity")[1]
    assert "c2" in slow_run(sc, policy="dsgc")[1]
    # the generated seed's records match the slow re-computation
    assert p["ENCODER"] == "lexical"
    sc = generate(p["TEMPLATE"], p["SEED"], total_blocks=p["TOTAL_BLOCKS"])
    for policy in ("similarity", "dsgc"):
        ranks, _, full = slow_run(
            sc, policy=policy, lam=p["LAMBDA"], multiplier=p["BUDGET_MULTIPLIER"]
        )
        assert rec["seed_chain_ranks"][policy] == ranks
        assert rec["seed_kept"][policy] == full
    for name in ("failure_worked_valley", "failure_seed_valley", "failure_seed_landscape"):
        assert (ROOT / "figures" / f"{name}.svg").stat().st_size > 1000
        assert (ROOT / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_main_suite():
    rec, p = stored("02_main_suite")
    t1, t2 = rec["table1"], rec["table2"]
    seeds = seeds_of(p["SEEDS"])
    assert "lexical" in p["ENCODERS"].split(",") and len(seeds) >= 10
    for policy in ("similarity", "no-graph", "dsgc"):
        assert t1[f"lexical/control/{policy}"] == 1.0  # controls are retrieval-friendly
    assert t1["lexical/target/similarity"] == t1["lexical/target/no-graph"]
    assert rec["similarity_equals_no_graph"] is True
    # every lexical target cell equals the slow computation over the notebook's seeds
    kw = dict(lam=p["LAMBDA"], multiplier=p["BUDGET_MULTIPLIER"])
    for template in ("role", "profile"):
        for policy in ("similarity", "dsgc"):
            want = slow_retention(template, seeds, policy=policy, **kw)
            assert t2[f"lexical/{template}/{policy}"] == pytest.approx(want, abs=1e-4)
    target = (t2["lexical/role/dsgc"] + t2["lexical/profile/dsgc"]) / 2
    assert t1["lexical/target/dsgc"] == pytest.approx(target, abs=1e-4)
    assert t1["lexical/target/dsgc"] > t1["lexical/target/similarity"]
    csv = (ROOT / "data" / "results" / "table1.csv").read_text().splitlines()
    assert csv[0].startswith("encoder,regime,policy,n,mean,std") and len(csv) == 13


def test_trace_diagnostics():
    rec, p = stored("03_trace_diagnostics")
    assert (p["ENCODER"], p["POLICY"], p["SEED"]) == ("lexical", "dsgc", -1)
    failing = []
    for seed in seeds_of(p["SEEDS"]):
        sc = generate(p["TEMPLATE"], seed, total_blocks=p["TOTAL_BLOCKS"])
        ranks, _, full = slow_run(sc, lam=p["LAMBDA"], multiplier=p["BUDGET_MULTIPLIER"])
        if not full:
            failing.append((seed, ranks))
    assert failing, "the stored parameters should show at least one failing seed"
    assert [r["seed"] for r in rec["table3"]] == [s for s, _ in failing]
    for row, (_, ranks) in zip(rec["table3"], failing, strict=True):
        assert row["ranks"] == "(" + ",".join(str(ranks[c]) for c in ("c1", "c2", "c3")) + ")"
        assert row["margin"] > 0  # the displacer outranks the displaced block
    land = rec["landscape"]
    assert land["seed"] == failing[0][0]
    t = run_setting(Setting(template=p["TEMPLATE"], seed=land["seed"]))
    assert land["kept"] == t.kept_ids and land["displaced"] == t.displaced
    margin = t.score(t.top_non_chain) - t.score(t.displaced[0])
    assert land["margin"] == pytest.approx(margin, abs=1e-3)


def test_robustness():
    rec, p = stored("04_robustness")
    t4, t5, t6 = rec["table4"], rec["table5"], rec["table6"]
    seeds = seeds_of(p["SEEDS"])
    lam_key = {lam: f"{lam:g}" for lam in p["LAMBDAS"]}
    assert {k for k in t4 if k.startswith("lexical/")} == {
        f"lexical/{t}/{lam_key[lam]}" for t in ("role", "profile") for lam in p["LAMBDAS"]
    }
    for template in ("role", "profile"):
        for lam in p["LAMBDAS"]:
            assert t4[f"lexical/{template}/{lam_key[lam]}"] == pytest.approx(
                slow_retention(template, seeds, lam=lam), abs=1e-4
            )
        assert t4[f"lexical/{template}/1"] == t6[f"lexical/{template}/20"]
        for m in (1.0, 5.0):
            assert t5[f"{template}/{m:g}/dsgc"] == pytest.approx(
                slow_retention(template, seeds, multiplier=m), abs=1e-4
            )
            assert t5[f"{template}/{m:g}/similarity"] == pytest.approx(
                slow_retention(template, seeds, multiplier=m, policy="similarity"), abs=1e-4
            )
    assert set(rec["window"]) == {"recency", "similarity", "dsgc"}
    for name in ("robust_lambda", "robust_budget", "robust_scale"):
        assert (ROOT / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_explorer_notebook_runs_with_injected_parameters(tmp_path):
    """The one papermill run here: injected parameters reach the notebook, outputs go where the
    parameters say, and the committed notebook is not touched."""
    nb = NOTEBOOK_DIR / "05_explorer.ipynb"
    before = nb.read_bytes()
    params = dict(
        TEMPLATE="role",
        SEED=2,
        LAMBDA=0.5,
        FIGURES_DIR=str(tmp_path / "figures"),
        RESULTS_DIR=str(tmp_path / "results"),
    )
    rec = read_records(execute(nb, tmp_path / nb.name, params, progress=False))
    assert nb.read_bytes() == before, "executing into another folder must not touch the original"
    t = run_setting(Setting(template="role", seed=2, lam=0.5))
    assert rec["verdict"] == verdict_line(t)
    assert rec["kept"] == t.kept_ids
    ranks, kept, _ = slow_run(generate("role", 2), lam=0.5)
    assert rec["chain_ranks"] == ranks and sorted(rec["kept"]) == sorted(kept)
    assert (tmp_path / "figures" / "explorer_landscape.png").read_bytes()[:4] == b"\x89PNG"


def test_workshop():
    rec, p = stored("06_workshop")
    assert (p["ENCODER"], p["TEMPLATE"], p["SEED"], p["HOP_SEED"]) == ("lexical", "role", -1, -1)
    seed = rec["eviction"]["seed"]
    sc = generate("role", seed)
    # the first seed where similarity-only loses the chain and DSGC keeps it
    first = next(
        s
        for s in range(200)
        if not slow_run(g := generate("role", s), policy="similarity")[2] and slow_run(g)[2]
    )
    assert seed == first
    assert rec["eviction"]["displaced"]  # something was evicted, and it is a chain block
    lams = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
    kept = [slow_run(sc, lam=lam)[2] for lam in lams]
    assert rec["lambda"]["kept"] == kept
    assert rec["lambda"]["rescue_lambda"] == next(
        lam for lam, k in zip(lams, kept, strict=True) if k
    )
    hop = generate("profile", rec["hops"]["seed"])
    assert rec["hops"]["kept_by_hops"] == [slow_run(hop, hops=h)[2] for h in (1, 2, 3)]
    assert rec["hops"]["kept_by_hops"][0] is False
    # the answer key of every part: among its choices, the counting parts counted seed by seed
    from workbench.explore.workshop import Workshop

    ws = Workshop()
    assert set(rec["answers"]) == set(ws.PARTS)
    for key, value in rec["answers"].items():
        values = [v for _, v in ws.question(key).choices]
        assert all(v in values for v in (value if isinstance(value, list) else [value])), key
    lost = sum(not slow_run(generate("profile", s, 50))[2] for s in range(15))
    assert rec["answers"]["13"] == next(
        lab
        for lab, _ in ws.question("13").choices
        if int(lab.split("-")[0]) <= lost <= int(lab.split("-")[1])
    )


# --- the reproduce runner ---------------------------------------------------------------------


def test_reproduce_refuses_a_bad_value_before_any_notebook_runs(tmp_path):
    """A value out of range stops `workbench reproduce` before papermill starts: one line naming
    the notebook, the parameter and what it takes; nothing written. (A cell that fails is the
    next test's: the runner names the cell and keeps the notebook.)"""
    original = NOTEBOOK_DIR / "01_failure_mode.ipynb"
    before = original.read_bytes()
    proc = subprocess.run(
        [
            sys.executable, "-m", "workbench", "reproduce", "--quiet", "--notebook", "01",
            "-p", "ENCODER", "no-such-encoder", "--out", str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (
        "workbench reproduce: error: 01_failure_mode: ENCODER must be one of lexical, sentence; "
        "got 'no-such-encoder'\n"
    )
    assert original.read_bytes() == before
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_notebook_failing_in_place_keeps_its_bytes(tmp_path):
    """execute() in place: a failing cell leaves the notebook as it was, and no stray file.
    (A two-cell notebook: what is tested is the runner, not the paper's cells.)"""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("N = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("if N < 0:\n    raise ValueError(f'bad N {N}')")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    copy = tmp_path / "tiny.ipynb"
    nbformat.write(nb, str(copy))
    before = copy.read_bytes()
    with pytest.raises(NotebookFailed, match=r"tiny.ipynb: cell \d+ failed: ValueError: bad N -3"):
        execute(copy, copy, {"N": -3}, progress=False)
    assert copy.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]
    execute(copy, copy, {"N": 2}, progress=False)  # and a passing run does write in place
    assert copy.read_bytes() != before and "injected-parameters" in copy.read_text()
