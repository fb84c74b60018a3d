"""A paper notebook's parameters, checked the moment papermill injects them, and where its run
writes.

Every paper notebook opens with its `parameters` cell and then calls `settle(NAME, globals())`
(the cell after papermill's injected one), before anything heavy is imported:

- a name that is not one of the notebook's parameters (`-p SEED 5` for `SEEDS`) is an error that
  names the close match and lists the parameters; a value out of its range is an error naming
  the parameter and the range (CHECKS holds one check per parameter; a test checks that every
  notebook parameter has one). Either error is one line (ParameterError renders no traceback);
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
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workbench.agents import FRAMEWORKS
from workbench.closure.window.managers import MANAGERS
from workbench.common.encoders import ENCODERS
from workbench.common.io import atomic_write_text
from workbench.common.notebook import RECORD
from workbench.common.options import check_choice, check_number, check_slider
from workbench.common.seeds import parse_seeds
from workbench.common.sweep import parse_scheduler
from workbench.dsgc.generator import TEMPLATES
from workbench.dsgc.policies import POLICIES

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


# --- one check per parameter -------------------------------------------------------------------


def _number(knob: str, lo=None, hi=None) -> Callable:
    def check(label, value):
        value = check_number(knob, value, label)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValueError(f"{label} must be in [{lo:g}, {hi:g}]; got {value!r}")
        return value

    return check


def _slider(slider: str) -> Callable:
    def check(label, value):
        return check_slider(slider, value, label)

    return check


def _choice(choices) -> Callable:
    def check(label, value):
        return check_choice(label, value, tuple(choices))

    return check


def _names(choices, must: str | None = None) -> Callable:
    def check(label, value):
        allowed = tuple(choices)
        items = [x.strip() for x in value.split(",")] if isinstance(value, str) else None
        if not items or not all(items) or any(x not in allowed for x in items):
            raise ValueError(
                f"{label} must be one or more of {', '.join(allowed)}, comma-separated; "
                f"got {value!r}"
            )
        if must and must not in items:
            raise ValueError(f"{label} must include {must}; got {value!r}")
        return value

    return check


def _listed(each: Callable) -> Callable:
    def check(label, value):
        if not isinstance(value, list | tuple) or not value:
            raise ValueError(f"{label} must be a non-empty list; got {value!r}")
        for v in value:
            each(f"each of {label}", v)
        return value

    return check


def _seeds(label, value):
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{label} must be N or 'A:B'; got {value!r}")
    if isinstance(value, int) and value < 1:
        raise ValueError(f"{label} must be N (seeds 0..N-1, N at least 1) or 'A:B'; got {value}")
    return _named(label, parse_seeds, value)


def _named(label, parse: Callable, value):
    """`value` if `parse` takes it, else its ValueError with the parameter's name in front."""
    try:
        parse(value)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    return value


def _seed_or_first(label, value):
    if value == -1 and not isinstance(value, bool):
        return value
    return _number("seed")(label, value)


def _text(label, value):
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{label} must be a non-empty string; got {value!r}")
    return value


def _url(label, value):
    if value == "" or (isinstance(value, str) and re.match(r"https?://\S+$", value)):
        return value
    raise ValueError(f"{label} must be '' or an http(s):// address; got {value!r}")


def _scheduler(label, value):
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{label} must be None or a string; got {value!r}")
    return _named(label, parse_scheduler, value)


def _path(kind: str) -> Callable:
    """A path, relative ones read from notebooks/; an input ('file', 'folder') must exist."""

    def check(label, value):
        _text(label, value)
        if kind == "output":
            return value
        p = resolve(value)
        if not (p.is_file() if kind == "file" else p.is_dir()):
            raise ValueError(f"{label}: no {kind} {value!r} (relative paths start in notebooks/)")
        return value

    return check


_BLOCKS = _number("total_blocks", 5)
_FRACTION = _number("recall_density", 0.0, 0.9)
# NAME -> check(label, value), or "NN:NAME" where one notebook gives a name its own range
CHECKS: dict[str, Callable] = {
    "ENCODER": _choice(ENCODERS),
    "ENCODERS": _names(ENCODERS),
    "TEMPLATE": _choice(TEMPLATES),
    "05:TEMPLATE": _choice(("worked", *TEMPLATES)),
    "06:TEMPLATE": _choice(("role", "profile")),
    "POLICY": _choice(POLICIES),
    "SEED": _number("seed"),
    "03:SEED": _seed_or_first,
    "06:SEED": _seed_or_first,
    "HOP_SEED": _seed_or_first,
    "SEEDS": _seeds,
    "LOG_SEEDS": _seeds,
    "SENTENCE_SEEDS": lambda label, v: v if v == 0 else _seeds(label, v),
    "TOTAL_BLOCKS": _BLOCKS,
    "05:TOTAL_BLOCKS": _choice((20, 50)),
    "SIZES": _listed(_BLOCKS),
    "BUDGET_MULTIPLIER": _number("budget_multiplier", 1.0),
    "05:BUDGET_MULTIPLIER": _slider("multiplier"),
    "MULTIPLIERS": _listed(_number("budget_multiplier", 1.0)),
    "LAMBDA": _number("lambda"),
    "05:LAMBDA": _slider("lam"),
    "LAMBDAS": _listed(_number("lambda")),
    "05:TAU": _slider("tau"),
    "05:HOPS": _slider("hops"),
    "HOPS": _listed(_number("hops")),
    "DELTAS": _listed(_number("delta", 1e-9, 1.0)),
    "DROPS": _listed(_number("drop")),
    "SPURIOUS": _listed(_number("spurious")),
    "RESAMPLES": _number("boot", 1),
    "TURNS": _number("turns", 20, 2000),
    "CAPACITY": _number("capacity", 100, 5000),
    "MANAGERS": _names(MANAGERS, must="relevance"),
    "MISSES": _listed(_number("restore_miss", 1e-9, 1.0)),
    "BOOT": _number("boot", 200, 10_000),
    "LOG_TURNS": _number("turns", 20, 300),
    "EPISODES": _number("episodes", 20, 3000),
    "K": _number("K", 1, 20),
    "TOP_K": _number("k", 1, 20),
    "DENSITY": _FRACTION,
    "KS": _listed(_number("K", 1, 20)),
    "DENSITIES": _listed(_FRACTION),
    "N_BOOT": _number("boot", 200, 10_000),
    "SPREAD_SEEDS": _number("seed", 2, 1000),
    "REPEATS": _listed(_number("spurious", 0, 6)),
    "READER_URL": _url,
    "READER_MODEL": _text,
    "SQUAD_EPISODES": _number("episodes", 10, 1000),
    "NS": _listed(_number("blocks", 100)),
    "QUERIES": _number("k"),
    "SCHEDULER": _scheduler,
    "11:BUDGET": _number("capacity", 100, 5000),
    "FRAMEWORKS": _names(FRAMEWORKS),
    "FIGURES_DIR": _path("output"),
    "RESULTS_DIR": _path("output"),
    "RECORDED_DIR": _path("folder"),
    "HANDWRITTEN": _path("folder"),
    "CALIBRATION_DIR": _path("folder"),
    "LOGS": _path("folder"),
    "LOG": _path("file"),
    "WINDOW": _path("file"),
    "SQUAD_PATH": _path("file"),
}
# checks across parameters: notebook number -> [(what must hold, the check on all its values)]
RELATIONS = {"08": [("TOP_K must be at most K", lambda v: v["TOP_K"] <= v["K"])]}


def check_for(notebook: str, name: str) -> Callable | None:
    return CHECKS.get(f"{notebook[:2]}:{name}") or CHECKS.get(name)


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
    for k, v in values.items():
        check = check_for(name, k)
        if check is None:
            raise ParameterError(f"{name}: no check for parameter {k} (workbench.params)")
        try:
            check(k, v)
        except (ValueError, TypeError) as e:
            raise ParameterError(f"{name}: {e}") from None
    for message, holds in RELATIONS.get(name[:2], []):
        if not holds(values):
            raise ParameterError(f"{name}: {message}")
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
