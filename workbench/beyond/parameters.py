"""The parameters of the beyond-the-paper notebook (10) and of the conversations notebook (12),
declared once (`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.common.encoders import ENCODERS
from workbench.common.parameters import (
    FIGURES_DIR,
    RECORDED_DIR,
    RESULTS_DIR,
    Listed,
    Location,
    Names,
    Number,
    Param,
    Parameters,
    Seeds,
)

PARAMETERS = {
    "10_beyond_the_paper": Parameters((
        Param("SEEDS", Seeds(), "lexical seeds", "500 or more for the recorded claims"),
        Param("ENCODERS", Names(ENCODERS), "the encoders"),
        Param("SENTENCE_SEEDS", Seeds(zero=True), "sentence seeds run live, inside SEEDS",
              "500 are recorded"),
        Param("SIZES", Listed(Number("total_blocks", 5)), "blocks a scenario",
              "the paper: 20 and 50"),
        Param("HOPS", Listed(Number("hops")), "propagation hops", "the paper: 1"),
        Param("DELTAS", Listed(Number("delta", 1e-9, 1.0)), "damping a further hop"),
        Param("DROPS", Listed(Number("drop", 0.0, 1.0)), "shares of true edges dropped"),
        Param("SPURIOUS", Listed(Number("spurious")), "spurious edges added",
              "a target has 2 true edges"),
        Param("RESAMPLES", Number("boot", 1), "bootstrap resamples an interval"),
        Param("SEED", Number("seed"), "the bootstrap's seed"),
        RECORDED_DIR,
        Param("HANDWRITTEN", Location("folder"), "scenario files written by hand"),
        Param("CALIBRATION_DIR", Location("folder"), "the inducer's record"),
        Param("LOGS", Location("folder"), "the closure study's agent logs"),
        FIGURES_DIR,
        RESULTS_DIR,
    )),
    "12_conversations": Parameters((
        Param("CONVERSATIONS", Location("file"), "conversations in LoCoMo's published format",
              "locomo10.json, say"),
        Param("MIN_EVIDENCE", Number("min_evidence"), "evidence turns a question needs"),
        Param("ENCODERS", Names(ENCODERS), "the encoders"),
        Param("MULTIPLIERS", Listed(Number("budget_multiplier")), "budget multipliers"),
        Param("RESAMPLES", Number("boot", 1), "bootstrap resamples an interval"),
        Param("SEED", Number("seed"), "the bootstrap's seed"),
        Param("CALIBRATION_DIR", Location("folder"), "the inducer's record"),
        FIGURES_DIR,
        RESULTS_DIR,
    )),
}  # fmt: skip
