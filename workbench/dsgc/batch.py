"""Many scenarios under many policy settings at once: scenarios of one store size packed into
rows, each setting scored on every row in one array pass of `policies` (the same code that
scores one scenario, a batch of one). What it returns is only what the sweeps need: per
scenario and setting, the chain kept or not, how many chain blocks, honeypots and fillers
survived, and the displaced chain blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.common.encoders import get_encoder, token_cost
from workbench.dsgc.policies import PolicySetting, relevance, waves
from workbench.dsgc.scenario import Scenario, budget_for


@dataclass(frozen=True, repr=False)
class Batch:
    """Scenarios with the same number of blocks, packed row by row (store order within a row)."""

    scenarios: tuple[Scenario, ...]
    sims: np.ndarray  # (S, N) cosine of each block to its scenario's query
    costs: np.ndarray  # (S, N) token costs
    budgets: np.ndarray  # (S,) token budget C at the multiplier
    chain: np.ndarray  # (S, N) bool: block is in the labelled chain
    honeypot: np.ndarray  # (S, N) bool
    filler: np.ndarray  # (S, N) bool
    multiplier: float
    ids: np.ndarray  # (S, N) block ids

    def positions(self, k: int) -> dict[str, int]:
        """Block id -> store position in row k."""
        return dict(zip(self.ids[k].tolist(), range(self.shape[1]), strict=True))

    @property
    def shape(self) -> tuple[int, int]:
        return self.sims.shape

    def __repr__(self) -> str:
        s, n = self.shape
        return f"Batch({s} scenarios x {n} blocks, M={self.multiplier:g})"


def pack(scenarios: Sequence[Scenario], encoder, multiplier: float = 2.0) -> list[Batch]:
    """Group scenarios by store size (first-seen order) and pack each group into a Batch.

    Every unique text goes through the (cached) encoder once.
    """
    texts = sorted({t for s in scenarios for t in [s.query, *s.texts]})
    row = {t: i for i, t in enumerate(texts)}
    cost = np.array([token_cost(t) for t in texts], dtype=np.int64)
    emb = encoder(texts)
    groups: dict[int, list[Scenario]] = {}
    for sc in scenarios:
        groups.setdefault(len(sc.blocks), []).append(sc)
    out = []
    for group in groups.values():
        blocks = np.array([[row[b.text] for b in sc.blocks] for sc in group], dtype=np.int64)
        queries = np.array([row[sc.query] for sc in group], dtype=np.int64)
        # one matrix-vector product per scenario, exactly as policies.cosine computes it
        sims = np.stack([emb[b] @ emb[q] for b, q in zip(blocks, queries, strict=True)])
        costs = cost[blocks]
        chain = np.stack([sc.chain_mask() for sc in group])
        kinds = np.array([[b.kind for b in sc.blocks] for sc in group])
        mass = (costs * chain).sum(1)
        out.append(
            Batch(
                scenarios=tuple(group),
                sims=sims,
                costs=costs,
                budgets=budget_for(mass, multiplier),
                chain=chain,
                honeypot=kinds == "honeypot",
                filler=kinds == "filler",
                multiplier=float(multiplier),
                ids=np.array([[b.id for b in sc.blocks] for sc in group], dtype=object),
            )
        )
    return out


def flat_edges(batch: Batch, edges: Sequence | None = None) -> np.ndarray:
    """All rows' edges as one (|E|, 2) array of flat positions (row * N + block), row by row and
    in each scenario's edge order. `edges`: one edge list per row (default: the scenarios' own)."""
    _, n = batch.shape
    lists = [sc.edges for sc in batch.scenarios] if edges is None else edges
    if len(lists) != len(batch.scenarios):
        raise ValueError(f"{len(lists)} edge lists for {len(batch.scenarios)} scenarios")
    out = []
    for k, es in enumerate(lists):
        if len(es):
            pos = batch.positions(k)
            out.append(np.array([[pos[d], pos[p]] for d, p in es], dtype=np.int64) + k * n)
    return np.concatenate(out) if out else np.zeros((0, 2), dtype=np.int64)


def evaluate(
    batch: Batch,
    settings: Sequence[PolicySetting],
    edges: Sequence | None = None,
    confidence: Sequence | None = None,
    **columns,
) -> pd.DataFrame:
    """One row per (scenario, setting): what was kept. `edges`: one edge list per scenario (default:
    the scenarios' own), `confidence` one confidence list per scenario (default: none, every edge
    certain); extra keyword columns are copied into every row."""
    fe = flat_edges(batch, edges)
    fc = None if confidence is None else np.concatenate([np.asarray(c, float) for c in confidence])
    if fc is not None and len(fc) != len(fe):
        raise ValueError(f"{len(fc)} confidences for {len(fe)} edges")
    by_tau: dict[float, list[np.ndarray]] = {}  # the waves at each tau, once for every setting
    need = max((s.hops for s in settings if s.policy in ("dsgc", "no-graph")), default=0)
    frames = []
    for st in settings:
        w = None
        if st.policy in ("dsgc", "no-graph"):
            if st.tau not in by_tau:
                by_tau[st.tau] = waves(relevance(batch.sims, st.tau), fe, need, fc)
            w = by_tau[st.tau]
        order, kept, _, pi, _ = st.decide(batch.sims, batch.costs, batch.budgets, w=w)
        frames.append(_metrics(batch, st, order, kept, st.lam * pi, columns))
    return pd.concat(frames, ignore_index=True)


def _metrics(batch, st, order, kept, pi, columns) -> pd.DataFrame:
    sc = batch.scenarios
    chain_kept = (kept & batch.chain).sum(1)
    chain_size = batch.chain.sum(1)
    full = chain_kept == chain_size
    lost = np.full(len(sc), "", dtype=object)
    rows = np.flatnonzero(~full)
    if len(rows):  # name the displaced chain blocks, best rank first
        o = order[rows]
        ids = np.take_along_axis(batch.ids[rows], o, 1)
        gone = np.take_along_axis(batch.chain[rows] & ~kept[rows], o, 1)
        lost[rows] = [",".join(i[g]) for i, g in zip(ids, gone, strict=True)]
    total = pi.sum(1)
    off = np.where(total > 0, (pi * ~batch.chain).sum(1) / np.where(total > 0, total, 1), 0.0)
    return pd.DataFrame(
        {
            "scenario_id": [s.id for s in sc],
            "template": [s.template for s in sc],
            "regime": [s.regime for s in sc],
            "seed": [s.seed for s in sc],
            "total_blocks": batch.shape[1],
            **columns,
            "policy": st.policy,
            "lambda": st.lam if st.reads_graph else 0.0,  # the knobs a graph-blind ranking ignores
            "hops": st.hops if st.reads_graph else 0,
            "delta": st.delta if st.reads_graph else 0.0,
            "full_chain_retained": full,
            "chain_kept": chain_kept,
            "chain_size": chain_size,
            "honeypots_kept": (kept & batch.honeypot).sum(1),
            "honeypots": batch.honeypot.sum(1),
            "fillers_kept": (kept & batch.filler).sum(1),
            "fillers": batch.filler.sum(1),
            "off_chain_support": off,  # share of lambda * pi landing on non-chain blocks
            "displaced": lost,
        }
    )


# --- the driver: the one place that packs scenarios and scores them -------------------------------


@dataclass(frozen=True)
class Graph:
    """One graph the scenarios are scored on: the columns that label its rows, the settings
    scored on it, each scenario's edge list (`edges(scenario)`; None: the scenario's own) and,
    for a weighted graph, each edge's confidence (`confidence(scenario)`)."""

    columns: dict
    settings: Sequence[PolicySetting]
    edges: Callable[[Scenario], Sequence] | None = None
    confidence: Callable[[Scenario], Sequence] | None = None  # per edge; None: all certain


def run(
    scenarios: Sequence[Scenario],
    encoders: Sequence[str],
    graphs: Sequence[Graph],
    multipliers: Sequence[float] = (2.0,),
) -> pd.DataFrame:
    """Every encoder x budget multiplier x store-size group x graph, scored under the graph's
    settings: one row per (scenario, setting), labelled with the encoder, the multiplier and the
    graph's columns."""
    frames = []
    for enc_name in encoders:
        encoder = get_encoder(enc_name)
        for mult in multipliers:
            for packed in pack(scenarios, encoder, mult):
                for g in graphs:
                    edges = None if g.edges is None else [g.edges(sc) for sc in packed.scenarios]
                    conf = (
                        None
                        if g.confidence is None
                        else [g.confidence(sc) for sc in packed.scenarios]
                    )
                    frames.append(
                        evaluate(
                            packed,
                            g.settings,
                            edges,
                            conf,
                            encoder=enc_name,
                            budget_multiplier=mult,
                            **g.columns,
                        )
                    )
    return pd.concat(frames, ignore_index=True)
