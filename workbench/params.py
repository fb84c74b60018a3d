"""A paper notebook's parameters, checked the moment papermill injects them, and where its run
writes.

Every paper notebook opens with its `parameters` cell and then calls `settle(NAME, globals())`
(the cell after papermill's injected one), before anything heavy is imported:

- a name that is not one of the notebook's parameters (`-p SEED 5` for `SEEDS`) is an error that
  names the close match and lists the parameters; a value out of its range is an error naming
  the parameter and the range, checked against the declaration beside the package that runs the
  notebook (`OWNERS`; `workbench.common.parameters`). Either error is one line (ParameterError
  renders no traceback);
- relative paths are read from the notebooks' folder (the defaults are written that way), so
  papermill gives the same run from the repository, from notebooks/ or from /tmp;
- only the committed parameters write the record (figures/ and data/results/). Any other run
  writes its figures and tables under `runs/<notebook>-<hash of what changed>/` (ignored by
  git; `workbench reproduce -p` puts the executed notebook there too), with `run.json` beside
  them: the parameters, what changed, the checkout and the package versions. Output folders
  passed by name (-p FIGURES_DIR ...) are used as given, and get the same `run.json`.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from workbench.common.io import atomic_write_text
from workbench.common.notebook import RECORD
from workbench.common.parameters import Parameters

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUTPUTS = tuple(RECORD)
_HOME: list[Path] = []  # the notebooks folder this kernel's notebook belongs to (settle picks)
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
VERSIONS = ("numpy", "pandas", "scipy", "torch", "sentence-transformers", "papermill")


class ParameterError(ValueError):
    """A parameter papermill (or a person) gave that the notebook does not take, or a value out
    of range. Rendered in the notebook, and so by papermill, as one line (no traceback)."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an error is shown
        return [f"ParameterError: {self}"]


# --- what the committed notebook declares ------------------------------------------------------


def home() -> Path:
    """The notebooks folder relative paths start from: the one the kernel was started in when
    it holds the notebook (JupyterLab, nbval's copy, papermill from notebooks/), else the
    installed checkout's (papermill from the repository's root or from /tmp)."""
    return _HOME[0] if _HOME else NOTEBOOKS


def _pick_home(name: str) -> Path:
    here = Path.cwd().resolve()
    found = here if (here / f"{name}.ipynb").is_file() else NOTEBOOKS
    _HOME[:] = [found]
    return found


def record_dir(key: str) -> Path:
    """Where the record keeps FIGURES_DIR / RESULTS_DIR: beside home()."""
    return home().parent / RECORD[key]


def _notebook(name: str) -> dict:
    path = home() / f"{name}.ipynb"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ParameterError(f"no paper notebook {name!r} in {home()} ({e.strerror})") from None


def _sources(nb: dict, tag: str | None = None) -> list[str]:
    return [
        "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "code"
        and (tag is None or tag in c.get("metadata", {}).get("tags", []))
    ]


def declared(name: str) -> dict:
    """The parameters of notebooks/NAME.ipynb and their committed values, in the cell's order."""
    out = {}
    for source in _sources(_notebook(name), "parameters"):
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    out[target.id] = ast.literal_eval(node.value)
    if not out:
        raise ParameterError(f"{name}.ipynb has no cell tagged 'parameters'")
    return out


def _bound(name: str) -> set[str]:
    """Every name the notebook's own code binds (assignments, imports, loops, definitions)."""
    names: set[str] = set()
    for source in _sources(_notebook(name)):
        try:
            tree = ast.parse(source)
        except SyntaxError:  # a cell with IPython magics: its names cannot be parameters anyway
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
    return names


# --- the declarations, beside the packages that run the notebooks ----------------------------

# notebook -> the module that declares its parameters (`PARAMETERS[name]`), imported when asked
OWNERS = {
    "01_failure_mode": "workbench.dsgc.parameters",
    "02_main_suite": "workbench.dsgc.parameters",
    "03_trace_diagnostics": "workbench.dsgc.parameters",
    "04_robustness": "workbench.dsgc.parameters",
    "05_explorer": "workbench.explore.parameters",
    "06_workshop": "workbench.explore.parameters",
    "07_closure": "workbench.closure.window.parameters",
    "08_recall": "workbench.recall.parameters",
    "09_scale": "workbench.scale.parameters",
    "10_beyond_the_paper": "workbench.beyond.parameters",
    "11_agents": "workbench.agents.bench.parameters",
    "12_conversations": "workbench.beyond.parameters",
}


def cell_comments(source: str) -> dict[str, str]:
    """Each assignment of a parameters cell's source -> the comment on its lines."""
    import io
    import tokenize

    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            lines = range(node.lineno, node.end_lineno + 1)
            out[node.targets[0].id] = next((comments[k] for k in lines if k in comments), "")
    return out


def parameters_cell(name: str, values: dict | None = None) -> str:
    """The parameters cell of notebooks/NAME: each declared parameter with its committed value
    (or `values`') and the declaration's words as its comment."""
    values = declared(name) if values is None else values
    return "\n".join(f"{p.name} = {values[p.name]!r}  # {p.comment()}"
                     for p in declaration(name).params)  # fmt: skip


def declaration(name: str) -> Parameters:
    """The declared parameters of notebooks/NAME (ParameterError for a notebook without one)."""
    if name not in OWNERS:
        raise ParameterError(f"no declared parameters for notebook {name!r}")
    return importlib.import_module(OWNERS[name]).PARAMETERS[name]


def resolve(value: str | os.PathLike) -> Path:
    """A notebook's path parameter: relative paths start in notebooks/, wherever the kernel runs."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else (home() / p).resolve()


# --- the run -----------------------------------------------------------------------------------


def changed(name: str, values: dict) -> dict:
    """The parameters that differ from the committed ones (output folders aside)."""
    base = declared(name)
    return {k: v for k, v in values.items() if k not in OUTPUTS and (k not in base or base[k] != v)}


def run_folder(name: str, values: dict) -> Path:
    """runs/<notebook>-<hash>/ for a run whose parameters differ from the committed ones (the
    same folder for the same changes, from the kernel or from `workbench reproduce`)."""
    diff = json.dumps(changed(name, values), sort_keys=True, default=str)
    return home().parent / "runs" / f"{name}-{hashlib.sha256(diff.encode()).hexdigest()[:10]}"


def checkout() -> dict:
    try:
        head = subprocess.run(
            ["git", "-C", str(home().parent), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(home().parent), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return {"commit": None}
    return {"commit": head or None, "modified": bool(dirty)}


def versions() -> dict:
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("workbench", *VERSIONS):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


@dataclass
class Run:
    """Where a notebook run writes: the record, or a folder of its own."""

    notebook: str
    values: dict
    changes: dict
    folder: Path | None = None  # None: the record
    outputs: dict = field(default_factory=dict)  # FIGURES_DIR / RESULTS_DIR as the code uses them

    @property
    def is_record(self) -> bool:
        return self.folder is None

    def __repr__(self) -> str:  # a stored output shows it: repo-relative, no machine's path
        if self.is_record:
            where = [RECORD[k] + "/" for k in OUTPUTS if k in self.values]
            what = f"writes {' and '.join(where)}" if where else "writes no file"
            return f"{self.notebook}: the committed parameters; {what}"
        where = _shown(self.folder)
        what = ", ".join(f"{k}={v!r}" for k, v in self.changes.items()) or "output folders"
        return f"{self.notebook}: a run with {what}; writes {where}/ (run.json says what ran)"


def _shown(p: Path) -> str:
    try:
        return p.resolve().relative_to(home().parent).as_posix()
    except ValueError:
        return p.as_posix()


def check_values(name: str, given: dict) -> dict:
    """The committed parameters with `given` over them, each checked (ParameterError if not)."""
    base = declared(name)
    values = base | given
    decl = declaration(name)
    missing = [k for k in values if k not in decl]
    if missing:
        raise ParameterError(f"{name}: {missing[0]} is not declared ({OWNERS[name]})")
    try:
        decl.check(values, home())
    except (ValueError, TypeError) as e:
        raise ParameterError(f"{name}: {e}") from None
    return values


def settle(name: str, ns: dict) -> Run:
    """Check the parameters in a notebook's namespace (after papermill's injected cell) against
    notebooks/NAME.ipynb, then point FIGURES_DIR / RESULTS_DIR where this run may write (in
    `ns`). Raises ParameterError (one line) on an unknown name or a bad value."""
    _pick_home(name)
    base = declared(name)
    strays = sorted(n for n in ns if _NAME.fullmatch(n) and n not in base)
    strays = [n for n in strays if n not in _bound(name)]
    if strays:
        n = strays[0]
        near = difflib.get_close_matches(n, base, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ParameterError(
            f"{name} has no parameter {n}{hint}; its parameters: {', '.join(base)}"
        )
    values = check_values(name, {k: ns[k] for k in base if k in ns})
    diff = changed(name, values)
    given = {k: values[k] for k in OUTPUTS if k in values and resolve(values[k]) != record_dir(k)}
    run = Run(name, values, diff)
    if diff or given:
        folder = run_folder(name, values)
        for k in OUTPUTS:
            if k in base:
                where = resolve(given.get(k) or folder / k.split("_")[0].lower())
                ns[k] = run.outputs[k] = _for_code(where)
        picked = [run.outputs[k] for k in ("RESULTS_DIR", "FIGURES_DIR") if k in given]
        run.folder = resolve(picked[0]) if picked else folder
        _write_record(run)
    else:
        run.outputs = {k: values[k] for k in OUTPUTS if k in values}
    os.chdir(home())  # every relative path in the notebook starts in notebooks/
    return run


def _for_code(p: Path) -> str:
    """A folder as the notebook's code is given it: relative to notebooks/ inside the checkout
    (what a stored output shows is then the same on every machine), else absolute."""
    try:
        p.relative_to(home().parent)
    except ValueError:
        return str(p)
    return os.path.relpath(p, home())


def _write_record(run: Run) -> None:
    body = {
        "notebook": run.notebook,
        "changed": run.changes,
        "parameters": run.values | {k: _shown(resolve(v)) for k, v in run.outputs.items()},
        "checkout": checkout(),
        "versions": versions(),
    }
    text = json.dumps(body, indent=2, sort_keys=True, default=str) + "\n"
    atomic_write_text(run.folder / "run.json", text)
