"""The calibration criteria: the paper's regimes (controls easy, targets hard for similarity),
measured on a seed range."""

from __future__ import annotations

import pandas as pd

from workbench.dsgc.protocols import Protocol
from workbench.dsgc.runs import run_protocol

CRITERIA = (
    # (name, description) - the calibration targets of the engine issue (M=2, lambda=1, tau=0.25)
    (
        "controls_all_policies",
        "every control template: full-chain retention >= 0.90 under all three policies",
    ),
    ("targets_similarity", "every target template: similarity-only <= 0.35"),
    ("targets_dsgc", "every target template: DSGC >= 0.80"),
    ("profile_harder_lexical", "lexical DSGC: profile retention < role retention"),
    ("scale_degrades_lexical", "lexical DSGC on the targets: 50 blocks < 20 blocks"),
)


def regime_checks(
    seeds: tuple[int, int], encoders=("lexical", "sentence"), scheduler=None
) -> pd.DataFrame:
    """Measure the calibration criteria on a seed range; one row per (criterion, encoder)."""
    main = Protocol.load("main").with_(seeds=seeds, encoders=tuple(encoders))
    df = run_protocol(main, scheduler=scheduler)
    scale = Protocol.load("scale").with_(seeds=seeds, encoders=tuple(encoders))
    sdf = run_protocol(scale, scheduler=scheduler)
    by = df.groupby(["encoder", "template", "policy"])["full_chain_retained"].mean()
    rows = []
    for enc in encoders:
        ctrl = min(
            by[(enc, t, p)]
            for t in ("expense", "threshold")
            for p in ("similarity", "no-graph", "dsgc")
        )
        sim = max(by[(enc, t, "similarity")] for t in ("role", "profile"))
        dsgc = min(by[(enc, t, "dsgc")] for t in ("role", "profile"))
        rows += [
            ("controls_all_policies", enc, ctrl, ctrl >= 0.90),
            ("targets_similarity", enc, sim, sim <= 0.35),
            ("targets_dsgc", enc, dsgc, dsgc >= 0.80),
        ]
        if enc == "lexical":
            role, prof = by[(enc, "role", "dsgc")], by[(enc, "profile", "dsgc")]
            rows.append(("profile_harder_lexical", enc, prof - role, prof < role))
            s = sdf[sdf.encoder == enc].groupby("total_blocks")["full_chain_retained"].mean()
            rows.append(("scale_degrades_lexical", enc, s[50] - s[20], s[50] < s[20]))
    out = pd.DataFrame(rows, columns=["criterion", "encoder", "value", "passed"])
    out.insert(0, "seeds", f"{seeds[0]}:{seeds[1]}")
    return out
