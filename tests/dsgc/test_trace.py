"""Trace diagnostics: margins, competitor, Definitions 1 and 2, against hand computations."""

import json

import numpy as np
import pytest

from workbench.common.encoders import get_encoder
from workbench.common.io import write_jsonl
from workbench.dsgc.generator import generate
from workbench.dsgc.policies import PolicySetting, Retention
from workbench.dsgc.scenario import Block, Scenario
from workbench.dsgc.trace import Trace, indirect_prerequisites, run


def tiny():
    blocks = tuple(
        Block(i, f"text {i}", k)
        for i, k in [
            ("a", "chain"),
            ("b", "chain"),
            ("c", "chain"),
            ("x", "filler"),
            ("y", "honeypot"),
        ]
    )
    return Scenario("t", "q", blocks, (("c", "b"), ("b", "a")), ("a", "b", "c"))


def retention(scores, kept, sims=None):
    scores = np.asarray(scores, float)
    order = np.lexsort([np.arange(len(scores)), -scores])
    sims = scores if sims is None else np.asarray(sims, float)
    z = np.zeros(len(scores))
    return Retention(
        "dsgc", sims, z, z, scores, order, np.asarray(kept, bool), 10, np.ones(len(scores), int)
    )


def test_margins_and_competitor_by_hand():
    # ranking: b(0.9) y(0.8) c(0.7) a(0.3) x(0.2); a is evicted, x is evicted
    t = Trace(tiny(), retention([0.3, 0.9, 0.7, 0.2, 0.8], [0, 1, 1, 0, 1]), "lexical")
    assert t.displaced == ["a"] and not t.full_chain_retained
    assert t.chain_ranks == {"a": 4, "b": 1, "c": 3}
    assert t.top_non_chain == "y" and t.competitor == "y"
    assert t.margin == pytest.approx(0.8 - 0.3)
    assert t.competitor_margin == pytest.approx(0.8 - 0.3)
    assert t.eviction_margin == pytest.approx(0.7 - 0.3)
    assert t.prereq_retention == pytest.approx(0.5)  # prerequisites a and b; a lost


def test_skip_makes_the_eviction_margin_negative():
    t = Trace(tiny(), retention([0.3, 0.9, 0.7, 0.2, 0.8], [1, 1, 0, 1, 1]), "lexical")
    assert t.eviction_margin == pytest.approx(0.2 - 0.7)
    assert t.margin == pytest.approx(0.8 - 0.7)


def test_no_displacement_means_no_margin():
    t = Trace(tiny(), retention([0.3, 0.9, 0.7, 0.2, 0.8], [1, 1, 1, 0, 1]), "lexical")
    assert t.margin is None and t.competitor_margin is None and t.full_chain_retained
    assert "full chain kept" in t.verdict()


def test_definitions_1_and_2():
    sc = tiny()
    # sims: a 0.5, b 0.1, c 0.6 -> b is indirect (witness c); a is not (b is less similar)
    sims = [0.5, 0.1, 0.6, 0.0, 0.0]
    assert indirect_prerequisites(sc, np.array(sims)) == {"b": "c"}
    failed = Trace(sc, retention([0.5, 0.1, 0.6, 0.0, 0.0], [1, 0, 1, 1, 1], sims), "x")
    assert failed.retention_failures == [("b", "c")] and failed.retention_stage_failure
    # evicting b together with its dependent c is not Definition 2 (no retained dependent)
    both = Trace(sc, retention([0.5, 0.1, 0.6, 0.0, 0.0], [1, 0, 0, 1, 1], sims), "x")
    assert both.retention_failures == []


def test_record_has_every_block_and_round_trips(tmp_path):
    sc = generate("profile", 3)
    t = Trace(sc, run(sc, get_encoder("lexical"), PolicySetting("dsgc")), "lexical")
    rec = t.record()
    assert [b["id"] for b in rec["blocks"]] == t.ranking and len(rec["blocks"]) == 20
    for b in rec["blocks"]:
        assert b["I"] == pytest.approx(b["r"] + b["pi"], abs=2e-6)
    assert sum(b["cost"] for b in rec["blocks"] if b["kept"]) == rec["used_tokens"]
    assert rec["used_tokens"] <= rec["budget_tokens"]
    write_jsonl([rec, t.row()], tmp_path / "t.jsonl")
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == json.loads(json.dumps(rec)) and len(lines) == 2
    assert t.frame().shape[0] == 20
