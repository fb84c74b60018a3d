"""JupyterLab as `make explore` starts it: served from the repository's root (so a stored figure
link, ../figures/x.svg from notebooks/, resolves), on the port and token asked for, as root where
it must be (a container, a cloud workspace), and with a contents manager that stores a paper
notebook the way `workbench reproduce` does (common.notebook.clean_notebook: no live widget
state, no new model ids, the one kernelspec), before jupytext writes its paired .py. A save or
an autosave after Run All therefore leaves `git status` clean.

    python -m workbench.explore.lab [--port N] [--token T] [--ip ADDR] [--root DIR] [-- lab args]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from jupytext.async_contentsmanager import AsyncTextFileContentsManager

from workbench.common.notebook import clean_notebook

ROOT = Path(__file__).resolve().parents[2]
PAPER = re.compile(r"[0-9][0-9]_[^/]*\.ipynb")  # a paper notebook's name, in a notebooks/ folder
NOTEBOOK = "notebooks/05_explorer.ipynb"
# JupyterLab's defaults for this project (overrides.json): no news and no update check, so no
# "get notified about official Jupyter news?" prompt either (a room may have no internet)
SETTINGS = Path(__file__).resolve().parent / "lab_settings"


class CleanContentsManager(AsyncTextFileContentsManager):
    """jupytext's contents manager (the .ipynb and its .py saved together), with every paper
    notebook cleaned before either file is written."""

    async def save(self, model, path=""):
        full = Path(self.root_dir, path.strip("/"))
        paper = full.parent.name == "notebooks" and PAPER.fullmatch(full.name)
        if model.get("type") == "notebook" and model.get("content") and paper:
            clean_notebook(model["content"])
        return await super().save(model, path)


def command(root: Path, port: int | None, token: str | None, ip: str, extra: list[str]) -> list:
    """The `jupyter lab` command line (run from `root`)."""
    cmd = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        NOTEBOOK,
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.ip={ip}",
        "--ServerApp.contents_manager_class=workbench.explore.lab.CleanContentsManager",
        "--LabApp.news_url=None",
        f"--LabApp.app_settings_dir={SETTINGS}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    if port is not None:
        cmd.append(f"--ServerApp.port={port}")
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if os.geteuid() == 0:  # JupyterLab refuses root without it (a container, a cloud workspace)
        cmd.append("--allow-root")
    return cmd + extra


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="make explore", description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=None, help="default: JupyterLab's (8888 or next)")
    ap.add_argument("--token", default=None, help="default: a random one JupyterLab prints")
    ap.add_argument("--ip", default="127.0.0.1")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args, extra = ap.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    root = args.root.resolve()
    if not (root / NOTEBOOK).is_file():
        ap.error(f"{root} has no {NOTEBOOK}")
    cmd = command(root, args.port, args.token, args.ip, extra)
    os.chdir(root)
    os.execv(cmd[0], cmd)  # the server is this process: its pid is the one to stop


if __name__ == "__main__":
    main()
