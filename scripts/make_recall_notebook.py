"""Write notebooks/08_recall.ipynb (unexecuted); run it with papermill afterwards."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat as nbf

from workbench.notebook import write_notebook

OUT = Path(__file__).resolve().parents[1] / "notebooks" / "08_recall.ipynb"

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell

CELLS = [
    md(
        "# Retention or selection? The factorial streaming-recall benchmark\n\n"
        "**Question:** when a bounded-memory agent misses the fact a query needs, did *retention* "
        "drop it (online, under capacity K, before the query existed) or did *selection* pass it over "
        "(top-k among the survivors at query time)? We cross five retention rules with five selection "
        "rules on the same seeded episodes (seed 003), always report recall beside retention rate, and "
        "put the paper's published numbers beside ours."
    ),
    code(
        "import pandas as pd\n\n"
        "from workbench import recall as R\n"
        "from workbench import recall_charts as C\n"
        "from workbench import recall_report as P\n"
        "from workbench.encoders import get_encoder\n"
        "from workbench.notebook import record, show_figure, show_table"
    ),
    code(
        "SEED = 0  # any non-negative int\n"
        "EPISODES = 300  # episodes per cell: 20..3000 (the paper: 300)\n"
        "K = 5  # retention capacity: 1..20 (the paper: 5)\n"
        "TOP_K = 3  # items selection exposes: 1..K (the paper: 3)\n"
        "DENSITY = 0.3  # distractor density: 0.0..0.9 (the paper: 0.3)\n"
        "KS = [2, 3, 5, 10, 20]  # capacities for the memory-pressure curve: ints 1..20\n"
        "DENSITIES = [0.1, 0.3, 0.5, 0.7]  # distractor densities for the sweep: 0.0..0.9\n"
        "N_BOOT = 2000  # bootstrap resamples of episodes: 200..10000\n"
        'SQUAD_PATH = "../tests/fixtures/squad_tiny.json"  # a SQuAD v1.1 JSON file, e.g. dev-v1.1.json\n'
        "SQUAD_EPISODES = 150  # SQuAD streams (2 questions each): 10..1000 (the paper: 300 questions)\n"
        'FIGURES_DIR = "../figures"  # folder for SVG + PNG figures\n'
        'RESULTS_DIR = "../data/results"  # folder for CSV tables',
        metadata={"tags": ["parameters"]},
    ),
    md(
        "## The grid\n\n"
        "Each episode streams 10 observations `The <slot> is <value>.`; a share `DENSITY` of them are "
        "distractors from a disjoint slot vocabulary. Two queries per episode each target a uniformly "
        "drawn non-distractor fact. The informative query names the slot (`What is the <slot> ?`); the "
        "uninformative one differs by one token (`What is the value?`). Both forms use the same streams "
        "and targets. Intervals are 95% percentile bootstraps that resample **episodes**.\n\n"
        "Retention (capacity K, online): RECENCY keeps the last K; RANDOM evicts a uniformly random buffer "
        "item on overflow; FREQUENCY keeps items whose words recur most in the stream so far (values "
        "repeat; slots never do); TYPE-ORACLE is privileged and drops distractors first; UNBOUNDED keeps "
        "everything. Selection (top k of the survivors): RECENCY, RANDOM, QUERY (Jaccard token overlap), "
        "DENSE (all-MiniLM-L6-v2 cosine, rounded to 6 decimals) and ORACLE (privileged). Ties go to the "
        "newer item."
    ),
    code(
        "paper = R.load_paper_figures()\n"
        'encoder = get_encoder("sentence")\n'
        "grids = R.run_forms(EPISODES, K, TOP_K, DENSITY, SEED, encoder)\n"
        "cells = pd.concat([R.cells_table(g, N_BOOT) for g in grids.values()], ignore_index=True)\n"
        'R.write_csv(cells, f"{RESULTS_DIR}/recall_grid.csv")\n'
        'show_table(cells.drop(columns=["K", "k", "episodes"]), digits=1)'
    ),
    code(
        'show_figure(C.grid_heatmap(cells), "recall_grid", FIGURES_DIR)\n'
        'record("invariant_holds", all(R.invariant_holds(g) for g in grids.values()))\n'
        'record("grid_informative", R.recall_matrix(grids["informative"]))\n'
        'record("grid_uninformative", R.recall_matrix(grids["uninformative"]))'
    ),
    md(
        "The retention ceiling holds in all 50 cells: no selection rule exceeds its row's retention "
        "rate (it holds per query, since selection only ranks survivors). Under informative queries "
        "QUERY, DENSE and ORACLE all reach the ceiling: the query token-matches exactly one fact, so "
        "selection is solved whenever the target survived. This is the construction ceiling the paper "
        "describes, not a property of the selectors."
    ),
    md(
        "## RQ1: how much of the advantage is query awareness?\n\n"
        "*Matched-access gain* = QUERY minus RECENCY selection under the same bounded (recency) "
        "retention. *Mixed comparison* = QUERY under unbounded retention minus RECENCY/RECENCY: a "
        "full-history query-aware agent against a bounded query-blind one. *Access contribution* = the "
        "difference (unbounded QUERY minus bounded QUERY). All three use paired bootstraps over the same "
        "episode resamples."
    ),
    code(
        'decomp = R.decomposition(grids["informative"], n_boot=N_BOOT)\n'
        'R.write_csv(decomp, f"{RESULTS_DIR}/recall_decomposition.csv")\n'
        "show_table(P.rq1_vs_paper(decomp, paper))\n"
        'record("decomposition_pp", {r.component: [r.pp, r.lo, r.hi] for r in decomp.itertuples()})'
    ),
    code('show_figure(C.decomposition_chart(decomp, paper), "recall_decomposition", FIGURES_DIR)'),
    md(
        "**Where ours differ.** Our bounded recency row retains about 50% of targets (paper: 46.8-47.3%), "
        "which moves the matched-access gain a few points up and the access contribution a few down; the "
        "intervals overlap. The generator detail: we place exactly round(0.3 x 10) = 3 distractors at "
        "uniformly random positions, so a K = 5 recency buffer holds 3.5 of the 7 facts in expectation "
        "(50% retention); the paper's 46.8% lies inside our interval, so its layout or its sample left "
        "slightly fewer facts in the last five positions; its exact layout is not published."
    ),
    md("## RQ2: memory pressure, delay and distractor density"),
    code(
        'pressure = R.memory_pressure(grids["informative"].episodes, KS, TOP_K, SEED, encoder, N_BOOT)\n'
        'delays = R.delay_table(grids["informative"])\n'
        "density = R.density_sweep(DENSITIES, EPISODES, K, TOP_K, SEED, encoder=encoder, n_boot=N_BOOT)\n"
        'for name, df in [("pressure", pressure), ("delay", delays), ("density", density)]:\n'
        '    R.write_csv(df, f"{RESULTS_DIR}/recall_{name}.csv")\n'
        "show_table(P.rq2_vs_paper(pressure, delays, density, paper))"
    ),
    code(
        'show_table(pressure.query("retention == \'recency\'").pivot(index="K", columns="selection", values="recall"), digits=1)\n'
        'show_figure(C.k_curve(pressure, paper), "recall_memory_pressure", FIGURES_DIR)\n'
        'record("recency_query_recall_by_K", pressure.query("retention == \'recency\' and selection == \'query\'").set_index("K")["recall"].to_dict())'
    ),
    code(
        'show_table(delays.query("selection == \'query\'").pivot(index="retention", columns="delay", values="retention_rate"), digits=1)\n'
        'show_figure(C.delay_chart(delays, paper), "recall_delay", FIGURES_DIR)\n'
        'record("delay_retention_6_9", delays.query("selection == \'query\' and delay == \'6-9\'").set_index("retention")["retention_rate"].to_dict())'
    ),
    code(
        'show_table(density.query("selection == \'query\'").pivot(index="density", columns="retention", values="recall"), digits=1)\n'
        'show_figure(C.density_chart(density, paper), "recall_density", FIGURES_DIR)\n'
        'record("density_query_recall", {f"{r.retention}@{r.density}": r.recall for r in density.query("selection == \'query\'").itertuples()})'
    ),
    md(
        "Selection is inert while K <= k = 3: every survivor is exposed, so all five selectors tie "
        "with the retention rate. Recency retention keeps exactly the last K observations, so its "
        "recall is 0 at delays 6-9 for K = 5, while unbounded retention stays at 100%. The type-oracle "
        "gains with density because dropping more distractors leaves more room for facts; recency does "
        "not care what it drops.\n\n"
        "**Where ours differ.** Our numbers sit within a few points of the paper's endpoints (K = 2: "
        "about 21 vs 22.7; density 0.1 type-oracle about 55 vs 54.0). The residual gaps come from the "
        "distractor layout (a fixed count at uniform positions, see RQ1) and the finite sample. Our "
        "recency recall at density 0.7 is a little below 50 because with 3 facts per stream the "
        "target's position is noisier; the paper reports 50.5."
    ),
    md(
        "## RQ3: benchmark properties that create spurious gains\n\n"
        "With the uninformative query every fact has the same token overlap (`the`, `is`) with "
        "`What is the value?`, so QUERY falls back to its recency tie-break and must equal RECENCY. "
        "The artifact study then prefixes every distractor with the literal marker `[distractor]`: the "
        "Jaccard scorer now sees a longer token set on distractors, ranks them lower and so filters "
        "them, without reading anything from the query."
    ),
    code(
        "artifact = R.artifact_study(EPISODES, K, TOP_K, SEED, DENSITY, encoder, N_BOOT)\n"
        'R.write_csv(artifact, f"{RESULTS_DIR}/recall_artifact.csv")\n'
        "show_table(artifact, digits=1)\n"
        'show_table(P.rq3_vs_paper(grids["uninformative"], artifact, paper))'
    ),
    code(
        'show_figure(C.artifact_chart(artifact, paper), "recall_artifact", FIGURES_DIR)\n'
        'record("query_equals_recency_uninformative", all(R.same_hits(grids["uninformative"], r, "query", "recency") for r in R.RETENTION_RULES))\n'
        'record("marker_boost_pp", artifact.query("selection == \'query\'").set_index("retention")["boost_pp"].to_dict())\n'
        'record("dense_uninformative", R.type_filter_report(grids["uninformative"], "unbounded", "dense"))'
    ),
    md(
        "**Where ours differ.** QUERY equals RECENCY exactly, as in the paper. The marker boost is "
        "about +10 to +11 pp here (paper +9.8 / +9.0): with our exactly-four-token facts the marker makes "
        "*every* distractor strictly worse under Jaccard, so QUERY becomes a perfect distractor filter "
        "(3/7 = 42.9% expected when unbounded, against 30% without); the paper's scorer filtered a little "
        "less. The larger difference is DENSE under uninformative queries: the paper's dense selector "
        "exposed no distractors and reached 42.0% (type filtering predicts 42.9%), while "
        "all-MiniLM-L6-v2 on our vocabulary only partly separates distractor slots (`weather`, `noise`, "
        "`mood`, ...) from fact slots (`color`, `city`, `password`, ...) and stays near RECENCY's 32% "
        "(it exposes distractors about 19% of the time against a 30% base rate). Latent type structure is a property of the slot vocabulary and the encoder, not of "
        "dense retrieval as such; the paper's vocabulary is not published, so ours was chosen "
        "independently."
    ),
    md(
        "## RQ4: does recall predict answer correctness?\n\n"
        "The default reader is deterministic: it answers with the value of the exposed fact that "
        "shares most tokens with the query (first-ranked on ties). A user can pass any "
        "`reader(query, facts) -> answer` (for example an LLM) to `R.answer_accuracy`."
    ),
    code(
        'accuracy = R.answer_accuracy(grids["informative"], [("recency", "query"), ("recency", "recency"), ("unbounded", "query")])\n'
        "show_table(accuracy, digits=1)\n"
        "show_table(P.rq4_vs_paper(accuracy, paper))\n"
        'record("answer_accuracy", {f"{r.retention}/{r.selection}": [r.recall, r.accuracy] for r in accuracy.itertuples()})'
    ),
    md(
        "**Where ours differ.** Our reader never misreads an exposed fact, so accuracy given recall "
        "is 100% rather than the paper's 70.7-74.7% with FLAN-T5-large; accuracy is recall scaled by "
        "one constant in both, which is the paper's point. Our accuracy can even exceed recall by a few "
        "points: values repeat within a stream (12 values for 10 observations, which gives the "
        "frequency rule something to count), so a wrong fact sometimes carries the right value "
        "(`correct_without_recall`). No memory gives 0%, as in the paper."
    ),
    md(
        "## RQ5: what explains the remaining failures?\n\n"
        "Each failed query is exactly one of: **eviction** (the target did not survive retention); "
        "**similarity confusion** (it survived, the selector is query-aware, and an exposed survivor "
        "scored strictly higher similarity to the query); **displacement** (it survived but lost on a "
        "query-independent order, or on the recency tie-break among equal similarities)."
    ),
    code(
        'failures = R.failure_table(grids["informative"])\n'
        'R.write_csv(failures, f"{RESULTS_DIR}/recall_failures.csv")\n'
        "show_table(failures)\n"
        "show_table(P.rq5_vs_paper(failures, paper))\n"
        'record("failures_recency", failures.query("retention == \'recency\'").set_index("selection")[["eviction", "displacement", "similarity_confusion"]].to_dict("index"))'
    ),
    md(
        "**Where ours differ.** As in the paper, every failure of the bounded recency agent with "
        "QUERY selection is an eviction, and a query-blind selector on the same streams adds only "
        "displacements. The counts differ (about 297 and 110 vs the paper's 319 and 93) for the reason "
        "given under RQ1: our recency buffer keeps slightly more facts, so fewer evictions and, with more "
        "survivors than k, more displacements."
    ),
    md(
        "## Real text: SQuAD v1.1 format\n\n"
        "The same rules, metric and bootstrap on streams of sentences: answer-bearing sentences are the "
        "facts (one question each), sentences that bear no answer are the distractors, and the queries "
        "are the real questions. No data set can be downloaded here, so by default this runs on the "
        "project's tiny invented fixture (14 answer sentences, 15 unrelated); point `SQUAD_PATH` at "
        "`dev-v1.1.json` for the paper's setting. **The fixture numbers are a smoke test, not a "
        "replication.**"
    ),
    code(
        "squad = R.run_grid(R.squad_episodes(R.load_squad(SQUAD_PATH), SQUAD_EPISODES, seed=SEED), K, TOP_K, SEED, encoder=encoder)\n"
        "squad_cells = R.cells_table(squad, N_BOOT)\n"
        'R.write_csv(squad_cells, f"{RESULTS_DIR}/recall_squad_grid.csv")\n'
        'show_figure(C.grid_heatmap(squad_cells), "recall_squad_grid", FIGURES_DIR)\n'
        "show_table(P.squad_vs_paper(R.squad_numbers(squad, n_boot=N_BOOT), paper))\n"
        'record("squad_invariant_holds", R.invariant_holds(squad))\n'
        'record("squad_numbers", R.squad_numbers(squad, n_boot=N_BOOT))'
    ),
    md(
        "**Where ours differ.** The ceiling holds in all 25 cells here too. Real questions do not "
        "token-match one sentence exactly, so QUERY (Jaccard) can fall below the ceiling while DENSE "
        "stays closer to it, the direction the paper reports. On the fixture the paired intervals are "
        "wide and the pool is tiny (the same 29 sentences recur across streams), so only the direction "
        "and the invariant are meaningful; the paper's distractors were unrelated sentences from SQuAD "
        "dev, ours are the answer-free sentences of the same file, which can share an article with a "
        "target."
    ),
]


if __name__ == "__main__":
    out = write_notebook(CELLS, Path(sys.argv[1]) if len(sys.argv) > 1 else OUT, "08")
    print(f"wrote {out}")
