#!/usr/bin/env bash
# Drop what a runtime image never uses from a venv: test folders, static libraries, pip's caches.
# Used by docker/Dockerfile's builder stage; prints the size before and after.
set -euo pipefail
venv="${1:?usage: trim-venv.sh VENV}"
site=$(echo "$venv"/lib/python3*/site-packages)
before=$(du -sm "$venv" | cut -f1)
rm -rf "$site"/torch/test "$site"/torch/testing/_internal/generated "$site"/caffe2 2>/dev/null || true
find "$site" -depth -type d \( -name tests -o -name test \) -path "*/site-packages/*/*" \
    ! -path "*/torch/testing/*" ! -path "*/torch/utils/*" -exec rm -rf {} + 2>/dev/null || true
find "$site" -type f -name "*.a" -delete
rm -rf "$venv"/share/doc /root/.cache/pip
after=$(du -sm "$venv" | cut -f1)
echo "trim-venv: $venv ${before} MB -> ${after} MB"
