"""The one bootstrap: percentile intervals over resampled units, and paired differences on the
same units.

A unit is whatever is independent: a seed of the DSGC benchmark (one generated scenario, or
every scenario sharing that seed in a pooled cell), an episode of the recall benchmark, a seed
of the closure simulator. Resamples are fixed: the counts matrix for n units comes from
`seeds.rng(seed, n)`, so every table with the same n reuses the same resamples (paired across
its rows) and a run gives the same bytes every time. Intervals are percentile intervals (default
95%, 2000 resamples); a ratio of sums resamples numerator and denominator together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from workbench.common.seeds import rng

RESAMPLES = 2000
LEVEL = 0.95
SEED = 0


@lru_cache(maxsize=32)
def resample_counts(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples, n) counts: how often each of n units is drawn in each resample (rows sum to n)."""
    if n < 1:
        raise ValueError(f"cannot resample {n} units")
    draws = rng(seed, n).integers(0, n, size=(resamples, n))
    flat = (np.arange(resamples)[:, None] * n + draws).ravel()
    counts = np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)
    counts.flags.writeable = False
    return counts


@dataclass(frozen=True)
class Interval:
    """A mean with its bootstrap percentile interval over n units."""

    mean: float
    lo: float
    hi: float
    n: int

    def __repr__(self) -> str:
        return f"{self.mean:.3f} [{self.lo:.3f}, {self.hi:.3f}] (n={self.n})"


def bootstrap(
    values, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means and percentile intervals of each row of `values` ((n,) or (rows, n)): one matrix
    product for every row and resample."""
    x = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = x.shape[1]
    boot = x @ resample_counts(n, resamples, seed).T / n  # (rows, resamples)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [tail, 1.0 - tail], axis=1)
    return x.mean(axis=1), lo, hi


def interval(
    values, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> Interval:
    """One Interval for a 1-d sample."""
    m, lo, hi = bootstrap(values, resamples, level, seed)
    return Interval(float(m[0]), float(lo[0]), float(hi[0]), len(np.ravel(values)))


def ratio_bootstrap(
    num, den, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sum(num) / sum(den) over units for each row of `num` ((n,) or (rows, n); `den` (n,)),
    with percentile intervals from resampling the units (a resample whose denominator is 0 is
    left out); nan where every one is, or the pooled denominator is 0."""
    top = np.atleast_2d(np.asarray(num, dtype=np.float64))
    den = np.asarray(den, dtype=np.float64)
    rows = top.shape[0]
    total = den.sum()
    if total == 0:
        nan = np.full(rows, np.nan)
        return nan, nan.copy(), nan.copy()
    w = resample_counts(len(den), resamples, seed)
    bottom = w @ den  # (resamples,)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(bottom[:, None] > 0, (w @ top.T) / bottom[:, None], np.nan)
    tail = (1.0 - level) / 2.0
    if np.isnan(boot).all():
        lo = hi = np.full(rows, np.nan)
    else:
        lo, hi = np.nanquantile(boot, [tail, 1.0 - tail], axis=0)
    return top.sum(1) / total, lo, hi


def ratio_interval(
    num, den, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> Interval:
    """sum(num) / sum(den) over units (e.g. true edges found / edges induced, pooled over seeds),
    with a bootstrap interval from resampling the units; nan where the pooled denominator is 0."""
    m, lo, hi = ratio_bootstrap(num, den, resamples, level, seed)
    return Interval(float(m[0]), float(lo[0]), float(hi[0]), len(np.ravel(num)))


def _units(df: pd.DataFrame, by: list[str], metric: str, unit: str) -> pd.DataFrame:
    """The metric averaged per (group, unit): one value per seed in each cell."""
    return df.groupby([*by, unit], sort=False)[metric].mean().astype(float).reset_index()


def _by_size(groups):
    """Groups bucketed by their number of units, so each bucket is one matrix product."""
    buckets: dict[int, list] = {}
    for key, values in groups:
        buckets.setdefault(len(values), []).append((key, values))
    return buckets


def _grouped(
    frame: pd.DataFrame,
    by: list,
    values: str,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
):
    """[(group key, its rows, (n, mean, lo, hi))] in first-seen order: each group's `values`
    column bootstrapped, groups of one size resampled together."""
    groups = [
        (key if isinstance(key, tuple) else (key,), g) for key, g in frame.groupby(by, sort=False)
    ]
    found = {}
    for n, items in _by_size([(k, g[values].to_numpy()) for k, g in groups]).items():
        m, lo, hi = bootstrap(np.stack([v for _, v in items]), resamples, level, seed)
        for (key, _), a, b, c in zip(items, m, lo, hi, strict=True):
            found[key] = (n, a, b, c)
    return [(key, g, found[key]) for key, g in groups]


def interval_table(
    df: pd.DataFrame, by, metric: str = "full_chain_retained", unit: str = "seed", **boot
) -> pd.DataFrame:
    """Per group: n units, the mean and its bootstrap interval (lo, hi), groups in first-seen
    order. `boot`: resamples, level, seed (of the bootstrap)."""
    by = list(by)
    u = _units(df, by, metric, unit)
    rows = [(*key, *ci) for key, _, ci in _grouped(u, by, metric, **boot)]
    return pd.DataFrame(rows, columns=[*by, "n", "mean", "lo", "hi"])


def paired_table(
    df: pd.DataFrame,
    by,
    column: str,
    base,
    other,
    metric: str = "full_chain_retained",
    unit: str = "seed",
    **boot,
) -> pd.DataFrame:
    """`other` minus `base` (two values of `column`) per group, on the units both ran: the mean
    difference with its paired bootstrap interval, and how many units went up and down.
    `boot`: resamples, level, seed (of the bootstrap)."""
    by = list(by)
    u = _units(df[df[column].isin([base, other])], [*by, column], metric, unit)
    a = u[u[column] == base].drop(columns=column)
    b = u[u[column] == other].drop(columns=column)
    both = a.merge(b, on=[*by, unit], suffixes=("_base", "_other"), sort=False)
    both["d"] = both[f"{metric}_other"] - both[f"{metric}_base"]
    rows = []
    for key, g, (n, d, lo, hi) in _grouped(both, by, "d", **boot):
        rows.append(
            (
                *key,
                n,
                float(g[f"{metric}_base"].mean()),
                float(g[f"{metric}_other"].mean()),
                d,
                lo,
                hi,
                int((g["d"] > 0).sum()),
                int((g["d"] < 0).sum()),
            )
        )
    cols = [*by, "n", "base", "other", "diff", "lo", "hi", "up", "down"]
    return pd.DataFrame(rows, columns=cols)


def fmt_interval(mean: float, lo: float, hi: float, digits: int = 2) -> str:
    """'0.88 [0.85, 0.91]'."""
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_diff(diff: float, lo: float, hi: float, digits: int = 3) -> str:
    """'+0.122 [+0.094, +0.150]'."""
    return f"{diff:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
