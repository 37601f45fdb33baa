#!/usr/bin/env bash
# Print the base image to build from: the default one when the runtime can pull it, else an equivalent
# Debian bookworm base (python3 3.11, gcc, make) built here with debootstrap from Debian's packages.
# usage: base-image.sh RUNTIME DEFAULT_IMAGE     (RUNTIME: docker or "podman --runtime runc" ...)
# Log lines go to stderr; the image name is the only line on stdout.
set -euo pipefail
runtime="${1:?usage: base-image.sh RUNTIME DEFAULT_IMAGE}"
default="${2:?usage: base-image.sh RUNTIME DEFAULT_IMAGE}"
local_tag="localhost/ust-mlir-base:bookworm"
log() { echo "base-image: $*" >&2; }

if $runtime image inspect "$default" >/dev/null 2>&1 || timeout 120 $runtime pull "$default" >/dev/null 2>&1; then
    log "using $default"
    echo "$default"
    exit 0
fi
if $runtime image inspect "$local_tag" >/dev/null 2>&1; then
    log "$default cannot be pulled; using $local_tag (built earlier with debootstrap)"
    echo "$local_tag"
    exit 0
fi
log "$default cannot be pulled; building $local_tag from Debian's packages with debootstrap"
if ! command -v debootstrap >/dev/null; then
    apt-get install -y --no-install-recommends debootstrap >&2
fi
root=$(mktemp -d /var/tmp/ust-mlir-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase \
    --include=python3,python3-venv,gcc,libc6-dev,make,ca-certificates \
    bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | $runtime import --change 'CMD ["/bin/bash"]' - "$local_tag" >/dev/null
log "built $local_tag ($(du -sh "$root" | cut -f1) on disk)"
echo "$local_tag"
