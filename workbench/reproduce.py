"""Re-execute the paper notebooks through papermill, in place or into a chosen folder."""

from __future__ import annotations

import ast
import sys
import threading
import time
from pathlib import Path

from workbench import params as P
from workbench.common.io import atomic_path
from workbench.common.notebook import clean_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
SLOW_CELL = 10.0  # seconds: a cell running longer is named on the progress line
# the kernel's own log at ERROR: its start-up warning about TCP transport would repeat once per
# notebook; a cell's warnings and errors are the notebook's outputs and are unaffected
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


class NotebookFailed(RuntimeError):
    """A notebook raised; the message names the notebook, the cell and the error."""


def notebooks(names=None, folder: Path = NOTEBOOK_DIR) -> list[Path]:
    """The paper notebooks (NN_name.ipynb, sorted), or those whose name contains one of `names`."""
    found = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return found
    picked = [p for p in found if any(n == p.stem or n in p.name for n in names)]
    missing = [n for n in names if not any(n == p.stem or n in p.name for p in found)]
    if missing:
        raise ValueError(
            f"no notebook matches {missing}; available: {', '.join(p.stem for p in found)}"
        )
    return picked


def parse_value(text: str):
    """'-p NAME VALUE' values: Python literals where they parse (ints, floats, lists), else text."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class CellWatch:
    """The progress line's notebook and, for a cell running past SLOW_CELL seconds, that cell and
    how long it has run (a daemon thread looks once a second while a notebook runs)."""

    def __init__(self, bar):
        self.bar, self.stem, self.cell, self.since = bar, "", None, 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def notebook(self, stem: str) -> None:
        self.stem, self.cell = stem, None
        self.bar.set_postfix_str(stem)

    def on_cell_start(self, cell, cell_index: int, **_) -> None:
        if self.cell is not None and time.monotonic() - self.since > SLOW_CELL:
            self.bar.set_postfix_str(self.stem)
        self.cell, self.since = cell_index, time.monotonic()

    def _watch(self) -> None:
        while not self.stop.wait(1.0):
            cell, took = self.cell, time.monotonic() - self.since
            if cell is not None and took > SLOW_CELL:
                self.bar.set_postfix_str(f"{self.stem}, cell {cell + 1}: {took:.0f} s")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def execute(
    nb: Path, out: Path, parameters: dict | None = None, progress: bool = True, watch=None
) -> Path:
    """Run one notebook with papermill; write `out` only if every cell succeeds. `watch` (a
    CellWatch) is told when each cell starts."""
    import papermill as pm

    params = dict(parameters or {})
    declared = set(pm.inspect_notebook(str(nb)))
    for name in sorted(set(params) - declared):  # not injected: say so, never silently
        print(
            f"workbench reproduce: {nb.name} has no parameter {name}; not applied", file=sys.stderr
        )
        params.pop(name)
    with atomic_path(out, suffix=".ipynb") as tmp:
        try:
            pm.execute_notebook(
                str(nb),
                str(tmp),
                parameters=params,
                cwd=str(nb.parent),
                kernel_name="python3",
                progress_bar=progress,
                log_output=False,
                extra_arguments=KERNEL_ARGS,
                **({"on_cell_start": watch.on_cell_start} if watch else {}),
            )
        except pm.PapermillExecutionError as e:
            raise NotebookFailed(
                f"{nb.name}: cell {e.exec_count} failed: {e.ename}: {e.evalue}"
            ) from None
        except Exception as e:  # kernel died, bad notebook, ...
            raise NotebookFailed(f"{nb.name}: {type(e).__name__}: {e}") from None
        _strip_papermill_noise(tmp)
    return out


def _strip_papermill_noise(path: Path) -> None:
    """Drop per-run timestamps, durations and widget state so re-runs give the same bytes."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    nbformat.write(nbformat.from_dict(clean_notebook(nb)), str(path))


def checkout_line() -> str:
    """Which checkout's notebooks run: its folder, commit and whether tracked files are changed."""
    c = P.checkout()
    commit = (c.get("commit") or "no git")[:12]
    state = ", tracked files modified" if c.get("modified") else ""
    return f"notebooks of {ROOT} ({commit}{state})"


def plan(nb: Path, parameters: dict, out_dir=None) -> tuple[Path, dict]:
    """Where one notebook's executed copy goes and the parameters it gets. The committed
    parameters run in place (the record); other parameters put the notebook in its run folder
    (runs/<notebook>-<hash>/, the folder its kernel writes its figures and tables to); --out DIR
    puts the notebook, its figures and its tables under DIR. Values are checked first."""
    given = {k: v for k, v in parameters.items() if k in P.declared(nb.stem)}
    values = P.check_values(nb.stem, given)
    if out_dir:
        out = Path(out_dir).resolve()
        for key, sub in (("FIGURES_DIR", "figures"), ("RESULTS_DIR", "results")):
            if key in values and key not in given:
                given[key] = str(out / sub)
        return out / nb.name, given
    if P.changed(nb.stem, values) or any(k in given for k in P.OUTPUTS):
        return P.run_folder(nb.stem, values) / nb.name, given
    return nb, given


def reproduce(
    names=None,
    parameters: dict | None = None,
    out_dir=None,
    progress: bool = True,
    stream=sys.stderr,
) -> list[Path]:
    """Execute the chosen notebooks in order; stop at the first failure, naming cell and error.
    Every notebook's parameters are checked before the first one runs."""
    from tqdm.auto import tqdm

    chosen = notebooks(names)
    parameters = dict(parameters or {})
    if parameters:
        import difflib

        names = set().union(*(P.declared(nb.stem) for nb in chosen))
        for name in sorted(set(parameters) - names):
            near = difflib.get_close_matches(name, sorted(names), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(f"no chosen notebook has a parameter {name}{hint}")
    plans = [(nb, *plan(nb, parameters, out_dir)) for nb in chosen]
    print(f"workbench reproduce: {checkout_line()}", file=stream)
    done = []
    bar = tqdm(plans, desc="notebooks", unit="nb", file=stream, disable=not progress)
    with CellWatch(bar) as watch:
        for nb, out, given in bar:
            watch.notebook(nb.stem)
            done.append(execute(nb, out, given, progress=False, watch=watch))
    return done
