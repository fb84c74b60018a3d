"""The parameters of the paper notebooks this package runs (01-04), declared once
(`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.common.encoders import ENCODERS
from workbench.common.parameters import (
    FIGURES_DIR,
    RESULTS_DIR,
    Choice,
    Listed,
    Names,
    Number,
    Param,
    Parameters,
    SeedOrFirst,
    Seeds,
)
from workbench.dsgc.generator import TEMPLATES
from workbench.dsgc.policies import POLICIES

BLOCKS = Number("total_blocks", 5)
MULTIPLIER = Number("budget_multiplier", 1.0)
LAMBDA = Number("lambda", 0.0)

ENCODER_P = Param("ENCODER", Choice(ENCODERS), "the encoder")
ENCODERS_P = Param("ENCODERS", Names(ENCODERS), "the encoders")
SEEDS_P = Param("SEEDS", Seeds(), "seeds", "the paper: 15")
M_P = Param("BUDGET_MULTIPLIER", MULTIPLIER, "M, the budget over the chain's tokens",
            "the paper: 2.0")  # fmt: skip
LAMBDA_P = Param("LAMBDA", LAMBDA, "DSGC's propagation weight", "the paper: 1.0")
BLOCKS_P = Param("TOTAL_BLOCKS", BLOCKS, "blocks a scenario", "the paper: 20 and 50")

PARAMETERS = {
    "01_failure_mode": Parameters((
        ENCODER_P,
        Param("TEMPLATE", Choice(TEMPLATES), "the template of the generated scenario"),
        Param("SEED", Number("seed"), "the generated scenario's seed"),
        BLOCKS_P,
        Param("BUDGET_MULTIPLIER", MULTIPLIER, "M",
              "budget C is max(L, ceil(M * L)), L the chain's tokens"),
        LAMBDA_P,
        FIGURES_DIR,
        RESULTS_DIR,
    )),
    "02_main_suite": Parameters((
        ENCODERS_P, SEEDS_P, M_P, LAMBDA_P, BLOCKS_P, FIGURES_DIR, RESULTS_DIR,
    )),
    "03_trace_diagnostics": Parameters((
        Param("ENCODER", Choice(ENCODERS), "the encoder", "the paper's Table 3: lexical"),
        Param("TEMPLATE", Choice(TEMPLATES), "the template", "the paper's Table 3: profile"),
        Param("POLICY", Choice(POLICIES), "the policy traced"),
        SEEDS_P,
        Param("SEED", SeedOrFirst(), "the landscape's seed (-1: the first failing one)"),
        M_P,
        LAMBDA_P,
        BLOCKS_P,
        FIGURES_DIR,
        RESULTS_DIR,
    )),
    "04_robustness": Parameters((
        ENCODERS_P,
        SEEDS_P,
        Param("LAMBDAS", Listed(LAMBDA), "propagation weights", "the paper: 0.5, 1, 2"),
        Param("MULTIPLIERS", Listed(MULTIPLIER), "budget multipliers M", "the paper: 1, 2, 5"),
        Param("SIZES", Listed(BLOCKS), "blocks a scenario", "the paper: 20, 50"),
        FIGURES_DIR,
        RESULTS_DIR,
    )),
}  # fmt: skip
