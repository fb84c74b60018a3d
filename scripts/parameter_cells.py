"""Write each paper notebook's parameters cell from its declaration: the committed values, the
declaration's words as the comments (`workbench.params.parameters_cell`). Rewrites
notebooks/NN_*.py, formats it, and syncs the .ipynb (jupytext keeps the stored outputs).

    python scripts/parameter_cells.py            # every notebook
    python scripts/parameter_cells.py 05_explorer
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from workbench import params as P

ROOT = Path(__file__).resolve().parents[1]
CELL = re.compile(r'(# %% tags=\["parameters"\]\n)(.*?)(\n\n# %%)', re.S)


def rewrite(name: str) -> bool:
    path = ROOT / "notebooks" / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    new = CELL.sub(lambda m: m.group(1) + P.parameters_cell(name) + m.group(3), text, count=1)
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    bin_ = Path(sys.executable).parent
    subprocess.run([bin_ / "ruff", "format", "-q", str(path)], check=True)
    if path.read_text(encoding="utf-8") == text:  # only the quotes differed before formatting
        return False
    subprocess.run([bin_ / "jupytext", "--sync", "-q", str(path)], check=True, cwd=path.parent)
    return True


def main(argv: list[str]) -> int:
    for name in argv or list(P.OWNERS):
        print(f"{name}: {'written' if rewrite(name) else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
