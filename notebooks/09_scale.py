# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 9. Scale: one retention step at a million blocks, and the one-hop rule in a store 1,000x the paper's
#
# The paper's stores hold 20 and 50 blocks; an agent's memory holds far more. Here one store of
# N blocks holds many chains of the four templates (fresh entities each time) among honeypots
# and fillers, and every target chain's query is retained from the whole store. Three
# questions: what does one retention step cost as N grows (beside the least any step must do),
# how much memory does it take, and does the one-hop rule still keep the chain when the store
# holds thousands of chains of the same shapes?
#
# **Two sources, labelled everywhere.** The timings and the runs up to 10^6 blocks come from
# committed tables written by two documented commands (`python scripts/bench.py --scale
# --scale-csv` and `python scripts/scale_study.py`); this notebook shows them as measured. What
# it computes live, at its stored parameters (small N, in-process, so it re-runs in about 30 s
# with an empty embedding cache), is checked against those tables where they overlap.

# %%
import tempfile

import pandas as pd
from IPython.display import Markdown, display

from workbench.common import sweep
from workbench.common.notebook import record, show_figure, show_table
from workbench.scale import bigstore
from workbench.scale import charts as scale_charts

# %% tags=["parameters"]
NS = [300, 1000]  # store sizes run live here (ints from 100; the committed tables reach 10^6)
ENCODERS = "lexical,sentence"  # comma-separated subset of: lexical, sentence
QUERIES = 10  # chains queried per template and store (the committed run: 100)
SCHEDULER = None  # None (in-process), "local:2" (a LocalCluster), or "tcp://HOST:PORT"
SEED = 0  # the store's seed
FIGURES_DIR = "../figures"  # where SVG + PNG figures are written
RESULTS_DIR = "../data/results"  # where the committed measurement tables live

# %% [markdown]
# ## One retention step against N
#
# Measured by `make bench` (`scripts/bench.py --scale --scale-csv`): random unit float32 rows,
# d = 384, |E| = N random edges, costs 5-15, budget 60 tokens. The floor is one float32
# matrix-vector product + one stable argsort of N + one bincount scatter-add; our step is the
# DSGC policy as the library runs it. Both are timed in the same rounds (medians of 7); the
# ratio is the median of the per-round ratios.

# %%
step = pd.read_csv(f"{RESULTS_DIR}/scale_step.csv")
show_table(step[["blocks", "dim", "edges", "step_s", "floor_s", "ratio", "head"]], digits=3)
show_figure(scale_charts.step_chart(step), "scale_step", FIGURES_DIR)
big = step.iloc[-1]
Markdown(
    f"At N = {int(big.blocks):,} one step took **{big.step_s:.2f} s against a floor of "
    f"{big.floor_s:.2f} s (ratio {big.ratio:.2f}; the target is at most 2)**. The step sorts "
    f"only the head of the ranking the budget walk needs ({int(big['head'])} blocks here): it "
    "grows the head until the room left is below the cheapest block outside it, so it keeps "
    "exactly what the full sort keeps (property-tested on adversarial ties). The floor's full "
    "stable argsort is the part the step skips, which is why it can come in under the floor."
)

# %% [markdown]
# To measure the step on your machine, run `make bench ARGS=--scale` (a timing changes from run to
# run, so this notebook shows only committed measurements: re-running it gives the same bytes).

# %% [markdown]
# ## Memory against N

# %%
mem = pd.read_csv(f"{RESULTS_DIR}/scale_memory.csv")
show_table(
    mem[["blocks", "matrix_mib", "peak_mib", "peak_over_matrix", "step_extra_over_matrix"]], 3
)
show_figure(scale_charts.memory_chart(mem), "scale_memory", FIGURES_DIR)
top = mem.iloc[-1]
Markdown(
    f"At N = {int(top.blocks):,} the process peaked at **{top.peak_over_matrix:.2f}x the "
    f"{top.matrix_mib:.0f} MiB embedding matrix** (target: at most 1.5x); the step's own "
    f"allocations were {top.step_extra_over_matrix:.3f}x. At small N the interpreter and "
    "numpy themselves (about 50 MiB) dominate the peak. The query is cast to the matrix's "
    "dtype: a float64 query would make numpy copy a float32 matrix to float64 (3x the memory)."
)

# %% [markdown]
# ## Does the one-hop rule still keep the chain?
#
# A store of N blocks holds N/20 chains (the four templates in turn, each with its honeypots,
# fresh entities each time); each of the first QUERIES chains of every template is queried over
# the **whole** store, with the budget its own chain gets in the paper's protocol (C = 2L: a
# handful of blocks out of N). Similarity-only against DSGC (one hop, lambda = 1). Run live here
# through the sweep (SCHEDULER = None runs in-process; `local:2` or `tcp://HOST:PORT` runs the
# same tasks on Dask and shows Dask's progress bar and the dashboard link).

# %%
work = tempfile.mkdtemp(prefix="wb-stores-")
with sweep.connect(SCHEDULER, dashboard=True) as client:
    if client is not None:
        display(client)  # the dashboard link
    live, _ = bigstore.retention_study(
        NS, ENCODERS.split(","), work, SEED, QUERIES, scheduler=client, progress=client is not None
    )
live_summary = bigstore.retention_summary(live)
show_table(live_summary, digits=3)
record(
    "live_retention",
    {
        f"{r.blocks}/{r.encoder}/{r.template}/{r.policy}": r.full_chain
        for r in live_summary.itertuples()
    },
)

# %% [markdown]
# The committed run (`python scripts/scale_study.py --scheduler local:2`: N = 10^3, 10^4,
# 10^5, both encoders, the first 100 chains of each template, on a 2-worker LocalCluster):

# %%
committed = pd.read_csv(f"{RESULTS_DIR}/scale_retention.csv")
summary = bigstore.retention_summary(committed)
show_table(summary, digits=3)
show_figure(scale_charts.retention_chart(summary), "scale_retention", FIGURES_DIR)
keys = ["blocks", "encoder", "template", "policy", "query"]
same = live.merge(committed, on=keys, suffixes=("", "_committed"))
agree = bool(
    (same.full_chain_retained == same.full_chain_retained_committed).all()
    and (same.c1_rank == same.c1_rank_committed).all()
)
record("live_rows_in_committed", len(same))
Markdown(
    f"{len(same)} of the {len(live)} live rows are also in the committed table "
    f"(same store, encoder, chain and policy); **they agree: {agree}**."
)

# %%
trend = summary.pivot_table(index=["regime", "policy"], columns="blocks", values="full_chain")
show_table(trend, digits=3)
record("committed_full_chain", {f"{r}/{p}": list(v) for (r, p), v in trend.iterrows()})
ranks = summary.pivot_table(index=["regime", "policy"], values="last_median_rank")
n_max = int(summary.blocks.max())
big = summary[summary.blocks == n_max].pivot_table(index=["regime", "policy"], values="full_chain")
Markdown(
    f"Full-chain retention averaged over the templates and both encoders (rows: regime and "
    f"policy; columns: N). At N = {n_max:,}, similarity-only keeps "
    f"{big.loc[('control', 'similarity'), 'full_chain']:.2f} of the control chains and DSGC "
    f"{big.loc[('control', 'dsgc'), 'full_chain']:.2f}; on the targets, "
    f"{big.loc[('target', 'similarity'), 'full_chain']:.2f} and "
    f"{big.loc[('target', 'dsgc'), 'full_chain']:.2f}. "
    + (
        "The paper's gain does not survive a store that holds N/80 chains of each shape: with "
        "the budget of one chain (C = 2L), the query's own chain competes with every "
        "same-shaped chain, and propagation raises the prerequisites of all of them, not only "
        "of the query's chain. "
        if big.loc[("target", "dsgc"), "full_chain"]
        <= big.loc[("target", "similarity"), "full_chain"]
        else "DSGC keeps more target chains than similarity-only at this scale too. "
    )
    + "The median rank of the query-facing link: "
    f"{ranks.loc[('control', 'similarity'), 'last_median_rank']:.0f} under similarity-only "
    f"against {ranks.loc[('control', 'dsgc'), 'last_median_rank']:.0f} under DSGC on the "
    f"controls, {ranks.loc[('target', 'similarity'), 'last_median_rank']:.0f} against "
    f"{ranks.loc[('target', 'dsgc'), 'last_median_rank']:.0f} on the targets (averaged over "
    "the cells above)."
)

# %% [markdown]
# ## Past one machine
#
# Per-chunk costs measured in the committed run (one task = 25 chains of one template, both
# policies, on one worker; the store memory-mapped on each worker) and the step above give the
# arithmetic for a real cluster. `--scheduler tcp://HOST:PORT` points `workbench suite`,
# `workbench recall grid`, `scripts/calibrate.py` and `scripts/scale_study.py` at a running
# `dask scheduler` (start it there, then `dask worker tcp://HOST:PORT --nthreads 1` on each
# machine, with this package installed); results come back in a fixed order, so the CSVs are
# the same bytes as in-process (a test checks this with a real scheduler and two workers).

# %%
chunks = pd.read_csv(f"{RESULTS_DIR}/scale_chunks.csv")
per_query = (
    chunks.assign(per_query=chunks.seconds / (chunks.rows / 2))
    .groupby(["blocks", "encoder"])["per_query"]
    .median()
    .reset_index()
)
show_table(per_query, digits=4)
step_1e6 = float(step.loc[step.blocks == step.blocks.max(), "step_s"].iloc[0])
n_big, d, worker_gib = 10**8, 384, 16
matrix_gib = n_big * d * 4 / 2**30
workers = int(-(-matrix_gib * 1.5 // worker_gib))
Markdown(
    f"- **A 10^8-block store**: the float32 matrix alone is {matrix_gib:,.0f} GiB, so the rows "
    f"are sharded: {workers} workers with {worker_gib} GiB each (1.5x headroom, as measured "
    f"above). Each shard computes its similarities, its local softmax sum and max, and its "
    f"head; the client merges the heads (the budget walk needs only the global head) and one "
    f"scatter-add per shard carries the edges that cross shards. At the measured "
    f"{step_1e6:.2f} s per 10^6 blocks on one core, a step is about "
    f"{step_1e6 * 100 / workers:.1f} s of compute per worker plus two small reductions.\n"
    f"- **Chains per worker**: at 10^5 blocks a query costs the median seconds in the table "
    f"above on one worker thread; a worker answers about "
    f"{3600 / per_query.per_query.max():,.0f} queries an hour on the slowest store measured "
    f"here, and the work is embarrassingly parallel over (template, chain chunk)."
)

# %%
sweep_cost = pd.read_csv(f"{RESULTS_DIR}/scale_sweep.csv")
show_table(sweep_cost, digits=2)
inproc = sweep_cost[sweep_cost.scheduler == "in-process"].iloc[0]
per_seed = inproc.seconds / inproc.seeds
Markdown(
    f"- **A 10^6-seed sweep**: the calibration checks cost {per_seed * 1000:.1f} ms per seed "
    f"in-process (lexical, main and scale protocols, {int(inproc.seeds):,} seeds measured), so "
    f"10^6 seeds are about {per_seed * 1e6 / 3600:,.0f} worker-hours: 100 single-thread "
    f"workers finish in about {per_seed * 1e6 / 3600 / 100 * 60:,.0f} minutes, with tasks of a "
    "few hundred seeds each (the scheduler's ~10 ms per task is then negligible). The sentence "
    "encoder adds one client-side encode of the sweep's unique texts, shipped once to every "
    "worker."
)
