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
# # 4. Robustness: where does the one-hop rule hold, and where does it break?
#
# The paper's section 7: the propagation weight lambda (Table 4), the budget multiplier M with
# the sliding-window baseline (Table 5), and 20 vs 50 blocks (Table 6). Each sweep is drawn with
# error bars (mean +- sample std over seeds) and the paper's published means overlaid.

# %% tags=["parameters"]
ENCODERS = "lexical,sentence"  # the encoders: comma-separated, of: lexical, sentence
SEEDS = 15  # seeds: N (0..N-1) or "A:B", half-open (the paper: 15)
LAMBDAS = [0.5, 1.0, 2.0]  # propagation weights: a list, each at least 0 (the paper: 0.5, 1, 2)
MULTIPLIERS = [
    1.0,
    1.5,
    2.0,
    3.0,
    5.0,
]  # budget multipliers M: a list, each at least 1 (the paper: 1, 2, 5)
SIZES = [20, 50]  # blocks a scenario: a list, each at least 5 (the paper: 20, 50)
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("04_robustness", globals())  # checks them; says where this run writes
RUN

# %%
from IPython.display import Markdown

from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.dsgc import charts
from workbench.dsgc.paper import differences, table4, table5, table6, window_table
from workbench.dsgc.protocols import protocol_for
from workbench.dsgc.runs import run_protocol

COLUMNS = ["n", "mean", "std", "ours", "paper", "diff"]

# %% [markdown]
# ## Table 4: the propagation weight lambda (DSGC, targets)

# %%
t4 = table4(run_protocol(protocol_for("lambda", SEEDS, ENCODERS, lambdas=LAMBDAS)))
show_table(t4[["template", "encoder", "lambda", *COLUMNS]])
write_csv(t4, f"{RESULTS_DIR}/table4.csv")
record(
    "table4",
    {
        f"{r.encoder}/{r.template}/{r.lambda_:g}": r.mean
        for r in t4.rename(columns={"lambda": "lambda_"}).itertuples()
    },
)

# %%
show_figure(
    charts.sweep_chart(
        t4,
        "lambda",
        "propagation weight λ",
        "template",
        "Table 4: DSGC retention against λ",
        facet="encoder",
    ),
    "robust_lambda",
    FIGURES_DIR,
)

# %%
Markdown(differences(t4, ["encoder", "template", "lambda"], what="Table 4"))

# %% [markdown]
# ## Table 5: budget pressure (lexical encoder, targets), with the sliding window

# %%
t5 = table5(
    run_protocol(
        protocol_for(
            "budget",
            SEEDS,
            "lexical",
            budget_multipliers=MULTIPLIERS,
            policies="similarity,dsgc,recency",
        )
    )
)
show_table(t5[["template", "budget_multiplier", "policy", *COLUMNS]])
write_csv(t5, f"{RESULTS_DIR}/table5.csv")
record(
    "table5", {f"{r.template}/{r.budget_multiplier:g}/{r.policy}": r.mean for r in t5.itertuples()}
)

# %%
show_figure(
    charts.sweep_chart(
        t5,
        "budget_multiplier",
        "budget multiplier M (log scale)",
        "policy",
        "Table 5: retention against the budget",
        facet="template",
        log_x=True,
    ),
    "robust_budget",
    FIGURES_DIR,
)

# %%
Markdown(differences(t5, ["template", "budget_multiplier", "policy"], what="Table 5"))

# %% [markdown]
# The paper reports the sliding window (recency) once: full-chain retention over all four
# templates, lexical encoder, M = 2.

# %%
tw = window_table(run_protocol(protocol_for("window", SEEDS)))
show_table(tw[["encoder", "budget_multiplier", "policy", *COLUMNS]])
write_csv(tw, f"{RESULTS_DIR}/window.csv")
record("window", {r.policy: r.mean for r in tw.itertuples()})

# %% [markdown]
# ## Table 6: context scaling, 20 vs 50 blocks (DSGC, targets)

# %%
t6 = table6(run_protocol(protocol_for("scale", SEEDS, ENCODERS, total_blocks=SIZES)))
show_table(t6[["template", "encoder", "total_blocks", *COLUMNS]])
write_csv(t6, f"{RESULTS_DIR}/table6.csv")
record("table6", {f"{r.encoder}/{r.template}/{r.total_blocks}": r.mean for r in t6.itertuples()})

# %%
show_figure(
    charts.sweep_chart(
        t6,
        "total_blocks",
        "total blocks in the store",
        "template",
        "Table 6: DSGC retention against context size",
        facet="encoder",
    ),
    "robust_scale",
    FIGURES_DIR,
)

# %%
Markdown(differences(t6, ["encoder", "template", "total_blocks"], what="Table 6"))

# %% [markdown]
# **Why more blocks hurt, in this benchmark.** The paper suggests score diffusion: with more blocks
# the softmax spreads relevance thinner. But the normalizer is shared by every block, so it cancels
# out of the ranking: DSGC ranks c1 above a filler f exactly when
# exp(s_c1 / tau) + lambda exp(s_c2 / tau) > exp(s_f / tau), whatever N is (a property test checks
# that adding an unconnected block never reorders the others). What grows with N is the number of
# fillers that can clear that bar before the budget runs out, which is where our 50-block losses
# come from.
#
# **Reading the differences.** The sweeps are computed on the workbench's own generator, so
# absolute values differ from the paper's; the notes above are generated from the numbers and list
# every cell more than 0.10 away. The claims to check are directional: DSGC at or above
# similarity-only at every M, the sliding window far below both, and DSGC under the lexical
# encoder losing ground from 20 to 50 blocks while the sentence encoder holds.
