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

HOPS, DELTAS = [1, 2, 3, 4], [0.25, 0.5, 0.75, 1.0]
NOISE = [(d, 0) for d in (0.0, 0.25, 0.5, 0.75, 1.0)] + [(0.0, s) for s in (1, 2, 4, 8)]


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
    lexical = studies.khop_table(studies.khop_runs(scenarios, "lexical", HOPS, DELTAS))
    delta, k = (
        studies.choose_damping(lexical),
        studies.choose_hops(lexical, studies.choose_damping(lexical)),
    )
    say(f"chosen on the lexical encoder: delta {delta:g}, hops {k}")
    runs1 = studies.khop_runs(scenarios, args.encoder, HOPS, DELTAS)
    say("k-hop runs")
    out = args.out
    write_csv(studies.khop_table(runs1), f"{out}/beyond_{tag}_khop.csv")
    write_csv(studies.hop_gain(runs1, 1, 2), f"{out}/beyond_{tag}_gain.csv")
    runs2 = studies.graph_runs(scenarios, args.encoder, sorted({1, k}), delta, NOISE)
    write_csv(studies.graph_table(runs2), f"{out}/beyond_{tag}_graph.csv")
    write_csv(studies.versus_similarity(runs2), f"{out}/beyond_{tag}_graph_vs_similarity.csv")
    say("imperfect graphs")
    graphs = studies.induced_graphs(scenarios, args.encoder)
    write_csv(
        studies.edge_quality(scenarios, graphs, args.encoder), f"{out}/beyond_{tag}_edges.csv"
    )
    runs3 = studies.induced_runs(scenarios, args.encoder, graphs, sorted({1, k}), delta)
    write_csv(studies.induced_table(runs3), f"{out}/beyond_{tag}_induced.csv")
    write_csv(studies.versus_oracle(runs3), f"{out}/beyond_{tag}_induced_vs.csv")
    say("induced graphs")
    tuning = studies.scenario_set(
        (args.tuning_seeds.start, args.tuning_seeds.stop), sizes, studies.TARGETS
    )
    table = pd.concat(
        [knn_tuning(tuning, get_encoder(e)) for e in ("lexical", "sentence")], ignore_index=True
    )
    write_csv(table, f"{out}/beyond_knn_tuning.csv")
    say("kNN tuning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
