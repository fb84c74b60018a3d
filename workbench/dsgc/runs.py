"""A protocol's runs. `run_protocol` picks the engine: the trace engine (a `Trace` per run, in
this process or over Dask, the same rows in the same order) lives here; the batch engine (sweep
metrics only, many scenarios and settings per array pass) lives in `workbench.dsgc.batch`."""

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
from workbench.dsgc.policies import make_policy
from workbench.dsgc.protocols import Protocol, batch_settings, protocol_grid, scenarios_for
from workbench.dsgc.scenario import Scenario
from workbench.dsgc.trace import Trace, run


def run_protocol(
    protocol: Protocol,
    scenarios: list[Scenario] | None = None,
    keep_traces: bool = False,
    scheduler=None,
):
    """Every run of a protocol as a DataFrame (one row per run); optionally the Trace objects too.

    The protocol's `engine` picks how: "trace" (a Trace per run; scheduler None runs in this
    process, `local[:N]` or `tcp://HOST:PORT` splits the runs by (encoder, template, seed chunk)
    over Dask workers, with the same rows in the same order) or "batch" (in-process, no traces).
    """
    distributed = parse_scheduler(scheduler) is not None
    if protocol.engine == "batch":
        if keep_traces:
            raise ValueError(f"protocol {protocol.name!r} runs on the batch engine: no traces")
        if distributed:
            raise ValueError(
                f"protocol {protocol.name!r} runs on the batch engine, in-process only; "
                "--scheduler applies to trace-engine protocols"
            )
        return run_batch(protocol, scenarios)
    if protocol.engine != "trace" or protocol.deltas:
        raise ValueError(
            f"protocol {protocol.name!r}: engine must be 'trace' or 'batch', and "
            "a deltas sweep needs the batch engine"
        )
    if distributed:
        if keep_traces:
            raise ValueError("keep_traces=True runs in-process only (Trace objects stay local)")
        return _run_on_dask(protocol, scenarios, scheduler)
    scenarios = scenarios if scenarios is not None else scenarios_for(protocol)
    indexed = list(enumerate(scenarios))
    rows, traces = [], []
    for enc_name in protocol.encoders:
        encoder = get_encoder(enc_name)
        encoder(_texts(scenarios))  # one batch: every unique text encoded once, then cached
        for _, t, row in _trace_runs(protocol, indexed, encoder, enc_name):
            rows.append(row)
            if keep_traces:
                traces.append(t)
    df = pd.DataFrame(rows)
    return (df, traces) if keep_traces else df


# --- the trace engine ------------------------------------------------------------------------------


def _texts(scenarios) -> list[str]:
    """Every unique text of the scenarios (queries included), sorted: one encoder batch."""
    return sorted({t for s in scenarios for t in [s.query, *s.texts]})


def _run_row(protocol: Protocol, sc: Scenario, encoder, enc_name: str, setting):
    """One run: (its Trace, its row)."""
    pol_name, mult, lam, hops, (drop, spurious) = setting
    policy = make_policy(pol_name, lam=lam, tau=protocol.tau, hops=hops, delta=protocol.delta)
    graph = perturb_edges(sc, drop, spurious, sc.seed or 0)
    t = Trace(graph, run(graph, encoder, policy, mult), enc_name)
    row = t.row()
    row.update(
        budget_multiplier=mult,
        drop=drop,
        spurious=spurious,
        **{"lambda": lam if pol_name == "dsgc" else 0.0, "hops": hops},
    )
    return t, row


def _trace_runs(protocol: Protocol, indexed, encoder, enc_name: str):
    """((grid index, scenario index), Trace, row) of every grid setting x scenario (setting
    outer, as the in-process run orders them); `indexed` holds (index, scenario) pairs."""
    for g, setting in enumerate(protocol_grid(protocol)):
        for i, sc in indexed:
            t, row = _run_row(protocol, sc, encoder, enc_name, setting)
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


def run_batch(protocol: Protocol, scenarios: list[Scenario] | None = None) -> pd.DataFrame:
    """Every run of a protocol, scored by the batch engine: one row per scenario and setting with
    the sweep metrics (chain kept, chain blocks, honeypots and fillers kept, displaced)."""
    scenarios = scenarios if scenarios is not None else scenarios_for(protocol)
    settings = batch_settings(protocol)
    graphs = [
        batch.Graph(
            {"drop": drop, "spurious": spurious},
            settings,
            lambda sc, d=drop, s=spurious: noisy_edges(sc, d, s, sc.seed or 0),
        )
        for drop, spurious in protocol.graph_noise
    ]
    return batch.run(scenarios, protocol.encoders, graphs, protocol.budget_multipliers)


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
    name: str, seeds: tuple[int, int] | None = None, encoders=None, out_dir=None, scheduler=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Load a protocol by name, run it, summarize it like the paper's table; optionally write CSV.
    scheduler: None (in-process), local[:N] or tcp://HOST:PORT (Dask; the same bytes)."""
    p = Protocol.load(name).with_(seeds=seeds, encoders=tuple(encoders) if encoders else None)
    df = run_protocol(p, scheduler=scheduler)
    summary = summarize(df, p.summary)
    if out_dir is not None:
        write_suite(df, summary, out_dir)
    return df, summary
