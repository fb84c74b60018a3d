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
# # Referential closure: which window managers let an agent corrupt its own tool calls, and what does closure cost?
#
# **Question:** a pruner that scores spans one by one against the goal can evict the bare result `{"id": "run_8841", "status": "queued"}` and keep the later `poll(run_8841)` that needs it (seed 002). When an agent acts from its own plan and must rebuild each handle from what its window holds, which managers turn silent corruption into loud, recoverable errors, how many jobs still complete, what does closure cost in tokens, does a small eviction margin warn early, and does a real trimmer (langchain-core's `trim_messages`) orphan tool calls and handles on agent logs where a closure-safe trimmer does not?

# %% tags=["parameters"]
SEED = 0  # the run drawn in the timeline: an integer from 0
SEEDS = (
    "0:10"  # seeds of the simulated runs: N (0..N-1) or "A:B", half-open (10 or more for intervals)
)
TURNS = 300  # turns a simulated run: 20..2000
CAPACITY = 400  # the window's capacity in tokens: 100..5000
ENCODER = "lexical"  # the relevance scorer's encoder: lexical | sentence
MANAGERS = "relevance,gate,atomic,tombstone,dsgc"  # the managers: comma-separated, of: relevance, gate, atomic, tombstone, dsgc, with relevance
MISSES = [0.1, 0.25, 0.5]  # shares of tombstone restores the store misses: a list, each in (0, 1]
BOOT = 2000  # bootstrap resamples over seeds: 200..10000
LOG = "../data/logs/submit_poll.jsonl"  # a JSONL span log for the worked example: a file
WINDOW = (
    "../data/logs/judge_window.jsonl"  # a window with per-span scores and a pinned span: a file
)
LOG_SEEDS = (
    "0:3"  # episodes turned into agent logs for the side-by-side: N (0..N-1) or "A:B", half-open
)
LOG_TURNS = 60  # turns an episode log: 20..300
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("07_closure", globals())  # checks them; says where this run writes
RUN

# %%

from IPython.display import Markdown

from workbench.closure import logs
from workbench.closure.logs import compare
from workbench.closure.window import charts, gate, managers, notes, report
from workbench.closure.window.spans import load_spans
from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.common.seeds import seed_range

# %%
names = MANAGERS.split(",")
seeds = seed_range(SEEDS)
SIM = f"simulated: workbench.closure.window.agent, seeds {SEEDS}, {TURNS} turns, capacity {CAPACITY}, {ENCODER} scorer"

# %% [markdown]
# ## The worked example
#
# The note's scenario as a 17-span log: a job is submitted, its handle comes back as a bare result, chat and other work follow, the job is polled later. Replayed through a 60-token window, relevance-only eviction (evict spans whose cosine to the goal is below 0.35, lowest first, once the window passes 78%) throws the bare result away and keeps the polls; the gate keeps the binding; the tombstone manager (evicting only when over budget) externalizes whole components behind typed tombstones.

# %%
log = load_spans(LOG)
for name in ("relevance", "gate", "tombstone"):
    m = managers.replay(log, managers.make_manager(name, 60, encoder=ENCODER))
    print(
        f"--- {name}: {m.used} tokens, over budget after {len(m.over_budget)} turns",
        *m.report().lines(),
        sep="\n",
    )

# %% [markdown]
# ## One gate decision on a window with a judge's scores
#
# `workbench closure check WINDOW --budget N` runs the note's gate on a window as it stands: the `evict_by_relevance` proposal over the spans' `score` (here hand-made scores, as an LLM judge might give; `u0` is `pinned`), its margin over scored, unpinned spans, then dangling references first and the margin floor second. In mode `raise` it raises `ContextClosureError`; in mode `throttle` it commits the closure-respecting eviction instead.

# %%
window = load_spans(WINDOW)
for mode in ("raise", "throttle"):
    print(f"--- mode {mode}", *gate.window_decision(window, 70, mode=mode).lines(), sep="\n")

# %% [markdown]
# ## The plan-driven agent under each manager
#
# Seeded runs of an agent that submits jobs, opens sessions, finds documents and later continues them from its own plan (which holds no handles). To continue a task it rebuilds the handle from its window: a retained definition, else a retained span naming it (copied), else a tombstone (restore: a **loud**, recoverable miss), else a mutated guess (hex suffix +-1 or 2) that the dense namespace accepts (**silent corruption**) or rejects (a **loud** tool error). Managers: `relevance` (the note's pruner), `gate` (the same behind the closure gate, throttling below the 0.03 margin floor), `atomic` (dependency components evicted whole), `tombstone` (components externalized behind pinned typed tombstones, only when over budget) and `dsgc` (DSGC over log-induced edges, not gated); `gate-raise` is the gate in raise mode (each raise is loud; the harness then repairs); `-off` runs the same manager with its closure enforcement switched off.

# %%
runs = report.study_runs(names, seeds, TURNS, CAPACITY, ENCODER, misses=MISSES)
rows = report.run_rows(runs)
table = report.outcome_table(runs, boot=BOOT)
write_csv(rows.assign(source=SIM), f"{RESULTS_DIR}/closure_runs.csv", float_format="%.6f")
write_csv(
    table.reset_index().assign(source=SIM),
    f"{RESULTS_DIR}/closure_summary.csv",
    float_format="%.6f",
)
cols = [c for c in report.PER_RUN if c != "extra_tokens_vs_relevance"]
show_table(table[[x for c in cols for x in (c, f"{c}_lo", f"{c}_hi")]], digits=2)
show_table(table[["by_construction"]])

# %%
show_figure(charts.outcome_chart(table), "closure_outcomes", FIGURES_DIR)

# %%
by = table.to_dict("index")
record("outcomes", {m: {k: by[m][k] for k in cols} for m in by})
record("evicted_binding_turns", {m: by[m]["evicted_binding_turns_total"] for m in by})
record("over_budget_turns", {m: by[m]["over_budget_turns"] for m in by})
record("precheck_would_refuse", {m: by[m]["precheck_would_refuse_total"] for m in by})
Markdown(notes.outcome_note(table, len(seeds), TURNS))

# %% [markdown]
# **A store that can miss.** Under this model a tombstone can fail only if the store behind it does: the same runs with a store that misses a share of restores (a seeded draw per handle; a missed restore leaves the agent to guess).

# %%
show_table(
    table.loc[
        [m for m in by if m.startswith("tombstone") and "-off" not in m],
        ["silent", "silent_lo", "silent_hi", "restores", "restore_missed_total", "tool_errors"],
    ],
    digits=2,
)
record("tombstone_miss", {m: by[m]["silent"] for m in by if m.startswith("tombstone-miss")})
Markdown(notes.tombstone_note(table))

# %% [markdown]
# **Enforcement off.** The same runs with each manager's closure step switched off (the gate commits its proposal, atomic and tombstone evict span by span and drop instead of externalizing) show the instrument can see failures under every manager:

# %%
off = [m for m in by if m.endswith("-off")]
show_table(
    table.loc[
        off + ["relevance"],
        ["silent_total", "tool_errors_total", "evicted_binding_turns_total", "jobs_done_share"],
    ]
)
record(
    "enforcement_off_failures", {m: by[m]["silent_total"] + by[m]["tool_errors_total"] for m in off}
)

# %% [markdown]
# **Raise mode.** In raise mode every cycle whose proposal dangles (checked first) or whose margin is below the floor raises `ContextClosureError`, a loud error; the harness then repairs as throttle mode would.

# %%
record("gate_raises", {k: by["gate-raise"][f"raises_{k}_total"] for k in ("dangling", "margin")})
show_table(
    table.loc[
        ["gate", "gate-raise"],
        ["raises_dangling_total", "raises_margin_total", "silent_total", "tool_errors_total"],
    ]
)
Markdown(notes.raise_note(table))

# %% [markdown]
# ## The decision boundary: natural language only
#
# The note says relevance eviction is safe for spans that are natural language with no cross-span symbolic binding. Measured on each seed's full episode log and on its natural-language-only part (the user and reasoning spans that name no handle): relevance eviction loses nothing that closure protects if (1) relevance-only's window never holds an orphaned reference or a missing dependency, (2) the gate's closure step (margin throttle off) pins nothing, and (3) it evicts what relevance-only evicts on every cycle.

# %%
boundary = report.boundary_control(seeds, TURNS, CAPACITY, ENCODER)
write_csv(boundary.assign(source=SIM), f"{RESULTS_DIR}/closure_boundary.csv", float_format="%.6f")
show_table(
    boundary.groupby("log").agg(
        seeds=("seed", "size"),
        spans=("spans", "mean"),
        cycles=("cycles", "sum"),
        identical_evictions=("identical_evictions", "mean"),
        gate_pinned_spans=("gate_pinned_spans", "sum"),
        relevance_open_turns=("relevance_open_turns", "sum"),
    )
)
nl = boundary[boundary.log == "natural language only"]
record(
    "boundary_nl",
    {
        "open_turns": int(nl.relevance_open_turns.sum()),
        "pinned": int(nl.gate_pinned_spans.sum()),
        "identical": float(nl.identical_evictions.min()),
    },
)
Markdown(notes.boundary_note(boundary))

# %% [markdown]
# ## Cost: tokens, and the scan
#
# Extra retained tokens against relevance-only on the same seed (mean tokens in the window per run over relevance-only's, minus 1; 95% bootstrap interval over seeds) and the share of retained tokens held only because of closure (gate pins and re-admitted bindings, tombstones). The note reports about 6%. The cost of the closure scan itself is measured by `make bench` (a closure check of 10^2..10^5 spans), not here: timings belong to the machine.

# %%
cost = table.loc[
    [m for m in names if m in by],
    [
        "extra_tokens_vs_relevance",
        "extra_tokens_vs_relevance_lo",
        "extra_tokens_vs_relevance_hi",
        "closure_token_share",
        "over_budget_turns",
        "max_over",
    ],
]
show_table(cost)
record(
    "extra_tokens_vs_relevance", {m: by[m]["extra_tokens_vs_relevance"] for m in names if m in by}
)
record("closure_token_share", {m: by[m]["closure_token_share"] for m in names if m in by})

# %% [markdown]
# ## The margin as an early warning
#
# The flag `margin < 0.03` at a cycle is scored against a *new* closure violation of the proposed eviction in the next two cycles (committed for relevance-only, caught and repaired for the gate). The base rate is the share of cycles followed by one, i.e. the precision of flagging every cycle; a useful warning has precision well above it. Intervals: bootstrap over seeds.

# %%
margin = report.margin_table(runs, boot=BOOT)
write_csv(
    margin.reset_index().assign(source=SIM),
    f"{RESULTS_DIR}/closure_margin.csv",
    float_format="%.6f",
)
show_table(
    margin[
        [
            "flags",
            "tie_share",
            "precision",
            "precision_no_ties",
            "precision_no_ties_lo",
            "precision_no_ties_hi",
            "base_rate",
            "lift_no_ties",
            "lift_no_ties_lo",
            "lift_no_ties_hi",
            "lift",
            "recall",
            "lead_turns",
        ]
    ]
)
record(
    "margin_signal",
    margin[
        ["precision", "precision_no_ties", "tie_share", "base_rate", "lift", "lift_lo", "lift_hi"]
    ].to_dict("index"),
)
Markdown(notes.margin_note(margin))

# %% [markdown]
# ## One run, side by side

# %%
show_figure(
    charts.timeline_chart(report.timeline_frame(runs, SEED)), "closure_timeline", FIGURES_DIR
)

# %%
run = next(r for r in runs if r.manager == "relevance" and r.seed == SEED)
show_table(report.failures(run).head(8))
show_table(report.note_comparison(run))
record("story", report.story(run))

# %% [markdown]
# ## Agent logs: langchain-core's `trim_messages`, keep-last-N and the closure-safe trimmer
#
# The same conversations as OpenAI chat, OpenAI Responses, Anthropic and LangChain logs (rendered by `workbench.closure.logs.loggen`): three hand-written ones (a job id, an order number and an export path; two parallel training runs and a document; a support ticket) and episodes of the simulated agent. Each is trimmed to 10%, 25%, 50% and 75% of its tokens (approximate count: ceil(characters / 4) + 3 a message) by `trim_messages` on the logs langchain-core reads (the LangChain form, and the OpenAI chat form through its `convert_to_messages`; its documented chat-model setting: `strategy="last", start_on="human", end_on=("human", "tool"), include_system=True, token_counter=count_tokens_approximately`; and plain `strategy="last", include_system=True`), by keeping the last N messages that fit, and by ours (`strategy="last"`). Every result is checked for orphaned calls, results and handles.

# %%
side = compare.side_by_side(compare.test_logs(seed_range(LOG_SEEDS), LOG_TURNS))
side = side.assign(source=side.source + "; " + side.format)
write_csv(side, f"{RESULTS_DIR}/closure_logs.csv", float_format="%.6f")
summary_logs = compare.orphan_summary(side)
show_table(summary_logs)
lc = side[side.method.str.startswith("langchain")]
show_table(
    lc[lc.orphan_handles + lc.orphan_results > 0][
        ["log", "method", "budget", "kept_messages", "orphan_results", "orphan_handles"]
    ].head(12)
)

# %%
ours = side[side.method == "closure-safe (ours)"]
record(
    "logs",
    summary_logs[
        ["runs", "runs_with_orphans", "orphan_calls", "orphan_results", "orphan_handles"]
    ].to_dict("index"),
)
record(
    "ours_fits",
    {
        "runs": len(ours),
        "closed_fits": int(ours.closed_fits.sum()),
        "cut_to_system": int((~ours.conversation.astype(bool)).sum()),
    },
)
Markdown(notes.logs_note(summary_logs, ours))

# %% [markdown]
# ### Logs the generator did not write
#
# The complete logs of the hand-written corpus in `data/logs/heldout` (its README says who wrote them and how; `expected.csv` gives each file's exit code), each in the wire format it was written in, trimmed the same way. langchain-core's `trim_messages` runs on the ones it reads: the LangChain dumps, and the OpenAI messages through its own `convert_to_messages`.

# %%
held = compare.heldout_side_by_side(logs.heldout_logs(f"../{compare.HELDOUT}"))
write_csv(held, f"{RESULTS_DIR}/closure_logs_heldout.csv", float_format="%.6f")
summary_held = compare.orphan_summary(held)
show_table(summary_held)
record(
    "logs_heldout", summary_held[["runs", "runs_with_orphans", "cut_to_system"]].to_dict("index")
)
Markdown(notes.heldout_note(summary_held, held.log.nunique()))

# %% [markdown]
# ## Where ours differ from the note

# %%
Markdown(notes.differences(table, margin))
