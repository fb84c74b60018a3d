"""Studies around the grid: seed-to-seed spread (RQ1), frequency with something to count (RQ2),
and what makes dense selection filter distractors (RQ3)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.recall.episodes import DISTRACTOR_VOCABULARIES, make_episodes
from workbench.recall.grid import (
    N_BOOT,
    cells_table,
    paired_difference,
    run_grid,
    type_filter_report,
)


def seed_spread(
    seeds: Sequence[int], episodes: int = 300, K: int = 5, k: int = 3, density: float = 0.3
) -> pd.DataFrame:
    """Per generator seed: recency retention, recency/recency recall and the matched-access gain (pp).

    Only the recency and unbounded rows with recency and query (Jaccard) selection are run, so no
    encoder is needed; this is the sampling distribution of the RQ1 numbers under our generator.
    """
    rows = []
    for seed in seeds:
        g = run_grid(
            make_episodes(episodes, density=density, seed=seed),
            K,
            k,
            seed,
            retention_rules=("recency", "unbounded"),
            selection_rules=("recency", "query"),
        )
        kept, shown = g.recall("recency", "query"), g.recall("recency", "recency")
        rows.append(
            {
                "seed": seed,
                "retention": 100 * g.retention_rate("recency"),
                "recall_recency_recency": 100 * shown,
                "matched_access_gain": 100 * (kept - shown),
            }
        )
    return pd.DataFrame(rows).round(2)


def spread_summary(spread: pd.DataFrame, paper: dict[str, float]) -> pd.DataFrame:
    """Mean, sd, min and max over seeds, and the share of seeds at least as far out as the paper's value."""
    rows = []
    for q, value in paper.items():
        x = spread[q].to_numpy()
        mean = float(x.mean())
        tail = x <= value if value <= mean else x >= value
        rows.append(
            {
                "quantity": q,
                "seeds": len(x),
                "mean": round(mean, 1),
                "sd": round(float(x.std(ddof=1)), 1) if len(x) > 1 else float("nan"),
                "min": round(float(x.min()), 1),
                "max": round(float(x.max()), 1),
                "paper": value,
                "paper_in_sd": round((value - mean) / float(x.std(ddof=1)), 1)
                if len(x) > 1
                else float("nan"),
                "seeds_as_far_as_paper_pct": round(100 * float(tail.mean()), 1),
            }
        )
    return pd.DataFrame(rows)


def frequency_study(
    repeats: Sequence[int] = (0, 1, 2, 3),
    episodes: int = 300,
    K: int = 5,
    k: int = 3,
    seed: int = 0,
    n_boot: int = N_BOOT,
    rules: Sequence[str] = ("recency", "frequency", "random", "type_oracle"),
) -> pd.DataFrame:
    """Retention and recall (query selection, informative) when some facts are observed twice.

    With unique slots and values nothing recurs, and frequency is recency. Restating r facts gives
    it something to count; frequency_minus_recency is the paired recall difference on the same
    streams (pp, 95% interval).
    """
    frames = []
    for r in repeats:
        g = run_grid(
            make_episodes(episodes, seed=seed, repeats=r),
            K,
            k,
            seed,
            retention_rules=rules,
            selection_rules=("query", "recency"),
        )
        cells = cells_table(g, n_boot).query("selection == 'query'").copy()
        d = paired_difference(g, ("frequency", "query"), ("recency", "query"), n_boot)
        cells["repeats"] = r
        cells["frequency_minus_recency"], cells["diff_lo"], cells["diff_hi"] = d
        frames.append(cells)
    cols = ["repeats", "retention", "recall", "recall_lo", "recall_hi", "retention_rate"]
    cols += ["frequency_minus_recency", "diff_lo", "diff_hi", "episodes"]
    return pd.concat(frames, ignore_index=True)[cols]


def dense_variants(slots=tuple(DISTRACTOR_VOCABULARIES)) -> list[tuple[str, str]]:
    """Each distractor vocabulary with shared and with disjoint values."""
    return [(s, v) for s in slots for v in ("shared", "disjoint")]


DENSE_VARIANTS = tuple(dense_variants())


def dense_construction_study(
    encoder,
    variants: Sequence[tuple[str, str]] = DENSE_VARIANTS,
    episodes: int = 300,
    K: int = 5,
    k: int = 3,
    seed: int = 0,
    n_boot: int = N_BOOT,
    retention: Sequence[str] = ("unbounded", "recency"),
) -> pd.DataFrame:
    """DENSE under the uninformative query on the same streams with other distractor constructions.

    Only the distractors change (their slot vocabulary, and whether their values are the facts'
    values); slots, targets and positions are the same draws. Reports DENSE's recall, what its own
    exposures predict, the distractor share of what it exposes, and DENSE - QUERY (paired).
    """
    rows = []
    for slots, values in variants:
        ep = make_episodes(
            episodes,
            queries="uninformative",
            seed=seed,
            distractor_slots=slots,
            distractor_values=values,
        )
        g = run_grid(
            ep,
            K,
            k,
            seed,
            retention_rules=retention,
            selection_rules=("dense", "query"),
            encoder=encoder,
        )
        for r in retention:
            rep = type_filter_report(g, r, "dense")
            d = paired_difference(g, (r, "dense"), (r, "query"), n_boot)
            rows.append(
                {
                    "distractor_slots": slots,
                    "distractor_values": values,
                    "retention": r,
                    "dense_recall": rep["recall"],
                    "predicted_from_exposure": rep["predicted_from_exposure"],
                    "exposed_distractor_share": rep["exposed_distractor_share"],
                    "dense_minus_query": d[0],
                    "diff_lo": d[1],
                    "diff_hi": d[2],
                }
            )
    return pd.DataFrame(rows)
