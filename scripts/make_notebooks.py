"""Write notebooks/01-06 from the cells below (one reviewable place), without outputs.

Then execute them:  .venv/bin/workbench reproduce --notebook 01 ...  (or all: workbench reproduce)
Usage: .venv/bin/python scripts/make_notebooks.py [NN ...]   (default: every notebook)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from nbformat.v4 import new_code_cell, new_markdown_cell

from workbench.notebook import write_notebook

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "notebooks"

DIRS = """FIGURES_DIR = "../figures"       # where SVG + PNG figures are written
RESULTS_DIR = "../data/results"  # where result tables are written as CSV"""


def md(text):
    return new_markdown_cell(text.strip("\n"))


def code(text, tags=()):
    text = text.strip("\n")
    body = ast.parse(text).body
    last = body[-1] if body else None
    if (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and getattr(last.value.func, "id", "") in ("show_figure", "write_table")
    ):
        # these return the written path; name it so the cell's only output is the figure
        # (a trailing ';' is not honoured by every executor, nbval's included)
        lines = text.split("\n")
        at = last.lineno - 1
        lines[at] = ("png = " if last.value.func.id == "show_figure" else "csv = ") + lines[at]
        for k in range(at + 1, last.end_lineno):  # keep continuation lines aligned
            lines[k] = "      " + lines[k]
        text = "\n".join(lines)
    cell = new_code_cell(text)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def params(text):
    return code(text.strip("\n") + "\n" + DIRS, tags=["parameters"])


# --- 01 -------------------------------------------------------------------------------------------

NB01 = [
    md("""
# 1. The failure mode: why does similarity-only retention evict a block the answer needs?

A memory store keeps what fits in a token budget *before* any retrieval happens. When a block is
needed only because a more query-like block depends on it, a similarity-only policy ranks it low
and evicts it: a **structurally indirect prerequisite** (the paper's Definition 1) lost in a
**retention-stage failure** (Definition 2). This notebook shows the paper's worked example
(section 2.2), then one generated target seed, and draws the *semantic valley*: query relevance
along the chain c1 -> c2 -> c3 before and after one hop of DSGC propagation.
"""),
    code("""
import pandas as pd

from workbench import charts
from workbench.experiments import write_table
from workbench.explorer import State, blocks_table, chain_table, trace_for, valley_pair
from workbench.notebook import record, show_figure, show_table
"""),
    params("""
ENCODER = "lexical"          # lexical | sentence
TEMPLATE = "role"            # role | profile (targets) | expense | threshold (controls)
SEED = 3                     # any int, at least 0: the generated scenario shown after the worked example
TOTAL_BLOCKS = 20            # 20 | 50 (any int, at least 5)
BUDGET_MULTIPLIER = 2.0      # M, at least 1.0 (budget C is max(L, ceil(M * L)), L the chain tokens)
LAMBDA = 1.0                 # DSGC propagation weight, at least 0 (the paper: 1.0)
"""),
    md("""
## The worked example (section 2.2)

c1 "Alice is assigned to backup bundle M", c2 "Bundle M maps to clearance N", c3 "Clearance N
permits deletion of the encrypted backup"; c3 depends on c2, c2 on c1. Two honeypots share the
query's words, four fillers do not. The store, in ingestion order:
"""),
    code("""
worked = State(template="worked", encoder=ENCODER, multiplier=BUDGET_MULTIPLIER, lam=LAMBDA)
show_table(blocks_table(worked))
"""),
    md("Similarity-only against DSGC on the same store and budget:"),
    code("""
sim, dsgc = trace_for(worked, policy="similarity"), trace_for(worked, policy="dsgc")
print(sim.verdict())
print(dsgc.verdict())
"""),
    code("""
worked_chain = chain_table(worked)
show_table(worked_chain, digits=4)
"""),
    code("""
show_figure(charts.valley(*valley_pair(worked), title="The semantic valley of the worked example"),
            "failure_worked_valley", FIGURES_DIR)
"""),
    md("""
c2 shares no word with the query, so its relevance r sits in a valley between c1 ("Alice",
"backup") and c3 ("encrypted backup"). Under similarity-only it falls below the budget cutoff;
DSGC lifts it by pi = r(c3), the relevance of the block that depends on it.

## Definitions 1 and 2 on the worked example

Definition 1 (indirect prerequisite, block -> witness) is a property of the block, the query and
the encoder; Definition 2 (retention-stage failure: an indirect prerequisite evicted while its
more similar dependent is kept) is a property of a policy's selection.
"""),
    code("""
record("worked_indirect", sim.indirect)
record("worked_failures", {"similarity": sim.retention_failures, "dsgc": dsgc.retention_failures})
record("worked_c2_kept", {"similarity": "c2" in sim.kept_ids, "dsgc": "c2" in dsgc.kept_ids})
record("worked_budget", sim.retention.budget)
"""),
    md("""
## One generated scenario

The same analysis on a generated scenario (`TEMPLATE`, `SEED`): its chain before and after
propagation, its valley, and the similarity-only score landscape (every block ranked by score).
"""),
    code("""
state = State(template=TEMPLATE, seed=SEED, encoder=ENCODER, multiplier=BUDGET_MULTIPLIER,
              lam=LAMBDA, total_blocks=TOTAL_BLOCKS)
seed_sim, seed_dsgc = trace_for(state, policy="similarity"), trace_for(state, policy="dsgc")
print(seed_sim.verdict())
print(seed_dsgc.verdict())
"""),
    code("""
seed_chain = chain_table(state)
show_table(seed_chain, digits=4)
write_table(pd.concat([worked_chain, seed_chain]), f"{RESULTS_DIR}/failure_mode_chain.csv")
"""),
    code("""
show_figure(charts.valley(*valley_pair(state)), "failure_seed_valley", FIGURES_DIR)
"""),
    code("""
show_figure(charts.landscape(seed_sim), "failure_seed_landscape", FIGURES_DIR)
"""),
    code("""
record("seed_indirect", seed_sim.indirect)
record("seed_failures", {"similarity": seed_sim.retention_failures,
                         "dsgc": seed_dsgc.retention_failures})
record("seed_kept", {"similarity": seed_sim.full_chain_retained,
                     "dsgc": seed_dsgc.full_chain_retained})
record("seed_chain_ranks", {"similarity": seed_sim.chain_ranks, "dsgc": seed_dsgc.chain_ranks})
"""),
]

# --- 02 -------------------------------------------------------------------------------------------

NB02 = [
    md("""
# 2. Main suite: does one-hop propagation keep the chain where similarity-only loses it?

Tables 1 and 2 of the paper: full-chain retention (the fraction of seeds whose every chain block
survives eviction) for similarity-only, no-graph DSGC (lambda = 0) and DSGC, on two control
templates and two target templates, under the lexical and the sentence encoder. Our numbers are
shown beside the paper's published figures.
"""),
    code("""
from IPython.display import Markdown

from workbench import charts
from workbench.experiments import (differences, protocol_for, run_protocol, table1, table2,
                                   with_paper, write_table)
from workbench.notebook import record, show_figure, show_table
"""),
    params("""
ENCODERS = "lexical,sentence"  # comma-separated subset of: lexical, sentence
SEEDS = 15                     # N means seeds 0..N-1 (or "A:B", half-open); the paper: 15
BUDGET_MULTIPLIER = 2.0        # M, at least 1.0 (the paper: 2.0)
LAMBDA = 1.0                   # DSGC propagation weight, at least 0 (the paper: 1.0)
TOTAL_BLOCKS = 20              # 20 | 50 (the paper: 20)
"""),
    code("""
runs = run_protocol(protocol_for("main", SEEDS, ENCODERS, budget_multipliers=BUDGET_MULTIPLIER,
                                 lambdas=LAMBDA, total_blocks=TOTAL_BLOCKS))
print(f"{len(runs)} runs: {runs.template.nunique()} templates x {runs.policy.nunique()} policies "
      f"x {runs.encoder.nunique()} encoders x {runs.seed.nunique()} seeds")
"""),
    md("## Table 1: retention by regime (controls vs targets)"),
    code("""
t1 = with_paper(table1(runs), "table1")
show_table(t1[["encoder", "regime", "policy", "n", "mean", "std", "ours", "paper", "diff"]])
write_table(t1, f"{RESULTS_DIR}/table1.csv")
record("table1", {f"{r.encoder}/{r.regime}/{r.policy}": r.mean for r in t1.itertuples()})
"""),
    code("""
show_figure(charts.ours_vs_paper(t1, "regime", "Table 1: full-chain retention by regime"),
            "main_table1", FIGURES_DIR)
"""),
    code("""
Markdown(differences(t1, ["encoder", "regime", "policy"], what="Table 1"))
"""),
    md("""
Similarity-only and no-graph DSGC must agree exactly (lambda = 0 makes I = r, a monotone
function of the similarity): we check it on every run, not only on the means.
"""),
    code("""
same = (runs[runs.policy == "similarity"].retained_ids.tolist()
        == runs[runs.policy == "no-graph"].retained_ids.tolist())
record("similarity_equals_no_graph", same)
"""),
    md("## Table 2: the targets, template by template"),
    code("""
t2 = with_paper(table2(runs), "table2")
show_table(t2[["encoder", "template", "policy", "n", "mean", "std", "ours", "paper", "diff"]])
write_table(t2, f"{RESULTS_DIR}/table2.csv")
record("table2", {f"{r.encoder}/{r.template}/{r.policy}": r.mean for r in t2.itertuples()})
"""),
    code("""
show_figure(charts.ours_vs_paper(t2, "template", "Table 2: full-chain retention on the targets"),
            "main_table2", FIGURES_DIR)
"""),
    code("""
Markdown(differences(t2, ["encoder", "template", "policy"], what="Table 2"))
"""),
    md("""
**Reading the differences.** The workbench regenerates the benchmark from its own templates
(workbench/generator.py); the paper's exact sentences are not published, so seed-level numbers
differ and means can move by a few seeds' worth (1/15 = 0.07 per seed). What should hold is the
shape: controls saturated for every policy, similarity-only equal to no-graph DSGC, and DSGC
above similarity-only on the targets. The notes above list every cell that moved by more than
0.10; they are generated from the numbers, so they stay true when the generator changes.
"""),
]

# --- 03 -------------------------------------------------------------------------------------------

NB03 = [
    md("""
# 3. Trace diagnostics: when DSGC still fails, which block is lost, to whom, and by how much?

Table 3 of the paper decomposes every failing seed into the ranks of c1..c3, the top-ranked
non-chain block, the displaced chain block and the margin (top non-chain score minus displaced
score). The *score landscape* then shows one seed's whole ranking: every block by score,
coloured by kind, r and lambda*pi stacked, the budget cutoff drawn and the displaced block and
its displacer named.
"""),
    code("""
from IPython.display import Markdown

from workbench import charts
from workbench.experiments import paper_table3, protocol_for, run_protocol, table3, table3_note, write_table
from workbench.explorer import State, ranking_table, trace_for, valley_pair, verdict_line
from workbench.notebook import record, show_figure, show_table
"""),
    params("""
ENCODER = "lexical"          # lexical | sentence (the paper's Table 3: lexical)
TEMPLATE = "profile"         # profile | role | expense | threshold (the paper's Table 3: profile)
POLICY = "dsgc"              # dsgc | similarity | no-graph | recency
SEEDS = 15                   # N means seeds 0..N-1 (or "A:B", half-open); the paper: 15
SEED = -1                    # landscape seed: any int from 0, or -1 for the first failing seed
BUDGET_MULTIPLIER = 2.0      # M, at least 1.0
LAMBDA = 1.0                 # DSGC propagation weight, at least 0
TOTAL_BLOCKS = 20            # 20 | 50
"""),
    code("""
runs = run_protocol(protocol_for("traces", SEEDS, ENCODER, templates=TEMPLATE, policies=POLICY,
                                 budget_multipliers=BUDGET_MULTIPLIER, lambdas=LAMBDA,
                                 total_blocks=TOTAL_BLOCKS))
t3 = table3(runs, TEMPLATE, ENCODER, POLICY)
print(f"{len(t3)} failing seeds of {len(runs)}")
"""),
    md("## Table 3, ours: every failing seed"),
    code("""
show_table(t3)
write_table(t3, f"{RESULTS_DIR}/table3.csv")
record("table3", t3[["seed", "ranks", "top_non_chain", "displaced", "margin"]].to_dict("records"))
"""),
    md("## Table 3, the paper (lexical encoder, profile target, DSGC)"),
    code("""
show_table(paper_table3())
"""),
    code("""
Markdown(table3_note(t3, runs.seed.nunique()))
"""),
    md("""
## The score landscape of one seed

`SEED = -1` picks the first failing seed of the table above (seed 0 if none fails).
"""),
    code("""
seed = SEED if SEED >= 0 else (int(t3.seed.iloc[0]) if len(t3) else 0)
state = State(template=TEMPLATE, seed=seed, encoder=ENCODER, policy=POLICY,
              multiplier=BUDGET_MULTIPLIER, lam=LAMBDA, total_blocks=TOTAL_BLOCKS)
trace = trace_for(state)
print(verdict_line(trace))
"""),
    code("""
show_figure(charts.landscape(trace), "trace_landscape", FIGURES_DIR)
"""),
    code("""
show_table(ranking_table(trace).drop(columns=["text"]), digits=4)
"""),
    code("""
show_figure(charts.valley(*valley_pair(state)), "trace_valley", FIGURES_DIR)
"""),
    code("""
record("landscape", {"seed": seed, "displaced": trace.displaced, "top_non_chain": trace.top_non_chain,
                     "margin": trace.margin, "chain_ranks": trace.chain_ranks, "kept": trace.kept_ids})
"""),
]

# --- 04 -------------------------------------------------------------------------------------------

NB04 = [
    md("""
# 4. Robustness: where does the one-hop rule hold, and where does it break?

The paper's section 7: the propagation weight lambda (Table 4), the budget multiplier M with
the sliding-window baseline (Table 5), and 20 vs 50 blocks (Table 6). Each sweep is drawn with
error bars (mean +- sample std over seeds) and the paper's published means overlaid.
"""),
    code("""
from IPython.display import Markdown

from workbench import charts
from workbench.experiments import (differences, protocol_for, run_protocol, table4, table5, table6,
                                   window_table, write_table)
from workbench.notebook import record, show_figure, show_table

COLUMNS = ["n", "mean", "std", "ours", "paper", "diff"]
"""),
    params("""
ENCODERS = "lexical,sentence"            # comma-separated subset of: lexical, sentence
SEEDS = 15                               # N means seeds 0..N-1 (or "A:B", half-open); paper: 15
LAMBDAS = [0.5, 1.0, 2.0]                # propagation weights, each at least 0 (the paper: 0.5, 1, 2)
MULTIPLIERS = [1.0, 1.5, 2.0, 3.0, 5.0]  # budget multipliers M, each at least 1 (the paper: 1, 2, 5)
SIZES = [20, 50]                         # total blocks per scenario, ints from 5 (the paper: 20, 50)
"""),
    md("## Table 4: the propagation weight lambda (DSGC, targets)"),
    code("""
t4 = table4(run_protocol(protocol_for("lambda", SEEDS, ENCODERS, lambdas=LAMBDAS)))
show_table(t4[["template", "encoder", "lambda", *COLUMNS]])
write_table(t4, f"{RESULTS_DIR}/table4.csv")
record("table4", {f"{r.encoder}/{r.template}/{r.lambda_:g}": r.mean
                  for r in t4.rename(columns={"lambda": "lambda_"}).itertuples()})
"""),
    code("""
show_figure(charts.sweep(t4, "lambda", "propagation weight λ", "template",
                         "Table 4: DSGC retention against λ", facet="encoder"),
            "robust_lambda", FIGURES_DIR)
"""),
    code("""
Markdown(differences(t4, ["encoder", "template", "lambda"], what="Table 4"))
"""),
    md("## Table 5: budget pressure (lexical encoder, targets), with the sliding window"),
    code("""
t5 = table5(run_protocol(protocol_for("budget", SEEDS, "lexical", budget_multipliers=MULTIPLIERS,
                                      policies="similarity,dsgc,recency")))
show_table(t5[["template", "budget_multiplier", "policy", *COLUMNS]])
write_table(t5, f"{RESULTS_DIR}/table5.csv")
record("table5", {f"{r.template}/{r.budget_multiplier:g}/{r.policy}": r.mean for r in t5.itertuples()})
"""),
    code("""
show_figure(charts.sweep(t5, "budget_multiplier", "budget multiplier M (log scale)", "policy",
                         "Table 5: retention against the budget", facet="template", log_x=True),
            "robust_budget", FIGURES_DIR)
"""),
    code("""
Markdown(differences(t5, ["template", "budget_multiplier", "policy"], what="Table 5"))
"""),
    md("""
The paper reports the sliding window (recency) once: full-chain retention over all four
templates, lexical encoder, M = 2.
"""),
    code("""
tw = window_table(run_protocol(protocol_for("window", SEEDS)))
show_table(tw[["encoder", "budget_multiplier", "policy", *COLUMNS]])
write_table(tw, f"{RESULTS_DIR}/window.csv")
record("window", {r.policy: r.mean for r in tw.itertuples()})
"""),
    md("## Table 6: context scaling, 20 vs 50 blocks (DSGC, targets)"),
    code("""
t6 = table6(run_protocol(protocol_for("scale", SEEDS, ENCODERS, total_blocks=SIZES)))
show_table(t6[["template", "encoder", "total_blocks", *COLUMNS]])
write_table(t6, f"{RESULTS_DIR}/table6.csv")
record("table6", {f"{r.encoder}/{r.template}/{r.total_blocks}": r.mean for r in t6.itertuples()})
"""),
    code("""
show_figure(charts.sweep(t6, "total_blocks", "total blocks in the store", "template",
                         "Table 6: DSGC retention against context size", facet="encoder"),
            "robust_scale", FIGURES_DIR)
"""),
    code("""
Markdown(differences(t6, ["encoder", "template", "total_blocks"], what="Table 6"))
"""),
    md("""
**Why more blocks hurt, in this benchmark.** The paper suggests score diffusion: with more blocks
the softmax spreads relevance thinner. But the normalizer is shared by every block, so it cancels
out of the ranking: DSGC ranks c1 above a filler f exactly when
exp(s_c1 / tau) + lambda exp(s_c2 / tau) > exp(s_f / tau), whatever N is (a property test checks
that adding an unconnected block never reorders the others). What grows with N is the number of
fillers that can clear that bar before the budget runs out, which is where our 50-block losses
come from.

**Reading the differences.** The sweeps are computed on the workbench's own generator, so
absolute values differ from the paper's; the notes above are generated from the numbers and list
every cell more than 0.10 away. The claims to check are directional: DSGC at or above
similarity-only at every M, the sliding window far below both, and DSGC under the lexical
encoder losing ground from 20 to 50 blocks while the sentence encoder holds.
"""),
]

# --- 05 -------------------------------------------------------------------------------------------

NB05 = [
    md("""
# 5. Explorer: for any seed and any setting, which blocks survive, and why?

Pick a template, a seed, an encoder, a policy, the budget multiplier M, lambda, tau and the
number of hops. The verdict (was the chain kept; if not, which block was displaced, by which
block, by what margin), the score landscape, the ranking table and the semantic valley update
together. Run it live with `make explore` (JupyterLab) or `make app` (Voila).
"""),
    code("""
from workbench.experiments import write_table
from workbench.explorer import State, explorer, ranking_table, snapshot, trace_for
from workbench.notebook import record
"""),
    params("""
TEMPLATE = "profile"         # worked | expense | threshold | role | profile
SEED = 0                     # any int from 0 (the slider spans 0-99)
ENCODER = "lexical"          # lexical | sentence (sentence loads a model once, ~5 s)
POLICY = "dsgc"              # dsgc | similarity | no-graph | recency
BUDGET_MULTIPLIER = 2.0      # M in [1, 5]
LAMBDA = 1.0                 # lambda in [0, 3]
TAU = 0.25                   # softmax temperature tau in (0, 1]
HOPS = 1                     # 1 | 2 | 3 (extra hops damped by 0.5)
TOTAL_BLOCKS = 20            # 20 | 50
"""),
    code("""
state = State(TEMPLATE, SEED, ENCODER, POLICY, BUDGET_MULTIPLIER, LAMBDA, TAU, HOPS, TOTAL_BLOCKS)
"""),
    md("## The live explorer"),
    code("""
explorer(state)
"""),
    md("""
## A static snapshot of the starting state

The same `update(state)` the widget calls, rendered as text and figures so the notebook keeps
checkable outputs (the live widget above needs a running kernel).
"""),
    code("""
verdict = snapshot(state, FIGURES_DIR)
"""),
    code("""
trace = trace_for(state)
write_table(ranking_table(trace), f"{RESULTS_DIR}/explorer_ranking.csv")
record("verdict", verdict)
record("kept", trace.kept_ids)
record("chain_ranks", trace.chain_ranks)
"""),
]

# --- 06 -------------------------------------------------------------------------------------------

NB06 = [
    md("""
# 6. Workshop: can you predict which block a memory policy will throw away?

A 60-90 minute session in four parts. Each exercise asks for a prediction first, then reveals
the answer with the explorer's pieces. Suggested timing:

| part | minutes | question |
| --- | --- | --- |
| 0. Setting | 10 | what is a retention budget, and why does it come before retrieval? |
| 1. Predict the eviction | 15 | which block will similarity-only evict? |
| 2. Rescue by propagation | 15 | what lambda brings the chain back? |
| 3. The one-hop boundary | 20 | where does one hop stop helping? |
| 4. Free exploration | 15-30 | find your own failing seed and explain it |

Run it with `make app` (Voila, one page per participant) or in JupyterLab; every cell is safe
to re-run.
"""),
    code("""
from IPython.display import Markdown

from workbench import charts
from workbench.explorer import (State, blocks_table, explorer, find_seed, first_rescue, kept,
                                ranking_table, sweep_state, trace_for, valley_pair, verdict_line)
from workbench.notebook import record, show_figure, show_table
"""),
    params("""
ENCODER = "lexical"          # lexical | sentence
TEMPLATE = "role"            # role | profile: the target used in parts 1 and 2
SEED = -1                    # any int from 0, or -1 for the first seed where similarity-only fails and DSGC holds
HOP_SEED = -1                # profile seed for part 3: any int from 0, or -1 for the first seed one hop loses
BUDGET_MULTIPLIER = 2.0      # M, at least 1.0
"""),
    md("""
## 0. Setting (10 min)

A store holds blocks; before the agent answers, a policy keeps the blocks that fit in a token
budget C and evicts the rest. Whatever is evicted is gone for retrieval. The chain c1 -> c2 -> c3
is what the answer needs; honeypots share the query's words but do not answer it; fillers are
background. Similarity-only keeps the blocks most like the query; DSGC adds to each block the
relevance of the blocks that depend on it (I = r + lambda * pi).
"""),
    code("""
base = State(template=TEMPLATE, encoder=ENCODER, multiplier=BUDGET_MULTIPLIER)
seed = SEED if SEED >= 0 else find_seed(base, lambda s: not kept(s, policy="similarity") and kept(s))
state = base.with_(seed=seed)
print(f"query: {trace_for(state).scenario.query}    budget C = {trace_for(state).retention.budget} tokens")
show_table(blocks_table(state).drop(columns=["kind"]))
"""),
    md("""
## 1. Predict the eviction (15 min)

Read the store above (kinds hidden). **Predict:** which chain block will similarity-only
retention evict? Write your guess below, then run the reveal.
"""),
    code("""
MY_GUESS = "c?"  # your prediction: c1, c2 or c3
"""),
    code("""
reveal = trace_for(state, policy="similarity")
print(verdict_line(reveal))
show_figure(charts.landscape(reveal), "workshop_eviction", FIGURES_DIR)
record("part1", {"seed": seed, "displaced": reveal.displaced, "indirect": reveal.indirect})
"""),
    md("""
Discuss: the evicted block is *needed* (the chain breaks without it) but shares few words with
the query. Definition 1 calls it a structurally indirect prerequisite; its witness is the
dependent that the query does resemble.

## 2. Rescue by propagation (15 min)

DSGC scores I = r + lambda * pi. **Predict:** what is the smallest lambda (in steps of 0.25)
that keeps the whole chain? Is a larger lambda always better?
"""),
    code("""
MY_LAMBDA = None  # your prediction, e.g. 0.5
"""),
    code("""
lams = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]
sweep = sweep_state(state.with_(policy="dsgc"), "lam", lams)
show_table(sweep.drop(columns=["verdict"]), digits=4)
record("part2", {"seed": seed, "rescue_lambda": first_rescue(state, "lam", lams),
                 "kept": sweep.full_chain_retained.tolist()})
"""),
    code("""
show_figure(charts.rescue_curve(sweep.assign(label=f"{TEMPLATE} seed {seed}"), "lam",
                                "propagation weight λ", "Does the chain survive as λ grows?"),
            "workshop_lambda", FIGURES_DIR)
"""),
    md("""
## 3. The one-hop boundary (20 min)

In the profile target, c1 ("<service> is filed under ticket ...") shares only an identifier with
the query. One hop lifts c2 (c3 depends on it) but nothing lifts c1 unless the propagation goes
two hops. **Predict:** with one hop, which chain block is lost? Does a second hop bring it back?
What happens with 50 blocks instead of 20?
"""),
    code("""
profile = State(template="profile", encoder=ENCODER, multiplier=BUDGET_MULTIPLIER)
hop_seed = HOP_SEED if HOP_SEED >= 0 else find_seed(profile, lambda s: not kept(s) and kept(s, hops=2))
hop_state = profile.with_(seed=hop_seed if hop_seed is not None else 0)
print(verdict_line(trace_for(hop_state)))
"""),
    code("""
MY_HOPS = None  # your prediction: how many hops keep the chain?
"""),
    code("""
hops = sweep_state(hop_state, "hops", [1, 2, 3])
show_table(hops.drop(columns=["verdict"]), digits=4)
show_figure(charts.valley(*valley_pair(hop_state)), "workshop_one_hop", FIGURES_DIR)
record("part3", {"seed": hop_seed, "kept_by_hops": hops.full_chain_retained.tolist(),
                 "displaced_one_hop": trace_for(hop_state).displaced})
"""),
    code("""
scale = sweep_state(hop_state, "total_blocks", [20, 50])
show_table(scale.drop(columns=["verdict"]), digits=4)
"""),
    md("""
Discuss: one hop reaches c2 from c3; c1 is two hops away. A second (damped) hop reaches it, at
the price of lifting whatever else sits two hops from a relevant block. With 50 blocks there are
more fillers that can outrank c1 before the budget runs out (the softmax normalizer is shared by
every block, so it does not by itself reorder them).

## 4. Free exploration (15-30 min)

Find a seed where DSGC fails, read its landscape, and explain the failure in one sentence:
which block was displaced, by which block, and by what margin? Try the sentence encoder.
"""),
    code("""
explorer(hop_state)
"""),
]

NOTEBOOKS = {
    "01_failure_mode": NB01,
    "02_main_suite": NB02,
    "03_trace_diagnostics": NB03,
    "04_robustness": NB04,
    "05_explorer": NB05,
    "06_workshop": NB06,
}


def build(name: str, cells) -> Path:
    return write_notebook(cells, OUT / f"{name}.ipynb", name[:2])


def main(argv) -> int:
    picked = [n for n in NOTEBOOKS if not argv or any(n.startswith(a) for a in argv)]
    for name in picked:
        print(f"wrote {build(name, NOTEBOOKS[name]).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
