"""Notebook 09 as stored: its live retention table is what the library computes for the same
store; the floor is the least work; recorded measurements say where and when."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.common.notebook import read_records
from workbench.common.provenance import COLUMNS, recorded, stamp
from workbench.reproduce import NOTEBOOK_DIR
from workbench.scale import bigstore, charts, report, stepcost

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "data" / "results"


def test_scale_notebook_live_retention(tmp_path):
    """The stored live table (nbval re-executes the notebook and compares) is what the library
    computes for the same stores; checked here for the lexical rows (no model needed)."""
    nb = NOTEBOOK_DIR / "09_scale.ipynb"
    rec = read_records(nb)
    ns, queries = [300, 1000], 10  # the notebook's stored parameters
    rows, _ = bigstore.retention_study(ns, ["lexical"], tmp_path / "stores", queries=queries)
    want = {
        f"{r.blocks}/{r.encoder}/{r.template}/{r.policy}": round(r.full_chain, 4)
        for r in bigstore.retention_summary(rows).itertuples()
    }
    assert len(want) == 2 * 4 * 2  # two stores x four templates x two policies
    assert {k: v for k, v in rec["live_retention"].items() if "/lexical/" in k} == want
    assert {k.split("/")[1] for k in rec["live_retention"]} == {"lexical", "sentence"}
    assert rec["live_rows_in_committed"] > 0
    for name in ("scale_step", "scale_memory", "scale_retention"):
        assert (ROOT / "figures" / f"{name}.svg").stat().st_size > 1000


def test_the_floor_is_the_least_work_and_the_notes_follow_the_numbers():
    """The floor reads every row once and takes only the head (the top HEAD blocks by cosine, as
    the step's own ranking starts); a step measured beside it keeps the full sort's blocks; the
    notebook's sentences say 'within' or 'above' from the ratio, not by construction."""
    emb, q, edges, costs = stepcost.random_store(5000, 32, seed=3)
    head = stepcost.floor_step(emb, q)
    sims = emb @ q
    assert set(head.tolist()) == set(np.argsort(-sims, kind="stable")[: stepcost.HEAD].tolist())
    m = stepcost.measure(5000, 32, repeat=2, seed=3)
    assert {"step_s", "floor_s", "scatter_s", "ratio"} <= set(m) and m["ratio"] > 0
    row = {**m, **stamp("a test"), "head": 256}
    assert "within the target of 2x" in report.step_note(pd.DataFrame([{**row, "ratio": 1.4}]))
    assert "above the target of 2x" in report.step_note(pd.DataFrame([{**row, "ratio": 2.6}]))
    assert "recorded" in report.step_note(pd.DataFrame([row])).lower()


def test_committed_measurements_say_where_and_when():
    """Every committed measurement table carries source, date, machine and load, and every figure
    drawn from one says 'recorded <date> on <machine>' in its title."""
    for name in ("scale_step", "scale_memory", "scale_sweep", "scale_chunks"):
        table = pd.read_csv(RESULTS / f"{name}.csv")
        assert set(COLUMNS) <= set(table.columns), name
        assert table.date.str.fullmatch(r"\d{4}-\d{2}-\d{2}").all(), name
    step = pd.read_csv(RESULTS / "scale_step.csv")
    spec = json.loads(charts.step_chart(step).to_json())
    assert recorded(step) in spec["title"]["subtitle"]
    for fig in ("scale_step", "scale_memory", "scale_retention"):
        assert "recorded 20" in (ROOT / "figures" / f"{fig}.svg").read_text()
    with pytest.raises(ValueError, match="missing"):
        recorded(step.drop(columns=["load"]))
