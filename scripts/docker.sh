#!/usr/bin/env bash
# Build (`docker.sh build`, make docker) and build + check (`docker.sh test`, make docker-test) two images:
#   ust-mlir       docker/Dockerfile       CPU: torch's CPU build, no CUDA library
#   ust-mlir-cuda  docker/Dockerfile.cuda  the CPU image + the `gpu` extra (CuPy, ptxas/fatbinary from wheels)
# Runtime: docker when its daemon answers, else rootful podman with runc (installed from Debian's packages
# when missing). A machine where no container can start is reported in one line and skipped (exit 0).
# Settings (environment): UST_MLIR_WHEELHOUSE (a folder of wheels, default $PIP_FIND_LINKS when it holds the
# CPU torch wheel), UST_MLIR_CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt when present),
# TORCH_INDEX_URL (CPU torch index), CPU_BASE_IMAGE (default python:3.11-slim).
set -euo pipefail
cd "$(dirname "$0")/.."
action="${1:-build}"
CPU_IMAGE=ust-mlir
CUDA_IMAGE=ust-mlir-cuda
CPU_BASE_IMAGE="${CPU_BASE_IMAGE:-python:3.11-slim}"
MAX_CPU_IMAGE_MB=3072
say() { echo "docker: $*"; }
skip() { say "skipped: $*"; exit 0; }

# ---- the container runtime ---------------------------------------------------------------------------------
rt=()
podman_conf() {  # rootful podman's default rlimits are refused on some hosts: a private containers.conf
    local conf="${XDG_RUNTIME_DIR:-/tmp}/ust-mlir-containers.conf"
    printf '[containers]\ndefault_ulimits = []\n' > "$conf"
    export CONTAINERS_CONF="$conf"
}
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    rt=(docker)
else
    if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            say "installing podman and runc from Debian's packages"
            DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends podman runc \
                >/dev/null 2>&1 || skip "no docker daemon and podman could not be installed"
        else
            skip "no docker daemon, no podman, and no root apt-get to install it"
        fi
    fi
    podman_conf
    rt=(podman --runtime runc)  # crun refuses hybrid cgroup v1/v2 hosts; runc works
fi
say "runtime: ${rt[*]}"

storage_dir() {  # where the runtime keeps images (the nearest existing folder)
    local d=/var/lib/docker
    [ "${rt[0]}" = podman ] && d=/var/lib/containers
    while [ ! -d "$d" ]; do d=$(dirname "$d"); done
    echo "$d"
}
size_mb() { "${rt[@]}" image inspect --format '{{.Size}}' "$1" | awk '{printf "%d", $1 / 1048576}'; }

# ---- build ---------------------------------------------------------------------------------------------------
# a full build: the builder stage (venv ~2.6 GB), the CPU image's copy of it, the CUDA layer, and the runtime's
# temporary copies while it commits each layer
MIN_FREE_GB=16
free_gb() { df -Pk "$(storage_dir)" | awk 'NR == 2 {printf "%d", $4 / 1048576}'; }
prune_ours() {  # the untagged images our earlier builds left (old tags, builder stages): ~3 GB per build
    local before after
    before=$(free_gb)
    "${rt[@]}" image prune -f --filter label=org.ust-mlir.build=1 >/dev/null 2>&1 || true
    after=$(free_gb)
    say "pruned untagged ust-mlir images: $before -> $after GB free"
}
build() {
    local base start wheelhouse ca torch_index free args=()
    prune_ours
    free=$(free_gb)
    [ "$free" -ge "$MIN_FREE_GB" ] || skip "only $free GB free for images (need $MIN_FREE_GB GB)"
    if ! base=$(bash scripts/base-image.sh "${rt[*]}" "$CPU_BASE_IMAGE"); then
        skip "no base image: $CPU_BASE_IMAGE cannot be pulled and debootstrap failed"
    fi
    if ! "${rt[@]}" run --rm --network none "$base" true >/dev/null 2>&1; then
        skip "containers cannot start on this machine (${rt[*]} run failed)"
    fi
    wheelhouse="${UST_MLIR_WHEELHOUSE:-}"
    if [ -z "$wheelhouse" ] && [ -n "${PIP_FIND_LINKS:-}" ] && ls "$PIP_FIND_LINKS"/torch-*+cpu-*.whl >/dev/null 2>&1; then
        wheelhouse="$PIP_FIND_LINKS"
    fi
    ca="${UST_MLIR_CA_BUNDLE:-}"
    if [ -z "$ca" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then ca=/etc/ssl/certs/ca-certificates.crt; fi
    torch_index="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"
    args+=(--build-arg "BASE_IMAGE=$base")
    if [ "${rt[0]}" = podman ]; then  # podman mounts host folders into RUN steps; docker builds stay self-contained
        args+=(--network host)
        if [ -n "$wheelhouse" ]; then
            args+=(--volume "$wheelhouse:/wheels:ro" --build-arg WHEELHOUSE=/wheels)
            torch_index="${TORCH_INDEX_URL-}"  # the wheelhouse holds the CPU wheel
            say "wheelhouse: $wheelhouse"
        fi
        if [ -n "$ca" ]; then
            args+=(--volume "$(dirname "$ca"):/etc/ust-mlir-ca:ro" --build-arg "CA_BUNDLE=/etc/ust-mlir-ca/$(basename "$ca")")
            say "CA bundle: $ca"
        fi
    fi
    if [ -z "$wheelhouse" ] && [ -n "$torch_index" ] && [ "${rt[0]}" = podman ] \
        && ! python3 -c "import urllib.request as u; u.urlopen('$torch_index', timeout=10)" >/dev/null 2>&1; then
        # nothing to build the CPU image from here: an environment limit, reported like a missing runtime
        skip "the CPU torch index $torch_index cannot be reached and no wheelhouse holds torch-2.13.0+cpu (set UST_MLIR_WHEELHOUSE or TORCH_INDEX_URL)"
    fi
    args+=(--build-arg "TORCH_INDEX_URL=$torch_index")
    start=$(date +%s)
    "${rt[@]}" build "${args[@]}" -f docker/Dockerfile -t "$CPU_IMAGE" .
    say "built $CPU_IMAGE in $(( $(date +%s) - start )) s on $base: $(size_mb "$CPU_IMAGE") MB"
    start=$(date +%s)
    "${rt[@]}" build "${args[@]}" --build-arg "BASE_IMAGE=$CPU_IMAGE" -f docker/Dockerfile.cuda -t "$CUDA_IMAGE" .
    say "built $CUDA_IMAGE in $(( $(date +%s) - start )) s: $(size_mb "$CUDA_IMAGE") MB"
    prune_ours  # this build's builder stage and the images the new tags replaced
}

# ---- checks inside the images, with no network ----------------------------------------------------------------
run_in() { local image="$1"; shift; "${rt[@]}" run --rm --network none "$image" "$@"; }
check() {
    local cpu_mb cuda_mb volume=ust-mlir-cache-check
    for image in "$CPU_IMAGE" "$CUDA_IMAGE"; do
        "${rt[@]}" image inspect "$image" >/dev/null 2>&1 || { say "$image is not built (run make docker)"; exit 1; }
    done
    cpu_mb=$(size_mb "$CPU_IMAGE"); cuda_mb=$(size_mb "$CUDA_IMAGE")
    say "sizes: $CPU_IMAGE $cpu_mb MB, $CUDA_IMAGE $cuda_mb MB"
    [ "$cpu_mb" -le "$MAX_CPU_IMAGE_MB" ] || { say "FAIL: $CPU_IMAGE is $cpu_mb MB (limit $MAX_CPU_IMAGE_MB)"; exit 1; }
    say "$CPU_IMAGE: no CUDA library"
    run_in "$CPU_IMAGE" bash -c '
        bad=$(python -m pip list --format=freeze 2>/dev/null | grep -i -E "^(nvidia-|triton|cupy)" || true)
        libs=$(find / -xdev \( -name "libcudart*" -o -name "libcublas*" -o -name "libnvrtc*" \) 2>/dev/null | head -3)
        if [ -n "$bad$libs" ]; then echo "CUDA found in the CPU image: $bad $libs"; exit 1; fi
        id -un; python -c "import torch; print(\"torch\", torch.__version__, \"cuda:\", torch.version.cuda)"'
    say "$CPU_IMAGE: make demo"
    run_in "$CPU_IMAGE" make demo
    say "$CPU_IMAGE: python -m frontend doctor"
    run_in "$CPU_IMAGE" python -m frontend doctor
    say "$CPU_IMAGE: examples/format_conversion.py"
    run_in "$CPU_IMAGE" python examples/format_conversion.py
    say "$CPU_IMAGE: disk cache across containers (volume $volume)"
    "${rt[@]}" volume rm -f "$volume" >/dev/null 2>&1 || true
    "${rt[@]}" volume create "$volume" >/dev/null
    "${rt[@]}" run --rm --network none -v "$volume:/var/cache/ust-mlir" "$CPU_IMAGE" python docker/checks/cache_hit.py miss
    "${rt[@]}" run --rm --network none -v "$volume:/var/cache/ust-mlir" "$CPU_IMAGE" python docker/checks/cache_hit.py hit
    "${rt[@]}" volume rm -f "$volume" >/dev/null
    say "$CUDA_IMAGE: python -m frontend doctor (no device here: the CPU verdict counts)"
    run_in "$CUDA_IMAGE" python -m frontend doctor
    say "$CUDA_IMAGE: a GPU SpMV compiled to a fatbin without a device"
    run_in "$CUDA_IMAGE" python docker/checks/gpu_fatbin.py
    say "$CUDA_IMAGE: CUDA runtime libraries and cuSPARSE's blocked-ELL entry points"
    run_in "$CUDA_IMAGE" python docker/checks/gpu_libraries.py
    say "all checks passed ($CPU_IMAGE $cpu_mb MB, $CUDA_IMAGE $cuda_mb MB)"
}

case "$action" in
    build) build ;;
    test) build; check ;;  # the build is a no-op when the layers are cached
    *) echo "usage: docker.sh build|test" >&2; exit 2 ;;
esac
