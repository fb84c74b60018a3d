"""The parameters of the scale notebook (09), declared once (`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.common.encoders import ENCODERS
from workbench.common.parameters import (
    FIGURES_DIR,
    RECORDED_DIR,
    Listed,
    Names,
    Number,
    Param,
    Parameters,
    Scheduler,
)

PARAMETERS = {
    "09_scale": Parameters((
        Param("NS", Listed(Number("blocks", 100)), "store sizes run live",
              "the recorded tables reach 10^6"),
        Param("ENCODERS", Names(ENCODERS), "the encoders"),
        Param("QUERIES", Number("k"), "chains queried a template and store",
              "the recorded run: 100"),
        Param("SCHEDULER", Scheduler(), "where the sweep runs"),
        Param("SEED", Number("seed"), "the store's seed"),
        FIGURES_DIR,
        RECORDED_DIR,
    )),
}  # fmt: skip
