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
# # 11. Agents under a budget: closure inside LangChain, the OpenAI Agents SDK and pydantic-ai, beside their own context editing
#
# **Question:** when a running agent's context is edited before every model call, which editors
# send requests a provider would reject, which lose the definition of a job id a later call
# needs, and how many of the person's tasks still get done at one token budget?
#
# **Where the numbers come from (a simulation, labelled so everywhere).** A scripted world
# (`workbench.agents.world`): a person asks, turn by turn, to submit three jobs, to poll them and
# fetch their results, with long notes to read and small talk between; the tools' results define
# the job ids, in a dense id space other teams share. The model is a script that acts only on the
# request it receives, driven through each framework's real agent loop with the framework's own
# test double (a LangChain fake chat model that binds tools, a subclass of the Agents SDK's
# `Model`, pydantic-ai's `FunctionModel`): it answers the person's latest turn if the request
# still holds it, finds the job id in the request, and when it cannot, guesses one of the right
# shape near the ids it sees. A guess that lands on another team's job is acted on without a word
# (a silent corruption). Every request is judged before the model reads it by provider rules
# written apart from the trimmer (`workbench.agents.provider`): a request that breaks the pairing
# rules or the context window (the budget x 1.1) ends the run, as a 400 would.

# %% tags=["parameters"]
SEEDS = "0:200"  # seeds of the scripted runs, one run per seed and policy: "A:B" or N
BUDGET = 600  # the token budget every policy is given (approximate tokens): 100..5000
FRAMEWORKS = "langchain,openai-agents,pydantic-ai"  # comma-separated subset
RECORDED_DIR = "../data/results"  # where the committed hook timings (make bench) are read from
FIGURES_DIR = "../figures"  # figures (a run with other parameters: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV (a run with other parameters: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("11_agents", globals())  # checks them; says where this run writes
RUN

# %%
import pandas as pd
from IPython.display import Markdown

from workbench.agents import bench, report
from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.common.provenance import recorded
from workbench.common.seeds import seed_range

seeds = seed_range(SEEDS)
frameworks = FRAMEWORKS.split(",")
SIM = f"scripted: workbench.agents.world, seeds {SEEDS}, budget {BUDGET}"

# %% [markdown]
# ## The policies
#
# Ours: `closure` (the closure-safe trim by relevance to the person's latest turn,
# `strategy="relevance"`, in each framework's own hook: `ClosureMiddleware`,
# `closure_input_filter`, `ClosureHistory`), `closure last` (the same trim keeping the newest
# turns, the adapters' default `strategy="last"`), `closure persist` (LangChain: the
# checkpointed state itself trimmed). The frameworks' own, at the same budget: LangChain's
# `trim_messages` as its docs set it up and with plain `strategy="last"`, `SummarizationMiddleware`
# with a fake summarizer that keeps every line naming a job, `ContextEditingMiddleware` with
# `ClearToolUsesEdit`; the Agents SDK's `ToolOutputTrimmer`, a session `limit` and a keep-last-n
# input filter as users write them; pydantic-ai's keep-last-n history processor (its docs'
# example). `+ guard` puts our `ClosureGuard` behind the built-in; `none` edits nothing.

# %%
runs = bench.sweep(seeds, [BUDGET], frameworks)
summary = bench.summary(runs)
write_csv(runs.drop(columns="hook_ms").assign(source=SIM), f"{RESULTS_DIR}/agents_runs.csv")
write_csv(summary.assign(source=SIM), f"{RESULTS_DIR}/agents_summary.csv", float_format="%.6f")
cols = ["framework", "policy", "runs", "rejected", "rejected_pairing", "orphan_handles", "silent",
        "tasks_done", "done_lo", "done_hi", "tokens_per_call"]  # fmt: skip
show_table(summary[cols], digits=2)

# %%
title = [
    f"Tasks done at a budget of {BUDGET} tokens, 95% bootstrap intervals over seeds",
    f"(a simulation: the scripted world and model of workbench.agents, seeds {SEEDS})",
]
show_figure(report.chart(summary, title), "agents_tasks", FIGURES_DIR)

# %% [markdown]
# ## Ours beside the best built-in, and where ours loses

# %%
verdict = report.verdict(summary)
show_table(verdict, digits=2)
record("verdict", verdict.set_index("framework").to_dict("index"))
Markdown(report.note(summary))

# %% [markdown]
# ## The guard behind each built-in
#
# `ClosureGuard` checks what the built-in left just before the model call (with the same budget
# for anything it brings back): a result whose call was cut gets its call back from the history,
# or is dropped; a call whose result was cut gets it back, or a stand-in result; a handle whose
# definition was cut gets it back, or a tombstone.

# %%
show_table(summary[summary["policy"].str.endswith("+ guard")][cols], digits=2)
Markdown(report.guard_note(summary))

# %% [markdown]
# ## Each hook's own time and memory per call
#
# Measured by `make bench ARGS=--agents` (`scripts/bench.py --agents --agents-csv`): each of our
# hooks on the generated long conversation at 10^3 and 10^4 messages, a budget a tenth of its
# tokens: its first call on the history (`first_ms`, a new adapter, the median of 5), its next
# calls, each on the history grown by one round as a running agent's is (`ms`, the median of 11;
# the LangChain hooks run on a thread, as with a checkpointer, and pydantic-ai's in a
# conversation, as every pydantic-ai run is; the async hooks, pydantic-ai's and the SDK session
# guard, are awaited on one event loop that runs on, as their framework awaits them), and the peak
# memory a call allocates per message of the history. Shown as recorded, with the date, the
# machine and the load.

# %%
hooks = pd.read_csv(f"{RECORDED_DIR}/agents_hooks.csv")
show_table(report.hook_table(hooks).drop(columns=["source", "date", "machine", "load"]), digits=3)
record("hook_ms", {f"{r.hook} @ {r.messages}": r.ms for r in hooks.itertuples()})
Markdown(report.hook_note(hooks) + "\n\n" + recorded(hooks))

# %% [markdown]
# ### The least a session guard's first call can cost
#
# Given an Agents SDK session, the guard's first call reads the session's store whole: the SDK's
# public session API reads only the newest items, so what a `limit` cut is reached only by reading
# everything. Recorded by the same `make bench` run: on the session guard's own store and request,
# the store read as the guard reads it, then one reading and check of the request alone, nothing
# repaired (`bench.session_floor`, the median of 5, each on a new store).

# %%
floor = pd.read_csv(f"{RECORDED_DIR}/agents_floor.csv")
show_table(floor.drop(columns=["source", "date", "machine", "load"]), digits=3)
record("session_floor_ms", {str(r.messages): r.floor_ms for r in floor.itertuples()})
Markdown(report.floor_note(floor, hooks, bench.SESSION_GUARD) + "\n\n" + recorded(floor))
