"""The one-hop rule's target retention as the store grows (notebook 09's large-N table).

Generates a store per N (kept in --work), embeds it with each encoder, queries the first
--queries chains of each target template over the whole store, and writes
data/results/scale_retention.csv (rows) and data/results/scale_chunks.csv (seconds per task).

Usage: python scripts/scale_study.py [--ns 1000,10000,100000] [--encoders lexical,sentence]
       [--queries 100] [--scheduler local:2] [--work DIR]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from workbench.common.io import write_csv
from workbench.common.provenance import stamp
from workbench.common.sweep import SCHEDULER_HELP, scheduler_arg
from workbench.scale.bigstore import retention_study, retention_summary

OUT = Path(__file__).resolve().parent.parent / "data" / "results"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ns", default="1000,10000,100000")
    ap.add_argument("--encoders", default="lexical,sentence")
    ap.add_argument("--queries", type=int, default=100, help="chains queried per template")
    ap.add_argument("--scheduler", type=scheduler_arg, default=None, help=SCHEDULER_HELP)
    ap.add_argument("--work", default=None, help="where the stores go (default: a temp dir)")
    args = ap.parse_args(argv)
    ns = [int(x) for x in args.ns.split(",")]
    work = args.work or tempfile.mkdtemp(prefix="wb-stores-")
    t0 = time.perf_counter()
    rows, chunks = retention_study(
        ns, args.encoders.split(","), work, queries=args.queries, scheduler=args.scheduler,
        progress=True,
    )  # fmt: skip
    chunks["scheduler"] = args.scheduler or "in-process"
    for k, v in stamp("scripts/scale_study.py").items():
        chunks[k] = v
    write_csv(rows, OUT / "scale_retention.csv")
    write_csv(chunks, OUT / "scale_chunks.csv")
    print(retention_summary(rows).to_string(index=False))
    print(f"{time.perf_counter() - t0:.0f} s; wrote {OUT}/scale_retention.csv, scale_chunks.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
