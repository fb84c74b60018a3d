"""The `workbench closure` command: check a window's referential closure; simulate the managers."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from workbench.closure import agent, managers, report
from workbench.closure import spans as C
from workbench.handles import DEFINITION_RE, HANDLE_RE, TOMBSTONE_RE, Patterns
from workbench.io import write_csv
from workbench.seeds import seeds_arg


def _patterns(args) -> Patterns:
    return Patterns(args.handle_re, args.definition_re, args.tombstone_re)


def cmd_check(args) -> int:
    """Print orphans and asymmetric pairs of a window; exit 1 when closure fails."""
    spans = C.load_spans(args.window)
    patterns = _patterns(args)
    if args.budget is None:
        report = C.analyze(spans, patterns=patterns)
        print(f"window {args.window}: {len(spans)} spans, {sum(s.cost for s in spans)} tokens")
    else:
        mgr = managers.make_manager(
            args.manager, args.budget, encoder=args.encoder, patterns=patterns
        )
        managers.replay(spans, mgr, args.goal)
        report = mgr.report()
        print(
            f"log {args.window}: {len(spans)} spans; manager {args.manager}, budget "
            f"{args.budget}: kept {int(mgr.kept.sum())}/{mgr.n} spans, {mgr.used} tokens, "
            f"{len(mgr.cycles)} eviction cycles"
        )
        last = mgr.cycles[-1] if mgr.cycles else None
        if last is None:
            print("eviction margin: n/a (the log never passed the eviction trigger)")
        else:
            print(f"evicted in the last cycle (turn {last.turn}): {', '.join(last.evicted) or '-'}")
            m = "n/a (nothing evicted)" if last.margin is None else f"{last.margin:.4f}"
            low = last.margin is not None and last.margin < mgr.floor
            flag = f" (below floor {mgr.floor:.2f})" if low else ""
            print(f"eviction margin: {m}{flag}")
    for line in report.lines():
        if not line.startswith("eviction margin"):
            print(line)
    return 0 if report.closed else 1


def cmd_simulate(args) -> int:
    """Run every manager over the same seeded runs; print (and optionally write) the summary."""
    names = [m.strip() for m in args.managers.split(",") if m.strip()]
    for m in names:
        if m not in managers.MANAGERS:
            raise ValueError(f"unknown manager {m!r}; choose from {', '.join(managers.MANAGERS)}")
    runs = agent.simulate(names, args.seeds, args.turns, args.capacity, args.encoder)
    summary = report.summary_table(runs)
    with pd.option_context(
        "display.width",
        200,
        "display.max_columns",
        50,
        "display.float_format",
        lambda v: f"{v:.3f}",
    ):
        print(summary.T.to_string())
    if args.out:
        out = Path(args.out)
        write_csv(summary.reset_index(), out / "closure_summary.csv", float_format="%.6f")
        timeline = pd.concat([r.timeline for r in runs], ignore_index=True)
        write_csv(timeline, out / "closure_timeline.csv", float_format="%.6f")
        print(f"wrote {out / 'closure_summary.csv'} and {out / 'closure_timeline.csv'}")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add `closure check` and `closure simulate` to a subparsers object."""
    p = subparsers.add_parser("closure", help="referential closure of tool-call windows (seed 002)")
    sub = p.add_subparsers(dest="closure_command", required=True)

    c = sub.add_parser("check", help="check a window's closure; exit 1 when it fails")
    c.add_argument("window", help="JSONL, one span a line (the spans the agent keeps now)")
    c.add_argument(
        "--budget",
        type=int,
        default=None,
        help="first replay the log through a manager with this token capacity",
    )
    c.add_argument("--manager", default="relevance", choices=list(managers.MANAGERS))
    c.add_argument("--goal", default=None, help="goal text (default: the first user span)")
    c.add_argument("--encoder", default="lexical", choices=["lexical", "sentence"])
    c.add_argument("--handle-re", default=HANDLE_RE)
    c.add_argument("--definition-re", default=DEFINITION_RE, help="group 1 is the handle")
    c.add_argument("--tombstone-re", default=TOMBSTONE_RE, help="group 1 is the handle")
    c.set_defaults(func=cmd_check)

    s = sub.add_parser("simulate", help="compare the managers over seeded agent runs")
    s.add_argument(
        "--seeds", type=seeds_arg, default=range(0, 5), help="A:B (half-open) or N = 0:N"
    )
    s.add_argument("--turns", type=int, default=300)
    s.add_argument("--capacity", type=int, default=400, help="window capacity in tokens")
    s.add_argument("--managers", default=",".join(managers.MANAGERS))
    s.add_argument("--encoder", default="lexical", choices=["lexical", "sentence"])
    s.add_argument("--out", default=None, help="folder for closure_summary.csv and the timeline")
    s.set_defaults(func=cmd_simulate)
    return p
