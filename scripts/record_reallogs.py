"""Record the replay of real agent runs (notebook 11's first part): every log of
`../shared/reallogs` a provider answered 200, cut at 25, 50 and 75 % of its tokens by each
framework's own editing, by ours, and by a built-in with our guard behind it, each cut judged by
the judge written apart from the trimmer (`workbench.agents.bench.replay`).

Usage: python scripts/record_reallogs.py [REALLOGS_DIR]   (default: ../shared/reallogs)

Writes data/results/agents_reallogs.csv (one row a cut, with the log's provenance: repository,
commit, path and place in it) and agents_reallogs_summary.csv; the notebook reads them, so a
checkout without the logs re-executes it. The ms column is the cut's own time: not recorded
(a timing is `make bench`'s), so the files are the same bytes on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.agents.bench import replay
from workbench.common.io import write_csv_set

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT.parent / "shared" / "reallogs"
    if not (root / "manifest.csv").exists():
        print(f"no manifest.csv in {root}: nothing recorded", file=sys.stderr)
        return 2
    df = replay.study(root).drop(columns="ms")
    summary = replay.summary(df)
    write_csv_set(ROOT / "data" / "results", {"agents_reallogs.csv": df,
                                              "agents_reallogs_summary.csv": summary},
                  float_format="%.6f")  # fmt: skip
    print(f"{len(df)} cuts of {df['log'].nunique()} logs -> data/results/agents_reallogs*.csv")
    print(summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
