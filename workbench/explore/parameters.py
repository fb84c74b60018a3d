"""The parameters of the explorer (05) and the workshop (06) notebooks, declared once
(`workbench.common.parameters`); the sliders' ranges are `options.SLIDERS`, which the page reads
too."""

from __future__ import annotations

from workbench.common.encoders import ENCODERS
from workbench.common.parameters import (
    FIGURES_DIR,
    RESULTS_DIR,
    Choice,
    Number,
    Param,
    Parameters,
    SeedOrFirst,
    Slider,
)
from workbench.dsgc.generator import TEMPLATES
from workbench.dsgc.policies import POLICIES
from workbench.dsgc.trace import WORKED

BLOCKS = (20, 50)  # the store sizes the explorer offers
TEMPLATE_CHOICES = (WORKED, *TEMPLATES)
TARGETS = tuple(n for n, t in TEMPLATES.items() if t.regime == "target")  # the workshop's

PARAMETERS = {
    "05_explorer": Parameters((
        Param("TEMPLATE", Choice(TEMPLATE_CHOICES), "the scenario"),
        Param("SEED", Number("seed"), "its seed", "the slider spans 0-99"),
        Param("ENCODER", Choice(ENCODERS), "the encoder",
              "sentence loads in the background"),
        Param("POLICY", Choice(POLICIES), "the policy"),
        Param("BUDGET_MULTIPLIER", Slider("multiplier"), "M"),
        Param("LAMBDA", Slider("lam"), "lambda"),
        Param("TAU", Slider("tau"), "the softmax temperature tau"),
        Param("HOPS", Slider("hops"), "hops", "extra hops damped by 0.5"),
        Param("TOTAL_BLOCKS", Choice(BLOCKS), "blocks a scenario"),
        FIGURES_DIR,
        RESULTS_DIR,
    )),
    "06_workshop": Parameters((
        Param("ENCODER", Choice(ENCODERS), "the encoder"),
        Param("TEMPLATE", Choice(TARGETS), "the target of parts 1-8"),
        Param("SEED", SeedOrFirst(), "its seed (-1: the first where only DSGC holds)"),
        Param("HOP_SEED", SeedOrFirst(), "the profile seed of parts 9-13 (-1: the first one hop loses)"),
        Param("BUDGET_MULTIPLIER", Number("budget_multiplier", 1.0), "M"),
    )),
}  # fmt: skip
