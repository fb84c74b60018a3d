"""Beyond the paper (notebook 10): k-hop propagation, imperfect graphs and induced graphs, as
runs, tables and the frames the figures draw.

Every sweep is a protocol run on the batch engine (`runs.run_protocol`; the induced graphs as the
protocol's graph sources); intervals and paired differences come from `workbench.common.stats` (bootstrap over
seeds); the few runs worth reading one by one are re-run as `Trace`s. The paper's predictions
beside ours are in `predictions`, the notebook's prose in `prose`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench.beyond.induce import (
    BENCHMARK_PATTERNS,
    identifiers_on_edges,
    induce_weighted,
    knn_threshold,
    score_pairs,
)
from workbench.common import stats
from workbench.common.encoders import get_encoder
from workbench.common.seeds import parse_seeds
from workbench.dsgc.generator import TEMPLATES
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.protocols import TRUE, Protocol, scenarios_for
from workbench.dsgc.runs import run_protocol
from workbench.dsgc.scenario import Scenario
from workbench.dsgc.trace import Trace, run

TARGETS = ("role", "profile")
CONTROLS = ("expense", "threshold")
CELL = ["encoder", "template", "total_blocks"]


def scenario_set(seeds, sizes, templates=tuple(TEMPLATES), tier: str = "medium") -> list[Scenario]:
    """Generated scenarios: every size x template x seed (sizes outer, as the protocols do)."""
    p = Protocol.load("khop").with_(
        seeds=parse_seeds(seeds), total_blocks=tuple(sizes), templates=tuple(templates), tier=tier
    )
    return scenarios_for(p)


def subset(scenarios: list[Scenario], seeds) -> list[Scenario]:
    """The scenarios whose seed is in a seed range."""
    lo, hi = parse_seeds(seeds)
    return [s for s in scenarios if lo <= (s.seed or 0) < hi]


def per_encoder(study, sets: dict, *args, **kw) -> pd.DataFrame:
    """One study on each encoder's scenarios (`sets`: encoder -> scenarios; an empty set is
    skipped), the frames stacked: `study(scenarios, encoder, *args, **kw)`."""
    return pd.concat(
        [study(sc, enc, *args, **kw) for enc, sc in sets.items() if sc], ignore_index=True
    )


def with_setting(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with a readable `setting` label: 'similarity' or 'dsgc h=2 d=0.5'."""
    out = runs.copy()
    out["setting"] = [
        "similarity" if p == "similarity" else f"dsgc h={h} d={d:g}"
        for p, h, d in zip(out.policy, out.hops, out.delta, strict=True)
    ]
    return out


# --- 1. k-hop ------------------------------------------------------------------------------------


def khop_runs(scenarios, encoder: str, hops, deltas) -> pd.DataFrame:
    """Similarity-only and DSGC at every hops x damping on the true graph (batch engine)."""
    p = Protocol.load("khop").with_(
        encoders=(encoder,), hops=tuple(hops), deltas=tuple(float(d) for d in deltas)
    )
    return run_protocol(p, scenarios)


def rates(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-run keep rates of honeypots and fillers (for the cost of each extra hop)."""
    out = runs.copy()
    out["honeypot_rate"] = out.honeypots_kept / out.honeypots.where(out.honeypots > 0)
    out["filler_rate"] = out.fillers_kept / out.fillers.where(out.fillers > 0)
    return out


def khop_table(runs: pd.DataFrame, **boot) -> pd.DataFrame:
    """Retention with its bootstrap interval per cell and setting, beside the honeypot and
    filler keep rates and the largest share of support that landed off the chain."""
    keys = [*CELL, "policy", "hops", "delta"]
    r = rates(runs)
    t = stats.interval_table(r, keys, **boot)
    extra = (
        r.groupby(keys, sort=False)
        .agg(
            honeypots_kept=("honeypot_rate", "mean"),
            fillers_kept=("filler_rate", "mean"),
            off_chain_support=("off_chain_support", "max"),
        )
        .reset_index()
    )
    return t.merge(extra, on=keys, how="left", sort=False)


def hop_gain(runs: pd.DataFrame, base: int = 1, other: int = 2, **boot) -> pd.DataFrame:
    """Paired on the same seeds: retention at `other` hops minus at `base` hops, per cell and
    damping (up: seeds the extra hops rescued; down: seeds they lost)."""
    d = runs[runs.policy == "dsgc"]
    return stats.paired_table(d, [*CELL, "delta"], "hops", base, other, **boot)


def unchanged_beyond(runs: pd.DataFrame, hops: int) -> int:
    """How many runs keep a different set of chain blocks, honeypots or fillers at hops + 1 than
    at `hops` (same scenario, encoder and damping)."""
    d = runs[runs.policy == "dsgc"]
    keys = ["scenario_id", "encoder", "delta"]
    cols = ["chain_kept", "honeypots_kept", "fillers_kept", "full_chain_retained"]
    a = d[d.hops == hops].set_index(keys)[cols].sort_index()
    b = d[d.hops == hops + 1].set_index(keys)[cols].sort_index()
    if a.empty or b.empty:
        return 0
    return int((a != b.reindex(a.index)).any(axis=1).sum())


def _depth(pre: dict, block: str, seen: tuple = ()) -> int:
    if block in seen:  # a cycle: no longer path through it
        return 0
    return max((1 + _depth(pre, p, (*seen, block)) for p in pre.get(block, ())), default=0)


def longest_path(scenarios) -> int:
    """The most edges on any dependency path in the scenarios' graphs (chain depth - 1 here)."""
    best = 0
    for sc in scenarios:
        pre: dict[str, list[str]] = {}
        for d, p in sc.edges:
            pre.setdefault(d, []).append(p)
        best = max(best, max((_depth(pre, b) for b in pre), default=0))
    return best


def best_damping(table: pd.DataFrame, min_hops: int = 2) -> pd.DataFrame:
    """Per encoder and size: the target retention at each damping (hops >= min_hops, averaged over
    the hops and both targets) and whether it is the best there (ties all count as best)."""
    t = table[(table.policy == "dsgc") & (table.hops >= min_hops) & table.template.isin(TARGETS)]
    g = t.groupby(["encoder", "total_blocks", "delta"], sort=False)["mean"].mean().reset_index()
    g["best"] = g["mean"] >= g.groupby(["encoder", "total_blocks"])["mean"].transform("max") - 1e-12
    return g


def still_lost(runs: pd.DataFrame, min_hops: int = 2) -> pd.DataFrame:
    """The k-hop runs (hops >= min_hops) that still lose a chain block."""
    d = runs[(runs.policy == "dsgc") & (runs.hops >= min_hops) & ~runs.full_chain_retained]
    cols = [*CELL, "seed", "hops", "delta", "displaced"]
    return d[cols].sort_values(cols[:-1], kind="stable").reset_index(drop=True)


def loss_traces(lost: pd.DataFrame, scenarios, limit: int = 12) -> pd.DataFrame:
    """Trace each lost run (first `limit` distinct scenario x encoder x damping, lowest hops):
    the displaced block and its rank, the competitor at the cutoff, the margins."""
    by_id = {(s.template, s.seed, len(s.blocks)): s for s in scenarios}
    first = lost.drop_duplicates(["encoder", "template", "total_blocks", "seed", "delta"])
    rows = []
    for r in first.head(limit).itertuples():
        sc = by_id[(r.template, r.seed, r.total_blocks)]
        policy = PolicySetting("dsgc", hops=int(r.hops), delta=float(r.delta))
        t = Trace(sc, run(sc, get_encoder(r.encoder), policy), r.encoder)
        d = t.displaced[0]
        rows.append(
            {
                "encoder": r.encoder,
                "template": r.template,
                "total_blocks": r.total_blocks,
                "seed": r.seed,
                "hops": int(r.hops),
                "delta": float(r.delta),
                "displaced": ",".join(t.displaced),
                "displaced_rank": t.chain_ranks[d],
                "top_non_chain": t.top_non_chain,
                "margin": t.margin,
                "competitor": t.competitor,
                "competitor_margin": t.competitor_margin,
                "budget": t.retention.budget,
                "verdict": t.verdict(),
            }
        )
    return pd.DataFrame(rows)


# --- 2. imperfect graphs -------------------------------------------------------------------------


def graph_runs(scenarios, encoder: str, hops, delta: float, noise) -> pd.DataFrame:
    """Similarity-only and DSGC at each hops on noisy graphs: (drop fraction, spurious edges)."""
    p = Protocol.load("graph").with_(
        encoders=(encoder,),
        hops=tuple(hops),
        deltas=(float(delta),),
        graph_noise=tuple((float(a), int(b)) for a, b in noise),
    )
    return run_protocol(p, scenarios)


def versus_similarity(runs: pd.DataFrame, extra=("drop", "spurious"), **boot) -> pd.DataFrame:
    """Paired on the same seeds: each DSGC setting minus similarity-only, per cell (and per noise
    level). up: seeds DSGC kept and similarity lost; down: the reverse."""
    r = with_setting(runs)
    keys = [*CELL, *extra]
    out = []
    for setting in sorted(set(r.setting) - {"similarity"}):
        part = r[r.setting.isin(["similarity", setting])]
        t = stats.paired_table(part, keys, "setting", "similarity", setting, **boot)
        t.insert(len(keys), "setting", setting)
        out.append(t)
    return pd.concat(out, ignore_index=True)


def graph_table(runs: pd.DataFrame, **boot) -> pd.DataFrame:
    """Retention with its interval per cell, setting and noise level."""
    r = with_setting(runs)
    return stats.interval_table(r, [*CELL, "setting", "drop", "spurious"], **boot)


def identical_to_similarity(runs: pd.DataFrame, drop: float = 1.0, spurious: int = 0) -> float:
    """Share of DSGC runs at a noise level that keep exactly what similarity-only keeps (same
    chain blocks, honeypots and fillers), seed by seed."""
    cols = ["chain_kept", "honeypots_kept", "fillers_kept", "full_chain_retained"]
    keys = ["scenario_id", "encoder"]
    at = runs[(runs["drop"] == drop) & (runs["spurious"] == spurious)]
    sim = at[at.policy == "similarity"].set_index(keys)[cols]
    d = at[at.policy == "dsgc"]
    if d.empty:
        return float("nan")
    same = (d.set_index(keys)[cols] == sim.reindex(d.set_index(keys).index)).all(axis=1)
    return float(same.mean())


# --- 3. induced graphs ---------------------------------------------------------------------------


INDUCERS = ("mentions", "gated-knn", "handles", "knn")


PARAPHRASE = "mentions+paraphrase"  # the mentions inducer with its gated paraphrase link


def induced_graphs(
    scenarios, encoder: str, k: int | None = None, threshold=None, paraphrase: bool = False
) -> dict:
    """(edges, confidence per edge or None) lists by graph name: 'true' (the scenarios' own
    edges) and each inducer of INDUCERS (the knn ones with this encoder); with `paraphrase`,
    also PARAPHRASE (its link from the sentence encoder, whatever `encoder` ranks with)."""
    enc = get_encoder(encoder)
    kw = {} if k is None else {"k": k}
    th = knn_threshold(encoder) if threshold is None else threshold
    out = {"true": [(sc.edges, None) for sc in scenarios]}
    for name in INDUCERS:
        if name in ("knn", "gated-knn"):
            out[name] = induce_weighted(scenarios, name, enc, threshold=th, **kw)
        elif name == "handles":
            out[name] = induce_weighted(scenarios, name, patterns=BENCHMARK_PATTERNS)
        else:
            out[name] = induce_weighted(scenarios, name)
    if paraphrase:
        out[PARAPHRASE] = induce_weighted(scenarios, "mentions", paraphrase=get_encoder("sentence"))
    return out


def edge_quality(scenarios, graphs: dict, encoder: str, **boot) -> pd.DataFrame:
    """Per graph, template and size: edges per scenario, precision and recall against the true
    edges as pairs (direction ignored, what the inducers are judged on) and directed, pooled over
    seeds with a bootstrap interval over seeds, and the share of induced edges that join two
    fillers."""
    rows = []
    for name, found in graphs.items():
        for sc, (es, _) in zip(scenarios, found, strict=True):
            a, b = set(map(tuple, es)), set(sc.edges)
            ua, ub = {frozenset(e) for e in a}, {frozenset(e) for e in b}
            kind = dict(zip(sc.ids, sc.kinds, strict=True))
            fill = sum(kind[d] == "filler" and kind[p] == "filler" for d, p in a)
            rows.append(
                (name, sc.template, len(sc.blocks), sc.seed, len(a), len(b), len(a & b),
                 len(ua), len(ub), len(ua & ub), fill)
            )  # fmt: skip
    cols = ["graph", "template", "total_blocks", "seed", "induced", "true", "hit"]
    df = pd.DataFrame(rows, columns=[*cols, "pairs", "true_pairs", "pair_hit", "fill"])
    out = []
    for key, g in df.groupby(["graph", "template", "total_blocks"], sort=False):
        ci = [
            stats.ratio_interval(g[num].to_numpy(), g[den].to_numpy(), **boot)
            for num, den in (
                ("pair_hit", "pairs"), ("pair_hit", "true_pairs"), ("hit", "induced"), ("hit", "true")
            )
        ]  # fmt: skip
        fill = g.fill.sum() / g.induced.sum() if g.induced.sum() else float("nan")
        out.append(
            (encoder, *key, len(g), g.induced.mean(), *(x for c in ci for x in (c.mean, c.lo, c.hi)), fill)
        )  # fmt: skip
    cols = ["encoder", "graph", "template", "total_blocks", "n", "edges_per_scenario"]
    for m in ("pair_precision", "pair_recall", "precision", "recall"):
        cols += [m, f"{m}_lo", f"{m}_hi"]
    cols += ["filler_pairs"]  # share of induced edges joining two fillers
    return pd.DataFrame(out, columns=cols)


def identifier_sharing(scenarios) -> pd.DataFrame:
    """Per template: the share of true edges whose two blocks share an identifier, and whose
    dependent names an identifier the prerequisite defines (a hand-off), by the default patterns."""
    rows, memo = [], {}
    for sc in scenarios:
        for x in identifiers_on_edges(sc, BENCHMARK_PATTERNS, memo):
            rows.append((sc.template, x.shared, x.handed_off))
    df = pd.DataFrame(rows, columns=["template", "shared", "handed_off"])
    return (
        df.groupby("template", sort=False)
        .agg(
            true_edges=("shared", "size"),
            shared=("shared", "mean"),
            handed_off=("handed_off", "mean"),
        )
        .reset_index()
    )


def induced_runs(scenarios, encoder: str, graphs: dict, hops, delta: float) -> pd.DataFrame:
    """Similarity-only (once, as graph 'none'), then DSGC at each hops on each graph (support
    weighted by each edge's confidence where the inducer gives one): the `induced` protocol run
    with these graphs as its sources, one frame."""
    names = tuple(graphs)
    sources = {n: (lambda _scs, _enc, f=graphs[n]: f) for n in names if n != TRUE}
    p = Protocol.load("induced").with_(
        encoders=(encoder,), hops=tuple(int(h) for h in hops), deltas=(float(delta),), graphs=names
    )
    runs = run_protocol(p, scenarios, sources=sources)
    blind = runs.policy == "similarity"  # the same on every graph: kept once
    sim = runs[blind & (runs.graph == names[0])].assign(graph="none")
    return pd.concat([sim, runs[~blind]]).sort_index(kind="stable").reset_index(drop=True)


def induced_table(runs: pd.DataFrame, **boot) -> pd.DataFrame:
    """Retention with its interval per cell, graph and setting."""
    r = with_setting(runs)
    return stats.interval_table(r, [*CELL, "graph", "setting"], **boot)


def versus_true(runs: pd.DataFrame, **boot) -> pd.DataFrame:
    """Paired on the same seeds: DSGC on each induced graph minus DSGC on the true graph, and
    minus similarity-only, per cell and hops."""
    r = with_setting(runs)
    d = r[r.policy == "dsgc"]
    out = []
    for name in sorted(set(d.graph) - {"true"}):
        for setting in sorted(set(d.setting)):
            part = d[d.graph.isin(["true", name]) & (d.setting == setting)]
            t = stats.paired_table(part, CELL, "graph", "true", name, **boot)
            t.insert(len(CELL), "graph", name)
            t.insert(len(CELL) + 1, "setting", setting)
            t.insert(len(CELL) + 2, "against", "true")
            out.append(t)
    sim = r[r.policy == "similarity"].copy()
    for name in sorted(set(d.graph)):
        for setting in sorted(set(d.setting)):
            part = pd.concat([sim, d[(d.graph == name) & (d.setting == setting)]])
            t = stats.paired_table(part, CELL, "policy", "similarity", "dsgc", **boot)
            t.insert(len(CELL), "graph", name)
            t.insert(len(CELL) + 1, "setting", setting)
            t.insert(len(CELL) + 2, "against", "similarity")
            out.append(t)
    return pd.concat(out, ignore_index=True)


def keep_rates(view: pd.DataFrame) -> pd.DataFrame:
    """The honeypot and filler keep rates and the largest off-chain support per cell and hops of
    a k-hop table at one damping (one row each: khop_table already aggregated the seeds)."""
    cols = [*CELL, "hops", "honeypots_kept", "fillers_kept", "off_chain_support"]
    return view[cols].reset_index(drop=True)


# --- the hand-written tier (data/handwritten/: text the generator did not write) -----------------


def tier_runs(scenarios, encoder: str = "lexical", delta: float = 0.5) -> pd.DataFrame:
    """Similarity-only and one-hop DSGC on the true edges and on each inducer's, per scenario."""
    return induced_runs(scenarios, encoder, induced_graphs(scenarios, encoder), [1], delta)


def tier_table(scenarios, runs: pd.DataFrame, graphs: dict, **boot) -> pd.DataFrame:
    """Per regime and graph: edge precision and recall as pairs (pooled) and the full-chain
    retention of DSGC on that graph (similarity-only as graph 'none'), with a bootstrap interval
    over the scenarios."""
    regime = {sc.id: sc.regime for sc in scenarios}
    r = runs.assign(regime=runs.scenario_id.map(regime), unit=runs.scenario_id)
    ret = stats.interval_table(r, ["regime", "graph"], unit="unit", **boot)
    rows = []
    for name, found in graphs.items():
        for sc, (es, _) in zip(scenarios, found, strict=True):
            s = score_pairs(es, sc.edges)
            rows.append((sc.regime, name, s.induced, s.true, s.hit))
    q = pd.DataFrame(rows, columns=["regime", "graph", "pairs", "true_pairs", "hit"])
    q = q.groupby(["regime", "graph"], sort=False).sum().reset_index()
    q["pair_precision"] = q.hit / q.pairs.where(q.pairs > 0)
    q["pair_recall"] = q.hit / q.true_pairs
    out = ret.merge(q[["regime", "graph", "pairs", "pair_precision", "pair_recall"]], how="left")
    return out.rename(columns={"mean": "retention", "lo": "retention_lo", "hi": "retention_hi"})


# --- the study's grid and its chosen setting ------------------------------------------------------

HOPS = (1, 2, 3, 4)
DELTAS = (0.25, 0.5, 0.75, 1.0)
NOISE = tuple((d, 0) for d in (0.0, 0.25, 0.5, 0.75, 1.0)) + tuple((0.0, s) for s in (1, 2, 4, 8))


def chosen_setting(khop: pd.DataFrame, encoder: str = "lexical") -> tuple[float, int]:
    """(damping, hops) the later parts use: chosen on `encoder`'s k-hop table."""
    delta = choose_damping(khop, encoder)
    return delta, choose_hops(khop, delta, encoder)


# --- the notebook's three sections, one function each (notebook 10 and study_tables) -------------


@dataclass(frozen=True)
class KhopPart:
    """Section 1: the k-hop runs, their table, and the paired gain of one hop -> two."""

    runs: pd.DataFrame
    table: pd.DataFrame
    gains: pd.DataFrame


def khop_part(sets: dict, hops=HOPS, deltas=DELTAS, **boot) -> KhopPart:
    runs = per_encoder(khop_runs, sets, hops, deltas)
    return KhopPart(runs, khop_table(runs, **boot), hop_gain(runs, 1, 2, **boot))


@dataclass(frozen=True)
class GraphPart:
    """Section 2: DSGC on noisy graphs beside similarity-only, paired, and (when the chosen
    hops is not 1) the chosen hops against one hop on each noisy graph."""

    runs: pd.DataFrame
    table: pd.DataFrame
    versus: pd.DataFrame
    hop_gain: pd.DataFrame | None
    identical: dict


def graph_part(sets: dict, hops: int, delta: float, noise=NOISE, **boot) -> GraphPart:
    runs = per_encoder(graph_runs, sets, sorted({1, hops}), delta, noise)
    gain = graph_hop_gain(runs, 1, hops, **boot) if hops != 1 else None
    return GraphPart(runs, graph_table(runs, **boot), versus_similarity(runs, **boot), gain,
                     identical_to_similarity(runs))  # fmt: skip


@dataclass(frozen=True)
class InducedPart:
    """Section 3: the induced graphs, their edge quality, DSGC over them, and DSGC over them
    against the true graph and similarity-only (paired)."""

    graphs: dict
    quality: pd.DataFrame
    runs: pd.DataFrame
    table: pd.DataFrame
    versus: pd.DataFrame


def induced_part(sets: dict, hops: int, delta: float, **boot) -> InducedPart:
    graphs = {e: induced_graphs(sc, e) for e, sc in sets.items() if sc}
    quality = per_encoder(lambda sc, e: edge_quality(sc, graphs[e], e, **boot), sets)
    runs = per_encoder(lambda sc, e: induced_runs(sc, e, graphs[e], sorted({1, hops}), delta), sets)
    return InducedPart(graphs, quality, runs, induced_table(runs, **boot),
                       versus_true(runs, **boot))  # fmt: skip


def study_tables(
    scenarios,
    encoder: str,
    delta: float,
    hops: int,
    all_hops=HOPS,
    deltas=DELTAS,
    noise=NOISE,
    **boot,
) -> dict[str, pd.DataFrame]:
    """Every table of the three sections for one encoder, by name (beyond_<tag>_<name>.csv):
    the notebook's section functions on this encoder's scenarios."""
    sets = {encoder: scenarios}
    one = khop_part(sets, all_hops, deltas, **boot)
    two = graph_part(sets, hops, delta, noise, **boot)
    three = induced_part(sets, hops, delta, **boot)
    return {
        "khop": one.table,
        "gain": one.gains,
        "graph": two.table,
        "graph_vs_similarity": two.versus,
        "edges": three.quality,
        "induced": three.table,
        "induced_vs": three.versus,
    }  # fmt: skip


# --- choosing the k-hop setting -----------------------------------------------------------------


def graph_hop_gain(runs: pd.DataFrame, base: int = 1, other: int = 2, **boot) -> pd.DataFrame:
    """Paired on the same seeds: on each noisy graph, DSGC at `other` hops minus at `base` hops."""
    d = runs[runs.policy == "dsgc"]
    return stats.paired_table(d, [*CELL, "drop", "spurious"], "hops", base, other, **boot)


def choose_damping(table: pd.DataFrame, encoder: str = "lexical") -> float:
    """The most damped delta (smallest) among those best at every size for `encoder`."""
    b = best_damping(table[table.encoder == encoder])
    best_everywhere = b.groupby("delta")["best"].all()
    return float(min(best_everywhere[best_everywhere].index))


def choose_hops(table: pd.DataFrame, delta: float, encoder: str = "lexical") -> int:
    """The fewest hops reaching the best mean target retention (over sizes) at `delta`."""
    t = table[
        (table.encoder == encoder)
        & (table.policy == "dsgc")
        & (table.delta == delta)
        & table.template.isin(TARGETS)
    ]
    m = t.groupby("hops")["mean"].mean()
    return int(min(m[m >= m.max() - 1e-12].index))


# --- display helpers -------------------------------------------------------------------------------


def pivot(table: pd.DataFrame, index, column: str, digits: int = 2) -> pd.DataFrame:
    """'mean [lo, hi]' cells: one row per `index`, one column per value of `column` (first-seen
    order for both)."""
    t = table.copy()
    t["cell"] = [
        stats.fmt_interval(m, lo, hi, digits)
        for m, lo, hi in zip(t["mean"], t.lo, t.hi, strict=True)
    ]
    out = t.pivot_table(
        index=list(index), columns=column, values="cell", aggfunc="first", sort=False
    )
    out.columns = [f"{column}={c:g}" if isinstance(c, float | int) else str(c) for c in out.columns]
    return out.reset_index()


def diff_cells(paired: pd.DataFrame) -> pd.DataFrame:
    """A paired table with its difference as one readable cell: '+0.122 [+0.094, +0.150]'."""
    out = paired.copy()
    out["difference"] = [
        stats.fmt_diff(d, lo, hi) for d, lo, hi in zip(out["diff"], out.lo, out.hi, strict=True)
    ]
    return out.drop(columns=["diff", "lo", "hi"])


def khop_frame(table: pd.DataFrame, delta: float) -> pd.DataFrame:
    """The k-hop table at one damping for the figure: similarity-only drawn at hops 0 (no
    propagation ranks exactly as similarity), and an 'encoder, size' panel label."""
    sim = table[table.policy == "similarity"].assign(hops=0)
    out = pd.concat([sim, table[(table.policy == "dsgc") & (table.delta == delta)]])
    out["panel"] = [f"{e}, {n} blocks" for e, n in zip(out.encoder, out.total_blocks, strict=True)]
    return out.reset_index(drop=True)


def graph_frame(table: pd.DataFrame, encoder: str = "lexical") -> pd.DataFrame:
    """The imperfect-graph table for the figure: the drop sweep and the spurious sweep stacked,
    x the noise level, `noise` which sweep, `size` the store size."""
    t = table[table.encoder == encoder]
    drop = t[t.spurious == 0].assign(noise="share of true edges dropped", x=lambda d: d["drop"])
    spur = t[t["drop"] == 0].assign(noise="spurious edges added", x=lambda d: d.spurious * 1.0)
    out = pd.concat([drop, spur], ignore_index=True)
    out["size"] = [f"{n} blocks" for n in out.total_blocks]
    return out


def khop_record(view: pd.DataFrame) -> dict:
    """{'encoder/template/size': {hops: mean}} of a k-hop table at one damping (hops 0 =
    similarity-only), for the notebook's records."""
    out: dict = {}
    for r in view.itertuples():
        key = f"{r.encoder}/{r.template}/{r.total_blocks}"
        out.setdefault(key, {})[str(int(r.hops))] = float(r.mean)
    return out


def induced_pivot(table: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """The induced-graph table as one row per cell and one column per graph and setting."""
    t = table.assign(
        graph=[
            "similarity" if g == "none" else f"{g} {s}"
            for g, s in zip(table.graph, table.setting, strict=True)
        ]
    )
    return pivot(t, CELL, "graph", digits)
