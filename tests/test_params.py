"""The paper notebooks' parameters (workbench.params): every one checked, a typo'd name or a bad
value refused in the cell after papermill's, one line; a run with other parameters writes its
own folder (runs/...) and never the record, from papermill in any folder or `workbench
reproduce -p`; the stored notebooks read without a kernel (nbconvert)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import params as P
from workbench.common.notebook import read_records
from workbench.reproduce import NOTEBOOK_DIR, notebooks, plan, reproduce

ROOT = Path(__file__).resolve().parent.parent
NAMES = [p.stem for p in notebooks()]
PAPERMILL = str(Path(sys.executable).parent / "papermill")


def tracked_state() -> str:
    """What git says of the checkout's tracked files (and untracked ones it does not ignore)."""
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


# --- every parameter has one check ---------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_is_declared_its_default_passes_and_nonsense_fails(name):
    base = P.declared(name)
    assert base, name
    assert list(P.declaration(name).by_name) == list(base)  # the cell is the declaration's
    P.check_values(name, {})  # the committed values pass
    for key in base:
        with pytest.raises(P.ParameterError, match=key):
            P.check_values(name, {key: object()})


@pytest.mark.parametrize("name", NAMES)
def test_each_parameters_cell_comment_is_the_declaration_s_words(name):
    nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    decl = P.declaration(name)
    for key, comment in P.cell_comments("".join(cell["source"])).items():
        assert comment == decl[key].comment(), f"{name}: {key} (scripts/parameter_cells.py)"


@pytest.mark.parametrize("name", NAMES)
def test_papermill_reads_every_parameter_of_the_cell(name):
    """papermill's own reading of the cell (what `papermill --help-notebook` lists) finds every
    parameter: a comment it cannot parse drops its line with a warning."""
    from papermill.translators import PythonTranslator

    nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    found = PythonTranslator.inspect({"source": "".join(cell["source"])})
    assert [p.name for p in found] == list(P.declared(name))


def test_one_range_changes_the_check_the_slider_and_the_cell_s_words(monkeypatch):
    """The explorer's multiplier slider, narrowed in `options.SLIDERS` alone: notebook 05's check,
    the page's slider and the parameters cell's words all follow."""
    from workbench.common import options
    from workbench.explore import explorer

    P.check_values("05_explorer", {"BUDGET_MULTIPLIER": 4.5})
    before = P.parameters_cell("05_explorer")
    knob, lo, hi, step = options.SLIDERS["multiplier"]
    monkeypatch.setitem(options.SLIDERS, "multiplier", (knob, lo, 4.0, step))
    with pytest.raises(P.ParameterError, match=r"BUDGET_MULTIPLIER must be in \[1, 4\]"):
        P.check_values("05_explorer", {"BUDGET_MULTIPLIER": 4.5})
    shown = explorer.controls(explorer.Setting(), {}, None)
    assert shown["multiplier"]["max"] == 4.0
    after = P.parameters_cell("05_explorer")
    assert "M: 1..5" in before and "M: 1..4" in after


def test_the_parameters_module_imports_no_engine():
    """params.py knows notebooks by the module that declares their parameters, imported when
    a notebook is checked; it imports no engine for its choices."""
    code = (
        "import sys, workbench.params; "
        "print(sorted(m for m in sys.modules if m.startswith('workbench.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stdout)
    assert all(m.startswith(("workbench.common", "workbench.params")) for m in loaded), loaded


def test_parameters_cell_comes_first_and_settle_right_after():
    """The check runs before anything heavy is imported: the parameters cell is the first code
    cell, the settle call the next one (papermill puts its own cell between them)."""
    for name in NAMES:
        nb = json.loads((NOTEBOOK_DIR / f"{name}.ipynb").read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert "parameters" in code[0]["metadata"].get("tags", []), name
        calls = [
            n
            for n in ast.walk(ast.parse("".join(code[1]["source"])))
            if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "settle"
        ]
        assert [ast.literal_eval(c.args[0]) for c in calls] == [name], name


def test_settle_refuses_a_typo_with_the_close_match_in_one_line():
    ns = dict(P.declared("02_main_suite"), SEED=5)
    with pytest.raises(P.ParameterError) as e:
        P.settle("02_main_suite", ns)
    assert "no parameter SEED (did you mean SEEDS?)" in str(e.value)
    assert e.value._render_traceback_() == [f"ParameterError: {e.value}"]  # no traceback shown


@pytest.mark.parametrize(
    ("name", "given", "says"),
    [
        ("02_main_suite", {"SEEDS": -4}, "SEEDS must be N"),
        ("02_main_suite", {"ENCODERS": "lexical,bert"}, "ENCODERS must be one or more of"),
        ("05_explorer", {"LAMBDA": 7.0}, "LAMBDA must be in"),
        ("06_workshop", {"TEMPLATE": "expense"}, "TEMPLATE must be one of role, profile"),
        ("07_closure", {"MANAGERS": "gate"}, "MANAGERS must include relevance"),
        ("08_recall", {"TOP_K": 6}, "TOP_K must be at most K"),
        ("08_recall", {"SQUAD_PATH": "no/such.json"}, "SQUAD_PATH: no file"),
        ("09_scale", {"SCHEDULER": "udp://x"}, "SCHEDULER"),
    ],
)
def test_a_bad_value_is_refused_by_name(name, given, says):
    with pytest.raises(P.ParameterError, match=says):
        P.check_values(name, given)


def test_the_record_and_a_run_folder(tmp_path, monkeypatch):
    """Committed values: the record, nothing written; other values: runs/<name>-<hash> with
    run.json; the folder depends on what changed only (the same from the kernel and reproduce)."""
    monkeypatch.chdir(NOTEBOOK_DIR)
    ns = P.declared("02_main_suite")
    run = P.settle("02_main_suite", ns)
    assert run.is_record and ns["FIGURES_DIR"] == "../figures"
    assert "committed parameters; writes figures/ and data/results/" in repr(run)
    values = dict(P.declared("02_main_suite"), SEEDS=3)
    a = P.run_folder("02_main_suite", values)
    assert a == P.run_folder("02_main_suite", dict(values, RESULTS_DIR="/elsewhere"))
    assert a != P.run_folder("02_main_suite", dict(values, SEEDS=4))
    assert a.parent == ROOT / "runs" and a.name.startswith("02_main_suite-")
    out, given = plan(NOTEBOOK_DIR / "02_main_suite.ipynb", {"SEEDS": 3})
    assert out == a / "02_main_suite.ipynb" and given == {"SEEDS": 3}
    out, given = plan(NOTEBOOK_DIR / "02_main_suite.ipynb", {"SEEDS": 3}, tmp_path)
    assert out == tmp_path / "02_main_suite.ipynb"
    assert given["FIGURES_DIR"] == str(tmp_path / "figures")
    assert plan(NOTEBOOK_DIR / "06_workshop.ipynb", {})[0] == NOTEBOOK_DIR / "06_workshop.ipynb"


# --- papermill and reproduce, as a person runs them ----------------------------------------------


@pytest.mark.slow
def test_papermill_typo_fails_in_the_check_cell(tmp_path):
    """`papermill ... -p SEED 5` (for SEEDS) fails at the cell after the injected one, before
    any import of the notebook's own runs, with one line; nothing else ran."""
    before = tracked_state()
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [PAPERMILL, str(NOTEBOOK_DIR / "02_main_suite.ipynb"), str(out), "-p", "SEED", "5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ParameterError: 02_main_suite has no parameter SEED (did you mean")
    nb = json.loads(out.read_text())
    counts = [c.get("execution_count") for c in nb["cells"] if c["cell_type"] == "code"]
    assert counts[:3] == [1, 2, 3] and set(counts[3:]) == {None}  # params, injected, check
    assert tracked_state() == before


@pytest.mark.slow
@pytest.mark.parametrize("where", ["root", "notebooks", "tmp"])
def test_papermill_with_other_parameters_writes_its_run_folder(where, tmp_path):
    """From the repository's root, from notebooks/ or from /tmp: the same run folder, the
    record untouched, run.json beside the tables, the figures inside the executed notebook."""
    cwd = {"root": ROOT, "notebooks": NOTEBOOK_DIR, "tmp": tmp_path}[where]
    before = tracked_state()
    out = tmp_path / "run.ipynb"
    cmd = [PAPERMILL, str(NOTEBOOK_DIR / "02_main_suite.ipynb"), str(out),
           "-p", "SEEDS", "2", "-p", "ENCODERS", "lexical", "--no-progress-bar"]  # fmt: skip
    subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=True)
    assert tracked_state() == before
    values = dict(P.declared("02_main_suite"), SEEDS=2, ENCODERS="lexical")
    folder = P.run_folder("02_main_suite", values)
    rec = json.loads((folder / "run.json").read_text())
    assert rec["changed"] == {"SEEDS": 2, "ENCODERS": "lexical"}
    assert rec["parameters"]["RESULTS_DIR"] == f"runs/{folder.name}/results"
    assert rec["versions"]["workbench"] and rec["checkout"]["commit"]
    table = (folder / "results" / "table1.csv").read_text()
    assert "lexical" in table and "sentence" not in table
    text = out.read_text()
    assert '"image/svg+xml"' in text and "../figures/main_table1.svg" not in text
    assert read_records(out)["table1"]


@pytest.mark.slow
def test_reproduce_with_parameters_never_writes_the_record():
    """`workbench reproduce --notebook NN -p ...` for every notebook, with a parameter of its
    own changed: each notebook lands in its run folder beside its figures and tables, and git
    sees no change."""
    changes = {
        "01_failure_mode": {"SEED": 4},
        "02_main_suite": {"SEEDS": 2, "ENCODERS": "lexical"},
        "03_trace_diagnostics": {"SEEDS": 2},
        "04_robustness": {"SEEDS": 2, "ENCODERS": "lexical", "SIZES": [20]},
        "05_explorer": {"SEED": 1},
        "06_workshop": {"TEMPLATE": "profile"},
        "07_closure": {"SEEDS": "0:2", "TURNS": 60, "LOG_SEEDS": "0:1", "BOOT": 200},
        "08_recall": {"EPISODES": 40, "N_BOOT": 200, "SPREAD_SEEDS": 3, "SQUAD_EPISODES": 10},
        "09_scale": {"NS": [300], "QUERIES": 2},
        "10_beyond_the_paper": {
            "SEEDS": "0:12", "ENCODERS": "lexical", "SENTENCE_SEEDS": 0, "RESAMPLES": 200,
        },
        "11_agents": {"SEEDS": "0:2", "FRAMEWORKS": "pydantic-ai"},
        "12_conversations": {"ENCODERS": "lexical", "MULTIPLIERS": [16.0], "RESAMPLES": 200},
    }  # fmt: skip
    assert set(changes) == set(NAMES)
    before = tracked_state()
    for name, given in changes.items():
        [done] = reproduce([name], given, progress=False)
        folder = P.run_folder(name, P.check_values(name, given))
        assert done == folder / f"{name}.ipynb", name
        assert json.loads((folder / "run.json").read_text())["changed"] == given
        assert tracked_state() == before, name


# --- read without a kernel -----------------------------------------------------------------------


def _html(name: str) -> str:
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(NOTEBOOK_DIR / f"{name}.ipynb"), as_version=4)
    return HTMLExporter().from_notebook_node(nb)[0]


def test_stored_explorer_reads_without_a_kernel():
    html = _html("05_explorer")
    rec = read_records(NOTEBOOK_DIR / "05_explorer.ipynb")
    assert rec["verdict"] in html.replace("&lt;", "<").replace("&gt;", ">")
    for chart in ("explorer_landscape", "explorer_valley"):
        assert f'src="../figures/{chart}.svg"' in html
        assert (ROOT / "figures" / f"{chart}.svg").stat().st_size > 1000
    assert "live sliders over one seed" in html  # the live widget's static stand-in
    assert "widget-view+json" not in html and "Explorer(" not in html


def test_stored_workshop_reads_without_a_kernel():
    from workbench.explore.workshop import Workshop

    html = _html("06_workshop")
    ws = Workshop()  # the notebook's stored parameters are the defaults
    assert P.declared("06_workshop") == {
        "ENCODER": "lexical", "TEMPLATE": "role", "SEED": -1, "HOP_SEED": -1,
        "BUDGET_MULTIPLIER": 2.0,
    }  # fmt: skip
    for key in ws.PARTS:
        q = ws.question(key)
        marker = q.html.split("<b>Predict")[1][:60]
        assert marker in html, f"part {key}'s question is not in the stored notebook"
        assert all(label in html for label, _ in q.choices)
    assert html.count("<details><summary>The answer") == len(ws.PARTS)  # folded away
    assert "Part(" not in html and "widget-view+json" not in html


# --- make explore ----------------------------------------------------------------------------------


def test_make_explore_takes_port_token_args_and_serves_the_repository():
    """`make explore PORT= TOKEN= ARGS=` runs workbench.explore.lab with them (and `make
    reproduce ARGS=` passes its arguments to `workbench reproduce`); the command it
    builds serves the checkout's root (stored ../figures links resolve), stores notebooks
    through the cleaning contents manager, and passes --allow-root exactly when run as root."""
    import os

    from workbench.explore import lab

    dry = subprocess.run(
        ["make", "-n", "explore", "PORT=9123", "TOKEN=abcdefabcdefabcdef", "ARGS=--no-browser"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(x for x in dry.splitlines() if "workbench.explore.lab" in x)
    assert "--port 9123" in line and "--token abcdefabcdefabcdef" in line
    assert line.rstrip().endswith("-- --no-browser")
    dry = subprocess.run(
        ["make", "-n", "reproduce", "ARGS=--notebook 02 -p SEEDS 3"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "workbench reproduce --notebook 02 -p SEEDS 3" in dry
    cmd = lab.command(ROOT, 9123, "tok", "127.0.0.1", ["--no-browser"])
    assert f"--ServerApp.root_dir={ROOT}" in cmd and cmd[2] == "notebooks/05_explorer.ipynb"
    assert "--ServerApp.contents_manager_class=workbench.explore.lab.CleanContentsManager" in cmd
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    assert "--LabApp.news_url=None" in cmd and cmd[-1] == "--no-browser"


def test_clean_notebook_drops_what_a_save_would_change():
    from workbench.common.notebook import KERNELSPEC, WIDGET_MIME, clean_notebook

    view = {WIDGET_MIME: {"model_id": "3b6ab791", "version_major": 2}, "text/plain": "x"}
    nb = {
        "metadata": {"widgets": {"state": "1 MB"}, "kernelspec": {"display_name": "Python 3 (ipykernel)"}},
        "cells": [{"metadata": {"execution": {"t": 1}}, "outputs": [{"data": view}]}],
    }  # fmt: skip
    clean_notebook(nb)
    assert "widgets" not in nb["metadata"] and nb["metadata"]["kernelspec"] == KERNELSPEC
    assert nb["cells"][0]["outputs"][0]["data"] == {"text/plain": "x"}
    assert nb["cells"][0]["metadata"] == {}


def test_clean_notebook_numbers_a_second_run_as_a_first():
    from workbench.common.notebook import clean_notebook

    def cells(*counts):
        return [
            {"cell_type": "code", "execution_count": c,
             "outputs": [{"output_type": "execute_result", "execution_count": c, "data": {}}]}
            if c is not None else {"cell_type": "code", "execution_count": None, "outputs": []}
            for c in counts
        ]  # fmt: skip

    second = clean_notebook({"cells": cells(7, None, 8, 9)})  # Run All twice: counts from 7
    first = clean_notebook({"cells": cells(1, None, 2, 3)})
    assert second == first
    assert [c["execution_count"] for c in second["cells"]] == [1, None, 2, 3]
    assert [o["execution_count"] for c in second["cells"] for o in c["outputs"]] == [1, 2, 3]


def test_a_long_cell_is_named_on_the_progress_line_and_the_kernel_says_nothing(
    tmp_path, monkeypatch, capfd
):
    """The progress line names the notebook and, past SLOW_CELL seconds, the cell running and for
    how long; the kernel's start-up warning (TCP without encryption) is not printed."""
    import io

    import nbformat
    from tqdm import tqdm

    from workbench import reproduce as R

    monkeypatch.setattr(R, "SLOW_CELL", 0.5)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import time"),
        nbformat.v4.new_code_cell("time.sleep(3)"),
    ]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    line = io.StringIO()
    bar = tqdm(total=1, file=line, mininterval=0)
    with R.CellWatch(bar) as watch:
        watch.notebook("slow")
        R.execute(path, tmp_path / "out.ipynb", {}, progress=False, watch=watch)
    bar.close()
    said = line.getvalue()
    assert re.search(r"slow, cell 2: [1-3] s", said), said
    assert "TCP without encryption" not in capfd.readouterr().err
