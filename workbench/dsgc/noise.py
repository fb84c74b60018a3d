"""Imperfect graphs: a scenario's true edges with some dropped and spurious ones added (seeded)."""

from __future__ import annotations

from workbench.common.seeds import Draw
from workbench.dsgc.scenario import Scenario


def perturb_edges(scenario: Scenario, drop: float, spurious: int, seed: int = 0) -> Scenario:
    """An imperfect graph: drop each true edge with probability `drop`, add `spurious` random
    edges (any block depends on a random non-chain block). Seeded and deterministic."""
    if drop == 0 and spurious == 0:
        return scenario
    return scenario.with_edges(noisy_edges(scenario, drop, spurious, seed))


def noisy_edges(scenario: Scenario, drop: float, spurious: int, seed: int = 0) -> list:
    """The edge list `perturb_edges` gives the scenario (without building a new Scenario)."""
    if drop == 0 and spurious == 0:
        return list(scenario.edges)
    draw = Draw("graph-noise", scenario.id, seed, drop, spurious)
    kept = [e for e in scenario.edges if draw.below(10_000) >= drop * 10_000]
    if not spurious:
        return kept
    ids = scenario.ids
    non_chain = [b for b in ids if b not in set(scenario.chain)]
    existing = set(kept)
    for _ in range(spurious):
        for _attempt in range(20):
            e = (draw.choice(ids), draw.choice(non_chain))
            if e[0] != e[1] and e not in existing:
                existing.add(e)
                kept.append(e)
                break
    return kept
