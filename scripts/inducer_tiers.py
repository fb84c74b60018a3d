"""The mention inducer on every tier, one line per tier, regime and size: what
data/calibration/inducer.md records for each variant. `python scripts/inducer_tiers.py [--method
NAME] [--tiers a,b,...]`.

Tiers: the generated medium and hard tiers at seeds 1000-1039 (seeds no notebook evaluates; four
templates, 20 and 50 blocks), the hand-written tiers A, B, C (data/handwritten/, tuned on) and D
(data/handwritten/tier_d/, 20 and 50 blocks), tiers E-H, the registers of tier I (tuned on), J
(Japanese), K and L (data/handwritten/tier_k/, tier_l/: held out from the reader's changes; their
READMEs say how each was used since), the paper's worked example and the closure study's agent logs.
Per line: pairs a scenario, pair precision and recall (pooled), and DSGC's full-chain retention over
the induced edges beside similarity-only ("sim") and the true edges ("true"); then, per template,
where DSGC over the induced edges keeps fewer chains than similarity-only (lexical encoder, one hop,
budget multiplier 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.beyond import studies, tiers  # noqa: E402
from workbench.beyond.induce import score_pairs  # noqa: E402
from workbench.dsgc.generator import worked_example  # noqa: E402
from workbench.dsgc.scenario import load_scenarios  # noqa: E402


def all_tiers() -> dict:
    hw = ROOT / "data" / "handwritten"
    return {
        "gen-medium": lambda: studies.scenario_set("1000:1040", [20, 50], tier="medium"),
        "gen-hard": lambda: studies.scenario_set("1000:1040", [20, 50], tier="hard"),
        "A": lambda: load_scenarios(hw / "scenarios.jsonl"),
        "B": lambda: load_scenarios(hw / "blind" / "scenarios.jsonl"),
        "C": lambda: load_scenarios(hw / "blind2" / "scenarios.jsonl"),
        "D": lambda: load_scenarios(hw / "tier_d" / "scenarios.jsonl"),
        "E": lambda: load_scenarios(hw / "tier_e" / "scenarios.jsonl"),
        "F": lambda: load_scenarios(hw / "tier_f" / "scenarios.jsonl"),
        "G": lambda: load_scenarios(hw / "tier_g" / "scenarios.jsonl"),
        "H": lambda: load_scenarios(hw / "tier_h" / "scenarios.jsonl"),
        "I": lambda: load_scenarios(hw / "tier_i" / "scenarios.jsonl"),
        "J": lambda: load_scenarios(hw / "tier_j" / "scenarios.jsonl"),
        "K": lambda: load_scenarios(hw / "tier_k" / "scenarios.jsonl"),
        "L": lambda: load_scenarios(hw / "tier_l" / "scenarios.jsonl"),
        "worked": lambda: [worked_example()],
        "logs": lambda: tiers.log_tier(tiers.closure_logs(ROOT / "data" / "logs")),
    }


def measure(name: str, scenarios, method: str) -> list[str]:
    lines = []
    for n in sorted({len(s.blocks) for s in scenarios}) if name != "logs" else [None]:
        sub = [s for s in scenarios if n is None or len(s.blocks) == n]
        graphs = studies.induced_graphs(sub, "lexical")
        graphs = {k: graphs[k] for k in ("true", method)}
        runs = studies.induced_runs(sub, "lexical", graphs, [1], 0.5)
        runs = runs.assign(graph=runs["graph"].fillna("none"))
        regime = {s.id: s.regime for s in sub}
        template = {s.id: s.template for s in sub}
        runs = runs.assign(
            regime=runs.scenario_id.map(regime), template=runs.scenario_id.map(template)
        )
        for reg in dict.fromkeys(s.regime for s in sub):
            scs = [s for s in sub if s.regime == reg]
            tot = [0, 0, 0]
            for s, (es, _) in zip(sub, graphs[method], strict=True):
                if s.regime == reg:
                    sc = score_pairs(es, s.edges)
                    tot = [tot[0] + sc.induced, tot[1] + sc.true, tot[2] + sc.hit]
            r = runs[runs.regime == reg].groupby("graph")["full_chain_retained"].mean()
            p = tot[2] / tot[0] if tot[0] else float("nan")
            lines.append(
                f"{name:<11}{'' if n is None else n:>4} {reg:<8} n={len(scs):<4}"
                f"pairs/sc {tot[0] / len(scs):5.2f}  P {p:4.2f}  R {tot[2] / tot[1]:4.2f}   "
                f"ret {r.get(method, float('nan')):4.2f} (sim {r.get('none'):4.2f}, "
                f"true {r.get('true'):4.2f})"
            )
        by = runs.groupby(["template", "graph"])["full_chain_retained"].mean().unstack()
        below = by[by[method] < by["none"] - 1e-9]
        for t, row in below.iterrows():
            lines.append(
                f"{'':<16}below similarity-only: {t} {row[method]:.2f} < {row['none']:.2f}"
            )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--method", default="mentions")
    ap.add_argument("--tiers", default=",".join(all_tiers()))
    a = ap.parse_args()
    pd.set_option("display.width", 200)
    for name in a.tiers.split(","):
        for line in measure(name, all_tiers()[name](), a.method):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
