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
# # 10. Beyond the paper: more hops, wrong graphs, and graphs read from the text
#
# The DSGC paper ends on questions it does not answer. Its residual failures (the lexical profile
# target loses `c1`, two hops from the query-facing block) should be fixed by **k-hop
# propagation**; its graph is **given by an oracle**, and it predicts that missing edges only
# remove support while spurious edges can do harm; and it leaves **graph induction** to future
# work. This notebook answers all three on the workbench's benchmark, then sets the paper's own
# predictions beside our measurements.
#
# Every number comes with a 95% bootstrap interval over seeds (2000 fixed, seeded resamples,
# percentile intervals, `workbench.common.stats`); where two settings are compared on the same seeds the
# difference is paired (the same resamples for both), with the number of seeds that went up and
# down. Sweeps run on the batch engine (`workbench.dsgc.batch`: many scenarios and settings scored
# at once by the same `policies` code that scores one scenario; a test checks it against `Trace`
# run by run). Each section's pipeline is one library function (`studies.khop_part`,
# `graph_part`, `induced_part`), the same the recording script runs (`studies.study_tables`).

# %% tags=["parameters"]
SEEDS = 500  # lexical seeds: N (0..N-1) or "A:B", half-open (500 or more for the recorded claims)
ENCODERS = "lexical,sentence"  # the encoders: comma-separated, of: lexical, sentence
SENTENCE_SEEDS = 5  # sentence seeds run live, inside SEEDS: 0 (none), N (0..N-1) or "A:B", half-open (500 are recorded)
SIZES = [20, 50]  # blocks a scenario: a list, each at least 5 (the paper: 20 and 50)
HOPS = [1, 2, 3, 4]  # propagation hops: a list, each an integer from 1 to 20 (the paper: 1)
DELTAS = [0.25, 0.5, 0.75, 1.0]  # damping a further hop: a list, each in (0, 1]
DROPS = [0.0, 0.25, 0.5, 0.75, 1.0]  # shares of true edges dropped: a list, each 0..1
SPURIOUS = [
    0,
    1,
    2,
    4,
    8,
]  # spurious edges added: a list, each an integer from 0 to 10000 (a target has 2 true edges)
RESAMPLES = 2000  # bootstrap resamples an interval: at least 1
SEED = 0  # the bootstrap's seed: an integer from 0
RECORDED_DIR = "../data/results"  # the recorded tables read from: a folder
HANDWRITTEN = "../data/handwritten"  # scenario files written by hand: a folder
CALIBRATION_DIR = "../data/calibration"  # the inducer's record: a folder
LOGS = "../data/logs"  # the closure study's agent logs: a folder
FIGURES_DIR = "../figures"  # figures: a folder (another run: runs/<run>/figures)
RESULTS_DIR = "../data/results"  # tables as CSV: a folder (another run: runs/<run>/results)

# %%
from workbench.params import settle

RUN = settle("10_beyond_the_paper", globals())  # checks them; says where this run writes
RUN

# %%
import pandas as pd
from IPython.display import Markdown

from workbench.beyond import predictions, prose, studies, tiers
from workbench.common.io import write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.common.seeds import parse_seeds
from workbench.dsgc import charts

# %%
BOOT = {"resamples": RESAMPLES, "seed": SEED}
encoders = [e.strip() for e in ENCODERS.split(",")]
scenarios = studies.scenario_set(SEEDS, SIZES)
sentence = "sentence" in encoders and bool(SENTENCE_SEEDS)
live_sentence = studies.subset(scenarios, SENTENCE_SEEDS) if sentence else []
sets = {"lexical": scenarios, "sentence": live_sentence}  # the scenarios each encoder runs
lo, hi = parse_seeds(SEEDS)
s_lo, s_hi = parse_seeds(SENTENCE_SEEDS) if sentence else (0, 0)
Markdown(
    prose.what_runs(scenarios, SIZES, (lo, hi), live_sentence if sentence else None, (s_lo, s_hi))
)

# %% [markdown]
# ## 1. Does k-hop propagation recover the two-hop failures, and at what cost?
#
# DSGC's support `pi` gathers, hop by hop, the relevance of a block's dependents: hop h is
# weighted by delta^(h-1). On a target chain `c3 -> c2 -> c1` one hop lifts `c2` by `r(c3)` and
# `c1` only by `r(c2)`, the small relevance of the valley block; two hops add `delta * r(c3)` to
# `c1`. Similarity-only is drawn at hops = 0 (no propagation ranks exactly as similarity).

# %%
part1 = studies.khop_part(sets, HOPS, DELTAS, **BOOT)
runs1, k1, gains = part1.runs, part1.table, part1.gains
write_csv(k1, f"{RESULTS_DIR}/beyond_khop.csv")
DELTA, K = studies.chosen_setting(k1)
view = k1[(k1.policy == "similarity") | (k1.delta == DELTA)].assign(
    hops=lambda t: t.hops.astype(int)
)
show_table(studies.pivot(view, ["encoder", "template", "total_blocks"], "hops"))

# %% [markdown]
# Above: retention (mean [95% interval]) per hops at the damping chosen below; hops = 0 is
# similarity-only. Below: the paired effect of going from one hop to two, on the same seeds, at
# that damping (the records hold every damping).

# %%
show_table(studies.diff_cells(gains[gains.delta == DELTA]))
record("khop", studies.khop_record(view))
record("chosen", {"delta": DELTA, "hops": K})
record(
    "gain_1_to_2",
    {
        f"{r.encoder}/{r.template}/{r.total_blocks}/{r.delta:g}": [r.diff, r.up, r.down]
        for r in gains.itertuples()
    },
)

# %%
Markdown(prose.khop_summary(gains, DELTA))

# %% [markdown]
# **Which damping?** The target retention at each delta, averaged over hops >= 2 and both
# targets (best: the highest mean at that size; ties are all best):

# %%
damp = studies.best_damping(k1)
show_table(damp)
record(
    "damping",
    {f"{r.encoder}/{r.total_blocks}/{r.delta:g}": r.mean for r in damp.itertuples()},
)

# %%
Markdown(prose.damping_choice(damp, DELTA, K))

# %% [markdown]
# **Do more hops cost anything?** Extra hops could lift honeypots or fillers if support leaked
# off the chain. The keep rates of honeypots and fillers and the largest share of `pi` that
# landed on a non-chain block, per hops (delta as chosen):

# %%
show_table(studies.keep_rates(view))
deeper = {h: studies.unchanged_beyond(runs1, h) for h in HOPS[:-1] if h >= 2}
depth = studies.longest_path(scenarios)
record("deeper_changes", {str(h): n for h, n in deeper.items()})
Markdown(prose.cost_summary(k1, deeper, depth, max(HOPS)))

# %%
show_figure(
    charts.interval_chart(
        studies.khop_frame(k1, DELTA),
        "hops",
        "template",
        f"Retention against propagation hops (delta = {DELTA:g})",
        "mean full-chain retention (0 hops: similarity-only), whiskers: 95% bootstrap interval "
        f"over seeds (lexical: {hi - lo} seeds"
        + (f"; sentence: {s_hi - s_lo} seeds)" if sentence else ")"),
        x_title="hops",
        column="panel",
        colors=charts.TEMPLATE_COLORS,
    ),
    "beyond_khop",
    FIGURES_DIR,
)

# %% [markdown]
# **The cases k-hop still loses.** Every run with hops >= 2 that still breaks the chain, and a
# trace of each (first hops and damping per scenario): the displaced block, the top-ranked
# non-chain block and the margin between them (the paper's Table 3 margin), and the lowest
# retained non-chain block (the competitor at the cutoff).

# %%
lost = studies.still_lost(runs1)
traces = studies.loss_traces(lost, scenarios)
show_table(traces.drop(columns=["verdict"]) if len(traces) else lost, digits=4)
record(
    "lost",
    [
        [r.encoder, r.template, int(r.total_blocks), int(r.seed), int(r.hops), float(r.delta)]
        for r in lost.itertuples()
    ],
)

# %%
Markdown(prose.still_lost(lost, traces, K, DELTA))

# %% [markdown]
# **Recorded: the sentence encoder on 500 seeds** (same study, `scripts/beyond_record.py`; read
# from `data/results/beyond_sentence500_khop.csv`, not re-run here).

# %%
rec_k = pd.read_csv(f"{RECORDED_DIR}/beyond_sentence500_khop.csv")
rec_view = rec_k[(rec_k.policy == "similarity") | (rec_k.delta == DELTA)]
show_table(studies.pivot(rec_view, ["encoder", "template", "total_blocks"], "hops"))
rec_gain = pd.read_csv(f"{RECORDED_DIR}/beyond_sentence500_gain.csv")
record(
    "recorded_sentence_khop",
    {
        f"{r.template}/{r.total_blocks}/{r.hops}": r.mean
        for r in rec_view[rec_view.template.isin(studies.TARGETS)].itertuples()
    },
)
Markdown(prose.recorded_khop(rec_k, rec_gain, DELTA))

# %% [markdown]
# ## 2. What happens when the graph is wrong?
#
# Each true edge is dropped with a probability (0-100%), or spurious edges are added (each: a
# random block depends on a random non-chain block, so a wrong edge always points support at a
# block the answer does not need). One hop and the chosen k-hop setting, beside similarity-only,
# on the same seeds.

# %%
noise = [(d, 0) for d in DROPS] + [(0.0, s) for s in SPURIOUS if s]
part2 = studies.graph_part(sets, K, DELTA, noise, **BOOT)
g2, vs2, gh2, identical = part2.table, part2.versus, part2.hop_gain, part2.identical
write_csv(g2, f"{RESULTS_DIR}/beyond_graph.csv")
write_csv(vs2, f"{RESULTS_DIR}/beyond_graph_vs_similarity.csv")
drop_view = g2[(g2.spurious == 0)].assign(drop=lambda t: t["drop"].astype(float))
show_table(studies.pivot(drop_view, ["encoder", "template", "total_blocks", "setting"], "drop"))

# %%
spur_view = g2[(g2["drop"] == 0)].assign(spurious=lambda t: t.spurious.astype(int))
show_table(studies.pivot(spur_view, ["encoder", "template", "total_blocks", "setting"], "spurious"))
record(
    "graph",
    {
        f"{r.encoder}/{r.template}/{r.total_blocks}/{r.setting}/{r.drop:g}/{r.spurious}": r.mean
        for r in g2.itertuples()
    },
)
record("identical_when_all_dropped", identical)

# %% [markdown]
# **Is DSGC ever worse than similarity-only?** Every cell where, on the same seeds, DSGC on the
# noisy graph kept the chain less often than similarity-only (down: seeds similarity kept and
# DSGC lost):

# %%
worse = vs2[vs2["down"] > 0]
show_table(studies.diff_cells(worse))
record(
    "worse_than_similarity",
    {
        f"{r.encoder}/{r.template}/{r.total_blocks}/{r.setting}/{r.drop:g}/{r.spurious}": int(
            r.down
        )
        for r in worse.itertuples()
    },
)

# %%
Markdown(prose.graph_summary(vs2, identical, gh2, K))

# %%
fig2 = studies.graph_frame(g2, "lexical")
show_figure(
    charts.interval_chart(
        fig2,
        "x",
        "setting",
        "Retention on imperfect graphs (lexical encoder)",
        f"mean full-chain retention, whiskers: 95% bootstrap interval over {hi - lo} seeds",
        x_title="noise level (see row)",
        column="template",
        row="noise",
        colors=charts.setting_colors(fig2.setting),
        dash="size",
    ),
    "beyond_graph",
    FIGURES_DIR,
)

# %% [markdown]
# **Recorded: the sentence encoder on 500 seeds** (`data/results/beyond_sentence500_graph.csv`):
# the cells where DSGC on a noisy graph fell below similarity-only.

# %%
rec_vs = pd.read_csv(f"{RECORDED_DIR}/beyond_sentence500_graph_vs_similarity.csv")
show_table(studies.diff_cells(rec_vs[rec_vs["down"] > 0]))

# %% [markdown]
# ## 3. Graphs induced from the text
#
# No oracle: four inducers read the blocks alone (`workbench.beyond.induce`,
# `workbench induce SCENARIOS.jsonl [--method mentions|gated-knn|handles|knn] --out WITH_EDGES.jsonl`).
#
# - **mentions** (the default): blocks that share a rare mention (a code in any casing or
#   separator style, a name, a number with its unit, a content-word pair; a code spelled in words
#   too) are linked, each mention weighted by its rarity in the scenario (1 / (blocks naming it -
#   1)), a mention the query names counting half; each block keeps its two strongest partners;
#   only links in the part of the mention graph that reaches the query. Direction: the block
#   naming the shared mention later introduced it and is the prerequisite; with no order, an edge
#   each way. Every edge carries its confidence, and DSGC weights its support by it.
# - **gated-knn**: the kNN pairs below, kept only where the two blocks also share a mention, the
#   cosine as the confidence.
# - **handles**: the closure study's rule with patterns written from this generator's own
#   sentences (tickets `RT-123`, one capital and one or two digits, the generator's names,
#   "placed in / maps onto / names ..."): on text written otherwise they find nothing.
# - **knn**: each block is linked to its k = 2 most similar blocks with cosine at least a threshold
#   (0.2 lexical, 0.4 sentence), the more query-similar block of a pair depending on the less
#   similar one; k and the thresholds were chosen on seeds 1000:1100 (never evaluated here).
#
# Edge quality is judged as pairs (the chain's blocks linked, direction aside) and directed.

# %%
part3 = studies.induced_part(sets, K, DELTA, **BOOT)
quality, t3, vo3 = part3.quality, part3.table, part3.versus
write_csv(quality, f"{RESULTS_DIR}/beyond_edges.csv")
show_table(
    quality[quality.graph != "true"][
        ["encoder", "graph", "template", "total_blocks", "edges_per_scenario", "pair_precision",
         "pair_recall", "precision", "recall", "filler_pairs"]
    ]
)  # fmt: skip
record(
    "edges",
    {
        f"{r.encoder}/{r.graph}/{r.template}/{r.total_blocks}": [r.precision, r.recall]
        for r in quality[quality.graph != "true"].itertuples()
    },
)

# %%
share = studies.identifier_sharing(scenarios)
show_table(share)
record("identifier_sharing", {r.template: [r.shared, r.handed_off] for r in share.itertuples()})

# %%
Markdown(prose.sharing_summary(share, quality, k1))

# %%
write_csv(t3, f"{RESULTS_DIR}/beyond_induced.csv")
show_table(studies.induced_pivot(t3))
record(
    "induced",
    {
        f"{r.encoder}/{r.template}/{r.total_blocks}/{r.graph}/{r.setting}": r.mean
        for r in t3.itertuples()
    },
)

# %% [markdown]
# Paired on the same seeds: DSGC on each induced graph minus DSGC on the true graph (same hops),
# and minus similarity-only.

# %%
show_table(studies.diff_cells(vo3[vo3.encoder == "lexical"]))

# %%
Markdown(prose.induced_summary(vo3[vo3.encoder == "lexical"]))

# %%
Markdown(prose.inducers_summary(vo3[vo3.encoder == "lexical"]))

# %% [markdown]
# ### 3b. On text the generator did not write
#
# Tiers no generator wrote (`workbench.beyond.tiers`), each with how it was used, because a tier
# an inducer was changed for no longer measures that inducer held out:
#
# - **hand-written (tuned on)**: `data/handwritten/scenarios.jsonl`, twelve small scenarios
#   written for the mention inducer and then used to tune it (its README lists the changes);
# - **blind B** and **blind C**: `data/handwritten/blind/`, `blind2/`, 20-block scenarios written
#   before any inducer ran on them, measured once, then tuned on;
# - **blind D to H** at 20 and at 50 blocks: `data/handwritten/tier_d/` ... `tier_h/`, 24, 24, 24,
#   20 and 20 scenarios built like the held-out set issue 19 describes (two target and two
#   control templates, chains joined by names and by codes written in other styles, distractors
#   that share the query's words, its person or subject, and near-miss codes and names), each
#   written after the inducer's previous change and before any inducer ran on it, measured once;
#   D to G were then used to change the inducer (variants 15-21 in
#   `data/calibration/inducer.md`), H (its regimes checked first, as its README says) was not;
# - **blind I** at 20 and 50 blocks: `data/handwritten/tier_i/`, the eleven registers of section
#   3c, written before issue 32's changes, measured once, then tuned on;
# - **worked example**: the paper's section 2.2 chain with three competitors;
# - **agent logs**: the closure study's logs (the hand-written held-out corpus's closed logs and
#   the four-format conversations), one block a message, the handle dependencies the closure
#   check finds as edges, the chain the last message that needs a handle and what it needs.
#
# The same author wrote the tiers and the inducer: scenarios written by others remain the real
# test. Lexical encoder, one hop, delta as chosen; intervals: bootstrap over the scenarios.
# First, recorded: each of tiers D to H as its first run measured it, with the inducer as it stood
# then (the only figures on those tiers that no rule was made for; H's is the inducer as
# committed).

# %%
first = pd.read_csv(f"{CALIBRATION_DIR}/inducer_first_runs.csv")
show_table(first.drop(columns=["source"]))
Markdown(prose.first_runs_summary(first))

# %%
hand, sources = tiers.hand_tiers(HANDWRITTEN, LOGS)
tier = tiers.tier_tables(hand, sources, "lexical", DELTA, **BOOT)
write_csv(tier, f"{RESULTS_DIR}/beyond_handwritten.csv")
show_table(tier)
record(
    "handwritten",
    {
        f"{r.tier}/{r.regime}/{r.graph}": [r.retention, r.pair_precision, r.pair_recall]
        for r in tier.itertuples()
    },
)
Markdown(prose.tier_summary(tier))

# %% [markdown]
# ### 3c. Eleven registers, and the rules that read them (tier I)
#
# `data/handwritten/tier_i/` (its README says who wrote it and how): 33 scenarios written by hand
# for issue 32 in eleven registers (clinical handover, contract clauses with definitions and
# schedules, a code-review thread, a lab notebook, supply-chain e-mail, tabletop-campaign notes with
# nicknames, citations with a reference list, spreadsheet rows pasted as text, German, Spanish,
# and links that are paraphrase only), two targets and a control in each, at 20 and 50 blocks. Its
# regimes were checked with the inducer out of the loop; then it was measured once with the
# inducer as it stood (`data/calibration/tier_i_first_run.csv`, the "first" figures below), and
# the inducer was changed for what that showed: **from then on this tier is tuned on**, and only
# register scenarios written by others are a held-out test. Per register and regime: the mention
# graph's pairs (first run -> now), and per encoder and size what similarity-only, the true
# edges, the mention graph (first run -> now, bootstrap interval over the scenarios) and the mention
# graph with its paraphrase link keep. Three scenarios a register: the intervals are wide, and
# the pooled rows ("all registers") are the ones to read.

# %%
reg_scs = tiers.compose(f"{HANDWRITTEN}/{tiers.REGISTERS}/source.json")
reg_first = pd.read_csv(f"{CALIBRATION_DIR}/tier_i_first_run.csv")
reg = tiers.register_table(tiers.register_runs(reg_scs, delta=DELTA), reg_first, **BOOT)
write_csv(reg, f"{RESULTS_DIR}/beyond_registers.csv")
show_table(tiers.register_view(reg))
reg_bar = tiers.register_bar(reg)
show_table(reg_bar)
record("register_bar", {f"{r.encoder}/{r.blocks}": bool(r.met) for r in reg_bar.itertuples()})

# %% [markdown]
# ### 3d. Registers held out from the reader's changes (tiers K and L)
#
# Two more register tiers written by hand (their READMEs say who wrote them and how), their
# regimes checked with the inducer out of the loop before any inducer ran on them. **K**
# (`data/handwritten/tier_k/`): the twelve registers issue 61 lists for its held-out corpus
# (meeting transcripts, on-call chat, config files, recipes, by-laws, support tickets, French,
# Italian and Portuguese, Russian, logs, quoted e-mail, role references, units and dates),
# written before the reader became a table of readers; "first" is its run with the inducer as it
# stood then, and it was read scenario by scenario (tuned on) after its second run. **L**
# (`data/handwritten/tier_l/`): tier I's eleven kinds of text in other voices, written after the
# readers' table; "first" is its one run. The same author wrote the tiers and the readers, so
# neither is text written by others.

# %%
held = {
    name: tiers.register_table(
        tiers.register_runs(tiers.compose(f"{HANDWRITTEN}/{folder}/source.json"), delta=DELTA),
        pd.read_csv(f"{CALIBRATION_DIR}/{folder}_first_run.csv"),
        **BOOT,
    )
    for name, folder in tiers.HELD_OUT.items()
}
write_csv(
    pd.concat([t.assign(tier=k) for k, t in held.items()]),
    f"{RESULTS_DIR}/beyond_registers_heldout.csv",
)
show_table(tiers.heldout_view(held))
held_bar = pd.concat([tiers.register_bar(t).assign(tier=k) for k, t in held.items()])
record(
    "heldout_bar", {f"{r.tier}/{r.encoder}/{r.blocks}": bool(r.met) for r in held_bar.itertuples()}
)
Markdown(prose.heldout_summary(held_bar))

# %% [markdown]
# Which rule decided each edge's direction (`workbench.beyond.rules.RULES`: **role**, one block
# defines what the pair shares and the other uses it; **order**, mention order; **two-way**, the
# same pair the other way at a lower confidence, because order alone cannot decide;
# **paraphrase**, the gated sentence-encoder link), with how many point as a true edge does and
# how many the reverse way; then what the two-way fallback costs or gains every tier's controls
# and targets against mention order alone (the rule of variants up to 21).

# %%
show_table(tiers.direction_table(reg_scs))
two_way = tiers.two_way_cost(hand, "lexical", DELTA)
show_table(two_way.reset_index())
Markdown(prose.register_summary(reg, reg_bar, two_way))

# %%
fig3 = t3.copy()
fig3["graph"] = fig3.graph.map({"none": "none (similarity-only)"}).fillna(fig3.graph)
fig3["setting"] = fig3.setting.str.replace(f" d={DELTA:g}", "", regex=False)
fig3 = fig3[fig3.encoder == "lexical"].assign(size=lambda t: t.total_blocks.map("{} blocks".format))
show_figure(
    charts.interval_chart(
        fig3,
        "graph",
        "setting",
        "Retention on induced graphs (lexical encoder)",
        f"mean full-chain retention, whiskers: 95% bootstrap interval over {hi - lo} seeds; "
        f"delta = {DELTA:g}",
        bars=True,
        column="template",
        row="size",
        colors=charts.setting_colors(fig3.setting),
    ),
    "beyond_induced",
    FIGURES_DIR,
)

# %% [markdown]
# **Recorded**: the kNN tuning on seeds 1000:1100 (how k and the thresholds were chosen), and the
# sentence encoder on 500 seeds (`data/results/beyond_knn_tuning.csv`,
# `beyond_sentence500_edges.csv`, `beyond_sentence500_induced.csv`).

# %%
tuning = pd.read_csv(f"{RECORDED_DIR}/beyond_knn_tuning.csv")
chosen = tuning.loc[tuning.groupby("encoder")["f1"].idxmax()]
show_table(chosen)
rec_e = pd.read_csv(f"{RECORDED_DIR}/beyond_sentence500_edges.csv")
show_table(rec_e[rec_e.graph != "true"])
rec_i = pd.read_csv(f"{RECORDED_DIR}/beyond_sentence500_induced.csv")
show_table(studies.induced_pivot(rec_i))

# %% [markdown]
# ## 4. The paper's predictions beside our measurements
#
# What the paper predicts or concedes in its trace, robustness and discussion sections, the
# figure it gives (from `paper_figures.json`), what this notebook measured under the lexical
# encoder (the paper's stress case), whether the prediction holds on this benchmark, and the
# number that decides it. Only predictions that could have come out otherwise are listed: that a
# missing edge reduces DSGC to similarity-only holds by construction (no edge carries no
# support; a test asserts the identical ranking), as does "no support off the chain" on a graph
# of chain edges only.

# %%
pred = predictions.predictions(
    k1, gains, vs2, gh2 if gh2 is not None else gains.iloc[:0], identical, quality, vo3, DELTA, K,
    tier=tier, registers=reg_bar,
)  # fmt: skip
write_csv(pred, f"{RESULTS_DIR}/beyond_predictions.csv")
with pd.option_context("display.max_colwidth", 400):
    show_table(pred)
record("predictions", dict(zip(pred["the paper predicts"], pred["holds here"], strict=True)))

# %%
Markdown(prose.limits(depth, float(k1.off_chain_support.max()), s_hi - s_lo))
