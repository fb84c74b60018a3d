"""What a notebook shows a reader: tables as HTML (a long one in its own scrolling box, sortable),
the same table as text for nbval, and the values the tests read folded out of the way."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workbench.common import notebook as nb


@pytest.fixture()
def shown(monkeypatch):
    out = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: out.append(obj))
    return out


def test_a_table_is_html_for_people_and_text_for_nbval(shown):
    df = pd.DataFrame({"template": ["role", "profile"], "retention": [0.123456, 1.0]})
    nb.show_table(df)
    (out,) = shown
    assert "<table" in out["text/html"] and "0.123" in out["text/html"]
    assert "<td>0</td>" not in out["text/html"]  # no index column for a plain index
    assert "overflow" not in out["text/html"] and "<script" not in out["text/html"]
    assert out["text/plain"] == df.to_string(float_format=lambda v: f"{v:.3f}")
    long = pd.DataFrame({"seed": range(nb.LONG_TABLE + 1)})
    nb.show_table(long)
    html = shown[-1]["text/html"]
    assert "max-height" in html and "overflow: auto" in html and "<script>" in html
    named = pd.DataFrame({"x": [1]}, index=pd.Index(["a"], name="template"))
    nb.show_table(named)
    assert "<th>template</th>" in shown[-1]["text/html"]  # a named index is a column


def test_a_record_is_folded_away_and_reads_back(shown, tmp_path):
    nb.record("numbers", {"kept": 5.0, "share": 0.123456, "gone": float("nan")})
    nb.record("key", {"answer": 3}, shown=False)
    first, second = shown
    assert first["text/plain"] == "(recorded for the tests: numbers)"
    assert first["text/html"].startswith("<details") and "0.1235" in first["text/html"]
    assert "&quot;kept&quot;: 5," in first["text/html"]  # a whole float as JavaScript writes it
    assert "3" not in second["text/html"] and "answer" not in second["text/html"]
    cells = [{"cell_type": "code", "outputs": [{"output_type": "display_data", "data": o}]}
             for o in shown]  # fmt: skip
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    assert nb.read_records(path) == {
        "numbers": {"kept": 5, "share": 0.1235, "gone": None},
        "key": {"answer": 3},
    }
