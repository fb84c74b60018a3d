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
# # 11. Agents under a budget: real runs replayed, then a scripted world through each framework's loop
#
# **Question:** when an agent's context is cut to a token budget, which editors send requests a
# provider would reject, which cut the message an id a later call passes came from, and what does
# closure cost in tokens? First on real runs nobody here wrote, then, as a simulation, inside
# LangChain, the OpenAI Agents SDK and pydantic-ai with tasks to finish.

# %% tags=["parameters"]
SEEDS = "0:30"  # seeds of part 2's scripted runs: N (0..N-1) or "A:B", half-open
BUDGET = 600  # the token budget every policy is given in part 2: 100..5000
FRAMEWORKS = "langchain,openai-agents,pydantic-ai"  # the frameworks: comma-separated, of: langchain, openai-agents, pydantic-ai
RECORDED_DIR = "../data/results"  # the recorded tables read from: a folder
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("11_agents", globals())  # checks them; says where this run writes
RUN

# %%
import pandas as pd
from IPython.display import Markdown

from workbench.agents.bench import report, runs
from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.common.provenance import recorded
from workbench.common.seeds import seed_range

seeds = seed_range(SEEDS)
frameworks = FRAMEWORKS.split(",")

# %% [markdown]
# ## 1. Real runs, replayed
#
# **Where the numbers come from.** 139 conversations with tool calls that real models sent to real
# providers and that the providers answered 200: GPT-4o's tau-bench airline runs (60, OpenAI
# chat) and the requests pydantic-ai's tests recorded against the live OpenAI, Anthropic,
# Responses, Mistral, Groq and DeepSeek APIs (79). None was written here; each row of the
# recording names its repository, commit, file and place. `scripts/record_reallogs.py` cut each
# at 25, 50 and 75 % of its tokens and judged every cut with a judge written apart from the
# trimmer (`workbench.agents.bench.judge`, which imports nothing of it): the provider's pairing
# and order rules, the window (the budget x 1.1), and the id uses a cut orphaned (a value a kept
# call passes that first appeared in an earlier tool result or person's message whose message
# the cut dropped, with no tombstone naming it). The editors: langchain-core's `trim_messages`
# (as its docs set it up for chat models, and plain `strategy="last"`) on the OpenAI logs as
# LangChain reads them; keeping the last items that fit (what the Agents SDK's session `limit`
# and pydantic-ai's documented history processor do) on every format; ours (the closure trim,
# its default `strategy="last"`); and a built-in with our guard behind it.

# %%
cuts = pd.read_csv(f"{RECORDED_DIR}/agents_reallogs.csv")
replayed = pd.read_csv(f"{RECORDED_DIR}/agents_reallogs_summary.csv")
show_table(replayed, digits=2)
Markdown(report.replay_note(replayed))

# %%
record("replay", report.replay_record(replayed), shown=False)
show_table(report.replay_by_share(cuts), digits=2)

# %% [markdown]
# A cut with no conversation is one where nothing but the system prompt fits: at a quarter of
# their tokens, the tau-bench runs' airline policy alone is over the budget, whatever the editor.
# The token share is of the whole history, by the judge's own count; a cut that keeps fewer
# tokens than ours kept them by dropping what a later call needed, or the person's turn.

# %% [markdown]
# ## 2. A scripted world through each framework's loop (a simulation)
#
# **Where the numbers come from: a simulation, labelled so everywhere.** A scripted world
# (`workbench.agents.bench.world`): a person asks, turn by turn, to submit three jobs, to poll them
# and fetch their results, with long notes to read and small talk between; the tools' results
# define the job ids, in a dense id space other teams share. The model is a script that acts only
# on the request it receives, driven through each framework's real agent loop with the
# framework's own test double (a LangChain fake chat model that binds tools, a subclass of the
# Agents SDK's `Model`, pydantic-ai's `FunctionModel`): it answers the person's latest turn if the
# request still holds it, finds the job id in the request, and when it cannot, guesses one of the
# right shape near the ids it sees. A guess that lands on another team's job is acted on without
# a word (a silent corruption). Every request is judged before the model reads it by the judge
# above: a request that breaks the pairing rules or the window ends the run, as a 400 would.
# This notebook runs `SEEDS` (30 by default, in about a minute); the study at 200 seeds is a
# parameter away: `workbench reproduce --notebook 11 -p SEEDS 0:200`.
#
# The policies. Ours: `closure` (the closure trim by relevance to the person's latest turn,
# `strategy="relevance"`, in each framework's own hook: `ClosureMiddleware`,
# `closure_input_filter`, `ClosureHistory`), `closure last` (the adapters' default,
# `strategy="last"`), `closure persist` (LangChain: the checkpointed state itself trimmed). The
# frameworks' own, at the same budget: LangChain's `trim_messages` as its docs set it up and with
# plain `strategy="last"`, `SummarizationMiddleware` with a fake summarizer that keeps every line
# naming a job, `ContextEditingMiddleware` with `ClearToolUsesEdit`; the Agents SDK's
# `ToolOutputTrimmer`, a session `limit` and a keep-last-n input filter as users write them;
# pydantic-ai's keep-last-n history processor (its docs' example). `+ guard` puts our
# `ClosureGuard` behind the built-in (given the budget); `none` edits nothing.

# %%
SIM = f"scripted: workbench.agents.bench.world, seeds {SEEDS}, budget {BUDGET}"
sim = runs.sweep(seeds, [BUDGET], frameworks)
summary = runs.summary(sim)
write_csv(sim.drop(columns="hook_ms").assign(source=SIM), f"{RESULTS_DIR}/agents_runs.csv")
write_csv(summary.assign(source=SIM), f"{RESULTS_DIR}/agents_summary.csv", float_format="%.6f")
cols = ["framework", "policy", "runs", "rejected", "rejected_pairing", "orphan_handles", "silent",
        "tasks_done", "done_lo", "done_hi", "tokens_per_call"]  # fmt: skip
show_table(summary[cols], digits=2)

# %%
title = [
    f"Tasks done at a budget of {BUDGET} tokens, 95% bootstrap intervals over seeds",
    f"(a simulation: the scripted world and model of workbench.agents.bench, seeds {SEEDS})",
]
show_figure(report.chart(summary, title), "agents_tasks", FIGURES_DIR)

# %% [markdown]
# ### Ours beside the best built-in, and where ours loses (the simulation)

# %%
verdict = report.verdict(summary)
show_table(verdict, digits=2)
record("verdict", verdict.set_index("framework").to_dict("index"), shown=False)
Markdown(report.note(summary))

# %% [markdown]
# ### The guard behind each built-in (the simulation)
#
# `ClosureGuard` checks what the built-in left just before the model call: what the request's
# items need is brought back from the history by the trim's own rule (a result's call, a call's
# result, the message an id came from, the person's last turn when the cut left none), a stand-in
# result or a tombstone where the history lacks it, and, given the budget, the one closure trim
# cuts the repaired request to size.

# %%
show_table(summary[summary["kind"] == report.GUARDED][cols], digits=2)
Markdown(report.guard_note(summary))

# %% [markdown]
# ## 3. Each hook's own time and memory per call
#
# Measured by `make bench ARGS=--agents` (`scripts/bench.py --agents --agents-csv`): each of our
# hooks on the generated long conversation at 10^3 and 10^4 messages, a budget a tenth of its
# tokens, each framework's hooks in a process of their own that imports that framework alone (as
# an agent's process does): its first call on the history (`first_ms`, a new adapter, the median
# of 5), its next calls, each on the history grown by one round (`ms`, the median of 11), the
# garbage collector's full passes during them (counted, never changed: each costs what the
# process holds), and the peak memory a call allocates per message. Shown as recorded, with the
# date, the machine and the load.

# %%
hooks = pd.read_csv(f"{RECORDED_DIR}/agents_hooks.csv")
show_table(report.hook_table(hooks).drop(columns=["source", "date", "machine", "load"]), digits=3)
record("hook_ms", {f"{r.hook} @ {r.messages}": max(r.ms, r.first_ms)
                   for r in hooks.itertuples()}, shown=False)  # fmt: skip
Markdown(report.hook_note(hooks) + "\n\n" + recorded(hooks))
