"""The tiers the generator did not write: hand-written scenario files, the paper's worked example,
and agent logs as scenarios; each inducer's edges and DSGC's retention on them, tier by tier.

An agent log (any wire format `workbench.closure.logs` reads) becomes a DSGC scenario: one block a
message (the system prompt aside), the query the first user message (the task the agent was
given, as the closure replay takes it), and as edges the handle dependencies the closure check
finds: an assistant message that names a handle (`run_5c81d2`) depends on the earlier message
that defined it. A call and its result are joined by call ids the wire format carries outside the
text, so that pairing is structure, not something to read from text, and is not an edge here.
The chain is the last message that needs a handle and what it needs, transitively.

The closure's handle patterns (`workbench.closure.window.spans.CLOSURE_PATTERNS`) decide the edges, so
the mention inducer is scored here against the gate's own handle model: every handle the gate
finds is also a mention (`code:run5c81d2`), the mention model reads more (names, codes in other
styles) because an inducer must find structure in prose, while the gate must be exact and
order-aware to refuse an eviction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from workbench.beyond import studies
from workbench.beyond.induce import induce_ruled, induce_weighted, score_pairs
from workbench.closure.logs import heldout_logs, load
from workbench.closure.logs.logtypes import Log
from workbench.common import stats
from workbench.common.encoders import get_encoder
from workbench.common.seeds import Draw
from workbench.dsgc.generator import worked_example
from workbench.dsgc.scenario import Block, Scenario, load_scenarios


def log_scenario(log: Log, name: str) -> Scenario | None:
    """The log as a scenario, or None when no message needs a handle (nothing to induce)."""
    msgs = [m for m in log.messages if m.role != "system" and m.text.strip()]
    if not msgs:
        return None
    flow = log.flow()
    bid = {m.index: f"m{m.index}" for m in msgs}
    needs: dict[int, list[int]] = {}
    for m in msgs:
        if m.role == "assistant":
            ps = [p for p in flow.needs(m.index) if p in bid and p != m.index]
            if ps:
                needs[m.index] = ps
    if not needs:
        return None
    last = max(needs)
    chain, todo = set(), [last]
    while todo:
        i = todo.pop()
        if i not in chain:
            chain.add(i)
            todo.extend(needs.get(i, ()))
    query = next((m.text for m in msgs if m.role == "user"), msgs[0].text)
    blocks = tuple(
        Block(bid[m.index], m.text, "chain" if m.index in chain else "filler") for m in msgs
    )
    edges = tuple((bid[i], bid[p]) for i in sorted(needs) for p in needs[i])
    return Scenario(
        f"log/{name}",
        query,
        blocks,
        edges,
        tuple(bid[i] for i in sorted(chain)),
        f"log-{log.format}",
        "log",
        None,
        None,
        {"source": name},
    )


def log_tier(logs) -> list[Scenario]:
    """Scenarios of the (name, log) pairs that need a handle somewhere, in name order."""
    found = (log_scenario(log, name) for name, log in sorted(logs, key=lambda x: x[0]))
    return [sc for sc in found if sc is not None]


def closure_logs(folder: str | os.PathLike) -> list[tuple[str, Log]]:
    """(name, log) of the closure study's agent logs under `folder` (data/logs): the hand-written
    held-out corpus's logs that check closed (`logs.heldout_logs`) and the four-format
    conversations (`*.json`; a trimmed copy is not a log of its own)."""
    folder = Path(folder)
    held = [(Path(n).stem, log) for n, log in heldout_logs(folder / "heldout")]
    mine = sorted(p for p in folder.glob("*.json") if ".trimmed_by_" not in p.name)
    return held + [(p.stem, load(p)) for p in mine]


def compose(source: str | os.PathLike, sizes=(20, 50)) -> list[Scenario]:
    """A hand-written tier laid out as scenarios (tier D, `data/handwritten/tier_d/source.json`):
    each scenario's chain (each block depending on the one before), its distractors and the
    fillers it needs, taken in turn from the tier's one pool (the k-th scenario from pool place
    17k), shuffled into a store order drawn from its name and size; one scenario a size."""
    src = json.loads(Path(source).read_text(encoding="utf-8"))
    pool = src["fillers"]
    out = []
    for k, s in enumerate(src["scenarios"]):
        chain = [Block(f"c{i + 1}", t, "chain") for i, t in enumerate(s["chain"])]
        near = [Block(f"h{i + 1}", t, "honeypot") for i, t in enumerate(s["distractors"])]
        for n in sizes:
            m = n - len(chain) - len(near)
            fill = [Block(f"f{i + 1}", pool[(17 * k + i) % len(pool)]) for i in range(m)]
            blocks = tuple(Draw("tier", s["name"], n).shuffle([*chain, *near, *fill]))
            edges = tuple((chain[i + 1].id, chain[i].id) for i in range(len(chain) - 1))
            out.append(
                Scenario(
                    f"{s['template']}/{s['name']}/blocks={n}",
                    s["query"],
                    blocks,
                    edges,
                    tuple(b.id for b in chain),
                    s["template"],
                    s["regime"],
                    None,
                    s.get("answer"),
                )
            )
    return out


# the hand-written tiers laid out at 20 and 50 blocks (`compose`), and what each first run led to
# (which inducer changes each led to: data/calibration/inducer.md)
LAID_OUT = (
    ("D", "tier_d", "tuned on after its first run"),
    ("E", "tier_e", "tuned on after its first run"),
    ("F", "tier_f", "tuned on after its first run"),
    ("G", "tier_g", "one change after its first run"),
    ("H", "tier_h", "nothing changed after its one run"),
    ("I", "tier_i", "tuned on after its first run"),
)


def hand_tiers(handwritten: str | os.PathLike, logs: str | os.PathLike) -> tuple[dict, dict]:
    """(tier name -> scenarios, tier name -> where its text comes from) for every tier the
    generator did not write: the hand-written files under `handwritten`, the worked example and
    the closure study's logs under `logs`."""
    hw = Path(handwritten)
    tiers = {
        "hand-written (tuned on)": (
            load_scenarios(hw / "scenarios.jsonl"),
            "data/handwritten/README.md: written by hand, then tuned on",
        ),
        "blind B (tuned on after its first run)": (
            load_scenarios(hw / "blind" / "scenarios.jsonl"),
            "data/handwritten/blind/README.md: written by hand before any run, then tuned on",
        ),
        "blind C (two fixes after its first run)": (
            load_scenarios(hw / "blind2" / "scenarios.jsonl"),
            "data/handwritten/blind2/README.md: written by hand after that, two fixes after its run",
        ),
        **{
            f"blind {name} at {n} blocks ({how})": (
                [
                    sc
                    for sc in load_scenarios(hw / folder / "scenarios.jsonl")
                    if len(sc.blocks) == n
                ],
                f"data/handwritten/{folder}/README.md: written by hand before any inducer ran on "
                f"it, measured once, then {how}",
            )
            for name, folder, how in LAID_OUT
            for n in (20, 50)
        },
        "worked example": (
            [worked_example()],
            "the paper's section 2.2 chain (workbench.dsgc.generator.worked_example)",
        ),
        "agent logs": (
            log_tier(closure_logs(logs)),
            "data/logs/heldout/README.md and data/logs/*.json: the closure study's agent logs",
        ),
    }
    return {k: v[0] for k, v in tiers.items()}, {k: v[1] for k, v in tiers.items()}


def tier_tables(tiers: dict, sources: dict, encoder: str, delta: float, **boot) -> pd.DataFrame:
    """`studies.tier_table` of each tier (name -> scenarios), one hop at `delta`, one frame with
    the tier's name and where its text comes from (`sources`)."""
    frames = []
    for name, scenarios in tiers.items():
        graphs = studies.induced_graphs(scenarios, encoder)
        runs = studies.induced_runs(scenarios, encoder, graphs, [1], delta)
        t = studies.tier_table(scenarios, runs, graphs, **boot)
        frames.append(t.assign(tier=name, source=sources[name]))
    cols = ["tier", "regime", "graph", "n", "retention", "retention_lo", "retention_hi"]
    out = pd.concat(frames, ignore_index=True)
    return out[[*cols, *(c for c in out.columns if c not in cols)]]


# --- tier I: the registers -------------------------------------------------------------

REGISTERS = "tier_i"  # data/handwritten/tier_i: eleven registers, each two targets and a control
# the register tiers held out from the reader's changes (data/handwritten/tier_k, tier_l; their
# READMEs say how each was used)
HELD_OUT = {"K": "tier_k", "L": "tier_l"}
REGISTER_GRAPHS = ("none", "true", "mentions", studies.PARAPHRASE)


def register_runs(scenarios, encoders=("lexical", "sentence"), delta: float = 0.5) -> pd.DataFrame:
    """Per encoder and scenario: similarity-only, DSGC (one hop) over the true edges, over the
    mention graph and over it with its paraphrase link; each graph's pairs (direction ignored)
    against the true ones. One row per (encoder, scenario, graph)."""
    rows = []
    for enc in encoders:
        graphs = studies.induced_graphs(scenarios, enc, paraphrase=True)
        graphs = {g: graphs[g] for g in REGISTER_GRAPHS if g in graphs}
        runs = studies.induced_runs(scenarios, enc, graphs, [1], delta)
        kept = runs.set_index(["scenario_id", "graph"]).full_chain_retained
        for g in REGISTER_GRAPHS:
            found = graphs.get(g, [((), None)] * len(scenarios))
            for sc, (es, _) in zip(scenarios, found, strict=True):
                s = score_pairs(es, sc.edges)
                rows.append(
                    (enc, sc.id, sc.template, sc.regime, len(sc.blocks), g, s.induced, s.true,
                     s.hit, float(kept[(sc.id, g)]))
                )  # fmt: skip
    cols = ["encoder", "scenario", "register", "regime", "blocks", "graph", "pairs", "true_pairs"]
    return pd.DataFrame(rows, columns=[*cols, "hit", "kept"])


def register_table(runs: pd.DataFrame, first: pd.DataFrame, **boot) -> pd.DataFrame:
    """Per encoder, size, register (and 'all registers', pooled), regime and graph: scenarios,
    full-chain retention with a bootstrap interval over the scenarios, pair precision and recall
    (pooled); beside the mention graph, its first run (`first`: the per-scenario record of the
    tier's one run before the changes made for it, data/calibration/tier_i_first_run.csv)."""
    r = pd.concat([runs, runs.assign(register="all registers")], ignore_index=True)
    keys = ["encoder", "blocks", "register", "regime", "graph"]
    ret = stats.interval_table(r, keys, metric="kept", unit="scenario", **boot)
    q = r.groupby(keys, sort=False)[["pairs", "true_pairs", "hit"]].sum().reset_index()
    out = ret.merge(q, on=keys)
    out["pair_precision"] = out.hit / out.pairs.where(out.pairs > 0)
    out["pair_recall"] = out.hit / out.true_pairs
    f = first.rename(columns={"similarity": "_s", "true_edges": "_t"})
    f = pd.concat([f, f.assign(register="all registers")], ignore_index=True)
    fk = ["encoder", "blocks", "register", "regime"]
    fq = f.groupby(fk, sort=False).agg(
        first_retention=("induced", "mean"), _p=("pairs", "sum"), _tp=("true_pairs", "sum"),
        _h=("hit", "sum"),
    ).reset_index()  # fmt: skip
    fq["first_pair_precision"] = fq._h / fq._p.where(fq._p > 0)
    fq["first_pair_recall"] = fq._h / fq._tp
    fq = fq.assign(graph="mentions")[[*fk, "graph", "first_retention", "first_pair_precision",
                                       "first_pair_recall"]]  # fmt: skip
    out = out.merge(fq, on=keys, how="left")
    out = out.rename(columns={"mean": "retention", "lo": "retention_lo", "hi": "retention_hi"})
    return out


def register_bar(table: pd.DataFrame) -> pd.DataFrame:
    """The registers' bar, pooled over them per encoder and size: pair precision
    >= 0.6 and recall >= 0.8 (targets and controls pooled), the mention graph keeping at least 0.8
    (20 blocks; 0.6 at 50) of the target chains the true edges keep, and no control kept less
    often than under similarity-only. `missed` says which of them a row misses, and by how much."""
    a = table[table.register == "all registers"].set_index(["encoder", "blocks", "regime", "graph"])
    rows = []
    for (enc, n), _ in a.groupby(level=[0, 1], sort=False):
        m = [a.loc[(enc, n, reg, "mentions")] for reg in ("target", "control")]
        p = sum(x.hit for x in m) / max(sum(x.pairs for x in m), 1)
        rec = sum(x.hit for x in m) / sum(x.true_pairs for x in m)
        true_t = a.loc[(enc, n, "target", "true")].retention
        share = m[0].retention / true_t if true_t else float("nan")
        sim_c = a.loc[(enc, n, "control", "none")].retention
        need = 0.8 if n <= 20 else 0.6
        parts = [  # (what, measured, the bar), each a floor
            ("pairs precision", p, 0.6 if n <= 20 else None),
            ("pairs recall", rec, 0.8 if n <= 20 else None),
            ("targets kept, as a share of the true edges'", share, need),
            ("controls kept, against similarity-only's", m[1].retention, sim_c),
        ]
        missed = "; ".join(
            f"{what} {got:.2f} < {bar:.2f} (short by {bar - got:.2f})"
            for what, got, bar in parts
            if bar is not None and not got >= bar
        )
        rows.append(
            (enc, n, p, rec, m[0].retention, true_t, share, need, m[1].retention, sim_c,
             not missed, missed)
        )  # fmt: skip
    cols = ["encoder", "blocks", "pair_precision", "pair_recall", "targets_kept", "true_edges_kept"]
    cols += ["share_of_true", "share_needed", "controls_kept", "controls_similarity", "met"]
    cols += ["missed"]
    return pd.DataFrame(rows, columns=cols)


def direction_table(scenarios) -> pd.DataFrame:
    """Which rule decided the mention graph's edges (`mentions.RULES`, and 'paraphrase'), per
    register, and how many of each rule's edges point as a true edge does."""
    found = induce_ruled(scenarios, "mentions", paraphrase=get_encoder("sentence"))
    rows = []
    for sc, (edges, _, rules) in zip(scenarios, found, strict=True):
        true = set(sc.edges)
        for e, rule in zip(edges, rules, strict=True):
            rows.append((sc.template, rule, e in true, (e[1], e[0]) in true))
    df = pd.DataFrame(rows, columns=["register", "rule", "true_direction", "reversed"])
    out = df.groupby(["register", "rule"], sort=True).agg(
        edges=("rule", "size"), true_direction=("true_direction", "sum"),
        reversed=("reversed", "sum"),
    )  # fmt: skip
    return out.reset_index()


def two_way_cost(tiers: dict, encoder: str = "lexical", delta: float = 0.5) -> pd.DataFrame:
    """What the two-way fallback (an edge's other way at TWO_WAY) does, per tier and regime:
    retention and pair precision of the mention graph with it and with mention order alone."""
    frames = []
    for fallback in ("order", "two-way"):
        for name, scs in tiers.items():
            graphs = {
                "true": [(sc.edges, None) for sc in scs],
                "mentions": induce_weighted(scs, "mentions", fallback=fallback),
            }
            runs = studies.induced_runs(scs, encoder, graphs, [1], delta)
            t = studies.tier_table(scs, runs, graphs)
            t = t[t.graph == "mentions"].assign(tier=name, fallback=fallback)
            frames.append(t[["tier", "regime", "fallback", "n", "retention", "pair_precision"]])
    out = pd.concat(frames, ignore_index=True)
    return out.pivot_table(
        index=["tier", "regime"], columns="fallback", values=["retention", "pair_precision"],
        sort=False,
    )  # fmt: skip


def register_view(table: pd.DataFrame) -> pd.DataFrame:
    """The register table for reading: per register and regime, the mention graph's pairs (first
    run -> now; the same under both encoders) and, per encoder and size, what similarity-only,
    the true edges, the mention graph (first run -> now) and it with its paraphrase link keep."""
    t = table.set_index(["register", "regime", "encoder", "blocks", "graph"])
    out = []
    for (reg, regime), _ in table.groupby(["register", "regime"], sort=False):
        m = t.loc[(reg, regime, "lexical", 20, "mentions")]
        row = {
            "register": reg,
            "regime": regime,
            "n": int(m.n),
            "pairs P": f"{m.first_pair_precision:.2f} -> {m.pair_precision:.2f}",
            "pairs R": f"{m.first_pair_recall:.2f} -> {m.pair_recall:.2f}",
        }
        for enc, n in (("lexical", 20), ("lexical", 50), ("sentence", 20), ("sentence", 50)):
            g = {x: t.loc[(reg, regime, enc, n, x)] for x in REGISTER_GRAPHS}
            row[f"{enc} {n}: sim / true"] = f"{g['none'].retention:.2f} / {g['true'].retention:.2f}"
            row[f"{enc} {n}: induced"] = (
                f"{g['mentions'].first_retention:.2f} -> {g['mentions'].retention:.2f} "
                f"[{g['mentions'].retention_lo:.2f}, {g['mentions'].retention_hi:.2f}]"
            )
            row[f"{enc} {n}: +paraphrase"] = f"{g[studies.PARAPHRASE].retention:.2f}"
        out.append(row)
    return pd.DataFrame(out)


def heldout_view(tables: dict) -> pd.DataFrame:
    """The held-out register tiers pooled (tier name -> `register_table`): per tier, encoder and
    size, the mention graph's pairs and the targets and controls it keeps, first run -> now,
    beside the true edges and similarity-only."""
    rows = []
    for tier, table in tables.items():
        a = table[table.register == "all registers"]
        a = a.set_index(["encoder", "blocks", "regime", "graph"])
        for b in register_bar(table).itertuples():
            enc, n = b.encoder, b.blocks
            m = {reg: a.loc[(enc, n, reg, "mentions")] for reg in ("target", "control")}
            first = {reg: x.first_retention for reg, x in m.items()}
            rows.append(
                {
                    "tier": tier, "encoder": enc, "blocks": n,
                    "pairs P / R": f"{b.pair_precision:.2f} / {b.pair_recall:.2f}",
                    "targets kept (first -> now)": f"{first['target']:.2f} -> "
                    f"{m['target'].retention:.2f}",
                    "true edges": f"{a.loc[(enc, n, 'target', 'true')].retention:.2f}",
                    "similarity-only": f"{a.loc[(enc, n, 'target', 'none')].retention:.2f}",
                    "controls kept (first -> now)": f"{first['control']:.2f} -> "
                    f"{m['control'].retention:.2f}",
                    "controls, similarity-only": f"{a.loc[(enc, n, 'control', 'none')].retention:.2f}",
                }
            )  # fmt: skip
    return pd.DataFrame(rows)
