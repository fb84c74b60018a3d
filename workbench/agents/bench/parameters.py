"""The parameters of the agents notebook (11), declared once (`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.agents import FRAMEWORKS
from workbench.common.parameters import (
    FIGURES_DIR,
    RECORDED_DIR,
    RESULTS_DIR,
    Names,
    Number,
    Param,
    Parameters,
    Seeds,
)

PARAMETERS = {
    "11_agents": Parameters((
        Param("SEEDS", Seeds(), "seeds of part 2's scripted runs"),
        Param("BUDGET", Number("budget", 100, 5000),
              "the token budget every policy is given in part 2"),
        Param("FRAMEWORKS", Names(FRAMEWORKS), "the frameworks"),
        RECORDED_DIR,
        FIGURES_DIR,
        RESULTS_DIR,
    )),
}  # fmt: skip
