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
# # 6. Workshop: can you predict which block a memory policy will throw away?
#
# A 60-90 minute session in four parts. Each exercise asks for a prediction first, then reveals
# the answer with the explorer's pieces. Suggested timing:
#
# | part | minutes | question |
# | --- | --- | --- |
# | 0. Setting | 10 | what is a retention budget, and why does it come before retrieval? |
# | 1. Predict the eviction | 15 | which block will similarity-only evict? |
# | 2. Rescue by propagation | 15 | what lambda brings the chain back? |
# | 3. The one-hop boundary | 20 | where does one hop stop helping? |
# | 4. Free exploration | 15-30 | find your own failing seed and explain it |
#
# Run it with `make app` (Voila, one page per participant) or in JupyterLab; every cell is safe
# to re-run.

# %%

from workbench import charts
from workbench.explorer import explorer, verdict_line
from workbench.notebook import record, show_figure, show_table
from workbench.trace import (
    Setting,
    blocks_table,
    find_seed,
    first_rescue,
    kept,
    run_setting,
    sweep,
    valley_pair,
)

# %% tags=["parameters"]
ENCODER = "lexical"  # lexical | sentence
TEMPLATE = "role"  # role | profile: the target used in parts 1 and 2
SEED = -1  # any int from 0, or -1 for the first seed where similarity-only fails and DSGC holds
HOP_SEED = -1  # profile seed for part 3: any int from 0, or -1 for the first seed one hop loses
BUDGET_MULTIPLIER = 2.0  # M, at least 1.0
FIGURES_DIR = "../figures"  # where SVG + PNG figures are written
RESULTS_DIR = "../data/results"  # where result tables are written as CSV

# %% [markdown]
# ## 0. Setting (10 min)
#
# A store holds blocks; before the agent answers, a policy keeps the blocks that fit in a token
# budget C and evicts the rest. Whatever is evicted is gone for retrieval. The chain c1 -> c2 -> c3
# is what the answer needs; honeypots share the query's words but do not answer it; fillers are
# background. Similarity-only keeps the blocks most like the query; DSGC adds to each block the
# relevance of the blocks that depend on it (I = r + lambda * pi).

# %%
base = Setting(template=TEMPLATE, encoder=ENCODER, multiplier=BUDGET_MULTIPLIER)
seed = (
    SEED if SEED >= 0 else find_seed(base, lambda s: not kept(s, policy="similarity") and kept(s))
)
state = base.with_(seed=seed)
print(
    f"query: {run_setting(state).scenario.query}    budget C = {run_setting(state).retention.budget} tokens"
)
show_table(blocks_table(state).drop(columns=["kind"]))

# %% [markdown]
# ## 1. Predict the eviction (15 min)
#
# Read the store above (kinds hidden). **Predict:** which chain block will similarity-only
# retention evict? Write your guess below, then run the reveal.

# %%
MY_GUESS = "c?"  # your prediction: c1, c2 or c3

# %%
reveal = run_setting(state, policy="similarity")
print(verdict_line(reveal))
show_figure(charts.landscape(reveal), "workshop_eviction", FIGURES_DIR)
record("part1", {"seed": seed, "displaced": reveal.displaced, "indirect": reveal.indirect})

# %% [markdown]
# Discuss: the evicted block is *needed* (the chain breaks without it) but shares few words with
# the query. Definition 1 calls it a structurally indirect prerequisite; its witness is the
# dependent that the query does resemble.
#
# ## 2. Rescue by propagation (15 min)
#
# DSGC scores I = r + lambda * pi. **Predict:** what is the smallest lambda (in steps of 0.25)
# that keeps the whole chain? Is a larger lambda always better?

# %%
MY_LAMBDA = None  # your prediction, e.g. 0.5

# %%
lams = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
lam_sweep = sweep(state.with_(policy="dsgc"), "lam", lams)
show_table(lam_sweep.drop(columns=["verdict"]), digits=4)
record(
    "part2",
    {
        "seed": seed,
        "rescue_lambda": first_rescue(state, "lam", lams),
        "kept": lam_sweep.full_chain_retained.tolist(),
    },
)

# %%
show_figure(
    charts.rescue_curve(
        lam_sweep.assign(label=f"{TEMPLATE} seed {seed}"),
        "lam",
        "propagation weight λ",
        "Does the chain survive as λ grows?",
    ),
    "workshop_lambda",
    FIGURES_DIR,
)

# %% [markdown]
# ## 3. The one-hop boundary (20 min)
#
# In the profile target, c1 ("<service> is filed under ticket ...") shares only an identifier with
# the query. One hop lifts c2 (c3 depends on it) but nothing lifts c1 unless the propagation goes
# two hops. **Predict:** with one hop, which chain block is lost? Does a second hop bring it back?
# What happens with 50 blocks instead of 20?

# %%
profile = Setting(template="profile", encoder=ENCODER, multiplier=BUDGET_MULTIPLIER)
hop_seed = (
    HOP_SEED if HOP_SEED >= 0 else find_seed(profile, lambda s: not kept(s) and kept(s, hops=2))
)
hop_state = profile.with_(seed=hop_seed if hop_seed is not None else 0)
print(verdict_line(run_setting(hop_state)))

# %%
MY_HOPS = None  # your prediction: how many hops keep the chain?

# %%
hops = sweep(hop_state, "hops", [1, 2, 3])
show_table(hops.drop(columns=["verdict"]), digits=4)
show_figure(charts.valley(*valley_pair(hop_state)), "workshop_one_hop", FIGURES_DIR)
record(
    "part3",
    {
        "seed": hop_seed,
        "kept_by_hops": hops.full_chain_retained.tolist(),
        "displaced_one_hop": run_setting(hop_state).displaced,
    },
)

# %%
scale = sweep(hop_state, "total_blocks", [20, 50])
show_table(scale.drop(columns=["verdict"]), digits=4)

# %% [markdown]
# Discuss: one hop reaches c2 from c3; c1 is two hops away. A second (damped) hop reaches it, at
# the price of lifting whatever else sits two hops from a relevant block. With 50 blocks there are
# more fillers that can outrank c1 before the budget runs out (the softmax normalizer is shared by
# every block, so it does not by itself reorder them).
#
# ## 4. Free exploration (15-30 min)
#
# Find a seed where DSGC fails, read its landscape, and explain the failure in one sentence:
# which block was displaced, by which block, and by what margin? Try the sentence encoder.

# %%
explorer(hop_state)
