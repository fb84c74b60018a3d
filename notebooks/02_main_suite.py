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
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 2. Main suite: does one-hop propagation keep the chain where similarity-only loses it?
#
# Tables 1 and 2 of the paper: full-chain retention (the fraction of seeds whose every chain block
# survives eviction) for similarity-only, no-graph DSGC (lambda = 0) and DSGC, on two control
# templates and two target templates, under the lexical and the sentence encoder. Our numbers are
# shown beside the paper's published figures.

# %% tags=["parameters"]
ENCODERS = "lexical,sentence"  # the encoders: comma-separated, of: lexical, sentence
SEEDS = 15  # seeds: N (0..N-1) or "A:B", half-open (the paper: 15)
BUDGET_MULTIPLIER = 2.0  # M, the budget over the chain's tokens: at least 1 (the paper: 2.0)
LAMBDA = 1.0  # DSGC's propagation weight: at least 0 (the paper: 1.0)
TOTAL_BLOCKS = 20  # blocks a scenario: at least 5 (the paper: 20 and 50)
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("02_main_suite", globals())  # checks them; says where this run writes
RUN

# %%
from IPython.display import Markdown

from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.dsgc import charts
from workbench.dsgc.paper import differences, table1, table2
from workbench.dsgc.protocols import protocol_for
from workbench.dsgc.runs import run_protocol

# %%
runs = run_protocol(
    protocol_for(
        "main",
        SEEDS,
        ENCODERS,
        budget_multipliers=BUDGET_MULTIPLIER,
        lambdas=LAMBDA,
        total_blocks=TOTAL_BLOCKS,
    )
)
print(
    f"{len(runs)} runs: {runs.template.nunique()} templates x {runs.policy.nunique()} policies "
    f"x {runs.encoder.nunique()} encoders x {runs.seed.nunique()} seeds"
)

# %% [markdown]
# ## Table 1: retention by regime (controls vs targets)

# %%
t1 = table1(runs)
show_table(t1[["encoder", "regime", "policy", "n", "mean", "std", "ours", "paper", "diff"]])
write_csv(t1, f"{RESULTS_DIR}/table1.csv")
record("table1", {f"{r.encoder}/{r.regime}/{r.policy}": r.mean for r in t1.itertuples()})

# %%
show_figure(
    charts.ours_vs_paper(t1, "regime", "Table 1: full-chain retention by regime"),
    "main_table1",
    FIGURES_DIR,
)

# %%
Markdown(differences(t1, ["encoder", "regime", "policy"], what="Table 1"))

# %% [markdown]
# Similarity-only and no-graph DSGC must agree exactly (lambda = 0 makes I = r, a monotone
# function of the similarity): we check it on every run, not only on the means.

# %%
same = (
    runs[runs.policy == "similarity"].retained_ids.tolist()
    == runs[runs.policy == "no-graph"].retained_ids.tolist()
)
record("similarity_equals_no_graph", same)

# %% [markdown]
# ## Table 2: the targets, template by template

# %%
t2 = table2(runs)
show_table(t2[["encoder", "template", "policy", "n", "mean", "std", "ours", "paper", "diff"]])
write_csv(t2, f"{RESULTS_DIR}/table2.csv")
record("table2", {f"{r.encoder}/{r.template}/{r.policy}": r.mean for r in t2.itertuples()})

# %%
show_figure(
    charts.ours_vs_paper(t2, "template", "Table 2: full-chain retention on the targets"),
    "main_table2",
    FIGURES_DIR,
)

# %%
Markdown(differences(t2, ["encoder", "template", "policy"], what="Table 2"))

# %% [markdown]
# **Reading the differences.** The workbench regenerates the benchmark from its own templates
# (workbench/dsgc/generator.py); the paper's exact sentences are not published, so seed-level numbers
# differ and means can move by a few seeds' worth (1/15 = 0.07 per seed). What should hold is the
# shape: controls saturated for every policy, similarity-only equal to no-graph DSGC, and DSGC
# above similarity-only on the targets. The notes above list every cell that moved by more than
# 0.10; they are generated from the numbers, so they stay true when the generator changes.
