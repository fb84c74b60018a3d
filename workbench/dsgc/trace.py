"""Per-run diagnostics: ranks, displaced blocks, competitors, margins, Definitions 1 and 2."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pandas as pd

from workbench.common.encoders import get_encoder
from workbench.dsgc.generator import generate, worked_example
from workbench.dsgc.policies import PolicySetting, Retention, eviction_margin
from workbench.dsgc.scenario import Scenario

WORKED = "worked"  # the paper's section 2.2 example, as a template name settings accept


def run(scenario: Scenario, encoder, policy, multiplier: float = 2.0) -> Retention:
    """Encode a scenario (through the encoder's cache), score it with a policy, keep under C."""
    emb = encoder(scenario.texts)
    q = encoder([scenario.query])[0]
    return policy(emb, q, scenario.edge_index(), scenario.costs, scenario.budget(multiplier))


@dataclass(frozen=True)
class Setting:
    """One run's every knob, as the explorer's controls hold them: which scenario (template,
    seed, blocks), which encoder, the budget multiplier, and the policy's knobs (`policy_setting`:
    the one shape a policy takes, with the default damping)."""

    template: str = "profile"
    seed: int = 0
    encoder: str = "lexical"
    policy: str = "dsgc"
    multiplier: float = 2.0
    lam: float = 1.0
    tau: float = 0.25
    hops: int = 1
    total_blocks: int = 20

    def with_(self, **changes) -> Setting:
        return replace(self, **changes)

    @property
    def policy_setting(self) -> PolicySetting:
        return PolicySetting(self.policy, lam=self.lam, tau=self.tau, hops=self.hops)


@lru_cache(maxsize=256)
def scenario_for(template: str, seed: int, total_blocks: int = 20) -> Scenario:
    """A generated scenario (memoized), or the worked example for template 'worked'."""
    if template == WORKED:
        return worked_example()
    return generate(template, int(seed), int(total_blocks))


def run_setting(setting: Setting, scenario: Scenario | None = None, **changes) -> Trace:
    """Run one setting (with optional changes) and return its Trace. A given `scenario` (e.g.
    one read from a file) replaces the generated one that template, seed and blocks name."""
    s = setting.with_(**changes) if changes else setting
    sc = scenario if scenario is not None else scenario_for(s.template, s.seed, s.total_blocks)
    return Trace(sc, run(sc, get_encoder(s.encoder), s.policy_setting, s.multiplier), s.encoder)


def indirect_prerequisites(scenario: Scenario, sims: np.ndarray) -> dict[str, str]:
    """Definition 1: chain block -> witness, for chain blocks with a more query-similar chain dependent.

    The witness is the most query-similar such dependent (ties: store order).
    """
    pos = scenario.index()
    chain = set(scenario.chain)
    out: dict[str, tuple[float, int, str]] = {}
    for dep, pre in scenario.edges:
        if dep in chain and pre in chain and sims[pos[pre]] < sims[pos[dep]]:
            cand = (float(sims[pos[dep]]), -pos[dep], dep)
            if pre not in out or cand > out[pre]:
                out[pre] = cand
    return {pre: out[pre][2] for pre in scenario.chain if pre in out}


@dataclass(frozen=True, repr=False)
class Trace:
    """Everything one run decided and why, for one scenario, encoder and policy."""

    scenario: Scenario
    retention: Retention
    encoder: str

    # --- identities ---
    @property
    def policy(self) -> str:
        return self.retention.policy

    @property
    def kept_ids(self) -> list[str]:
        ids = self.scenario.ids
        return [ids[i] for i in self.retention.order if self.retention.kept[i]]

    @property
    def ranking(self) -> list[str]:
        ids = self.scenario.ids
        return [ids[i] for i in self.retention.order]

    def _chain_pos(self) -> list[int]:
        pos = self.scenario.index()
        return [pos[c] for c in self.scenario.chain]

    # --- chain diagnostics ---
    @property
    def chain_ranks(self) -> dict[str, int]:
        ranks = self.retention.ranks
        return {
            c: int(ranks[p]) for c, p in zip(self.scenario.chain, self._chain_pos(), strict=True)
        }

    @property
    def displaced(self) -> list[str]:
        """Chain blocks not kept, best-ranked first."""
        kept = self.retention.kept
        out = [
            c for c, p in zip(self.scenario.chain, self._chain_pos(), strict=True) if not kept[p]
        ]
        return sorted(out, key=lambda c: self.chain_ranks[c])

    @property
    def full_chain_retained(self) -> bool:
        return not self.displaced

    @property
    def prereq_retention(self) -> float:
        """Fraction of prerequisites (chain blocks that some chain block depends on) kept."""
        chain = set(self.scenario.chain)
        prereqs = sorted({p for d, p in self.scenario.edges if d in chain and p in chain})
        if not prereqs:
            return 1.0
        pos = self.scenario.index()
        return float(np.mean([self.retention.kept[pos[p]] for p in prereqs]))

    def _non_chain_order(self) -> np.ndarray:
        mask = self.scenario.chain_mask()
        return self.retention.order[~mask[self.retention.order]]

    @property
    def top_non_chain(self) -> str | None:
        order = self._non_chain_order()
        return self.scenario.ids[order[0]] if len(order) else None

    @property
    def competitor(self) -> str | None:
        """The lowest-scoring retained non-chain block (the one sitting closest to the cutoff)."""
        order = self._non_chain_order()
        kept = order[self.retention.kept[order]]
        return self.scenario.ids[kept[-1]] if len(kept) else None

    def score(self, block_id: str) -> float:
        return float(self.retention.scores[self.scenario.index()[block_id]])

    @property
    def margin(self) -> float | None:
        """Table 3: score of the top-ranked non-chain block minus the displaced block's score."""
        if not self.displaced or self.top_non_chain is None:
            return None
        return self.score(self.top_non_chain) - self.score(self.displaced[0])

    @property
    def competitor_margin(self) -> float | None:
        """Score of the lowest retained non-chain block minus the displaced block's score."""
        if not self.displaced or self.competitor is None:
            return None
        return self.score(self.competitor) - self.score(self.displaced[0])

    @property
    def eviction_margin(self) -> float | None:
        """Lowest retained score minus highest evicted score (negative: the walk skipped a block)."""
        return eviction_margin(self.retention.scores, self.retention.kept)

    # --- the paper's definitions ---
    @property
    def indirect(self) -> dict[str, str]:
        """Definition 1 on this run's encoder: indirect chain block -> witness dependent."""
        return indirect_prerequisites(self.scenario, self.retention.sims)

    @property
    def retention_failures(self) -> list[tuple[str, str]]:
        """Definition 2: (evicted indirect prerequisite, retained more-similar dependent) pairs."""
        pos = self.scenario.index()
        kept, sims = self.retention.kept, self.retention.sims
        out = []
        for pre in self.indirect:
            if kept[pos[pre]]:
                continue
            for dep, p in self.scenario.edges:
                if (
                    p == pre
                    and dep in self.scenario.chain
                    and kept[pos[dep]]
                    and sims[pos[pre]] < sims[pos[dep]]
                ):
                    out.append((pre, dep))
        return out

    @property
    def retention_stage_failure(self) -> bool:
        return bool(self.retention_failures)

    def answer(self) -> str:
        return read_answer(self.scenario, self.kept_ids)

    def row(self) -> dict:
        """The flat per-run record (the `workbench evaluate` contract plus diagnostics)."""
        sc, ret = self.scenario, self.retention
        return {
            "scenario_id": sc.id,
            "template": sc.template,
            "regime": sc.regime,
            "seed": sc.seed,
            "total_blocks": len(sc.blocks),
            "policy": self.policy,
            "encoder": self.encoder,
            **{k: ret.params[k] for k in ("lambda", "tau", "hops") if k in ret.params},
            "budget_tokens": ret.budget,
            "used_tokens": ret.used,
            "full_chain_retained": self.full_chain_retained,
            "prereq_retention": _num(self.prereq_retention),
            "retained_ids": self.kept_ids,
            "chain_ranks": self.chain_ranks,
            "top_non_chain_id": self.top_non_chain,
            "displaced": self.displaced,
            "margin": _num(self.margin),
            "competitor_id": self.competitor,
            "competitor_margin": _num(self.competitor_margin),
            "eviction_margin": _num(self.eviction_margin),
            "indirect": self.indirect,
            "retention_stage_failure": self.retention_stage_failure,
            "answer": self.answer(),
            "expected_answer": sc.answer,
        }

    def record(self) -> dict:
        """The full trace: the row plus r, pi and I for every block, in ranking order."""
        sc, ret = self.scenario, self.retention
        blocks = [
            {
                "id": sc.ids[i],
                "kind": sc.kinds[i],
                "rank": k + 1,
                "cost": int(ret.costs[i]),
                "sim": _num(ret.sims[i]),
                "r": _num(ret.r[i]),
                "pi": _num(ret.pi[i]),
                "I": _num(ret.scores[i]),
                "kept": bool(ret.kept[i]),
            }
            for k, i in enumerate(ret.order)
        ]
        chain = {
            c: {
                "rank": self.chain_ranks[c],
                "I": _num(self.score(c)),
                "pi": _num(ret.pi[sc.index()[c]]),
            }
            for c in sc.chain
        }
        return {
            **self.row(),
            "params": ret.params,
            "chain": chain,
            "retention_failures": [list(p) for p in self.retention_failures],
            "blocks": blocks,
        }

    def frame(self) -> pd.DataFrame:
        """Every block as a DataFrame row, in ranking order (for tables and charts)."""
        return pd.DataFrame(self.record()["blocks"])

    def verdict(self) -> str:
        """One line: was the chain kept, and if not, which block lost to which, by what margin."""
        head = f"{self.scenario.id} [{self.encoder}/{self.policy}, C={self.retention.budget}]"
        if self.full_chain_retained:
            return f"{head}: full chain kept ({', '.join(self.scenario.chain)})."
        d = self.displaced[0]
        return (
            f"{head}: chain broken - {', '.join(self.displaced)} evicted; {d} (rank "
            f"{self.chain_ranks[d]}) lost to {self.top_non_chain} by margin {self.margin:.3f}."
        )

    def __repr__(self) -> str:
        return f"Trace({self.verdict()})"


# --- one setting, seen several ways (notebooks, workshop, explorer) ----------------------------


def verdict_line(trace: Trace) -> str:
    """The one-line verdict: the library's Trace.verdict() plus the knobs that produced it."""
    p = trace.retention.params
    knobs = (
        f"lambda={p['lambda']:g}, tau={p['tau']:g}, hops={p['hops']}"
        if trace.policy in ("dsgc", "no-graph")
        else ""
    )
    return trace.verdict() + (f" [{knobs}]" if knobs else "")


def valley_pair(
    setting: Setting, scenario: Scenario | None = None, own: Trace | None = None
) -> tuple[Trace, Trace]:
    """The runs the semantic valley compares: no propagation (lambda 0), then DSGC at the
    setting's lambda, tau and hops (whatever policy the setting names). `own`, the setting's
    own run if already made, stands in for the one of the two it is (no run made twice)."""

    def one(policy: str) -> Trace:
        if own is not None and setting.policy == policy:
            return own
        return run_setting(setting, scenario, policy=policy)

    return one("no-graph"), one("dsgc")


def blocks_table(state: Setting) -> pd.DataFrame:
    """The store as a reader sees it before any scoring: id, kind, cost, text (store order)."""
    sc = scenario_for(state.template, state.seed, state.total_blocks)
    return pd.DataFrame(
        {"id": sc.ids, "kind": sc.kinds, "cost": sc.costs.tolist(), "text": sc.texts}
    )


def chain_table(state: Setting) -> pd.DataFrame:
    """The chain blocks before (similarity-only) and after (DSGC) propagation: similarity, r, pi,
    I, ranks, kept, and Definition 1's witness (the more query-similar dependent), chain order."""
    sim, after = run_setting(state, policy="similarity"), run_setting(state, policy="dsgc")
    pos, witness = after.scenario.index(), after.indirect
    rows = []
    for c in after.scenario.chain:
        i = pos[c]
        rows.append(
            {
                "scenario": after.scenario.id,
                "block": c,
                "sim": float(after.retention.sims[i]),
                "r": float(after.retention.r[i]),
                "pi": float(after.retention.pi[i]),
                "I": float(after.retention.scores[i]),
                "rank_similarity": sim.chain_ranks[c],
                "rank_dsgc": after.chain_ranks[c],
                "kept_similarity": bool(sim.retention.kept[i]),
                "kept_dsgc": bool(after.retention.kept[i]),
                "indirect_witness": witness.get(c, "-"),
            }
        )
    return pd.DataFrame(rows)


def _num(x):
    """Floats at fixed precision for stored outputs (None stays None)."""
    if x is None:
        return None
    return round(float(x), 6)


def read_answer(scenario: Scenario, retained_ids) -> str:
    """Answer from the retained blocks only: 'yes'/'no' when the whole chain survives, else 'unknown'.

    The reader follows the chain's links through retained text (each link's identifier must
    appear in both blocks it joins) and reads the verdict from the last chain block.
    """
    retained = set(retained_ids)
    if not set(scenario.chain) <= retained:
        return "unknown"
    facts = scenario.metadata.get("facts", {})
    texts = [scenario.block(c).text for c in scenario.chain]
    links = facts.get("links")
    if links:  # target: identifier hand-off c1 -> c2 -> c3
        for i in range(len(texts) - 1):
            if links[i + 1] not in texts[i] or links[i + 1] not in texts[i + 1]:
                return "unknown"
        return "no" if (" forbids " in texts[-1] or " may not " in texts[-1]) else "yes"
    if "reading" in facts:
        return "yes" if facts["reading"] > facts["limit"] else "no"
    if "amount" in facts:
        ok = facts["amount"] <= facts["budget"] and facts["amount"] <= facts["threshold"]
        return "yes" if ok else "no"
    return scenario.answer or "unknown"
