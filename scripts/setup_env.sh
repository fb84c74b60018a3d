#!/usr/bin/env bash
# Create .venv and install the project (torch CPU first, then the rest, pinned by
# requirements-lock.txt). Idempotent: a stamp keyed on pyproject.toml and the lock skips the
# install when nothing changed.
# Usage: scripts/setup_env.sh [--browser]   (--browser also makes sure Chromium is on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml requirements-lock.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo ">> installing torch (CPU build) and the project into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch first and pinned: an unpinned torch pulls a multi-GB CUDA build
  .venv/bin/python -m pip install --quiet torch==2.13.0
  # the lock pins every package to the versions the stored notebook outputs were made with
  .venv/bin/python -m pip install --quiet -e ".[dev]" -c requirements-lock.txt
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# any JupyterLab started from .venv (`make explore`, or `jupyter lab` by hand) stores a paper
# notebook as `workbench reproduce` does, so a save leaves git status clean (explore/lab.py)
# (the server's own config file in .venv: its config.d folder holds extensions only; merged)
.venv/bin/python - <<'PY'
import json, pathlib
p = pathlib.Path(".venv/etc/jupyter/jupyter_server_config.json")
p.parent.mkdir(parents=True, exist_ok=True)
conf = json.loads(p.read_text()) if p.exists() else {}
conf.setdefault("ServerApp", {})["contents_manager_class"] = "workbench.explore.lab.CleanContentsManager"
p.write_text(json.dumps(conf, indent=2) + "\n")
PY
# the closure gate's replay loop is compiled once (numba caches it beside its module; about
# 30 s the first time, then a second or two to load)
.venv/bin/python -m workbench.closure.window.fastgate
if [ "${1:-}" = "--browser" ]; then
  if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
      echo ">> installing Chromium (Debian package) for the browser test"
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "!! Chromium is not on PATH and cannot be installed here (need root + apt-get);" >&2
      echo "!! the browser test will be skipped. Install it: sudo apt-get install chromium" >&2
    fi
  fi
fi
