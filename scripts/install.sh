#!/usr/bin/env bash
# One install script for `make` and the Docker images: creates the venv (if missing)
# and installs the project with its pinned toolchain. Idempotent.
set -euo pipefail
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${EXTRAS:-dev}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.ust-installed"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
    exit 0
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".[$EXTRAS]"
touch "$stamp"
