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
# # 1. The failure mode: why does similarity-only retention evict a block the answer needs?
#
# A memory store keeps what fits in a token budget *before* any retrieval happens. When a block is
# needed only because a more query-like block depends on it, a similarity-only policy ranks it low
# and evicts it: a **structurally indirect prerequisite** (the paper's Definition 1) lost in a
# **retention-stage failure** (Definition 2). This notebook shows the paper's worked example
# (section 2.2), then one generated target seed, and draws the *semantic valley*: query relevance
# along the chain c1 -> c2 -> c3 before and after one hop of DSGC propagation.

# %% tags=["parameters"]
ENCODER = "lexical"  # the encoder: lexical | sentence
TEMPLATE = "role"  # the template of the generated scenario: expense | threshold | role | profile
SEED = 3  # the generated scenario's seed: an integer from 0
TOTAL_BLOCKS = 20  # blocks a scenario: at least 5 (the paper: 20 and 50)
BUDGET_MULTIPLIER = 2.0  # M: at least 1 (budget C is max(L, ceil(M * L)), L the chain's tokens)
LAMBDA = 1.0  # DSGC's propagation weight: at least 0 (the paper: 1.0)
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("01_failure_mode", globals())  # checks them; says where this run writes
RUN

# %%
import pandas as pd

from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.dsgc import charts
from workbench.dsgc.trace import Setting, blocks_table, chain_table, run_setting, valley_pair

# %% [markdown]
# ## The worked example (section 2.2)
#
# c1 "Alice is assigned to backup bundle M", c2 "Bundle M maps to clearance N", c3 "Clearance N
# permits deletion of the encrypted backup"; c3 depends on c2, c2 on c1. Two honeypots share the
# query's words, four fillers do not. The store, in ingestion order:

# %%
worked = Setting(template="worked", encoder=ENCODER, multiplier=BUDGET_MULTIPLIER, lam=LAMBDA)
show_table(blocks_table(worked))

# %% [markdown]
# Similarity-only against DSGC on the same store and budget:

# %%
sim, dsgc = run_setting(worked, policy="similarity"), run_setting(worked, policy="dsgc")
print(sim.verdict())
print(dsgc.verdict())

# %%
worked_chain = chain_table(worked)
show_table(worked_chain, digits=4)

# %%
show_figure(
    charts.valley(*valley_pair(worked), title="The semantic valley of the worked example"),
    "failure_worked_valley",
    FIGURES_DIR,
)

# %% [markdown]
# c2 shares no word with the query, so its relevance r sits in a valley between c1 ("Alice",
# "backup") and c3 ("encrypted backup"). Under similarity-only it falls below the budget cutoff;
# DSGC lifts it by pi = r(c3), the relevance of the block that depends on it.
#
# ## Definitions 1 and 2 on the worked example
#
# Definition 1 (indirect prerequisite, block -> witness) is a property of the block, the query and
# the encoder; Definition 2 (retention-stage failure: an indirect prerequisite evicted while its
# more similar dependent is kept) is a property of a policy's selection.

# %%
record("worked_indirect", sim.indirect)
record("worked_failures", {"similarity": sim.retention_failures, "dsgc": dsgc.retention_failures})
record("worked_c2_kept", {"similarity": "c2" in sim.kept_ids, "dsgc": "c2" in dsgc.kept_ids})
record("worked_budget", sim.retention.budget)

# %% [markdown]
# ## One generated scenario
#
# The same analysis on a generated scenario (`TEMPLATE`, `SEED`): its chain before and after
# propagation, its valley, and the similarity-only score landscape (every block ranked by score).

# %%
state = Setting(
    template=TEMPLATE,
    seed=SEED,
    encoder=ENCODER,
    multiplier=BUDGET_MULTIPLIER,
    lam=LAMBDA,
    total_blocks=TOTAL_BLOCKS,
)
seed_sim, seed_dsgc = run_setting(state, policy="similarity"), run_setting(state, policy="dsgc")
print(seed_sim.verdict())
print(seed_dsgc.verdict())

# %%
seed_chain = chain_table(state)
show_table(seed_chain, digits=4)
csv = write_csv(pd.concat([worked_chain, seed_chain]), f"{RESULTS_DIR}/failure_mode_chain.csv")

# %%
show_figure(charts.valley(*valley_pair(state)), "failure_seed_valley", FIGURES_DIR)

# %%
show_figure(charts.landscape(seed_sim), "failure_seed_landscape", FIGURES_DIR)

# %%
record("seed_indirect", seed_sim.indirect)
record(
    "seed_failures",
    {"similarity": seed_sim.retention_failures, "dsgc": seed_dsgc.retention_failures},
)
record(
    "seed_kept", {"similarity": seed_sim.full_chain_retained, "dsgc": seed_dsgc.full_chain_retained}
)
record("seed_chain_ranks", {"similarity": seed_sim.chain_ranks, "dsgc": seed_dsgc.chain_ranks})
