"""Record the studies of notebook 10 that are too slow to re-run there: one encoder (the sentence
encoder by default) on many seeds, and the kNN-inducer tuning on held-out seeds.

Usage: python scripts/beyond_record.py [--encoder sentence] [--seeds 0:500] [--out data/results]

Writes, under --out: beyond_{tag}_khop.csv, _gain.csv, _graph.csv, _graph_vs_similarity.csv,
_edges.csv, _induced.csv, _induced_vs.csv (tag = encoder + seed count, e.g. sentence500) and
beyond_knn_tuning.csv. The damping and hops are chosen by the notebook's rule on the lexical
encoder over the same seeds, so the recorded tables line up with the notebook's.
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd

from workbench.beyond import studies
from workbench.beyond.induce import knn_tuning
from workbench.common.encoders import get_encoder
from workbench.common.io import write_csv
from workbench.common.seeds import seeds_arg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="sentence", choices=["lexical", "sentence"])
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("0:500"))
    ap.add_argument("--sizes", default="20,50")
    ap.add_argument("--tuning-seeds", type=seeds_arg, default=seeds_arg("1000:1100"))
    ap.add_argument("--out", default="data/results")
    args = ap.parse_args(argv)
    seeds = (args.seeds.start, args.seeds.stop)
    sizes = [int(x) for x in args.sizes.split(",")]
    tag = f"{args.encoder}{len(args.seeds)}"
    t0 = time.perf_counter()

    def say(what):
        print(f"[{time.perf_counter() - t0:7.1f} s] {what}", file=sys.stderr)

    scenarios = studies.scenario_set(seeds, sizes)
    say(f"{len(scenarios)} scenarios")
    lexical = studies.khop_table(
        studies.khop_runs(scenarios, "lexical", studies.HOPS, studies.DELTAS)
    )
    delta, k = studies.chosen_setting(lexical)
    say(f"chosen on the lexical encoder: delta {delta:g}, hops {k}")
    for name, table in studies.study_tables(scenarios, args.encoder, delta, k).items():
        write_csv(table, f"{args.out}/beyond_{tag}_{name}.csv")
        say(name)
    tuning = studies.scenario_set(
        (args.tuning_seeds.start, args.tuning_seeds.stop), sizes, studies.TARGETS
    )
    table = pd.concat(
        [knn_tuning(tuning, get_encoder(e)) for e in ("lexical", "sentence")], ignore_index=True
    )
    write_csv(table, f"{args.out}/beyond_knn_tuning.csv")
    say("kNN tuning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
