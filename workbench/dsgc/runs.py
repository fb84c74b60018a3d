"""A protocol's runs: `Protocol.grid()` gives the settings with their graphs, and the protocol's
engine runs them: the trace engine (a `Trace` per run, in this process or over Dask, the same
rows in the same order) or the batch engine (sweep metrics only, many scenarios per array pass,
`workbench.dsgc.batch`). Both score through the same `policies` code.

A graph source other than the true edges (an inducer, from `workbench.beyond`) is a function
`source(scenarios, encoder) -> [(edges, confidence or None) per scenario]`, passed in `sources`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from workbench.common.encoders import get_encoder
from workbench.common.io import atomic_dir, write_csv
from workbench.common.sweep import chunks, parse_scheduler, run_tasks, table_encoder
from workbench.dsgc import batch
from workbench.dsgc.generator import generate
from workbench.dsgc.noise import noisy_edges, perturb_edges
from workbench.dsgc.paper import summarize
from workbench.dsgc.protocols import TRUE, GridPoint, Protocol, scenarios_for
from workbench.dsgc.scenario import Scenario
from workbench.dsgc.trace import Trace, run


def run_protocol(
    protocol: Protocol,
    scenarios: list[Scenario] | None = None,
    keep_traces: bool = False,
    scheduler=None,
    sources: dict | None = None,
):
    """Every run of a protocol as a DataFrame (one row per run); optionally the Trace objects too.

    The protocol's `engine` picks how: "trace" (a Trace per run; scheduler None runs in this
    process, `local[:N]` or `tcp://HOST:PORT` splits the runs by (encoder, template, seed chunk)
    over Dask workers, with the same rows in the same order) or "batch" (in-process, no traces).
    `sources`: graph source name -> function, for the protocol's graphs other than the true edges.
    """
    distributed = parse_scheduler(scheduler) is not None
    grid = list(protocol.grid())
    unknown = sorted({g.graph.source for g in grid} - {TRUE} - set(sources or ()))
    if unknown:
        raise ValueError(
            f"protocol {protocol.name!r}: unknown graph source(s) {unknown}; known: "
            f"{', '.join([TRUE, *sorted(sources or ())])}"
        )
    if protocol.engine == "batch":
        if keep_traces:
            raise ValueError(f"protocol {protocol.name!r} runs on the batch engine: no traces")
        if distributed:
            raise ValueError(
                f"protocol {protocol.name!r} runs on the batch engine, in-process only; "
                "--scheduler applies to trace-engine protocols"
            )
        return run_batch(protocol, scenarios, sources)
    if distributed:
        if keep_traces:
            raise ValueError("keep_traces=True runs in-process only (Trace objects stay local)")
        if any(g.graph.source != TRUE for g in grid):
            raise ValueError(
                f"protocol {protocol.name!r} scores induced graphs, in-process only; "
                "--scheduler applies to protocols on the true edges"
            )
        return _run_on_dask(protocol, scenarios, scheduler)
    scenarios = scenarios if scenarios is not None else scenarios_for(protocol)
    indexed = list(enumerate(scenarios))
    rows, traces = [], []
    for enc_name in protocol.encoders:
        encoder = get_encoder(enc_name)
        encoder(_texts(scenarios))  # one batch: every unique text encoded once, then cached
        graphs = _graphs(grid, scenarios, enc_name, sources)
        for _, t, row in _trace_runs(protocol, indexed, encoder, enc_name, graphs):
            rows.append(row)
            if keep_traces:
                traces.append(t)
    df = pd.DataFrame(rows)
    return (df, traces) if keep_traces else df


def _graphs(grid: list[GridPoint], scenarios, encoder: str, sources) -> dict:
    """Induced source name -> {scenario id: (edges, confidence)} for the grid's induced graphs."""
    names = sorted({g.graph.source for g in grid} - {TRUE})
    out = {}
    for name in names:
        found = sources[name](scenarios, encoder)
        out[name] = {sc.id: f for sc, f in zip(scenarios, found, strict=True)}
    return out


def on_graph(sc: Scenario, graph, induced: dict) -> Scenario:
    """The scenario with the edges of `graph` (its own, noisy, or induced with confidences)."""
    if graph.source == TRUE:
        return perturb_edges(sc, graph.drop, graph.spurious, sc.seed or 0)
    edges, conf = induced[graph.source][sc.id]
    return sc.with_edges(edges, conf)


# --- the trace engine ------------------------------------------------------------------------------


def _texts(scenarios) -> list[str]:
    """Every unique text of the scenarios (queries included), sorted: one encoder batch."""
    return sorted({t for s in scenarios for t in [s.query, *s.texts]})


def _run_row(sc: Scenario, encoder, enc_name: str, point: GridPoint, induced: dict, deltas=False):
    """One run: (its Trace, its row); `deltas`: the protocol sweeps the damping, so the row
    records it (a protocol that does not keeps the columns its committed tables have)."""
    graph = on_graph(sc, point.graph, induced)
    t = Trace(graph, run(graph, encoder, point.policy, point.multiplier), enc_name)
    row = t.row()
    row.update(
        budget_multiplier=point.multiplier,
        drop=point.graph.drop,
        spurious=point.graph.spurious,
        **{"lambda": point.policy.lam if point.policy.reads_graph else 0.0,
           "hops": point.policy.hops if point.policy.reads_graph else 0},  # as batch.evaluate
    )  # fmt: skip
    if deltas:
        row["delta"] = point.policy.delta if point.policy.reads_graph else 0.0
    if point.graph.source != TRUE:
        row["graph"] = point.graph.source
    return t, row


def _trace_runs(protocol: Protocol, indexed, encoder, enc_name: str, induced=None):
    """((grid index, scenario index), Trace, row) of every grid setting x scenario (setting
    outer, as the in-process run orders them); `indexed` holds (index, scenario) pairs."""
    for g, point in enumerate(protocol.grid()):
        for i, sc in indexed:
            t, row = _run_row(sc, encoder, enc_name, point, induced or {}, bool(protocol.deltas))
            yield (g, i), t, row


def seed_chunk(protocol: Protocol) -> int:
    """Seeds per task: 5, or more so that a template's seeds make at most 8 tasks."""
    lo, hi = protocol.seeds
    return max(5, math.ceil((hi - lo) / 8))


def _suite_task(protocol: Protocol, enc_i: int, part, tables: dict) -> list[tuple]:
    """One Dask task: the rows of one encoder over a part of the scenarios, each keyed by its
    place in the in-process run (encoder, grid setting, scenario).

    part is ("generate", total_blocks, template, lo, hi, first_index) or ("given", [(i, sc)]).
    An encoder whose rows do not depend on the batch (lexical) encodes on the worker and keeps
    its cache there; any other is served from the client's table, so the bits never depend on
    which worker ran what.
    """
    enc_name = protocol.encoders[enc_i]
    if part[0] == "generate":
        _, n, template, lo, hi, first = part
        mine = [
            (first + i, generate(template, s, n, protocol.tier))
            for i, s in enumerate(range(lo, hi))
        ]
    else:
        mine = part[1]
    encoder = tables[enc_name] if enc_name in tables else get_encoder(enc_name)
    return [((enc_i, *key), row) for key, _, row in _trace_runs(protocol, mine, encoder, enc_name)]


def _run_on_dask(protocol: Protocol, scenarios, scheduler) -> pd.DataFrame:
    """run_protocol's rows from Dask tasks, gathered and put back in the in-process order.

    Scenarios are built once: by the workers (each generates its own chunk) when every encoder
    encodes on the worker, else on the client, which needs their texts for the encoder table and
    then ships the scenarios themselves."""
    tables = {}
    needs_table = [
        name
        for name in protocol.encoders
        if not getattr(get_encoder(name).base, "batch_invariant", False)
    ]
    if needs_table and scenarios is None:
        scenarios = scenarios_for(protocol)
    for name in needs_table:  # encoded on the client, exactly as the in-process run encodes
        tables[name] = table_encoder(get_encoder(name), [_texts(scenarios)])
    size = seed_chunk(protocol)
    parts = []
    if scenarios is None:
        lo, hi = protocol.seeds
        for n_i, n in enumerate(protocol.total_blocks):
            for t_i, template in enumerate(protocol.templates):
                for a, b in chunks(lo, hi, size):
                    first = (n_i * len(protocol.templates) + t_i) * (hi - lo) + (a - lo)
                    parts.append(("generate", n, template, a, b, first))
    else:
        indexed = list(enumerate(scenarios))
        parts = [("given", indexed[a:b]) for a, b in chunks(0, len(indexed), size)]
    tasks = [(protocol, e, part) for e in range(len(protocol.encoders)) for part in parts]
    keyed = [kr for rows in run_tasks(_suite_task, tasks, scheduler, tables) for kr in rows]
    keyed.sort(key=lambda kr: kr[0])
    return pd.DataFrame([row for _, row in keyed])


# --- the batch engine's protocol runs --------------------------------------------------------------


def run_batch(protocol: Protocol, scenarios: list[Scenario] | None = None, sources=None):
    """Every run of a protocol, scored by the batch engine: one row per scenario and setting with
    the sweep metrics (chain kept, chain blocks, honeypots and fillers kept, displaced)."""
    scenarios = scenarios if scenarios is not None else scenarios_for(protocol)
    grid = list(protocol.grid())
    frames = []
    for enc_name in protocol.encoders:
        induced = _graphs(grid, scenarios, enc_name, sources)
        graphs = []
        for graph in dict.fromkeys(p.graph for p in grid):  # first-seen order
            first = grid[0].multiplier
            settings = [p.policy for p in grid if p.graph == graph and p.multiplier == first]
            edges = confidence = None
            if graph.source != TRUE:
                found = induced[graph.source]
                edges = lambda sc, f=found: f[sc.id][0]  # noqa: E731
                if any(c is not None for _, c in found.values()):
                    confidence = lambda sc, f=found: f[sc.id][1] or [1.0] * len(f[sc.id][0])  # noqa: E731
            elif graph.drop or graph.spurious:
                edges = lambda sc, g=graph: noisy_edges(sc, g.drop, g.spurious, sc.seed or 0)  # noqa: E731
            graphs.append(batch.Graph(graph.columns, settings, edges, confidence))
        frames.append(batch.run(scenarios, [enc_name], graphs, protocol.budget_multipliers))
    return pd.concat(frames, ignore_index=True)


# --- suites: a named protocol, run, summarized and written -----------------------------------------


def write_suite(df: pd.DataFrame, summary: pd.DataFrame, out_dir) -> tuple[Path, Path]:
    """runs.csv (one row per run) and summary.csv, replaced together (io.atomic_dir: a reader
    sees the old pair or the new pair, never one of each)."""
    out = Path(out_dir)
    flat = df.copy()
    for col in flat.columns:
        if flat[col].map(lambda v: isinstance(v, list | dict)).any():
            flat[col] = flat[col].map(lambda v: json.dumps(v, sort_keys=True))
    with atomic_dir(out) as stage:
        write_csv(flat, stage / "runs.csv", float_format="%.6f")
        write_csv(summary, stage / "summary.csv")
    return out / "runs.csv", out / "summary.csv"


def run_suite(
    name: str,
    seeds: tuple[int, int] | None = None,
    encoders=None,
    out_dir=None,
    scheduler=None,
    sources: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load a protocol by name, run it, summarize it like the paper's table; optionally write CSV.
    scheduler: None (in-process), local[:N] or tcp://HOST:PORT (Dask; the same bytes); sources:
    the graph sources the protocol may name besides the true edges."""
    p = Protocol.load(name).with_(seeds=seeds, encoders=tuple(encoders) if encoders else None)
    df = run_protocol(p, scheduler=scheduler, sources=sources)
    summary = summarize(df, p.summary)
    if out_dir is not None:
        write_suite(df, summary, out_dir)
    return df, summary
