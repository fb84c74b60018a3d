"""The `workbench` command: generate, evaluate, suite, reproduce, closure, recall, conversations.

One parser tree and one error handler (`main`). Exit codes:
  0    success
  1    a check that fails (`closure check` finds an orphan; a notebook fails in `reproduce`)
  2    a usage error (argparse: the option and its allowed range are named) or bad input or
       output: one line on stderr naming the file (and line and field where there is one)
  70   an internal error (a bug: one line; WORKBENCH_DEBUG=1 shows the traceback)
  130  interrupted (Ctrl-C); atomic writers leave the old outputs whole
No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import os
import sys

from workbench.beyond import cli as beyond_cli
from workbench.beyond.induce import (
    BENCHMARK_PATTERNS,
    DIRECTIONS,
    KNN_K,
    METHODS,
    RECOMMENDED,
    induce_ruled,
    knn_threshold,
    score_edges,
    score_pairs,
    with_induced,
)
from workbench.beyond.induce import (
    SOURCES as INDUCED_SOURCES,
)
from workbench.closure import cli as closure_cli
from workbench.common.encoders import ENCODERS, get_encoder
from workbench.common.handles import Patterns
from workbench.common.io import InputError, write_jsonl
from workbench.common.options import names, number, out_dir, out_file
from workbench.common.seeds import seeds_arg
from workbench.common.sweep import SCHEDULER_HELP, scheduler_arg
from workbench.dsgc.generator import TEMPLATES, TIERS, generate_many
from workbench.dsgc.policies import POLICIES, PolicySetting
from workbench.dsgc.runs import run_suite
from workbench.dsgc.scenario import load_scenarios, save_scenarios
from workbench.dsgc.trace import Trace, run
from workbench.dsgc.unseen import input_warnings
from workbench.recall import cli as recall_cli
from workbench.reproduce import NotebookFailed, parse_value, reproduce


def cmd_generate(args) -> int:
    templates = list(TEMPLATES) if args.template == "all" else [args.template]
    try:
        scenarios = generate_many(templates, args.seeds, args.blocks, args.tier)
    except ValueError as e:  # too few blocks for a template's chain and honeypots
        raise ValueError(f"argument --blocks: {e}") from None
    save_scenarios(scenarios, args.out)
    print(f"wrote {len(scenarios)} scenarios to {args.out}")
    return 0


def cmd_evaluate(args) -> int:
    scenarios = load_scenarios(args.scenarios)
    encoder = get_encoder(args.encoder)
    encoder(sorted({t for s in scenarios for t in [s.query, *s.texts]}))
    policy = PolicySetting(
        args.policy,
        lam=args.lam,
        tau=args.tau,
        hops=args.hops,
        delta=args.delta,
        density=args.density,
    )
    for w in input_warnings(scenarios, args.encoder, policy.reads_graph):
        print(f"workbench evaluate: warning: {w}", file=sys.stderr)
    records = []
    for sc in scenarios:
        t = Trace(sc, run(sc, encoder, policy, args.budget_multiplier), args.encoder)
        rec = t.record() if args.full else t.row()
        rec["budget_multiplier"] = args.budget_multiplier
        records.append(rec)
    write_jsonl(records, args.out)
    kept = sum(r["full_chain_retained"] for r in records)
    print(f"{len(records)} scenarios, full chain retained in {kept}; wrote {args.out}")
    return 0


def cmd_suite(args) -> int:
    encoders = args.encoders.split(",") if args.encoders else None
    seeds = (args.seeds.start, args.seeds.stop) if args.seeds else None
    _, summary = run_suite(
        args.name,
        seeds=seeds,
        encoders=encoders,
        out_dir=args.out,
        scheduler=args.scheduler,
        sources=INDUCED_SOURCES,
    )
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"wrote {args.out}/runs.csv and {args.out}/summary.csv")
    return 0


def cmd_induce(args) -> int:
    if (args.handle or args.definition) and args.method != "handles":
        raise ValueError("--handle and --definition apply to --method handles")
    if args.paraphrase and args.method != "mentions":
        raise ValueError("--paraphrase applies to --method mentions")
    scenarios = load_scenarios(args.scenarios)
    params: dict = {}
    if args.method in ("knn", "gated-knn"):
        th = knn_threshold(args.encoder) if args.threshold is None else args.threshold
        params = {
            "encoder": args.encoder,
            "k": args.k,
            "threshold": th,
            "direction": args.direction,
        }
        found = induce_ruled(
            scenarios, args.method, get_encoder(args.encoder), k=args.k, threshold=th,
            direction=args.direction,
        )  # fmt: skip
    elif args.method == "handles":
        patterns = Patterns(
            handle=args.handle or BENCHMARK_PATTERNS.handle,
            definition=args.definition or BENCHMARK_PATTERNS.definition,
            tombstone=BENCHMARK_PATTERNS.tombstone,
        )
        params = {"handle": patterns.handle, "definition": patterns.definition}
        found = induce_ruled(scenarios, "handles", patterns=patterns)
    else:
        if args.paraphrase:
            params = {"paraphrase": "sentence"}
        enc = get_encoder("sentence") if args.paraphrase else None
        found = induce_ruled(scenarios, args.method, paraphrase=enc)
    out = [
        with_induced(sc, es, args.method, conf, rules=rules, **params)
        for sc, (es, conf, rules) in zip(scenarios, found, strict=True)
    ]
    save_scenarios(out, args.out)
    edges = [es for es, _, _ in found]
    total = sum(len(es) for es in edges)
    print(f"wrote {len(out)} scenarios with {total} induced edges ({args.method}) to {args.out}")
    scored = [
        (sc, score_edges(es, sc.edges)) for sc, es in zip(scenarios, edges, strict=True) if sc.edges
    ]
    if scored:
        hit, ind, true = (sum(getattr(x, f) for _, x in scored) for f in ("hit", "induced", "true"))
        prec = f"{hit / ind:.2f}" if ind else "n/a"
        print(
            f"against the {true} given edges of {len(scored)} scenarios: "
            f"precision {prec}, recall {hit / true:.2f}"
        )
    if args.report:
        if not scored:
            print("--report: the input has no edges to score against")
        for regime in sorted({sc.regime or "(no regime)" for sc, _ in scored}):
            part = [
                (sc, es)
                for sc, es in zip(scenarios, edges, strict=True)
                if sc.edges and (sc.regime or "(no regime)") == regime
            ]
            d = [score_edges(es, sc.edges) for sc, es in part]
            u = [score_pairs(es, sc.edges) for sc, es in part]
            print(f"{regime}: {len(part)} scenarios; " + "; ".join(
                f"{what} precision {_ratio(s, 'hit', 'induced')}, recall {_ratio(s, 'hit', 'true')}"
                for what, s in (("directed", d), ("as pairs", u))
            ))  # fmt: skip
    return 0


def _ratio(scores, num: str, den: str) -> str:
    a, b = sum(getattr(s, num) for s in scores), sum(getattr(s, den) for s in scores)
    return f"{a / b:.2f}" if b else "n/a"


def cmd_reproduce(args) -> int:
    params = {name: parse_value(value) for name, value in (args.param or [])}
    try:
        done = reproduce(args.notebook, params, args.out, progress=not args.quiet)
    except NotebookFailed as e:
        print(
            f"workbench reproduce: {e}\n(the committed notebook was left untouched)",
            file=sys.stderr,
        )
        return 1
    for p in done:
        print(f"executed {p}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="workbench", description="Retention before retrieval.")
    sub = ap.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write benchmark scenarios as JSONL")
    g.add_argument("template", choices=[*TEMPLATES, "all"])
    g.add_argument("--seeds", type=seeds_arg, required=True, help="A:B (half-open) or N = 0:N")
    g.add_argument("--blocks", type=number("blocks"), default=20)
    g.add_argument("--tier", choices=TIERS, default="medium", help="honeypot strength")
    g.add_argument("--out", type=out_file, required=True)
    g.set_defaults(func=cmd_generate)

    e = sub.add_parser("evaluate", help="run one policy over a scenario file")
    e.add_argument("scenarios")
    e.add_argument("--encoder", choices=ENCODERS, default="lexical")
    e.add_argument("--policy", choices=POLICIES, default="dsgc")
    e.add_argument("--budget-multiplier", type=number("budget_multiplier"), default=2.0)
    e.add_argument("--lambda", dest="lam", type=number("lambda"), default=1.0)
    e.add_argument("--tau", type=number("tau"), default=0.25)
    e.add_argument("--hops", type=number("hops"), default=1, help="0 to 20 (0: no propagation)")
    e.add_argument("--delta", type=number("delta"), default=0.5, help="damping per extra hop")
    e.add_argument("--density", type=number("density"), default=0.0, help="length-density exponent")
    e.add_argument("--full", action="store_true", help="write full traces (r, pi, I per block)")
    e.add_argument("--out", type=out_file, required=True)
    e.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("suite", help="run a named protocol (main, traces, lambda, budget, ...)")
    s.add_argument("name")
    s.add_argument("--seeds", type=seeds_arg, default=None, help="A:B (half-open) or N = 0:N")
    s.add_argument(
        "--encoders",
        type=names(ENCODERS),
        default=None,
        help="comma-separated, e.g. lexical,sentence",
    )
    s.add_argument("--out", type=out_dir, required=True, help="folder for runs.csv + summary.csv")
    s.add_argument("--scheduler", type=scheduler_arg, default=None, help=SCHEDULER_HELP)
    s.set_defaults(func=cmd_suite)

    i = sub.add_parser("induce", help="induce dependency edges from the blocks' text")
    i.add_argument("scenarios")
    i.add_argument(
        "--method", choices=METHODS, default=RECOMMENDED,
        help="mentions (the default): shared rare mentions, rarity-weighted, with a confidence per "
        "edge; gated-knn: embedding neighbours that also share a mention; handles: this "
        "benchmark's identifier rules; knn: embedding neighbours",
    )  # fmt: skip
    i.add_argument(
        "--report", action="store_true",
        help="when the input has edges: precision and recall against them per regime, directed "
        "and as pairs",
    )  # fmt: skip
    i.add_argument(
        "--paraphrase", action="store_true",
        help="mentions: add one gated paraphrase link a scenario from the sentence encoder, "
        "between blocks no mention joins, weaker than any mention link",
    )  # fmt: skip
    i.add_argument("--encoder", choices=ENCODERS, default="lexical", help="knn: the embeddings")
    i.add_argument("--k", type=number("k"), default=KNN_K, help="knn: neighbours per block")
    i.add_argument("--threshold", type=number("threshold"), default=None, help="knn: least cosine")
    i.add_argument("--direction", choices=DIRECTIONS, default="query", help="knn: who depends")
    i.add_argument("--handle", default=None, help="handles: regex of an identifier")
    i.add_argument("--definition", default=None, help="handles: regex, group 1 = the identifier")
    i.add_argument("--out", type=out_file, required=True)
    i.set_defaults(func=cmd_induce)

    r = sub.add_parser("reproduce", help="execute every paper notebook through papermill")
    r.add_argument("--notebook", action="append", help="a notebook name (repeatable)")
    r.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"))
    r.add_argument("--out", default=None, help="write executed notebooks here (default: in place)")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=cmd_reproduce)

    closure_cli.add_parser(sub)
    recall_cli.add_parser(sub)
    beyond_cli.add_parser(sub)
    return ap


def _one_line(prog: str, text: str) -> None:
    print(f"{prog}: {' '.join(str(text).split())}", file=sys.stderr)


def _os_error(e: OSError) -> str:
    where = [str(f) for f in (e.filename, e.filename2) if f is not None]
    return ": ".join([*where, e.strerror or str(e)])


def main(argv=None) -> int:
    """Run one `workbench` command; return its exit code (see the module docstring)."""
    args = build_parser().parse_args(argv)  # a usage error exits 2 here, naming the option
    sub = [getattr(args, k, None) for k in ("closure_command", "recall_command")]
    prog = " ".join(["workbench", args.command, *[x for x in sub if x]])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        _one_line(prog, "interrupted; no output was written in part")
        return 130
    except InputError as e:  # names the file, line and field (OutputError too)
        _one_line(prog, f"error: {e}")
    except UnicodeError as e:
        _one_line(prog, f"error: text that is not valid Unicode ({e.reason})")
    except BrokenPipeError:  # `workbench ... | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        _one_line(prog, f"error: {_os_error(e)}")
    except RecursionError:
        _one_line(prog, "error: input nested too deeply")
    except MemoryError:
        _one_line(prog, "error: out of memory (try smaller options)")
    except (ValueError, OverflowError) as e:
        _one_line(prog, f"error: {e}")
    except Exception as e:
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        _one_line(
            prog,
            f"internal error: {type(e).__name__}: {e} (a bug; WORKBENCH_DEBUG=1 shows where)",
        )
        return 70
    return 2


if __name__ == "__main__":
    sys.exit(main())
