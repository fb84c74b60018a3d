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
# # Retention or selection? The factorial streaming-recall benchmark
#
# **Question:** when a bounded-memory agent misses the fact a query needs, did *retention* drop it (online, under capacity K, before the query existed) or did *selection* pass it over (top-k among the survivors at query time)? We cross five retention rules with five selection rules on the same seeded episodes (seed 003), always report recall beside retention rate, and put the paper's published numbers beside ours.

# %%
import pandas as pd

from workbench.encoders import get_encoder
from workbench.io import write_csv
from workbench.notebook import record, show_figure, show_table
from workbench.recall import charts as C
from workbench.recall import episodes as E
from workbench.recall import grid as R
from workbench.recall import report as P
from workbench.recall.rules import RETENTION_RULES

# %% tags=["parameters"]
SEED = 0  # any non-negative int
EPISODES = 300  # episodes per cell: 20..3000 (the paper: 300)
K = 5  # retention capacity: 1..20 (the paper: 5)
TOP_K = 3  # items selection exposes: 1..K (the paper: 3)
DENSITY = 0.3  # distractor density: 0.0..0.9 (the paper: 0.3)
KS = [2, 3, 5, 10, 20]  # capacities for the memory-pressure curve: ints 1..20
DENSITIES = [0.1, 0.3, 0.5, 0.7]  # distractor densities for the sweep: 0.0..0.9
N_BOOT = 2000  # bootstrap resamples of episodes: 200..10000
SQUAD_PATH = "../tests/fixtures/squad_tiny.json"  # a SQuAD v1.1 JSON file, e.g. dev-v1.1.json
SQUAD_EPISODES = 150  # SQuAD streams (2 questions each): 10..1000 (the paper: 300 questions)
FIGURES_DIR = "../figures"  # folder for SVG + PNG figures
RESULTS_DIR = "../data/results"  # folder for CSV tables

# %% [markdown]
# ## The grid
#
# Each episode streams 10 observations `The <slot> is <value>.`; a share `DENSITY` of them are distractors from a disjoint slot vocabulary. Two queries per episode each target a uniformly drawn non-distractor fact. The informative query names the slot (`What is the <slot> ?`); the uninformative one differs by one token (`What is the value?`). Both forms use the same streams and targets. Intervals are 95% percentile bootstraps that resample **episodes**.
#
# Retention (capacity K, online): RECENCY keeps the last K; RANDOM evicts a uniformly random buffer item on overflow; FREQUENCY keeps items whose words recur most in the stream so far (values repeat; slots never do); TYPE-ORACLE is privileged and drops distractors first; UNBOUNDED keeps everything. Selection (top k of the survivors): RECENCY, RANDOM, QUERY (Jaccard token overlap), DENSE (all-MiniLM-L6-v2 cosine, rounded to 6 decimals) and ORACLE (privileged). Ties go to the newer item.

# %%
paper = R.load_paper_figures()
encoder = get_encoder("sentence")
grids = R.run_forms(EPISODES, K, TOP_K, DENSITY, SEED, encoder)
cells = pd.concat([R.cells_table(g, N_BOOT) for g in grids.values()], ignore_index=True)
write_csv(cells, f"{RESULTS_DIR}/recall_grid.csv", float_format=None)
show_table(cells.drop(columns=["K", "k", "episodes"]), digits=1)

# %%
show_figure(C.grid_heatmap(cells), "recall_grid", FIGURES_DIR)
record("invariant_holds", all(R.invariant_holds(g) for g in grids.values()))
record("grid_informative", R.recall_matrix(grids["informative"]))
record("grid_uninformative", R.recall_matrix(grids["uninformative"]))

# %% [markdown]
# The retention ceiling holds in all 50 cells: no selection rule exceeds its row's retention rate (it holds per query, since selection only ranks survivors). Under informative queries QUERY, DENSE and ORACLE all reach the ceiling: the query token-matches exactly one fact, so selection is solved whenever the target survived. This is the construction ceiling the paper describes, not a property of the selectors.

# %% [markdown]
# ## RQ1: how much of the advantage is query awareness?
#
# *Matched-access gain* = QUERY minus RECENCY selection under the same bounded (recency) retention. *Mixed comparison* = QUERY under unbounded retention minus RECENCY/RECENCY: a full-history query-aware agent against a bounded query-blind one. *Access contribution* = the difference (unbounded QUERY minus bounded QUERY). All three use paired bootstraps over the same episode resamples.

# %%
decomp = R.decomposition(grids["informative"], n_boot=N_BOOT)
write_csv(decomp, f"{RESULTS_DIR}/recall_decomposition.csv", float_format=None)
show_table(P.rq1_vs_paper(decomp, paper))
record("decomposition_pp", {r.component: [r.pp, r.lo, r.hi] for r in decomp.itertuples()})

# %%
show_figure(C.decomposition_chart(decomp, paper), "recall_decomposition", FIGURES_DIR)

# %% [markdown]
# **Where ours differ.** Our bounded recency row retains about 50% of targets (paper: 46.8-47.3%), which moves the matched-access gain a few points up and the access contribution a few down; the intervals overlap. The generator detail: we place exactly round(0.3 x 10) = 3 distractors at uniformly random positions, so a K = 5 recency buffer holds 3.5 of the 7 facts in expectation (50% retention); the paper's 46.8% lies inside our interval, so its layout or its sample left slightly fewer facts in the last five positions; its exact layout is not published.

# %% [markdown]
# ## RQ2: memory pressure, delay and distractor density

# %%
pressure = R.memory_pressure(grids["informative"].episodes, KS, TOP_K, SEED, encoder, N_BOOT)
delays = R.delay_table(grids["informative"])
density = R.density_sweep(DENSITIES, EPISODES, K, TOP_K, SEED, encoder=encoder, n_boot=N_BOOT)
for name, df in [("pressure", pressure), ("delay", delays), ("density", density)]:
    write_csv(df, f"{RESULTS_DIR}/recall_{name}.csv", float_format=None)
show_table(P.rq2_vs_paper(pressure, delays, density, paper))

# %%
show_table(
    pressure.query("retention == 'recency'").pivot(index="K", columns="selection", values="recall"),
    digits=1,
)
show_figure(C.k_curve(pressure, paper), "recall_memory_pressure", FIGURES_DIR)
record(
    "recency_query_recall_by_K",
    pressure.query("retention == 'recency' and selection == 'query'")
    .set_index("K")["recall"]
    .to_dict(),
)

# %%
show_table(
    delays.query("selection == 'query'").pivot(
        index="retention", columns="delay", values="retention_rate"
    ),
    digits=1,
)
show_figure(C.delay_chart(delays, paper), "recall_delay", FIGURES_DIR)
record(
    "delay_retention_6_9",
    delays.query("selection == 'query' and delay == '6-9'")
    .set_index("retention")["retention_rate"]
    .to_dict(),
)

# %%
show_table(
    density.query("selection == 'query'").pivot(
        index="density", columns="retention", values="recall"
    ),
    digits=1,
)
show_figure(C.density_chart(density, paper), "recall_density", FIGURES_DIR)
record(
    "density_query_recall",
    {
        f"{r.retention}@{r.density}": r.recall
        for r in density.query("selection == 'query'").itertuples()
    },
)

# %% [markdown]
# Selection is inert while K <= k = 3: every survivor is exposed, so all five selectors tie with the retention rate. Recency retention keeps exactly the last K observations, so its recall is 0 at delays 6-9 for K = 5, while unbounded retention stays at 100%. The type-oracle gains with density because dropping more distractors leaves more room for facts; recency does not care what it drops.
#
# **Where ours differ.** Our numbers sit within a few points of the paper's endpoints (K = 2: about 21 vs 22.7; density 0.1 type-oracle about 55 vs 54.0). The residual gaps come from the distractor layout (a fixed count at uniform positions, see RQ1) and the finite sample. Our recency recall at density 0.7 is a little below 50 because with 3 facts per stream the target's position is noisier; the paper reports 50.5.

# %% [markdown]
# ## RQ3: benchmark properties that create spurious gains
#
# With the uninformative query every fact has the same token overlap (`the`, `is`) with `What is the value?`, so QUERY falls back to its recency tie-break and must equal RECENCY. The artifact study then prefixes every distractor with the literal marker `[distractor]`: the Jaccard scorer now sees a longer token set on distractors, ranks them lower and so filters them, without reading anything from the query.

# %%
artifact = R.artifact_study(EPISODES, K, TOP_K, SEED, DENSITY, encoder, N_BOOT)
write_csv(artifact, f"{RESULTS_DIR}/recall_artifact.csv", float_format=None)
show_table(artifact, digits=1)
show_table(P.rq3_vs_paper(grids["uninformative"], artifact, paper))

# %%
show_figure(C.artifact_chart(artifact, paper), "recall_artifact", FIGURES_DIR)
record(
    "query_equals_recency_uninformative",
    all(R.same_hits(grids["uninformative"], r, "query", "recency") for r in RETENTION_RULES),
)
record(
    "marker_boost_pp",
    artifact.query("selection == 'query'").set_index("retention")["boost_pp"].to_dict(),
)
record("dense_uninformative", R.type_filter_report(grids["uninformative"], "unbounded", "dense"))

# %% [markdown]
# **Where ours differ.** QUERY equals RECENCY exactly, as in the paper. The marker boost is about +10 to +11 pp here (paper +9.8 / +9.0): with our exactly-four-token facts the marker makes *every* distractor strictly worse under Jaccard, so QUERY becomes a perfect distractor filter (3/7 = 42.9% expected when unbounded, against 30% without); the paper's scorer filtered a little less. The larger difference is DENSE under uninformative queries: the paper's dense selector exposed no distractors and reached 42.0% (type filtering predicts 42.9%), while all-MiniLM-L6-v2 on our vocabulary only partly separates distractor slots (`weather`, `noise`, `mood`, ...) from fact slots (`color`, `city`, `password`, ...) and stays near RECENCY's 32% (it exposes distractors about 19% of the time against a 30% base rate). Latent type structure is a property of the slot vocabulary and the encoder, not of dense retrieval as such; the paper's vocabulary is not published, so ours was chosen independently.

# %% [markdown]
# ## RQ4: does recall predict answer correctness?
#
# The default reader is deterministic: it answers with the value of the exposed fact that shares most tokens with the query (first-ranked on ties). A user can pass any `reader(query, facts) -> answer` (for example an LLM) to `R.answer_accuracy`.

# %%
accuracy = R.answer_accuracy(
    grids["informative"], [("recency", "query"), ("recency", "recency"), ("unbounded", "query")]
)
show_table(accuracy, digits=1)
show_table(P.rq4_vs_paper(accuracy, paper))
record(
    "answer_accuracy",
    {f"{r.retention}/{r.selection}": [r.recall, r.accuracy] for r in accuracy.itertuples()},
)

# %% [markdown]
# **Where ours differ.** Our reader never misreads an exposed fact, so accuracy given recall is 100% rather than the paper's 70.7-74.7% with FLAN-T5-large; accuracy is recall scaled by one constant in both, which is the paper's point. Our accuracy can even exceed recall by a few points: values repeat within a stream (12 values for 10 observations, which gives the frequency rule something to count), so a wrong fact sometimes carries the right value (`correct_without_recall`). No memory gives 0%, as in the paper.

# %% [markdown]
# ## RQ5: what explains the remaining failures?
#
# Each failed query is exactly one of: **eviction** (the target did not survive retention); **similarity confusion** (it survived, the selector is query-aware, and an exposed survivor scored strictly higher similarity to the query); **displacement** (it survived but lost on a query-independent order, or on the recency tie-break among equal similarities).

# %%
failures = R.failure_table(grids["informative"])
write_csv(failures, f"{RESULTS_DIR}/recall_failures.csv", float_format=None)
show_table(failures)
show_table(P.rq5_vs_paper(failures, paper))
record(
    "failures_recency",
    failures.query("retention == 'recency'")
    .set_index("selection")[["eviction", "displacement", "similarity_confusion"]]
    .to_dict("index"),
)

# %% [markdown]
# **Where ours differ.** As in the paper, every failure of the bounded recency agent with QUERY selection is an eviction, and a query-blind selector on the same streams adds only displacements. The counts differ (about 297 and 110 vs the paper's 319 and 93) for the reason given under RQ1: our recency buffer keeps slightly more facts, so fewer evictions and, with more survivors than k, more displacements.

# %% [markdown]
# ## Real text: SQuAD v1.1 format
#
# The same rules, metric and bootstrap on streams of sentences: answer-bearing sentences are the facts (one question each), sentences that bear no answer are the distractors, and the queries are the real questions. No data set can be downloaded here, so by default this runs on the project's tiny invented fixture (14 answer sentences, 15 unrelated); point `SQUAD_PATH` at `dev-v1.1.json` for the paper's setting. **The fixture numbers are a smoke test, not a replication.**

# %%
squad = R.run_grid(
    E.squad_episodes(E.load_squad(SQUAD_PATH), SQUAD_EPISODES, seed=SEED),
    K,
    TOP_K,
    SEED,
    encoder=encoder,
)
squad_cells = R.cells_table(squad, N_BOOT)
write_csv(squad_cells, f"{RESULTS_DIR}/recall_squad_grid.csv", float_format=None)
show_figure(C.grid_heatmap(squad_cells), "recall_squad_grid", FIGURES_DIR)
show_table(P.squad_vs_paper(R.squad_numbers(squad, n_boot=N_BOOT), paper))
record("squad_invariant_holds", R.invariant_holds(squad))
record("squad_numbers", R.squad_numbers(squad, n_boot=N_BOOT))

# %% [markdown]
# **Where ours differ.** The ceiling holds in all 25 cells here too. Real questions do not token-match one sentence exactly, so QUERY (Jaccard) can fall below the ceiling while DENSE stays closer to it, the direction the paper reports. On the fixture the paired intervals are wide and the pool is tiny (the same 29 sentences recur across streams), so only the direction and the invariant are meaningful; the paper's distractors were unrelated sentences from SQuAD dev, ours are the answer-free sentences of the same file, which can share an article with a target.
