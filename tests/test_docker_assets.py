"""The container build's own logic, checked without building (make docker-test builds and runs the images):
the scripts parse, a machine with no container runtime is skipped in one line, the CPU image takes torch's CPU
build and runs as a non-root user, and the CUDA image adds the gpu extra's tools."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("docker.sh", "base-image.sh", "trim-venv.sh")


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_parse(name: str) -> None:
    proc = subprocess.run(["bash", "-n", str(ROOT / "scripts" / name)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _fake_bin(tmp_path: Path, tools: dict[str, str]) -> Path:
    """A PATH holding only bash's helpers and the given fake tools (name -> shell body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "cat", "printf", "awk", "df", "date"):
        real = shutil.which(tool)
        if real:
            (bin_dir / tool).symlink_to(real)
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text(f"#!{shutil.which('bash')}\n{body}\n")
        path.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("action", ["build", "test"])
def test_a_machine_without_a_container_runtime_is_skipped_in_one_line(tmp_path: Path, action: str) -> None:
    bin_dir = _fake_bin(tmp_path, {"id": "echo 1000", "docker": "exit 1"})  # no daemon, no podman, not root
    proc = subprocess.run([str(bin_dir / "bash"), str(ROOT / "scripts" / "docker.sh"), action],
                          capture_output=True, text=True, env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines == ["docker: skipped: no docker daemon, no podman, and no root apt-get to install it"], proc.stdout


def test_a_runtime_that_cannot_start_containers_is_skipped(tmp_path: Path) -> None:
    # podman is there but every command fails: no base image can be had, reported as a skip
    bin_dir = _fake_bin(tmp_path, {"id": "echo 0", "podman": "exit 125", "runc": "exit 0",
                                   "mktemp": "exit 1", "debootstrap": "exit 1", "timeout": "exit 1"})
    proc = subprocess.run([str(bin_dir / "bash"), str(ROOT / "scripts" / "docker.sh"), "build"],
                          capture_output=True, text=True,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("docker: skipped: "), proc.stdout


def test_cpu_image_takes_the_cpu_torch_build_and_runs_as_non_root() -> None:
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim$", text, re.M)
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
    assert "FROM ${BASE_IMAGE} AS builder" in text and "COPY --from=builder /opt/venv /opt/venv" in text
    assert "scripts/install.sh" in text and "scripts/trim-venv.sh" in text
    assert re.search(r"^USER ust$", text, re.M)
    assert "gpu" not in re.findall(r"EXTRAS=(\S+)", text)[0]  # the CPU image never installs the gpu extra


def test_cuda_image_adds_the_gpu_extra_to_the_cpu_image() -> None:
    text = (ROOT / "docker" / "Dockerfile.cuda").read_text()
    assert "ARG BASE_IMAGE=ust-mlir" in text and "EXTRAS=dev,gpu" in text
    assert "ptxas" in text and "fatbinary" in text and re.search(r"^USER ust$", text, re.M)


def test_docker_test_checks_what_the_issue_names() -> None:
    text = (ROOT / "scripts" / "docker.sh").read_text()
    for check in ("--network none", "make demo", "python -m frontend doctor", "examples/",
                  "cache_hit.py miss", "cache_hit.py hit", "gpu_fatbin.py", "nvidia-|triton", "MAX_CPU_IMAGE_MB=3072"):
        assert check in text, check
    assert "make docker-test" in (ROOT / ".ci" / "run").read_text()


def test_the_image_checks_run_here(tmp_path: Path) -> None:
    """The scripts docker-test runs inside the images also run on this machine (same venv)."""
    import sys

    env = dict(os.environ, UST_MLIR_CACHE_DIR=str(tmp_path / "cache"))
    for expect in ("miss", "hit"):
        proc = subprocess.run([sys.executable, str(ROOT / "docker" / "checks" / "cache_hit.py"), expect],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"expected a disk {expect}: ok" in proc.stdout
