"""The retention x selection streaming-recall benchmark (seed 003): grid, bootstrap, analyses.

Retention decides online, without the query, what stays under capacity K; selection ranks the
survivors at query time and exposes k. Every cell runs on the same seeded episodes and reports
required-fact recall beside retention rate, which upper-bounds it (an exposed item is a kept one).
Intervals resample whole episodes: the queries of one stream share its survivors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.common import stats
from workbench.common.reference import paper_figures
from workbench.recall.episodes import QUERY_FORMS, Episodes, make_episodes
from workbench.recall.rules import (
    QUERY_AWARE,
    RETENTION_RULES,
    SELECTION_RULES,
    expose,
    retain,
    selection_scores,
)

N_BOOT = 2000


def _name(rule) -> str:
    return rule[0] if isinstance(rule, tuple) else rule


@dataclass(frozen=True, eq=False, repr=False)
class Grid:
    """Every retention rule crossed with every selection rule on one batch of episodes."""

    episodes: Episodes
    retention_rules: tuple[str, ...]
    selection_rules: tuple[str, ...]
    kept: np.ndarray  # (R, E, N) survivors per retention rule
    scores: np.ndarray  # (S, E, Q, N) selection scores
    exposed: np.ndarray  # (R, S, E, Q, N) the top-k survivors
    rank: np.ndarray  # (R, S, E, Q, N) 0-based rank of each item
    K: int
    k: int
    seed: int

    @property
    def retained(self) -> np.ndarray:
        """(R, E, Q) whether each query's target (any copy of it) survived retention."""
        return (self.kept[:, :, None, :] & self.episodes.required[None]).any(-1)

    @property
    def hits(self) -> np.ndarray:
        """(R, S, E, Q) whether each query's target (any copy of it) was exposed."""
        return (self.exposed & self.episodes.required[None, None]).any(-1)

    def cell(self, retention: str, selection: str) -> tuple[int, int]:
        """Indices of a (retention, selection) cell."""
        return self.retention_rules.index(retention), self.selection_rules.index(selection)

    def recall(self, retention: str, selection: str) -> float:
        """Required-fact recall of one cell (a fraction)."""
        r, s = self.cell(retention, selection)
        return float(self.hits[r, s].mean())

    def retention_rate(self, retention: str) -> float:
        """Fraction of queries whose target survived the retention rule."""
        return float(self.retained[self.retention_rules.index(retention)].mean())

    def __repr__(self) -> str:
        return (
            f"Grid({len(self.retention_rules)} retention x {len(self.selection_rules)} "
            f"selection, K={self.K}, k={self.k}, {self.episodes!r})"
        )


def run_grid(
    episodes: Episodes,
    K: int = 5,
    k: int = 3,
    seed: int = 0,
    retention_rules: Sequence = RETENTION_RULES,
    selection_rules: Sequence = SELECTION_RULES,
    encoder=None,
) -> Grid:
    """Cross the rules on the episodes; a rule is a name or a (name, fn) pair.

    A custom retention fn(episodes, K) returns the (E, N) kept mask; a custom selection
    fn(episodes) returns (E, Q, N) scores. The invariant recall <= retention is checked per query.
    """
    kept = np.stack(
        [
            np.asarray(r[1](episodes, K), dtype=bool)
            if isinstance(r, tuple)
            else retain(r, episodes, K, seed)
            for r in retention_rules
        ]
    )
    scores = np.stack(
        [
            selection_scores(s[1] if isinstance(s, tuple) else s, episodes, seed, encoder)
            for s in selection_rules
        ]
    )
    pairs = [expose(scores[s], kept[r], k) for r in range(len(kept)) for s in range(len(scores))]
    shape = (len(kept), len(scores)) + scores.shape[1:]
    exposed = np.stack([p[0] for p in pairs]).reshape(shape)
    rank = np.stack([p[1] for p in pairs]).reshape(shape)
    grid = Grid(
        episodes,
        tuple(map(_name, retention_rules)),
        tuple(map(_name, selection_rules)),
        kept,
        scores,
        exposed,
        rank,
        K,
        k,
        seed,
    )
    if np.any(grid.hits & ~grid.retained[:, None]):
        raise AssertionError("a selection rule exposed an item its retention rule had dropped")
    return grid


def run_forms(
    episodes: int = 300,
    K: int = 5,
    k: int = 3,
    density: float = 0.3,
    seed: int = 0,
    encoder=None,
    marker: bool = False,
) -> dict[str, Grid]:
    """The grid on the same seeded streams under each query form (informative, uninformative)."""
    return {
        form: run_grid(
            make_episodes(episodes, density=density, queries=form, marker=marker, seed=seed),
            K,
            k,
            seed,
            encoder=encoder,
        )
        for form in QUERY_FORMS
    }


def invariant_holds(grid: Grid) -> bool:
    """No cell's recall exceeds its row's retention rate (checked per query, hence per cell)."""
    return bool(np.all(grid.hits <= grid.retained[:, None]))


def recall_matrix(grid: Grid) -> dict[str, dict[str, float]]:
    """Recall in percent (one decimal) by retention rule, then selection rule; for records."""
    hits = grid.hits.mean((-2, -1))
    return {
        r: {s: round(100 * float(hits[i, j]), 1) for j, s in enumerate(grid.selection_rules)}
        for i, r in enumerate(grid.retention_rules)
    }


# --- bootstrap over episodes ----------------------------------------------------------------


def bootstrap_ci(
    per_episode: np.ndarray, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and percentile interval of (..., E) per-episode values, the episode the resampled
    unit (`common.stats.bootstrap`: one resample set for all rows, so paired). n_boot=0: no
    interval (NaN), for episodes that are not independent draws."""
    x = np.asarray(per_episode, dtype=np.float64)
    flat = x.reshape(-1, x.shape[-1])
    shape = x.shape[:-1]
    if n_boot == 0:
        nan = np.full(shape, np.nan)
        return flat.mean(1).reshape(shape), nan, nan.copy()
    m, lo, hi = stats.bootstrap(flat, n_boot, level, seed)
    return m.reshape(shape), lo.reshape(shape), hi.reshape(shape)


def _pp(values) -> list[float]:
    return [round(100 * float(v), 1) for v in values]


def cells_table(grid: Grid, n_boot: int = N_BOOT, seed: int | None = None) -> pd.DataFrame:
    """One row per cell: recall and retention rate in percent, each with a 95% episode-bootstrap interval."""
    seed = grid.seed if seed is None else seed
    rec = bootstrap_ci(grid.hits.mean(-1), n_boot, seed)  # (R, S, E) per-episode recall
    ret = bootstrap_ci(grid.retained.mean(-1), n_boot, seed)
    rows = []
    for r, rname in enumerate(grid.retention_rules):
        for s, sname in enumerate(grid.selection_rules):
            rows.append(
                {
                    "retention": rname,
                    "selection": sname,
                    **_triple(("recall", "recall_lo", "recall_hi"), (x[r, s] for x in rec)),
                    **_triple(
                        ("retention_rate", "retention_lo", "retention_hi"), (x[r] for x in ret)
                    ),
                }
            )
    out = pd.DataFrame(rows)
    out["K"], out["k"] = grid.K, grid.k
    out["episodes"], out["n_queries"] = (
        grid.episodes.n_episodes,
        grid.hits.shape[2] * grid.hits.shape[3],
    )
    out["query_form"] = grid.episodes.params.get("queries", "")
    return out


def paired_difference(
    grid: Grid,
    a: tuple[str, str],
    b: tuple[str, str],
    n_boot: int = N_BOOT,
    seed: int | None = None,
    other: Grid | None = None,
) -> tuple[float, float, float]:
    """Recall of cell a minus cell b in pp, with a paired bootstrap interval (same episode resamples).

    Cell b comes from `other` when given (the same episodes under another condition).
    """
    seed = grid.seed if seed is None else seed
    ha = grid.hits[grid.cell(*a)].mean(-1)
    ob = grid if other is None else other
    if ob.episodes.n_episodes != grid.episodes.n_episodes:
        raise ValueError("paired differences need the same episodes in both grids")
    hb = ob.hits[ob.cell(*b)].mean(-1)
    m, lo, hi = bootstrap_ci(ha - hb, n_boot, seed)
    return tuple(_pp([m, lo, hi]))


def decomposition(
    grid: Grid,
    bounded: str = "recency",
    aware: str = "query",
    independent: str = "recency",
    unbounded: str = "unbounded",
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """The matched-access decomposition of the mixed-cell advantage, in pp with paired intervals.

    matched_access_gain = recall(bounded, aware) - recall(bounded, independent): query awareness
      with the same material available;
    mixed_comparison = recall(unbounded, aware) - recall(bounded, independent): the confounded
      comparison of a full-history query-aware agent with a bounded query-blind one;
    access_contribution = recall(unbounded, aware) - recall(bounded, aware) = mixed - matched:
      what full-history access adds. The three share one set of episode resamples.
    """
    rows = [
        ("matched_access_gain", (bounded, aware), (bounded, independent)),
        ("mixed_comparison", (unbounded, aware), (bounded, independent)),
        ("access_contribution", (unbounded, aware), (bounded, aware)),
    ]
    out = []
    for name, a, b in rows:
        est, lo, hi = paired_difference(grid, a, b, n_boot)
        out.append(
            {
                "component": name,
                "pp": est,
                "lo": lo,
                "hi": hi,
                "minuend": "/".join(a),
                "subtrahend": "/".join(b),
            }
        )
    return pd.DataFrame(out)


# --- analyses --------------------------------------------------------------------------------


def memory_pressure(
    episodes: Episodes,
    Ks: Sequence[int] = (2, 3, 5, 10, 20),
    k: int = 3,
    seed: int = 0,
    encoder=None,
    n_boot: int = N_BOOT,
    **rules,
) -> pd.DataFrame:
    """The full grid at each capacity K (the episodes, and so the scores, stay the same)."""
    return pd.concat(
        [cells_table(run_grid(episodes, K, k, seed, encoder=encoder, **rules), n_boot) for K in Ks],
        ignore_index=True,
    )


DELAY_BUCKETS = ((0, 2), (3, 5), (6, 9))


def ratio_ci(
    num: np.ndarray, den: np.ndarray, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sum(num) / sum(den) over episodes, with a percentile interval from resampled episodes.

    num is (..., E), den (E,). For a subset of queries (a delay bucket) an episode holds 0, 1 or
    2 of them, so a per-episode mean is undefined for some episodes; the ratio of sums is not.
    """
    x = np.asarray(num, dtype=np.float64)
    flat = x.reshape(-1, x.shape[-1])
    est, lo, hi = stats.ratio_bootstrap(flat, den, n_boot, level, seed)  # the same resamples
    shape = x.shape[:-1]
    return est.reshape(shape), lo.reshape(shape), hi.reshape(shape)


def _triple(names: tuple[str, str, str], values) -> dict:
    return dict(zip(names, _pp(values), strict=True))


def delay_table(
    grid: Grid,
    buckets: Sequence[tuple[int, int]] = DELAY_BUCKETS,
    n_boot: int = N_BOOT,
    seed: int | None = None,
) -> pd.DataFrame:
    """Recall and retention rate (percent) by delay bucket, with 95% episode-bootstrap intervals.

    Delay counts the observations between the target (its last copy) and the queries.
    """
    seed = grid.seed if seed is None else seed
    delay = grid.episodes.delay
    hits, retained = grid.hits, grid.retained
    rows = []
    for lo, hi in buckets:
        m = (delay >= lo) & (delay <= hi)  # (E, Q)
        den = m.sum(1)  # queries of each episode in the bucket
        rec = ratio_ci((hits & m).sum(-1), den, n_boot, seed)  # each (R, S)
        ret = ratio_ci((retained & m).sum(-1), den, n_boot, seed)  # each (R,)
        for r, rname in enumerate(grid.retention_rules):
            for s, sname in enumerate(grid.selection_rules):
                rows.append(
                    {
                        "delay": f"{lo}-{hi}",
                        "retention": rname,
                        "selection": sname,
                        **_triple(("recall", "recall_lo", "recall_hi"), (x[r, s] for x in rec)),
                        **_triple(
                            ("retention_rate", "retention_lo", "retention_hi"), (x[r] for x in ret)
                        ),
                        "queries": int(m.sum()),
                        "episodes": int((den > 0).sum()),
                    }
                )
    return pd.DataFrame(rows)


def density_sweep(
    densities: Sequence[float] = (0.1, 0.3, 0.5, 0.7),
    episodes: int = 300,
    K: int = 5,
    k: int = 3,
    seed: int = 0,
    queries: str = "informative",
    encoder=None,
    n_boot: int = N_BOOT,
    **rules,
) -> pd.DataFrame:
    """The grid at each distractor density (fresh episodes per density, same seed)."""
    frames = []
    for d in densities:
        ep = make_episodes(episodes, density=d, queries=queries, seed=seed)
        frames.append(
            cells_table(run_grid(ep, K, k, seed, encoder=encoder, **rules), n_boot).assign(
                density=d
            )
        )
    return pd.concat(frames, ignore_index=True)


def artifact_study(
    episodes: int = 300,
    K: int = 5,
    k: int = 3,
    seed: int = 0,
    density: float = 0.3,
    encoder=None,
    n_boot: int = N_BOOT,
    rows: Sequence[str] = ("recency", "unbounded"),
) -> pd.DataFrame:
    """Uninformative queries with and without the distractor marker: recall and the marker's paired boost."""
    grids = {
        m: run_grid(
            make_episodes(episodes, density=density, queries="uninformative", marker=m, seed=seed),
            K,
            k,
            seed,
            retention_rules=rows,
            encoder=encoder,
        )
        for m in (False, True)
    }
    plain, marked = grids[False], grids[True]
    out = []
    for r in rows:
        for s in plain.selection_rules:
            boost = paired_difference(marked, (r, s), (r, s), n_boot, other=plain)
            out.append(
                {
                    "retention": r,
                    "selection": s,
                    "recall_plain": round(100 * plain.recall(r, s), 1),
                    "recall_marked": round(100 * marked.recall(r, s), 1),
                    "boost_pp": boost[0],
                    "boost_lo": boost[1],
                    "boost_hi": boost[2],
                    "distractor_share_plain": type_filter_report(plain, r, s)[
                        "exposed_distractor_share"
                    ],
                    "distractor_share_marked": type_filter_report(marked, r, s)[
                        "exposed_distractor_share"
                    ],
                }
            )
    return pd.DataFrame(out)


def same_hits(grid: Grid, retention: str, a: str, b: str) -> bool:
    """Whether two selection rules expose the target for exactly the same queries."""
    r, sa = grid.cell(retention, a)
    return bool(np.array_equal(grid.hits[r, sa], grid.hits[r, grid.cell(retention, b)[1]]))


def type_filter_report(grid: Grid, retention: str, selection: str = "dense") -> dict:
    """How a selector treats distractors under uninformative queries, and two recall predictions.

    predicted_by_type_filtering: a selector that exposes k retained facts and no distractor,
      chosen without regard to the target: a retained target is exposed with probability
      min(k, r) / r, r = retained facts. Under unbounded retention every stream has 7 facts, so
      this is 3/7 whatever the selector does: it says what perfect filtering would give.
    predicted_from_exposure: what this selector's own exposures give. With one query text for
      every target the exposed set cannot depend on the target, and the target is uniform over
      the stream's facts, so P(hit) = |exposed facts| / |facts|, exactly in expectation.
    """
    r, s = grid.cell(retention, selection)
    ep = grid.episodes
    exposed = grid.exposed[r, s]
    exposed_d = exposed & ep.distractor[:, None, :]
    share = float(exposed_d.sum() / max(exposed.sum(), 1))
    facts = (grid.kept[r] & ~ep.distractor).sum(1)[:, None]  # (E, 1)
    pred = np.where(grid.retained[r], np.minimum(grid.k, facts) / np.maximum(facts, 1), 0.0)
    n_facts = (~ep.distractor).sum(1)[:, None]
    from_exposure = (exposed & ~ep.distractor[:, None, :]).sum(-1) / np.maximum(n_facts, 1)
    return {
        "recall": round(100 * grid.recall(retention, selection), 1),
        "exposed_distractor_share": round(100 * share, 1),
        "distractor_base_rate": round(100 * float(ep.distractor.mean()), 1),
        "distractors_exposed_per_query": round(float(exposed_d.sum(-1).mean()), 2),
        "queries_with_a_distractor_exposed": round(100 * float(exposed_d.any(-1).mean()), 1),
        "predicted_by_type_filtering": round(100 * float(pred.mean()), 1),
        "predicted_from_exposure": round(100 * float(from_exposure.mean()), 1),
    }


def selector_differences(
    grid: Grid,
    pairs: Sequence[tuple[str, str]] = (
        ("dense", "query"),
        ("dense", "oracle"),
        ("query", "oracle"),
    ),
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """Paired recall differences between selectors within each retention row, in pp with intervals."""
    rows = []
    for r in grid.retention_rules:
        for a, b in pairs:
            est, lo, hi = paired_difference(grid, (r, a), (r, b), n_boot)
            rows.append(
                {
                    "retention": r,
                    "minuend": a,
                    "subtrahend": b,
                    "pp": est,
                    "lo": lo,
                    "hi": hi,
                    "query_form": grid.episodes.params.get("queries", ""),
                }
            )
    return pd.DataFrame(rows)


FAILURES = ("eviction", "displacement", "similarity_confusion")


def failure_classes(grid: Grid) -> np.ndarray:
    """(R, S, E, Q) int: -1 success, 0 eviction, 1 displacement, 2 similarity confusion.

    eviction: the target did not survive retention. Otherwise the target survived but was not
    exposed; it is similarity confusion when the selector is query-aware (query, dense) and an
    exposed survivor scored strictly higher similarity to the query than the target, and
    displacement when the target lost on a query-independent order (recency, random) or on a
    recency tie-break among equal similarities.
    """
    req = grid.episodes.required[None]  # (1, E, Q, N)
    t_score = np.where(req, grid.scores, -np.inf).max(-1)  # (S, E, Q) the target's best score
    t_score = t_score[None, ..., None]
    outscored = (grid.exposed & (grid.scores[None] > t_score)).any(-1)  # (R, S, E, Q)
    aware = np.array([s in QUERY_AWARE for s in grid.selection_rules])[None, :, None, None]
    retained = grid.retained[:, None]
    out = np.where(~retained, 0, np.where(aware & outscored, 2, 1))
    return np.where(grid.hits, -1, out)


def failure_table(grid: Grid) -> pd.DataFrame:
    """Failure counts per cell, split into eviction, displacement and similarity confusion."""
    cls = failure_classes(grid)
    rows = []
    for r, rname in enumerate(grid.retention_rules):
        for s, sname in enumerate(grid.selection_rules):
            c = cls[r, s]
            rows.append(
                {
                    "retention": rname,
                    "selection": sname,
                    "failures": int((c >= 0).sum()),
                    **{f: int((c == i).sum()) for i, f in enumerate(FAILURES)},
                }
            )
    return pd.DataFrame(rows)


def load_paper_figures() -> dict:
    """The published numbers of the retention-vs-selection paper."""
    return paper_figures("recall")


def squad_numbers(grid: Grid, bounded: str = "recency", n_boot: int = N_BOOT) -> dict:
    """The paper's real-text contrasts as (pp, lo, hi): matched gain, access to DENSE, DENSE vs Jaccard."""
    return {
        "matched_access_gain_pp": paired_difference(
            grid, (bounded, "query"), (bounded, "recency"), n_boot
        ),
        "unbounded_access_to_dense_pp": paired_difference(
            grid, ("unbounded", "dense"), (bounded, "dense"), n_boot
        ),
        "dense_minus_oracle_bounded_pp": paired_difference(
            grid, (bounded, "dense"), (bounded, "oracle"), n_boot
        ),
        "dense_minus_jaccard_unbounded_pp": paired_difference(
            grid, ("unbounded", "dense"), ("unbounded", "query"), n_boot
        ),
        "dense_minus_jaccard_bounded_pp": paired_difference(
            grid, (bounded, "dense"), (bounded, "query"), n_boot
        ),
    }


def same_retention(grid: Grid, a: str, b: str) -> bool:
    """Whether two retention rules keep exactly the same observations in every episode."""
    ia, ib = grid.retention_rules.index(a), grid.retention_rules.index(b)
    return bool(np.array_equal(grid.kept[ia], grid.kept[ib]))


def same_target_share(episodes: Episodes) -> float:
    """Percent of episodes whose queries all ask about one fact (targets are drawn independently)."""
    t = episodes.target
    return round(100 * float((t == t[:, :1]).all(1).mean()), 1)
