"""Run nbval over a temporary copy of the notebooks and what they read, so a test run rewrites
no tracked file (the notebooks write figures/ and data/results/ next to themselves).

Usage: python scripts/nbval.py [pytest args...]   (exit code: pytest's)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY = ("notebooks", "data", "figures", "tests/fixtures")  # the notebooks' relative world


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="wb-nbval-") as tmp:
        for rel in COPY:
            shutil.copytree(ROOT / rel, Path(tmp) / rel, ignore=shutil.ignore_patterns("*.py"))
        notebooks = Path(tmp) / "notebooks"
        cmd = [
            sys.executable, "-m", "pytest", str(notebooks), "--nbval",
            "--nbval-sanitize-with", str(notebooks / "sanitize.cfg"),
            "-p", "no:cacheprovider", "--rootdir", tmp, *argv,
        ]  # fmt: skip
        return subprocess.call(cmd, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
