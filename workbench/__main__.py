"""`python -m workbench` runs the command line."""

import sys

from workbench.cli import main

sys.exit(main())
