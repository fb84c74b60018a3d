# The two front doors: `make reproduce` (set up + re-execute every paper notebook) and
# `make test` (set up + pass the tests). Everything else is for people working on the project.
VENV := .venv
BIN := $(VENV)/bin
PORT ?=
IP ?= 127.0.0.1
TOKEN ?=
SEATS ?= 30
PER_ADDRESS ?=

.PHONY: setup reproduce notebooks test test-fast lint format bench explore app calibrate clean

setup:
	@scripts/setup_env.sh

# ARGS="--notebook 02 -p SEEDS 3": other parameters run into runs/<notebook>-<hash>/ (docs/notebooks.md)
reproduce: setup
	$(BIN)/workbench reproduce $(ARGS)

notebooks: reproduce

test:
	@scripts/setup_env.sh --browser
	$(BIN)/python scripts/nbval.py --with-tests -n 2 --dist loadfile

test-fast: setup
	$(BIN)/python -m pytest tests -x -q -p no:cacheprovider -m "not browser and not slow"

lint: setup
	$(BIN)/ruff check workbench tests scripts notebooks
	$(BIN)/ruff format --check workbench tests scripts notebooks

format: setup
	$(BIN)/ruff format workbench tests scripts notebooks
	$(BIN)/ruff check --fix workbench tests scripts notebooks
	cd notebooks && ../$(BIN)/jupytext --sync [0-9][0-9]_*.py

bench: setup
	$(BIN)/python scripts/bench.py $(ARGS)

# JupyterLab on the explorer, served from the repository's root (PORT=, TOKEN=, IP=, and ARGS=
# for anything else JupyterLab takes, e.g. ARGS=--no-browser); saving a paper notebook stores it
# as `workbench reproduce` does, so a save leaves git status clean (workbench/explore/lab.py)
explore: setup
	$(BIN)/python -m workbench.explore.lab --ip $(IP) $(if $(PORT),--port $(PORT)) $(if $(TOKEN),--token $(TOKEN)) -- $(ARGS)

# A room: one process serves the explorer and the workshop only, offline, behind a token, to at
# most SEATS pages at once (IP=ADDR: the laptop's address on the room's Wi-Fi, 0.0.0.0 for every
# address; TOKEN=... or $$WORKBENCH_ROOM_TOKEN, else a random one); it prints the links to give out.
app: setup
	$(BIN)/python -m workbench.explore.app --port $(or $(PORT),8866) --ip $(IP) --seats $(SEATS) $(if $(TOKEN),--token $(TOKEN)) $(if $(PER_ADDRESS),--per-address $(PER_ADDRESS))

calibrate: setup
	$(BIN)/python scripts/calibrate.py

clean:
	rm -rf $(VENV) .pytest_cache
