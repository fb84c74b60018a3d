"""Check the benchmark's calibration criteria on the tuning seeds and on held-out seed ranges.

Writes data/calibration/checks.csv and data/calibration/retention_by_seed_range.{svg,png}.
Usage: python scripts/calibrate.py [--seeds 0:15 15:115 115:215] [--scheduler local:2]
(--scheduler: local[:N] or tcp://HOST:PORT runs the protocols on Dask, with the same bytes)
"""

import argparse
import sys
from pathlib import Path

import altair as alt
import pandas as pd

from workbench.common.io import write_csv
from workbench.common.notebook import save_figure
from workbench.common.seeds import parse_seeds
from workbench.common.sweep import SCHEDULER_HELP, scheduler_arg
from workbench.dsgc.calibration import regime_checks
from workbench.dsgc.protocols import Protocol
from workbench.dsgc.runs import run_protocol

OUT = Path(__file__).resolve().parent.parent / "data" / "calibration"


def windows(n: int, scheduler=None) -> None:
    """Worst 100-consecutive-seed window for each lexical criterion over seeds 0..n-1."""
    import numpy as np

    rows = []
    for blocks in (20, 50):
        p = Protocol.load("main").with_(seeds=(0, n), encoders=("lexical",), total_blocks=(blocks,))
        df = run_protocol(p, scheduler=scheduler)
        for (t, pol), g in df.groupby(["template", "policy"], sort=False):
            ok = g.sort_values("seed")["full_chain_retained"].to_numpy(dtype=float)
            w = np.convolve(ok, np.ones(100), "valid") / 100
            rows.append(
                {
                    "blocks": blocks,
                    "template": t,
                    "policy": pol,
                    "mean": ok.mean(),
                    "worst_window": w.min(),
                    "worst_window_start": int(w.argmin()),
                    "best_window": w.max(),
                }
            )
    out = pd.DataFrame(rows)
    write_csv(out, OUT / f"windows_0_{n}.csv")
    print(out.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", nargs="+", default=["0:15", "15:115", "115:215", "500:600"])
    ap.add_argument(
        "--windows",
        type=int,
        default=0,
        help="also slide a 100-seed window over seeds 0..N (lexical encoder)",
    )
    ap.add_argument("--scheduler", type=scheduler_arg, default=None, help=SCHEDULER_HELP)
    args = ap.parse_args(argv)
    if args.windows:
        windows(args.windows, args.scheduler)
    ranges = [parse_seeds(s) for s in args.seeds]
    checks = pd.concat(
        [regime_checks(r, scheduler=args.scheduler) for r in ranges], ignore_index=True
    )
    write_csv(checks, OUT / "checks.csv")
    print(checks.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    rows = []
    for r in ranges:
        df = run_protocol(Protocol.load("main").with_(seeds=r), scheduler=args.scheduler)
        g = df.groupby(["encoder", "template", "policy"], sort=False)["full_chain_retained"].mean()
        rows += [
            {"seeds": f"{r[0]}:{r[1]}", "encoder": e, "template": t, "policy": p, "retention": v}
            for (e, t, p), v in g.items()
        ]
    data = pd.DataFrame(rows)
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("policy:N", title=None, sort=["similarity", "no-graph", "dsgc"]),
            y=alt.Y("retention:Q", title="full-chain retention", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("seeds:N", title="seed range"),
            xOffset="seeds:N",
        )
        .properties(width=120, height=120)
        .facet(row=alt.Row("encoder:N", title=None), column=alt.Column("template:N", title=None))
        .properties(title="Calibration: tuning seeds vs held-out seeds (M=2, lambda=1, 20 blocks)")
    )
    save_figure(chart, "retention_by_seed_range", OUT)
    return 0 if checks.passed.all() else 1


if __name__ == "__main__":
    sys.exit(main())
