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
# # 6. Workshop: can you predict which block a memory policy will throw away?
#
# A 75-90 minute session in five steps and thirteen predictions, from a warm-up to a count over
# fifteen seeds. Each part asks for your prediction first; the **Reveal** button shows the answer
# only when you click it, compares it with your guess, adds it to your score and ends on a
# question for the room. Suggested timing:
#
# | step | minutes | parts | question |
# | --- | --- | --- | --- |
# | 0. Setting | 10 | 1 | what is a retention budget, and why does it come before retrieval? |
# | 1. Predict the eviction | 15 | 2-4 | which block will similarity-only evict, and how often? |
# | 2. Rescue by propagation | 15-20 | 5-8 | what brings the chain back, and at what price? |
# | 3-4. The one-hop boundary | 20 | 9-13 | which block does one hop lose, and what keeps it? |
# | 5. Free exploration | 15-25 |  | find your own failing seed and explain it |

# %% [markdown] tags=["room-hidden"]
# Run it with `make app` (the room server: one page for each participant, and an instructor's page
# with the plan, the room's predictions and the join code; see docs/room.md, "Running a room") or
# in JupyterLab (run all cells). It writes no file, so a whole room can use one checkout.

# %% tags=["parameters"]
ENCODER = "lexical"  # the encoder: lexical | sentence
TEMPLATE = "role"  # the target of parts 1-8: role | profile
SEED = -1  # its seed (-1: the first where only DSGC holds): a seed from 0, or -1
HOP_SEED = -1  # the profile seed of parts 9-13 (-1: the first one hop loses): a seed from 0, or -1
BUDGET_MULTIPLIER = 2.0  # M: at least 1

# %%
from workbench.params import settle

RUN = settle("06_workshop", globals())  # checks them; says where this run writes
RUN

# %%
from workbench.explore.workshop import Workshop

# %%
ws = Workshop(ENCODER, TEMPLATE, SEED, HOP_SEED, BUDGET_MULTIPLIER)

# %% [markdown]
# ## 0. Setting (10 min)
#
# A store holds blocks; before the agent answers, a policy keeps the blocks that fit in a token
# budget C and evicts the rest. Whatever is evicted is gone for retrieval. A *chain* of blocks is
# what the answer needs: each depends on the one before it. Other blocks are distractors: some
# share the query's words without answering it, some are background. Similarity-only keeps the
# blocks most like the query; DSGC adds to each block the relevance of the blocks that depend on
# it (I = r + λ·π). Blocks carry neutral ids (B01, B02, ...) until a reveal.

# %%
ws.part(1)

# %% [markdown]
# ## 1. Predict the eviction (15 min)

# %%
ws.part(2)

# %%
ws.part(3)

# %%
ws.part(4)

# %% [markdown]
# ## 2. Rescue by propagation (15-20 min)

# %%
ws.part(5)

# %%
ws.part(6)

# %%
ws.part(7)

# %%
ws.part(8)

# %% [markdown]
# ## 3-4. The one-hop boundary (20 min)

# %%
ws.part(9)

# %%
ws.part(10)

# %%
ws.part(11)

# %%
ws.part(12)

# %%
ws.part(13)

# %% [markdown]
# ## Your score

# %%
ws.scoreboard()

# %% [markdown]
# ## 5. Free exploration (15-25 min)
#
# Find a seed where DSGC fails, read its landscape, and explain the failure in one sentence:
# which block was displaced, by which block, and by what margin? Try the sentence encoder. (The
# explorer opens on the store of parts 9-13, once they are revealed.)

# %%
ws.free_exploration()

# %%
ws.record_key()
