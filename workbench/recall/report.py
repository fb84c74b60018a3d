"""Side-by-side tables: the paper's published numbers (seed 003) next to ours, one table per question."""

from __future__ import annotations

import pandas as pd

from workbench.recall.grid import Grid, same_hits, type_filter_report

BOUNDED = "recency"  # the paper's bounded agent: recency retention under capacity K


def _ci(est, lo=None, hi=None) -> str:
    if lo is None:
        return f"{est:.1f}"
    return f"{est:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def _table(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["quantity", "paper", "ours"])


def rq1_vs_paper(decomp: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """Matched-access decomposition in pp with intervals."""
    rows = []
    for _, r in decomp.iterrows():
        p = paper["rq1_pp"][r["component"]]
        rows.append((r["component"], _ci(*p), _ci(r["pp"], r["lo"], r["hi"])))
    return _table(rows)


def rq2_vs_paper(
    pressure: pd.DataFrame,
    delays: pd.DataFrame,
    density: pd.DataFrame,
    paper: dict,
    selection: str = "query",
) -> pd.DataFrame:
    """Memory pressure, delay and distractor-density numbers (percent)."""
    p = paper["rq2"]
    rec = pressure.query("retention == @BOUNDED and selection == @selection").set_index("K")[
        "recall"
    ]
    Ks = p["recency_recall_by_K"]["K"]
    late = delays.query("selection == @selection and delay == '6-9'").set_index("retention")
    dens = density.query("selection == @selection")
    lo_d, hi_d = dens["density"].min(), dens["density"].max()

    def at(rule, d):
        return dens.query("retention == @rule and density == @d")["recall"].iloc[0]

    dp = p["distractor_density_0.1_to_0.7"]
    return _table(
        [
            (f"recency recall, K={Ks[0]}", _ci(p["recency_recall_by_K"]["first"]), _ci(rec[Ks[0]])),
            (
                f"recency recall, K={Ks[-1]}",
                _ci(p["recency_recall_by_K"]["last"]),
                _ci(rec[Ks[-1]]),
            ),
            (
                "recency recall, delay 6-9",
                _ci(p["recency_recall_delay_6_to_9"]),
                _ci(late.loc["recency", "recall"]),
            ),
            (
                "type-oracle retention, delay 6-9",
                _ci(p["type_oracle_retention"]),
                _ci(late.loc["type_oracle", "retention_rate"]),
            ),
            (
                f"type-oracle recall, density {lo_d}",
                _ci(dp["type_oracle"][0]),
                _ci(at("type_oracle", lo_d)),
            ),
            (
                f"type-oracle recall, density {hi_d}",
                _ci(dp["type_oracle"][1]),
                _ci(at("type_oracle", hi_d)),
            ),
            (f"recency recall, density {lo_d}", _ci(dp["recency"][0]), _ci(at("recency", lo_d))),
            (f"recency recall, density {hi_d}", _ci(dp["recency"][1]), _ci(at("recency", hi_d))),
        ]
    )


def rq3_vs_paper(uninformative: Grid, artifact: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """Uninformative queries, the marker artifact and dense type filtering."""
    p = paper["rq3"]
    q = artifact.query("selection == 'query'").set_index("retention")
    dense = type_filter_report(uninformative, "unbounded", "dense")
    same = all(
        same_hits(uninformative, r, "query", "recency") for r in uninformative.retention_rules
    )
    return _table(
        [
            (
                "QUERY == RECENCY (uninformative), every row",
                str(p["uninformative_query_equals_recency"]),
                str(same),
            ),
            (
                "marker boost to QUERY, unbounded (pp)",
                _ci(p["marker_boost_pp"]["unbounded"]),
                _ci(*q.loc["unbounded", ["boost_pp", "boost_lo", "boost_hi"]]),
            ),
            (
                "marker boost to QUERY, bounded (pp)",
                _ci(p["marker_boost_pp"]["bounded"]),
                _ci(*q.loc[BOUNDED, ["boost_pp", "boost_lo", "boost_hi"]]),
            ),
            (
                "DENSE recall, uninformative, unbounded",
                _ci(p["dense_uninformative_recall"]),
                _ci(dense["recall"]),
            ),
            (
                "recall predicted by type filtering",
                _ci(p["predicted_from_type_filtering"]),
                _ci(dense["predicted_by_type_filtering"]),
            ),
            (
                "distractor share of DENSE's exposed items (base rate 30)",
                "0.0",
                _ci(dense["exposed_distractor_share"]),
            ),
        ]
    )


def rq4_vs_paper(accuracy: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """Recall against answer accuracy for the bounded agent, and the no-memory floor."""
    p = paper["rq4"]
    b = accuracy.query("retention == @BOUNDED and selection == 'query'").iloc[0]
    none = accuracy.query("retention == 'none'").iloc[0]
    lo, hi = p["conditional_accuracy_range"]
    return _table(
        [
            ("bounded recall", _ci(p["bounded_recall"]), _ci(b["recall"])),
            ("bounded answer accuracy", _ci(p["answer_accuracy"]), _ci(b["accuracy"])),
            ("accuracy given recall", f"{lo:.1f}-{hi:.1f}", _ci(b["accuracy_given_recall"])),
            ("no-memory accuracy", _ci(p["no_memory_accuracy"]), _ci(none["accuracy"])),
        ]
    )


def rq5_vs_paper(failures: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """Failure classes of the bounded recency agent (query selection) and a query-blind selector."""
    p = paper["rq5"]
    f = failures.set_index(["retention", "selection"])
    agent, blind = f.loc[(BOUNDED, "query")], f.loc[(BOUNDED, "recency")]
    return _table(
        [
            (
                "bounded recency agent failures",
                str(p["bounded_recency_failures"]),
                str(agent["failures"]),
            ),
            (
                "all of them evictions",
                str(p["all_evictions"]),
                str(bool(agent["eviction"] == agent["failures"])),
            ),
            (
                "displacements added by a query-independent selector",
                str(p["query_independent_selector_displacements"]),
                str(blind["displacement"]),
            ),
        ]
    )


def squad_vs_paper(numbers: dict, paper: dict) -> pd.DataFrame:
    """The real-text rerun: numbers maps the paper's keys to our (pp, lo, hi) triples."""
    p = paper["squad"]
    rows = [
        (
            "matched-access gain (pp)",
            _ci(*p["matched_access_gain_pp"]),
            _ci(*numbers["matched_access_gain_pp"]),
        ),
        (
            "unbounded access to DENSE (pp)",
            _ci(*p["unbounded_access_to_dense_pp"]),
            _ci(*numbers["unbounded_access_to_dense_pp"]),
        ),
    ]
    for which in ("unbounded", "bounded"):
        rows.append(
            (
                f"DENSE - Jaccard, {which} (pp)",
                _ci(*p["dense_minus_jaccard_pp"][which]),
                _ci(*numbers[f"dense_minus_jaccard_{which}_pp"]),
            )
        )
    return _table(rows)
