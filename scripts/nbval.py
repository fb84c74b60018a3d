"""Run nbval over a temporary copy of the notebooks and what they read, so a test run rewrites
no tracked file (the notebooks write figures/ and data/results/ next to themselves).

Usage: python scripts/nbval.py [--with-tests] [pytest args...]   (exit code: pytest's)

--with-tests also collects tests/ in the same pytest session (what `make test` runs): one
session, so `-n 2` (pytest-xdist) keeps both cores busy to the end instead of waiting for the
slowest file of one run before starting the other.
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
    with_tests = "--with-tests" in argv
    argv = [a for a in argv if a != "--with-tests"]
    with tempfile.TemporaryDirectory(prefix="wb-nbval-") as tmp:
        for rel in COPY:
            shutil.copytree(ROOT / rel, Path(tmp) / rel, ignore=shutil.ignore_patterns("*.py"))
        notebooks = Path(tmp) / "notebooks"
        where = ["--rootdir", tmp]
        if with_tests:  # the project's pytest settings (markers) and its tests, by absolute path
            where = [
                str(ROOT / "tests"),
                "--rootdir",
                str(ROOT),
                "-c",
                str(ROOT / "pyproject.toml"),
            ]
        cmd = [
            sys.executable, "-m", "pytest", str(notebooks), "--nbval",
            "--nbval-sanitize-with", str(notebooks / "sanitize.cfg"),
            "-p", "no:cacheprovider", *where, *argv,
        ]  # fmt: skip
        return subprocess.call(cmd, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
