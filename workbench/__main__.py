"""`python -m workbench` and the `workbench` script: the command line, quiet on Ctrl-C.

Importing the package's dependencies takes seconds; a Ctrl-C meanwhile exits 130 with one
line, not a traceback. Once `main` runs, Ctrl-C raises KeyboardInterrupt again, so writers
clean up before `main` reports it (also exit 130).
"""

import os
import signal
import sys


def _interrupted_while_loading(signum, frame):
    sys.stderr.write("workbench: interrupted\n")
    os._exit(130)


signal.signal(signal.SIGINT, _interrupted_while_loading)

from workbench.cli import main  # noqa: E402  (after the handler: this import is the slow part)


def run() -> int:
    """The console script's entry point."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return main()


if __name__ == "__main__":
    sys.exit(run())
