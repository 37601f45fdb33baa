"""Run a worker Job so that a C++ assertion or a segfault becomes a CompileError.

Default: ``os.fork`` a child of this (MLIR-warm) process; ``UST_MLIR_ISOLATION=subprocess``
or a platform without ``fork`` uses a fresh ``python -m mlir_bridge.worker``. The output folder must
be a trusted one (``mlir_bridge.trust``: a fresh ``tempfile.mkdtemp``); its files are written 0600
without following symlinks, and read back only from a folder that is still trusted.
"""
from __future__ import annotations

import faulthandler
import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

from mlir_bridge import trust
from mlir_bridge.errors import CompileError
from mlir_bridge.worker import Job, run_and_report

#: Seconds a compile may take before the child is killed.
TIMEOUT_S = 600


_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


def _tail(path: Path, limit: int = 8000) -> str:
    try:
        return trust.read_file(path).decode(errors="replace")[-limit:]
    except OSError:
        return ""


def _run_forked(job: Job, outdir: Path) -> int:
    # Warm the parent: children inherit loaded MLIR libraries and need no imports of their own
    # (a module lock held by another thread at fork time would deadlock a child's import).
    from mlir_bridge import context, transforms  # noqa: F401

    log = os.open(outdir / "log.txt", _LOG_FLAGS, 0o600)
    with context.MLIR_LOCK:  # never fork while this process is inside MLIR
        pid = os.fork()
    if pid == 0:  # child: never returns
        status = 70
        try:
            faulthandler.disable()  # the parent's handler would write into its own stderr
            os.dup2(log, 1)
            os.dup2(log, 2)
            signal.alarm(TIMEOUT_S)
            status = run_and_report(job, outdir)
        finally:
            os._exit(status)
    os.close(log)
    _, wait_status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wait_status)


def _run_subprocess(job: Job, outdir: Path) -> int:
    trust.write_private(outdir / "job.pkl", pickle.dumps(job))
    # The worker must import what the parent can (the bridge, and modules defining stage callbacks).
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root] + [p for p in sys.path if p]))
    with os.fdopen(os.open(outdir / "log.txt", _LOG_FLAGS, 0o600), "wb") as log:
        try:
            proc = subprocess.run([sys.executable, "-m", "mlir_bridge.worker", str(outdir)],
                                  stdout=log, stderr=log, env=env, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return -signal.SIGKILL
    return proc.returncode


def use_fork() -> bool:
    return hasattr(os, "fork") and os.environ.get("UST_MLIR_ISOLATION", "fork") != "subprocess"


def run_job(job: Job, outdir: Path) -> None:
    """Run ``job`` isolated; outputs land in ``outdir`` (a trusted folder). Raises CompileError on any
    failure, UntrustedFile when ``outdir`` is not trusted before or after the run."""
    trust.require_folder(outdir)
    code = _run_forked(job, outdir) if use_fork() else _run_subprocess(job, outdir)
    trust.require_folder(outdir)
    if code == 0:
        return
    err_file = outdir / "error.json"
    if err_file.exists():
        try:
            info = json.loads(trust.read_file(err_file))
            raise CompileError(info["message"], stage=info["stage"], diagnostics=info["diagnostics"])
        except (OSError, ValueError, KeyError):
            pass
    stage = _tail(outdir / "progress") or "startup"
    why = f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
        else f"exit status {code}"
    raise CompileError(f"compilation crashed in stage {stage!r} ({why})", stage=stage,
                       diagnostics=_tail(outdir / "log.txt"))
