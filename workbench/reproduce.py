"""Re-execute the paper notebooks through papermill, in place or into a chosen folder."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from workbench.common.io import atomic_path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"


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


def execute(nb: Path, out: Path, parameters: dict | None = None, progress: bool = True) -> Path:
    """Run one notebook with papermill; write `out` only if every cell succeeds."""
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
    nb.metadata.pop("widgets", None)  # live widget state: new model ids on every run
    nb.metadata.get("papermill", {}).pop("start_time", None)
    nb.metadata.get("papermill", {}).pop("end_time", None)
    nb.metadata.get("papermill", {}).pop("duration", None)
    nb.metadata.get("papermill", {}).pop("input_path", None)
    nb.metadata.get("papermill", {}).pop("output_path", None)
    for ci, cell in enumerate(nb.cells):
        for oi, out in enumerate(cell.get("outputs", [])):
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view is not None:  # the state is dropped above; keep the reference stable
                view["model_id"] = f"workbench-cell{ci}-output{oi}"
        pmeta = cell.metadata.get("papermill")
        if pmeta is not None:
            cell.metadata.pop("papermill")
        cell.metadata.pop("execution", None)
    nbformat.write(nb, str(path))


def reproduce(
    names=None,
    parameters: dict | None = None,
    out_dir=None,
    progress: bool = True,
    stream=sys.stderr,
) -> list[Path]:
    """Execute the chosen notebooks in order; stop at the first failure, naming cell and error."""
    from tqdm.auto import tqdm

    chosen = notebooks(names)
    if parameters:
        import papermill as pm

        declared = set().union(*(pm.inspect_notebook(str(nb)) for nb in chosen))
        unknown = sorted(set(parameters) - declared)
        if unknown:
            raise ValueError(f"no chosen notebook declares parameter(s) {unknown}")
    done = []
    bar = tqdm(chosen, desc="notebooks", unit="nb", file=stream, disable=not progress)
    for nb in bar:
        bar.set_postfix_str(nb.stem)
        out = Path(out_dir) / nb.name if out_dir else nb
        done.append(execute(nb, out, parameters, progress=False))
    return done
