"""The package's shape: notebooks paired with their sources, the import graph, the wheel."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
# The layout: each folder (or room inside a folder) may import itself and the folders listed
# here, nothing else (the command line on top imports everything). closure and recall take only
# the DSGC policies; closure's two rooms: the message logs read spans from the window room, and
# closure's own command line imports both.
MAY_IMPORT = {
    "common": set(),
    "dsgc": {"common"},
    "beyond": {"dsgc", "common", "closure.logs"},
    "scale": {"dsgc", "common"},
    "explore": {"dsgc", "common"},
    "closure.window": {"common", "dsgc.policies"},
    "closure.logs": {"common", "closure.window"},
    "closure": {"common", "closure.window", "closure.logs"},
    "recall": {"common", "dsgc.policies"},
    "agents": {"common", "closure.logs", "closure.window"},
    "agents.bench": {"common", "closure.logs", "closure.window", "agents"},
}
TOP = {
    "workbench",
    "workbench.__main__",
    "workbench.cli",
    "workbench.reproduce",
    "workbench.params",
}
MAX_LINES = 600


# --- notebooks are their own source ------------------------------------------------------------


def _cells(nb) -> list[tuple[str, str, tuple]]:
    return [(c.cell_type, c.source, tuple(c.metadata.get("tags", ()))) for c in nb.cells]


@pytest.mark.parametrize(
    "notebook", sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
)
def test_notebook_and_its_jupytext_source_agree(notebook):
    """Every notebook is paired with a percent-format .py holding the same cells (the parameters
    tag included); edit either, then `jupytext --sync`."""
    ipynb = ROOT / "notebooks" / notebook
    source = ipynb.with_suffix(".py")
    assert source.exists(), f"{notebook} has no paired {source.name}"
    a, b = jupytext.read(ipynb), jupytext.read(source)
    assert a.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    assert _cells(a) == _cells(b), f"{notebook} and {source.name} drifted: run jupytext --sync"
    assert any("parameters" in tags for _, _, tags in _cells(b)), "no parameters cell"


# --- the import graph --------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> tuple[set[str], list[str]]:
    """(workbench modules imported at module level, workbench imports hidden inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, hidden = set(), []

    def names(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.module:
            out = []  # `from workbench.closure import agent` imports the module workbench.closure.window.agent
            for a in node.names:
                sub = ROOT / node.module.replace(".", "/") / f"{a.name}.py"
                out.append(f"{node.module}.{a.name}" if sub.exists() else node.module)
            return out
        return []

    for node in tree.body:
        for n in names(node):
            if n.startswith("workbench"):
                top.add(n)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                hidden += [n for n in names(sub) if n.startswith("workbench")]
    return top, hidden


GRAPH = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str:
    """A module name as a key of GRAPH (a package resolves to its __init__)."""
    assert name in GRAPH, f"unknown workbench module {name}"
    return name


def test_no_workbench_import_hides_inside_a_function():
    hidden = {m: h for m, (_, h) in GRAPH.items() if h}
    assert not hidden, f"imports inside functions hide dependencies: {hidden}"


def _folder(module: str) -> str:
    """The layout's room a module sits in: the longest MAY_IMPORT key that holds it."""
    rest = module.removeprefix("workbench.")
    rooms = [k for k in MAY_IMPORT if rest == k or rest.startswith(k + ".")]
    return max(rooms, key=len, default="")


def test_every_module_sits_in_a_folder_of_the_layout():
    """At the top only the command line (cli, __main__, reproduce) and the paper notebooks'
    parameters (params: their interface, as the command line's options are); everything else
    in one of the folders of MAY_IMPORT."""
    for module in GRAPH:
        assert module in TOP or _folder(module) in MAY_IMPORT, f"{module} is outside the layout"


@pytest.mark.parametrize("folder", sorted(MAY_IMPORT))
def test_imports_flow_down(folder):
    allowed = MAY_IMPORT[folder]
    for module, (top, _) in GRAPH.items():
        if module in TOP or _folder(module) != folder:
            continue
        for dep in map(_resolve, top):
            rest = dep.removeprefix("workbench.")
            ok = _folder(dep) == folder or any(
                rest == a or rest.startswith(a + ".") for a in allowed
            )
            assert ok, f"{module} imports {dep}: {folder}/ may import only {sorted(allowed)}"


def test_no_library_module_passes_the_line_limit():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_cycles():
    edges = {m: {_resolve(d) for d in top} - {m} for m, (top, _) in GRAPH.items()}
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(m, path):
        state[m] = 1
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                pytest.fail("import cycle: " + " -> ".join([*path, m, d]))
            if d in edges and not state.get(d):
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(edges):
        if not state.get(m):
            visit(m, [])


# --- an installed wheel works outside a checkout -------------------------------------------------


@pytest.mark.slow
@pytest.mark.sentence
def test_wheel_installs_into_a_fresh_venv_and_runs_the_main_suite(tmp_path):
    """Build the wheel, install it (no dependencies) into a new venv, and run `workbench suite
    main` from a folder outside the checkout: protocols and reference figures must ship inside
    the package. The new venv borrows the dependencies (numpy, torch, ...) of this one through
    PYTHONPATH, which adds no .pth files, so this checkout's editable install stays invisible."""
    src = tmp_path / "src"  # build from a copy: setuptools writes build/ beside the sources
    shutil.copytree(
        ROOT / "workbench", src / "workbench", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheels), str(src)],
        check=True,
    )  # fmt: skip
    (wheel,) = wheels.glob("workbench-*.whl")
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True
    )
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [str(py), "-c", "import importlib.resources as ir, workbench; print(workbench.__file__);"
         "print(ir.files('workbench').joinpath('py.typed').is_file())"],
        cwd=elsewhere, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    file, typed = where.stdout.split()
    assert Path(file).is_relative_to(env_dir), f"imported {file}, not the installed wheel"
    assert typed == "True", "py.typed is not in the wheel"
    run = subprocess.run(
        [str(env_dir / "bin" / "workbench"), "suite", "main", "--seeds", "0:2", "--out", "out"],
        cwd=elsewhere, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = (elsewhere / "out" / "summary.csv").read_text().splitlines()
    assert summary[0] == "encoder,regime,policy,mean,std,n"
    assert len(summary) == 1 + 2 * 2 * 3  # encoders x regimes x policies


# --- the front page ----------------------------------------------------------------------------

DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_one_screen_with_the_two_commands_on_top():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200)"
    top = "\n".join(lines[:30])
    assert "make reproduce" in top and "make test" in top


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_every_relative_link_in_the_docs_resolves(page):
    """A link to a moved or renamed file fails here, not in a reader's browser."""
    import re

    text = page.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    missing = [
        link
        for link in links
        if "://" not in link
        and not link.startswith("#")
        and not (page.parent / link.split("#")[0]).exists()
    ]
    assert not missing, f"{page.name}: links to nothing: {missing}"


def test_the_readmes_table_1_is_the_committed_table():
    """The README quotes Table 1; the numbers must be the ones notebook 02 wrote."""
    import pandas as pd

    names = {"similarity-only": "similarity", "no-graph DSGC": "no-graph", "DSGC": "dsgc"}
    rows = [
        [c.strip().strip("*") for c in line.strip("|").split("|")]
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| lexical |") or line.startswith("| sentence |")
    ]
    table = pd.read_csv(ROOT / "data" / "results" / "table1.csv")
    got = {(e, r, names[p]): (paper, ours) for e, r, p, paper, ours in rows}
    want = {
        (t.encoder, t.regime, t.policy): (t.paper, t.ours) for t in table.itertuples(index=False)
    }
    assert got == want


def test_the_readmes_agents_table_is_the_committed_summary():
    """The README quotes notebook 11's summary; its rows must be the ones the notebook wrote."""
    import pandas as pd

    from workbench.agents import FRAMEWORKS
    from workbench.agents.bench import report

    summary = pd.read_csv(ROOT / "data" / "results" / "agents_summary.csv")
    shown = [
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith(tuple(f"| {fw} |" for fw in FRAMEWORKS))
    ]
    assert shown == report.readme_rows(summary)


def test_the_readmes_conversation_figures_are_the_committed_ones():
    """The README quotes notebook 12's table, the first run and the held-out run as recorded."""
    import pandas as pd

    from workbench.beyond.conversations import study_table

    text = " ".join((ROOT / "README.md").read_text().split())
    para = text.split("**Real conversations**", 1)[1].split("More:", 1)[0]
    now = pd.read_csv(ROOT / "data" / "results" / "conversations.csv")
    cal = ROOT / "data" / "calibration"
    first = pd.read_csv(cal / "conversations_first_run.csv")
    runs = pd.read_csv(cal / "conversations_heldout_runs.csv")
    held = study_table(runs)
    longer = study_table(runs[runs.conversation == "motorway"])

    def at(t, enc, m, arm):
        return t[(t.encoder == enc) & (t.budget_multiplier == m) & (t.arm == arm)].iloc[0]

    sim, ind, right = "similarity-only", "DSGC, induced graph", "DSGC, right graph"
    lx, sx = (at(now, e, 16.0, ind) for e in ("lexical", "sentence"))
    hl, hs, h4 = (
        at(held, "lexical", 16.0, ind),
        at(held, "sentence", 16.0, ind),
        at(held, "sentence", 4.0, ind),
    )
    want = [
        f"{at(now, 'lexical', 16.0, sim).kept:.2f} of the questions at M 16 (lexical) and "
        f"{at(now, 'sentence', 16.0, sim).kept:.2f} (sentence)",
        f"{at(now, 'lexical', 16.0, right).kept:.2f} and {at(now, 'sentence', 16.0, right).kept:.2f}",
        f"{lx.kept:.2f} ({lx.won:.0f} won, {lx.lost:.0f} lost) and {sx.kept:.2f} ({sx.won:.0f} "
        f"won, {sx.lost:.0f} lost): {lx.share_of_right_gain:.2f} and {sx.share_of_right_gain:.2f}",
        f"first run {at(first, 'lexical', 16.0, ind).share_of_right_gain:.2f} and "
        f"{at(first, 'sentence', 16.0, ind).share_of_right_gain:.2f}",
        f"held out: {hl.share_of_right_gain:.2f} and {hs.share_of_right_gain:.2f} of the gain at "
        f"M 16 ({hl.lost + hs.lost} lost; "
        f"{at(longer, 'lexical', 16.0, ind).share_of_right_gain:.2f} lexical on the longer alone)",
        f"{h4.lost} lost and {h4.won} won at M 4 (sentence)",
    ]
    for quote in want:
        assert quote in para, quote


def test_the_readmes_register_figures_are_the_committed_ones():
    """The README quotes the held-out register tiers' pooled pairs (lexical, 20 blocks): tier L's
    one run as recorded, tier K as notebook 10 computes it now."""
    import pandas as pd

    text = " ".join((ROOT / "README.md").read_text().split())
    para = text.split("**Registers**", 1)[1].split("\n\n", 1)[0]

    def pooled(t: pd.DataFrame) -> str:
        t = t[(t.encoder == "lexical") & (t.blocks == 20)]
        return f"{t.hit.sum() / t.pairs.sum():.2f} / {t.hit.sum() / t.true_pairs.sum():.2f}"

    first_l = pd.read_csv(ROOT / "data" / "calibration" / "tier_l_first_run.csv")
    now = pd.read_csv(ROOT / "data" / "results" / "beyond_registers_heldout.csv")
    now_k = now[(now.tier == "K") & (now.register != "all registers") & (now.graph == "mentions")]
    assert f"{pooled(first_l)} (tier L, one run)" in para
    assert f"{pooled(now_k)} (tier K, tuned on)" in para


def test_the_architecture_doc_lists_every_module_of_the_tree():
    """docs/architecture.md's layout block names each folder and its modules as the tree has them."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc.split("```\nworkbench/", 1)[1].split("```", 1)[0]
    listed = {}
    for line in ("workbench/" + block).strip().splitlines():
        folder, names = re.split(r"\s{2,}", line.strip())[:2]
        listed["" if folder == "workbench/" else folder.rstrip("/")] = set(names.split())
    pkg = ROOT / "workbench"
    actual = {}
    for d in [pkg, *(p for p in pkg.rglob("*") if p.is_dir())]:
        mods = {p.stem for p in d.glob("*.py") if p.stem != "__init__"}
        if mods:
            actual["" if d == pkg else d.relative_to(pkg).as_posix()] = mods
    assert listed == actual


def test_no_module_imports_a_private_name_from_another():
    bad = []
    for path in [*(ROOT / "workbench").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
                 *(ROOT / "scripts").glob("*.py")]:  # fmt: skip
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workbench"):
                bad += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert bad == []


def test_code_carries_no_history_tags():
    """Which variant or issue a line came from lives in data/calibration/ and the CHANGELOG."""
    assert _library_lines(re.compile(r"\b(variants?|issue) \d", re.I)) == []


def _library_lines(pattern: re.Pattern) -> list[str]:
    """Every line of workbench/ the pattern finds, as path:line."""
    return [
        f"{p.relative_to(ROOT)}:{k}"
        for p in (ROOT / "workbench").rglob("*.py")
        for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_module_changes_the_interpreters_own_settings():
    """A speed target is never met by a process-wide side effect: no module pauses or tunes the
    garbage collector or changes the interpreter's switch interval or recursion limit."""
    setting = re.compile(
        r"gc\.(disable|freeze|set_threshold)|sys\.set(switchinterval|recursionlimit)"
    )
    assert _library_lines(setting) == []
