"""The parameters of the retention x selection notebook (08), declared once
(`workbench.common.parameters`)."""

from __future__ import annotations

from workbench.common.parameters import (
    FIGURES_DIR,
    RESULTS_DIR,
    Listed,
    Location,
    Number,
    Param,
    Parameters,
    Text,
    Url,
)

K = Number("K", 1, 20)
DENSITY = Number("recall_density", 0.0, 0.9)

PARAMETERS = {
    "08_recall": Parameters(
        (
            Param("SEED", Number("seed"), "the episodes' seed"),
            Param("EPISODES", Number("episodes", 20, 3000), "episodes a cell", "the paper: 300"),
            Param("K", K, "retention capacity", "the paper: 5"),
            Param("TOP_K", Number("k", 1, 20), "items selection exposes, at most K",
                  "the paper: 3"),
            Param("DENSITY", DENSITY, "distractor density", "the paper: 0.3"),
            Param("KS", Listed(K), "capacities for the memory-pressure curve"),
            Param("DENSITIES", Listed(DENSITY), "distractor densities for the sweep"),
            Param("N_BOOT", Number("boot", 200, 10_000), "bootstrap resamples of episodes"),
            Param("SPREAD_SEEDS", Number("seed", 2, 1000), "generator seeds for RQ1's spread"),
            Param("REPEATS", Listed(Number("spurious", 0, 6)), "restated facts a stream"),
            Param("READER_URL", Url(), "an OpenAI-compatible reader", '"": the oracle reader'),
            Param("READER_MODEL", Text(), "the model name sent to READER_URL"),
            Param("SQUAD_PATH", Location("file"), "a SQuAD v1.1 JSON file"),
            Param("SQUAD_EPISODES", Number("episodes", 10, 1000),
                  "SQuAD streams, 2 questions each", "the paper: 300 questions"),
            FIGURES_DIR,
            RESULTS_DIR,
        ),
        relations=(("TOP_K must be at most K", lambda v: v["TOP_K"] <= v["K"]),),
    ),
}  # fmt: skip
