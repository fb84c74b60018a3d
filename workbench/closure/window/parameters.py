"""The parameters of the closure notebook (07), declared once (`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.closure.window.managers import MANAGERS
from workbench.common.encoders import ENCODERS
from workbench.common.parameters import (
    FIGURES_DIR,
    RESULTS_DIR,
    Choice,
    Listed,
    Location,
    Names,
    Number,
    Param,
    Parameters,
    Seeds,
)

PARAMETERS = {
    "07_closure": Parameters((
        Param("SEED", Number("seed"), "the run drawn in the timeline"),
        Param("SEEDS", Seeds(), "seeds of the simulated runs", "10 or more for intervals"),
        Param("TURNS", Number("turns", 20, 2000), "turns a simulated run"),
        Param("CAPACITY", Number("capacity", 100, 5000), "the window's capacity in tokens"),
        Param("ENCODER", Choice(ENCODERS), "the relevance scorer's encoder"),
        Param("MANAGERS", Names(tuple(MANAGERS), must="relevance"), "the managers"),
        Param("MISSES", Listed(Number("restore_miss", 1e-9, 1.0)),
              "shares of tombstone restores the store misses"),
        Param("BOOT", Number("boot", 200, 10_000), "bootstrap resamples over seeds"),
        Param("LOG", Location("file"), "a JSONL span log for the worked example"),
        Param("WINDOW", Location("file"), "a window with per-span scores and a pinned span"),
        Param("LOG_SEEDS", Seeds(), "episodes turned into agent logs for the side-by-side"),
        Param("LOG_TURNS", Number("turns", 20, 300), "turns an episode log"),
        FIGURES_DIR,
        RESULTS_DIR,
    )),
}  # fmt: skip
