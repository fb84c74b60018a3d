"""The `workbench conversations` command: a LoCoMo-format file read into scenarios (one a
question), and the study of where the graph is the gap, written as CSV."""

from __future__ import annotations

import sys

from workbench.beyond import conversations as C
from workbench.common.encoders import ENCODERS
from workbench.common.io import write_csv_set
from workbench.common.options import names, number, number_list, out_dir, out_file
from workbench.dsgc.scenario import save_scenarios


def cmd_conversations(args) -> int:
    if args.out is None and args.study is None:
        raise ValueError(
            "give --out (the scenarios as JSONL), --study (the study's tables), or both"
        )
    read = C.read_conversations(args.file, min_evidence=args.min_evidence, dates=args.dates)
    for line in [*C.lines(read.repairs, "repaired"), *C.lines(read.warnings, "warning")]:
        print(line, file=sys.stderr)
    print(C.summary(read, args.min_evidence))
    if not read.scenarios:
        raise ValueError(f"{args.file}: no question has {args.min_evidence} evidence turns or more")
    if args.out is not None:
        save_scenarios(read.scenarios, args.out)
        print(f"wrote {len(read.scenarios)} scenarios to {args.out}")
    if args.study is not None:
        mults = [float(x) for x in args.budget_multipliers.split(",")]
        runs = C.study_runs(read.scenarios, args.encoders.split(","), mults)
        table = C.study_table(runs)
        paths = write_csv_set(
            args.study, {"runs.csv": runs, "table.csv": table, "bar.csv": C.bar(table)}
        )
        print(C.study_text(table))
        for p in paths.values():
            print(f"wrote {p}")
    return 0


def add_parser(sub) -> None:
    c = sub.add_parser(
        "conversations",
        help="read long conversations in LoCoMo's format into scenarios, and study them",
        description="Each question of a LoCoMo-format file (a JSON list of samples with "
        "`conversation` and `qa`) becomes a scenario: every turn a block, the question the "
        "query, its evidence turns the chain and the right graph. Evidence the file writes "
        "several ids to an entry, or with leading zeros, is repaired and said so on stderr; a "
        "question whose evidence names no turn is left out with a warning.",
    )
    c.add_argument("file", help="the LoCoMo-format JSON file")
    c.add_argument("--out", type=out_file, default=None, help="write the scenarios as JSONL")
    c.add_argument(
        "--min-evidence", type=number("min_evidence"), default=C.MIN_EVIDENCE,
        help="keep the questions with at least this many evidence turns (default 2)",
    )  # fmt: skip
    c.add_argument(
        "--dates", action="store_true",
        help="begin each block's text with its session's date, as written in the file",
    )  # fmt: skip
    c.add_argument(
        "--study", type=out_dir, default=None,
        help="run recency, similarity-only and DSGC over the induced and the right graph; write "
        "runs.csv, table.csv and bar.csv to this folder",
    )  # fmt: skip
    c.add_argument("--encoders", type=names(ENCODERS), default=",".join(ENCODERS))
    c.add_argument(
        "--budget-multipliers", type=number_list("budget_multiplier"), default="4,16,64",
        help="comma-separated (default 4,16,64)",
    )  # fmt: skip
    c.set_defaults(func=cmd_conversations)
