"""The seeds' published figures and the package's own data files (shipped inside the package).

Read through `importlib.resources`, so they are found in a checkout and in an installed wheel.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.abc import Traversable

SECTIONS = {
    "dsgc": "dsgc_paper",  # seed 000: the DSGC paper
    "closure": "closure_note",  # seed 002: referential closure for tool-call windows
    "recall": "retention_vs_selection_paper",  # seed 003: retention x selection
}


def data_path(*parts: str) -> Traversable:
    """A file or folder under workbench/common/data (package data)."""
    node = resources.files("workbench.common") / "data"
    for part in parts:
        node = node / part
    return node


@cache
def _figures() -> dict:
    return json.loads(data_path("paper_figures.json").read_text(encoding="utf-8"))


def paper_figures(seed: str) -> dict:
    """One seed's published figures: 'dsgc', 'closure' or 'recall' (a fresh copy)."""
    if seed not in SECTIONS:
        raise ValueError(f"unknown seed {seed!r}; choose one of {', '.join(SECTIONS)}")
    return json.loads(json.dumps(_figures()[SECTIONS[seed]]))
