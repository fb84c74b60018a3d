"""The `workbench recall` command: the retention x selection grid and its analyses as CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from workbench.common.encoders import get_encoder
from workbench.common.io import InputError, atomic_dir
from workbench.common.options import number, number_list, out_dir
from workbench.common.sweep import SCHEDULER_HELP, run_tasks, scheduler_arg, table_encoder
from workbench.recall import episodes as E
from workbench.recall import grid as R
from workbench.recall import readers as D
from workbench.recall import report as P
from workbench.recall import squad


def _episodes(args, queries: str):
    """Synthetic episodes, or SQuAD-format streams when --squad is given."""
    if args.squad:
        return squad.squad_episodes(
            squad.load_squad(args.squad), args.episodes, density=args.density, seed=args.seed
        )
    return E.make_episodes(
        args.episodes, density=args.density, queries=queries, marker=args.marker, seed=args.seed
    )


def _encoder(args):
    return get_encoder(args.dense_encoder)


def _forms(args) -> list[str]:
    if args.squad:
        return ["questions"]
    return list(E.QUERY_FORMS) if args.queries == "both" else [args.queries]


def _check_out(out: str) -> Path:
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise InputError("exists and is not a folder", path=out, field="--out")
    return path


def _write(out: Path, frames: dict[str, pd.DataFrame], source: str) -> None:
    """Write every table, labelled with its source and reader, after all were computed."""
    frames = {k: v if "source" in v else P.labelled(v, source) for k, v in frames.items()}
    with atomic_dir(out) as stage:  # all tables replace the old ones together, or none does
        paths = P.save_tables(stage, frames)
    for path in paths:
        print(f"wrote {out / path.name} ({len(frames[path.stem])} rows)")


def _grid_form(args, form, ep, enc) -> tuple[pd.DataFrame, ...]:
    """One query form's cells, decomposition and failure classes (a sweep task)."""
    grid = R.run_grid(ep, args.K, args.k, args.seed, encoder=enc)
    return (
        R.cells_table(grid, args.boot).assign(query_form=form),
        R.decomposition(grid, n_boot=args.boot).assign(query_form=form),
        R.failure_table(grid).assign(query_form=form),
    )


def cmd_grid(args) -> int:
    """Run the grid for each query form; write cells, decomposition and failure classes."""
    out = _check_out(args.out)
    enc = _encoder(args)
    eps = {form: _episodes(args, form) for form in _forms(args)}
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None:  # workers use the client's embeddings, encoded as in-process
        enc = table_encoder(enc, [b for ep in eps.values() for b in (ep.texts, ep.queries)])
    tasks = [(args, form, ep) for form, ep in eps.items()]
    cells, decomp, fails = zip(*run_tasks(_grid_form, tasks, scheduler, enc), strict=True)
    ep = eps[_forms(args)[-1]]  # every form's episodes come from the same source
    _write(
        out,
        {
            "recall_grid": pd.concat(cells, ignore_index=True),
            "recall_decomposition": pd.concat(decomp, ignore_index=True),
            "recall_failures": pd.concat(fails, ignore_index=True),
        },
        ep.source,
    )
    return 0


def cmd_sweep(args) -> int:
    """Memory pressure (K and delay buckets) and distractor density."""
    out = _check_out(args.out)
    enc = _encoder(args)
    form = _forms(args)[0]
    ep = _episodes(args, form)
    Ks = [int(x) for x in args.Ks.split(",")]
    frames = {
        "recall_pressure": R.memory_pressure(ep, Ks, args.k, args.seed, enc, args.boot),
        "recall_delay": R.delay_table(
            R.run_grid(ep, args.K, args.k, args.seed, encoder=enc), n_boot=args.boot
        ),
    }
    if not args.squad:
        dens = [float(x) for x in args.densities.split(",")]
        frames["recall_density"] = R.density_sweep(
            dens, args.episodes, args.K, args.k, args.seed, form, enc, args.boot
        )
        frames["recall_artifact"] = R.artifact_study(
            args.episodes, args.K, args.k, args.seed, args.density, enc, args.boot
        )
    _write(out, frames, ep.source)
    return 0


def cmd_accuracy(args) -> int:
    """Answer accuracy of a reader beside retention and recall, for the bounded and unbounded agents."""
    out = _check_out(args.out)
    if args.reader_url:
        reader = D.ChatReader(args.reader_url, args.reader_model, cache_dir=args.reader_cache)
    else:
        reader = D.oracle_reader
    ep = _episodes(args, _forms(args)[0])
    grid = R.run_grid(ep, args.K, args.k, args.seed, encoder=_encoder(args))
    cells = [("recency", "query"), ("recency", "recency"), ("unbounded", "query")]
    _write(out, {"recall_accuracy": D.answer_accuracy(grid, cells, reader, args.boot)}, ep.source)
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--K", type=number("K"), default=5, help="retention capacity (default 5)")
    p.add_argument("--k", type=number("k"), default=3, help="items selection exposes (default 3)")
    p.add_argument(
        "--episodes", type=number("episodes"), default=300, help="episodes (default 300)"
    )
    p.add_argument("--queries", choices=[*E.QUERY_FORMS, "both"], default="informative")
    p.add_argument(
        "--density",
        type=number("recall_density"),
        default=0.3,
        help="distractor density (default 0.3)",
    )
    p.add_argument("--marker", action="store_true", help="prefix distractors with a literal marker")
    p.add_argument("--seed", type=number("seed"), default=0)
    p.add_argument(
        "--squad", metavar="PATH", help="a SQuAD v1.1-format JSON file instead of synthetic streams"
    )
    p.add_argument(
        "--dense-encoder",
        choices=["sentence", "lexical"],
        default="sentence",
        help="encoder behind the dense selector (default sentence)",
    )
    p.add_argument(
        "--boot", type=number("boot"), default=R.N_BOOT, help="bootstrap resamples of episodes"
    )
    p.add_argument("--out", type=out_dir, required=True, metavar="DIR")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add `recall grid` and `recall sweep` to an argparse subparsers object."""
    p = subparsers.add_parser("recall", help="retention x selection streaming-recall benchmark")
    sub = p.add_subparsers(dest="recall_command", required=True)
    g = sub.add_parser("grid", help="every retention rule x every selection rule, with intervals")
    _common(g)
    g.add_argument("--scheduler", type=scheduler_arg, default=None, help=SCHEDULER_HELP)
    g.set_defaults(func=cmd_grid)
    s = sub.add_parser("sweep", help="memory pressure, delay, density and marker-artifact tables")
    _common(s)
    s.add_argument(
        "--Ks", type=number_list("K"), default="2,3,5,10,20", help="capacities, comma-separated"
    )
    s.add_argument(
        "--densities",
        type=number_list("recall_density"),
        default="0.1,0.3,0.5,0.7",
        help="densities, comma-separated",
    )
    s.set_defaults(func=cmd_sweep)
    a = sub.add_parser("accuracy", help="a reader's answer accuracy beside retention and recall")
    _common(a)
    a.add_argument(
        "--reader-url",
        metavar="URL",
        help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: the oracle reader)",
    )
    a.add_argument("--reader-model", default="default", help="the model name sent to the endpoint")
    a.add_argument("--reader-cache", metavar="DIR", help="cache the endpoint's answers here")
    a.set_defaults(func=cmd_accuracy)
    return p
