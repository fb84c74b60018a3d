"""The recall study's expectations, seed spread, frequency and dense-construction studies, tables."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench.recall import episodes as E
from workbench.recall import expectation as X
from workbench.recall import grid as R
from workbench.recall import report as P
from workbench.recall import studies as S


@pytest.mark.parametrize(
    ("n", "density", "K", "k"), [(10, 0.3, 5, 3), (10, 0.1, 2, 3), (8, 0.5, 4, 1)]
)
def test_enumeration_agrees_with_the_formula(n, density, K, k):
    exact, formula = X.recency_exact(n, density, K, k), X.recency_formula(n, K, k)
    for q, v in formula.items():
        assert exact[q] == pytest.approx(v, abs=1e-9), q
    # equal weights are the uniform placement
    assert X.recency_exact(n, density, K, k, [2.0] * n)["retention"] == pytest.approx(
        exact["retention"]
    )


def test_a_position_dependent_placement_moves_the_gain():
    w = [1.0] * 5 + [2.0] * 3 + [0.5] * 2
    assert X.recency_exact(weights=w)["matched_access_gain"] < 16
    assert X.recency_exact(weights=[0.0] + [1.0] * 9)["retention"] == pytest.approx(100 * 20 / 42)
    with pytest.raises(ValueError, match="weights"):
        X.recency_exact(weights=[1.0] * 3)


def test_the_generator_matches_the_exact_expectation(global_seed):
    """An independent check of both: 2000 generated episodes against the enumeration."""
    ep = E.make_episodes(2000, seed=global_seed)
    g = R.run_grid(
        ep, retention_rules=("recency", "type_oracle"), selection_rules=("recency", "query")
    )
    exp = X.recency_exact()
    assert abs(100 * g.retention_rate("recency") - exp["retention"]) < 2.5
    assert abs(100 * g.recall("recency", "recency") - exp["recall_recency_recency"]) < 2.5
    late = R.delay_table(g, n_boot=100).query("delay == '6-9' and selection == 'query'")
    to = late.set_index("retention").loc["type_oracle", "retention_rate"]
    assert abs(to - exp["type_oracle_retention_delay_6_9"]) < 4


def test_marker_boost_expectation_matches_the_artifact_study(global_seed):
    art = R.artifact_study(1500, seed=global_seed, n_boot=200, encoder=_lexical()).set_index(
        ["retention", "selection"]
    )
    exp = X.recency_exact()
    assert abs(art.loc[("unbounded", "query"), "boost_pp"] - exp["marker_boost_unbounded"]) < 3
    assert abs(art.loc[("recency", "query"), "boost_pp"] - exp["marker_boost_bounded"]) < 3


def _lexical():
    from workbench.common.encoders import get_encoder

    return get_encoder("lexical")


def test_seed_spread_and_summary():
    spread = S.seed_spread(range(4), episodes=60)
    assert list(spread["seed"]) == [0, 1, 2, 3] and spread["matched_access_gain"].nunique() > 1
    # the gain is the two recalls' difference, seed by seed
    diff = spread["retention"] - spread["recall_recency_recency"]
    assert np.allclose(diff, spread["matched_access_gain"], atol=0.02)
    summary = S.spread_summary(spread, {"matched_access_gain": -100.0}).iloc[0]
    assert summary["seeds_as_far_as_paper_pct"] == 0.0 and summary["paper_in_sd"] < 0
    summary = S.spread_summary(spread, {"matched_access_gain": 1000.0}).iloc[0]
    assert summary["seeds_as_far_as_paper_pct"] == 0.0 and summary["paper_in_sd"] > 0


def test_frequency_study_compares_on_the_same_streams():
    f = S.frequency_study((0, 3), episodes=150, n_boot=200)
    zero = f.query("repeats == 0").set_index("retention")
    assert zero.loc["frequency", "recall"] == zero.loc["recency", "recall"]
    assert (zero["frequency_minus_recency"] == 0).all()
    three = f.query("repeats == 3").set_index("retention")
    d = three.loc["frequency"]
    assert d.frequency_minus_recency == round(
        three.loc["frequency", "recall"] - three.loc["recency", "recall"], 1
    )
    assert d.diff_lo <= d.frequency_minus_recency <= d.diff_hi and d.diff_lo < d.diff_hi


def test_dense_construction_study_changes_only_the_distractors(global_seed):
    a = E.make_episodes(50, seed=global_seed)
    b = E.make_episodes(50, seed=global_seed, distractor_slots="kin", distractor_values="disjoint")
    assert np.array_equal(a.target, b.target) and np.array_equal(a.distractor, b.distractor)
    for e in range(50):
        for x, y, d in zip(a.stream(e), b.stream(e), a.distractor[e], strict=True):
            assert (x == y) != d  # facts identical, distractors changed
            if d:
                assert y.split()[1] in E.DISTRACTOR_VOCABULARIES["kin"]
                assert y.rstrip(".").split()[-1] in E.DISJOINT_VALUES
    study = S.dense_construction_study(
        _lexical(), [("ambient", "shared"), ("kin", "disjoint")], 40, n_boot=100
    )
    assert len(study) == 4 and set(study["retention"]) == {"unbounded", "recency"}


def test_squad_table_never_sets_the_fixture_beside_the_paper():
    numbers = {key: (1.0, 0.0, 2.0) for _, key in P.SQUAD_ROWS}
    paper = R.load_paper_figures()
    fixture = P.squad_table(numbers, "fixture", paper)
    assert list(fixture.columns) == ["quantity", "ours (source=fixture)"]
    real = P.squad_table(numbers, "data/dev-v1.1.json", paper)
    assert (
        real.columns[1].startswith("paper")
        and real.columns[2] == "ours (source=data/dev-v1.1.json)"
    )


def test_every_saved_table_states_source_and_reader(tmp_path):
    df = pd.DataFrame({"a": [1.5]})
    with pytest.raises(ValueError, match="labelled"):
        P.save_tables(tmp_path, {"t": df})
    assert not list(tmp_path.iterdir())  # nothing written
    P.save_tables(tmp_path, {"t": P.labelled(df, "fixture")})
    row = next(csv.DictReader(Path(tmp_path / "t.csv").open()))
    assert row == {"a": "1.5", "source": "fixture", "reader": P.NO_READER}


def test_cli_tables_state_source_and_reader(tmp_path):
    from workbench.cli import main

    fixture = Path(__file__).parents[1] / "fixtures" / "squad_tiny.json"
    for args, source in [([], "synthetic"), (["--squad", str(fixture)], "fixture")]:
        out = tmp_path / source
        rc = main(
            [
                "recall",
                "grid",
                "--episodes",
                "30",
                "--boot",
                "100",
                "--dense-encoder",
                "lexical",
                "--out",
                str(out),
                *args,
            ]
        )
        assert rc == 0
        for name in ("recall_grid", "recall_decomposition", "recall_failures"):
            rows = list(csv.DictReader((out / f"{name}.csv").open()))
            assert {r["source"] for r in rows} == {source} and {r["reader"] for r in rows} == {
                P.NO_READER
            }
