"""``compile_module`` / ``lower_stages``: verify, lower (crash-isolated), build, cache, load."""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from mlir_bridge import toolchain, trust
from mlir_bridge.cache import open_disk_cache
from mlir_bridge.module import CompiledModule
from mlir_bridge.signature import Signature
from mlir_bridge.stage import PipelineArg, normalize
from mlir_bridge.target import Target, get_target
from mlir_bridge.worker import Job

_lock = threading.Lock()
_modules: dict[str, CompiledModule] = {}
_inflight: dict[str, Future] = {}
_stats = {"memory_hits": 0, "disk_hits": 0, "misses": 0}


@dataclass(frozen=True)
class CacheInfo:
    """What ``cache_info()`` reports (counters are for this process; ``dir`` is the disk cache folder in
    use: None when the cache is off or its folder is not trusted)."""

    dir: str | None
    entries: int
    bytes: int
    memory_entries: int
    memory_hits: int
    disk_hits: int
    misses: int

    @property
    def hits(self) -> int:
        return self.memory_hits + self.disk_hits


def cache_key(text: str, description: str, target: Target) -> str:
    """sha256 over module text, pipeline description, target and toolchain."""
    h = hashlib.sha256()
    for part in (toolchain.toolchain_version(), target.fingerprint(), description, text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def compile_module(text: str, pipeline: PipelineArg, *, target: str | Target = "cpu") -> CompiledModule:
    """Compile MLIR ``text`` with ``pipeline`` for ``target`` and load it.

    ``pipeline``: an object with ``stages()``/``describe()`` (``lowering.pipelines.Pipeline``),
    a ``"builtin.module(...)"`` string, or a sequence of ``Stage``. Cached in memory and on
    disk (see ``cache_info``); concurrent calls for the same key compile once. Raises
    CompileError on invalid IR (with MLIR's diagnostics) and when a pass or the code
    generator fails or crashes (the interpreter survives); RuntimeError("no CUDA device ...")
    for a GPU target on a machine without a CUDA driver and device (``gpu.build_gpu`` still
    builds and caches GPU binaries there).
    """
    tgt = get_target(target)
    if tgt.device != "cpu":  # loading a GPU module without a driver would fail obscurely (or abort)
        from mlir_bridge.gpu.cuda_driver import require_cuda_device
        require_cuda_device()
    stages, description = normalize(pipeline)
    key = cache_key(text, description, tgt)
    with _lock:
        mod = _modules.get(key)
        if mod is not None:
            _stats["memory_hits"] += 1
            return mod
        fut = _inflight.get(key)
        owner = fut is None
        if fut is None:
            fut = _inflight[key] = Future()
        else:  # another thread is compiling this key: share its result
            _stats["memory_hits"] += 1
    if not owner:
        return fut.result()
    try:
        mod = _load_or_build(key, text, stages, tgt)
    except BaseException as err:
        fut.set_exception(err)
        with _lock:
            del _inflight[key]
        raise
    with _lock:
        _modules[key] = mod
        del _inflight[key]
    fut.set_result(mod)
    return mod


def _load_or_build(key: str, text: str, stages: tuple, tgt: Target) -> CompiledModule:
    version = toolchain.toolchain_version()
    disk = open_disk_cache()
    if disk is not None:
        entry = disk.load(key, version)
        if entry is not None:
            try:
                mod = CompiledModule(entry.so_path, entry.signatures, key, entry.device)
            except (OSError, AttributeError):
                mod = None  # unloadable (e.g. removed meanwhile): rebuild
            if mod is not None:
                with _lock:
                    _stats["disk_hits"] += 1
                return mod
    with _lock:
        _stats["misses"] += 1
    workdir = Path(tempfile.mkdtemp(prefix="ust-mlir-"))
    try:
        so_path, sigs = _build(text, stages, tgt, workdir)
        final = disk.store(key, version, tgt.device, so_path, sigs) if disk is not None else None
        return CompiledModule(final or so_path, sigs, key, tgt.device)
    finally:  # a loaded .so stays mapped after its file is removed
        shutil.rmtree(workdir, ignore_errors=True)


def _build(text: str, stages: tuple, tgt: Target, workdir: Path) -> tuple[Path, tuple[Signature, ...]]:
    from mlir_bridge.context import verify_text
    from mlir_bridge.isolate import run_job

    verify_text(text)  # in-process: cheap, and gives diagnostics for bad IR
    job = Job(text, stages, "compile", tuple(tgt.compile_env().items()), llvm_ir=tgt.translate_in_child)
    run_job(job, workdir)  # checks that workdir is still a trusted folder
    sigs = tuple(Signature.from_json(s) for s in json.loads(trust.read_file(workdir / "signatures.json")))
    llvm_module, so_path = workdir / "llvm.mlirbc", workdir / "module.so"
    trust.require_file(llvm_module)
    tgt.build(llvm_module, so_path)
    trust.seal(so_path)
    return so_path, sigs


def lower_stages(text: str, pipeline: PipelineArg) -> list[tuple[str, str]]:
    """``[("input", text), (stage_name, text after it), ...]``, computed crash-isolated."""
    from mlir_bridge.context import verify_text
    from mlir_bridge.isolate import run_job

    stages, _ = normalize(pipeline)
    verify_text(text)
    workdir = Path(tempfile.mkdtemp(prefix="ust-mlir-"))
    try:
        run_job(Job(text, stages, "stages"), workdir)
        return [(str(n), str(t)) for n, t in json.loads(trust.read_file(workdir / "stages.json"))]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def cache_info() -> CacheInfo:
    """Disk entries/bytes of the current cache folder and this process's hit/miss counters."""
    disk = open_disk_cache()
    entries, size = disk.info() if disk is not None else (0, 0)
    with _lock:
        return CacheInfo(str(disk.root) if disk is not None else None, entries, size, len(_modules),
                         _stats["memory_hits"], _stats["disk_hits"], _stats["misses"])


def clear_cache(*, memory: bool = True, disk: bool = True) -> None:
    """Forget compiled modules (loaded ones stay usable) and delete the cache folder's entries."""
    if memory:
        with _lock:
            _modules.clear()
            for k in _stats:
                _stats[k] = 0
    folder = open_disk_cache() if disk else None
    if folder is not None:
        folder.clear()
