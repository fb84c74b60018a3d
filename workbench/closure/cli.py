"""The `workbench closure` command: check a window's or an agent log's referential closure, trim
an agent log closure-safely, simulate the managers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from workbench.closure import logs as L
from workbench.closure.logs.trim import STRATEGIES, trim_log
from workbench.closure.window import agent, gate, managers, report
from workbench.closure.window import cycle as window
from workbench.closure.window import spans as C
from workbench.common.handles import HANDLE_RE
from workbench.common.io import InputError, parse_json, read_json, write_csv_set
from workbench.common.options import names, number, out_dir, out_file, regex
from workbench.common.seeds import seeds_arg

AUTO, WINDOW = "auto", "workbench"  # --format: detect it; a workbench window (JSONL spans)
FORMATS = (AUTO, WINDOW, *L.FORMATS)


def _patterns(args):
    return C.closure_patterns(args.handle_re, args.definition_re, args.tombstone_re)


def _format(path, option: str) -> str | None:
    """The agent-log format of the file (the --format option, detected when it says auto), or
    None for a workbench window (JSONL spans)."""
    if option != AUTO:
        return None if option == WINDOW else option
    try:
        obj = read_json(path)
    except InputError:
        if _first_line_is_a_span(path):
            return None  # JSONL: the span reader names the bad line, if there is one
        raise  # a JSON log that does not parse: read_json names the line (and the byte)
    if isinstance(obj, dict) and {"id", "turn", "role", "text"} <= set(obj):
        return None  # a one-span window
    try:
        return L.detect(obj)
    except L.LogError as e:  # neither a window nor a log: name the file
        raise L.LogError(e.message, path=path, field=e.field) from None


def _first_line_is_a_span(path) -> bool:
    """Does the file's first non-blank line hold one whole span object (a JSONL window)? A file
    with no such line at all goes to the span reader too, which says what is missing."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    first = parse_json(raw.decode("utf-8"))  # bounded depth, strict
                    return isinstance(first, dict) and {"id", "turn", "role"} <= set(first)
    except (UnicodeDecodeError, InputError):
        return False
    except OSError:
        return True  # unreadable: the span reader names the file and the reason
    return True


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=1, allow_nan=False))


def cmd_check(args) -> int:
    """Closure of a window or an agent log; exit 1 when it fails (or the gate raises, or the
    window ends over budget)."""
    fmt = _format(args.window, args.format)
    patterns = _patterns(args)
    if fmt is not None:
        log = L.load(args.window, fmt)
        rep = L.check(log, pattern=args.handle_re)
        if args.json:
            _print_json({"log": str(args.window), "format": log.format,
                         "warnings": list(log.warnings), **rep.to_dict()})  # fmt: skip
        else:
            print(f"log {args.window}: {log.format}, {len(log.messages)} messages")
            print(*(f"warning: {w}" for w in log.warnings), *rep.lines(), sep="\n")
        return 0 if rep.closed else 1
    spans = C.load_spans(args.window)
    if args.budget is None:
        rep = C.analyze(spans, patterns=patterns)
        if args.json:
            _print_json(
                {
                    "window": str(args.window),
                    "closed": rep.closed,
                    "orphans": rep.orphans,
                    "missing_deps": rep.missing_deps,
                    "asymmetric": rep.asymmetric,
                }
            )
            return 0 if rep.closed else 1
        print(f"window {args.window}: {len(spans)} spans, {sum(s.cost for s in spans)} tokens")
        print("eviction margin: n/a (no --budget: nothing to evict)")
    elif args.manager is None:
        d = gate.window_decision(
            spans,
            args.budget,
            floor=args.floor,
            mode=args.mode,
            goal=args.goal,
            encoder=args.encoder,
            patterns=patterns,
        )
        if args.json:
            _print_json({"window": str(args.window), **d.to_dict()})
        else:
            print(f"window {args.window}: {len(spans)} spans, {d.tokens} tokens; mode {args.mode}")
            print(*d.lines(), sep="\n")
        return 0 if d.decision != "raise" and d.closed and not d.over else 1
    else:
        mgr = managers.make_manager(
            args.manager,
            args.budget,
            encoder=args.encoder,
            patterns=patterns,
            mode=args.mode if args.manager == "gate" else "throttle",
            floor=args.floor,
        )
        try:
            managers.replay(spans, mgr, args.goal)
        except C.ContextClosureError as e:
            print(
                f"log {args.window}: manager {args.manager} (mode raise), budget {args.budget}: "
                f"raised at turn {max(mgr.index.spans[i].turn for i in mgr.retained)}"
            )
            print(f"ContextClosureError: {e}")
            return 1
        rep = mgr.report()
        print(
            f"log {args.window}: {len(spans)} spans; manager {args.manager}, budget "
            f"{args.budget}: kept {len(mgr.retained)}/{mgr.n} spans, {mgr.used} tokens, "
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
            print(f"eviction margin: {m}{flag}; decision: {last.decision}")
        for turn, over in mgr.over_budget:
            print(f"OVER BUDGET after turn {turn} by {over} tokens")
        if mgr.over_budget and rep.closed:
            for line in rep.lines():
                print(line)
            return 1
    for line in rep.lines():
        if not line.startswith("eviction margin"):
            print(line)
    return 0 if rep.closed else 1


def cmd_trim(args) -> int:
    """Trim an agent log to a token budget without orphaning a call, a result or a handle."""
    fmt = _format(args.log, args.format)
    if fmt is None:
        raise C.SpanError(
            "closure trim takes an agent log (OpenAI chat or Responses, Anthropic or LangChain JSON)",
            path=args.log,
        )
    log = L.load(args.log, fmt)
    t = trim_log(
        log,
        args.max_tokens,
        keep_system=args.keep_system,
        strategy=args.strategy,
        pattern=args.handle_re,
    )
    print(f"log {args.log}: {log.format}, {len(log.messages)} messages; budget {args.max_tokens}")
    print(*(f"warning: {w}" for w in log.warnings), sep="\n", end="\n" if log.warnings else "")
    if not any(m.role != "system" for m in log.messages):
        if t.over_budget:
            print(
                f"NOTHING FITS: the log holds a system prompt only, and it is over {args.max_tokens} tokens; nothing written"
            )
            return 1
        L.save(t.output, args.out)
        print(
            f"the log holds a system prompt only (no conversation to trim): written unchanged, {t.tokens} tokens"
        )
        print(f"wrote {args.out}")
        return 0
    if not t.conversation:
        print(
            f"NOTHING FITS: at {args.max_tokens} tokens no message besides the system prompt "
            "fits (the last user turn with what it needs does not); nothing written"
        )
        return 1
    L.save(t.output, args.out)
    print(
        f"kept {len(t.kept)} messages, {t.tokens} tokens (approx.), {len(t.tombstones)} "
        f"tombstones{': ' + ', '.join(t.tombstones) if t.tombstones else ''}"
    )
    print(*t.report.lines(), sep="\n")
    if not t.report.closed and t.closed:
        print(
            "(every orphan above is the input's own: no trim can close it, and this one adds none)"
        )
    if t.over_budget:
        print(f"OVER BUDGET by {t.over_budget} tokens: no closed window fits {args.max_tokens}")
    print(f"wrote {args.out}")
    return 0 if t.fits else 1


def cmd_simulate(args) -> int:
    """Run every manager over the same seeded runs; print (and optionally write) the summary."""
    names = [m.strip() for m in args.managers.split(",") if m.strip()]
    for m in names:
        if m not in managers.MANAGERS:
            raise ValueError(f"unknown manager {m!r}; choose from {', '.join(managers.MANAGERS)}")
    runs = agent.simulate(
        names, args.seeds, args.turns, args.capacity, args.encoder, mode=args.mode
    )
    summary = report.outcome_table(runs)
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
        src = (
            f"simulated: workbench closure simulate --seeds {args.seeds.start}:{args.seeds.stop} "
            f"--turns {args.turns} --capacity {args.capacity} --encoder {args.encoder} "
            f"--mode {args.mode}"
        )
        timeline = pd.concat([r.timeline for r in runs], ignore_index=True).assign(source=src)
        tables = {"closure_summary.csv": summary.reset_index().assign(source=src)}
        tables["closure_timeline.csv"] = timeline
        write_csv_set(out, tables, float_format="%.6f")  # both files or neither
        print(f"wrote {out / 'closure_summary.csv'} and {out / 'closure_timeline.csv'}")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add `closure check`, `closure trim` and `closure simulate` to a subparsers object."""
    p = subparsers.add_parser("closure", help="referential closure of tool-call windows (seed 002)")
    sub = p.add_subparsers(dest="closure_command", required=True)

    def handle_rules(c):
        c.add_argument(
            "--handle-re",
            type=regex((0, 1)),
            default=HANDLE_RE,
            help="what else counts as an id (group 1, if any, is the id); in an agent log every "
            "value a call takes from an earlier result or a person's message counts anyway, and "
            "'' adds nothing (default: the closure note's run|job|sess|doc_<hex>)",
        )
        c.add_argument(
            "--definition-re",
            type=regex((1,)),
            default=None,
            help='span windows: group 1 is the handle (default: a JSON key "id" or "<name>_id" '
            "holding one); in an agent log every message but the assistant's defines the "
            "handles it holds",
        )
        c.add_argument(
            "--tombstone-re", type=regex((1,)), default=None, help="group 1 is the handle"
        )
        c.add_argument("--format", default="auto", choices=FORMATS, help="default: detected")

    c = sub.add_parser(
        "check", help="check a window's or an agent log's closure; exit 1 when it fails"
    )
    c.add_argument(
        "window",
        help="window JSONL (one span a line, optional score / pinned) or an agent log "
        "(OpenAI chat or Responses, Anthropic or LangChain JSON)",
    )
    c.add_argument(
        "--budget",
        type=number("budget"),
        default=None,
        help="token budget: the gate's decision on the window (with --manager: replay the log)",
    )
    c.add_argument("--manager", default=None, choices=list(managers.MANAGERS))
    c.add_argument("--mode", default="throttle", choices=list(window.MODES))
    c.add_argument(
        "--floor", type=number("floor"), default=window.FLOOR, help="eviction-margin floor"
    )
    c.add_argument("--goal", default=None, help="goal text (default: the first user span)")
    c.add_argument("--encoder", default="lexical", choices=["lexical", "sentence"])
    c.add_argument("--json", action="store_true", help="machine-readable output")
    handle_rules(c)
    c.set_defaults(func=cmd_check)

    t = sub.add_parser("trim", help="trim an agent log closure-safely to a token budget")
    t.add_argument(
        "log", help="an agent log (OpenAI chat or Responses, Anthropic or LangChain JSON)"
    )
    t.add_argument(
        "--max-tokens", type=number("budget"), required=True, help="budget (approximate tokens)"
    )
    t.add_argument(
        "--keep-system",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the system message (default: yes)",
    )
    t.add_argument("--strategy", default="last", choices=list(STRATEGIES))
    t.add_argument(
        "--out", type=out_file, required=True, help="the trimmed log, in the format it was read"
    )
    handle_rules(t)
    t.set_defaults(func=cmd_trim)

    s = sub.add_parser("simulate", help="compare the managers over seeded agent runs")
    s.add_argument(
        "--seeds", type=seeds_arg, default=range(0, 5), help="A:B (half-open) or N = 0:N"
    )
    s.add_argument("--turns", type=number("turns"), default=300)
    s.add_argument(
        "--capacity", type=number("capacity"), default=400, help="window capacity in tokens"
    )
    s.add_argument("--managers", type=names(managers.MANAGERS), default=",".join(managers.MANAGERS))
    s.add_argument("--mode", default="throttle", choices=list(window.MODES))
    s.add_argument("--encoder", default="lexical", choices=["lexical", "sentence"])
    s.add_argument(
        "--out", type=out_dir, default=None, help="folder for closure_summary.csv and the timeline"
    )
    s.set_defaults(func=cmd_simulate)
    return p
