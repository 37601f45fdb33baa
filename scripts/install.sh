#!/usr/bin/env bash
# One install script for `make` and the Docker images: creates the venv (if missing)
# and installs the project with its pinned toolchain. Idempotent. EXTRAS picks the extras (default dev;
# EXTRAS=dev,gpu adds CuPy and the CUDA 12 ptxas wheel, see pyproject.toml; EXTRAS= installs none: the runtime
# Docker image).
set -euo pipefail
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${EXTRAS-dev}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# one stamp per set of extras: `EXTRAS=dev,gpu make setup` after a plain setup still installs the gpu extra
stamp="$VENV/.ust-installed-${EXTRAS//,/-}"
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then
    exit 0
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e ".${EXTRAS:+[$EXTRAS]}"
touch "$stamp"
