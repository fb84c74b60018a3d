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
# # 5. Explorer: for any seed and any setting, which blocks survive, and why?
#
# Move any control: the verdict, the score landscape, the semantic valley and the ranking table
# change together (how to use it: below the explorer).

# %% tags=["parameters"]
TEMPLATE = "profile"  # the scenario: worked | expense | threshold | role | profile
SEED = 0  # its seed: an integer from 0 (the slider spans 0-99)
ENCODER = "lexical"  # the encoder: lexical | sentence (sentence loads in the background)
POLICY = "dsgc"  # the policy: similarity | no-graph | dsgc | recency
BUDGET_MULTIPLIER = 2.0  # M: 1..5 (the slider's range)
LAMBDA = 1.0  # lambda: 0..3 (the slider's range)
TAU = 0.25  # the softmax temperature tau: 0.05..1 (the slider's range)
HOPS = 1  # hops: 1..3 (the slider's range) (extra hops damped by 0.5)
TOTAL_BLOCKS = 20  # blocks a scenario: 20 | 50
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("05_explorer", globals())  # checks them; says where this run writes
RUN

# %%
from workbench.dsgc.trace import Setting
from workbench.explore.explorer import explorer, snapshot

# %%
state = Setting(TEMPLATE, SEED, ENCODER, POLICY, BUDGET_MULTIPLIER, LAMBDA, TAU, HOPS, TOTAL_BLOCKS)

# %%
explorer(state)

# %% [markdown]
# Pick a template (or load your own scenario file in the `workbench evaluate` format), a seed,
# an encoder, a policy, the budget multiplier M, λ, τ and the number of hops. The verdict says
# whether the chain was kept and, if not, which block was displaced, by which block, by what
# margin. "copy link" gives a link that opens this same view; "save" exports the ranking table
# (CSV), either chart (SVG or PNG) and the state (JSON).

# %% [markdown] tags=["room-hidden"]
# Run it live with `make explore` (JupyterLab) or `make app` (the room server: one page for each
# participant, see docs/room.md, "Running a room").

# %% [markdown] tags=["room-hidden"]
# ## The starting view, stored
#
# The starting state as text and figures (the live view needs a running kernel), with the numbers
# the tests check. The room's page leaves this part out (its cells are tagged `room-hidden`) and
# writes no file.

# %%
verdict = snapshot(state, FIGURES_DIR, RESULTS_DIR)
