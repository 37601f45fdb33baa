"""The CUDA target: build (and cache) GPU modules without a device, load them only where one exists.

``build_gpu`` lowers MLIR text through a GPU pipeline (``lowering.gpu.pipeline.GpuPipeline``), links
the host side against ``libmlir_cuda_runtime.so`` and stores the shared object (which embeds the
fatbin/cubin/PTX) in the disk cache, keyed additionally by the CUDA driver and toolkit versions
(``GpuTarget.fingerprint``); the chip is part of the pipeline description. Loading needs
``libcuda.so.1``: ``load_gpu`` checks for a driver and a device first (``require_cuda_device``) and
raises ``RuntimeError("no CUDA device ...")`` rather than letting the process abort.
``gpu_assembly`` returns the PTX of a module, for inspection and for ``ptxas``.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from mlir_bridge import toolchain
from mlir_bridge.cache import open_disk_cache
from mlir_bridge.compile import cache_key
from mlir_bridge.errors import CompileError
from mlir_bridge.gpu.cuda_driver import cuda_info, require_cuda_device
from mlir_bridge.gpu.cuda_tools import cuda_tools, log, release
from mlir_bridge.module import CompiledModule
from mlir_bridge.signature import Signature
from mlir_bridge.stage import PipelineArg, normalize
from mlir_bridge.target import Target, _run, register_target

_lock = threading.Lock()
_builds: dict[str, GpuBuild] = {}
_loaded: dict[tuple[str, int], CompiledModule] = {}
_ptx: dict[str, tuple[str, ...]] = {}


def toolkit_version() -> str:
    """``ptxas`` / ``fatbinary`` release lines of the tools in use (``cuda_tools``), or ``none``."""
    tools = cuda_tools()
    return ";".join(f"{t.name}={release(t)}" for t in (tools.ptxas, tools.fatbinary))


#: Linked into every GPU module: the caller's stream carries its work (see the file).
STREAM_SHIM = Path(__file__).with_name("stream_shim.c")


@functools.cache
def _shim_digest() -> str:
    import hashlib

    return hashlib.sha256(STREAM_SHIM.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class GpuTarget(Target):
    """Host code for this CPU calling the CUDA runtime; kernels embedded as GPU objects."""

    name: str = "gpu"
    device: str = "cuda"
    link_libs: tuple[str, ...] = ("mlir_cuda_runtime", "mlir_c_runner_utils")
    translate_in_child: bool = False  # mlir-translate registers every dialect's translation (gpu.binary)

    def fingerprint(self) -> str:
        info = cuda_info()
        driver = f"driver={info.driver_version}" if info.driver_version else "driver=none"
        return f"{super().fingerprint()}|{driver}|{toolkit_version()}|shim={_shim_digest()}"

    def compile_env(self) -> dict[str, str]:
        """The PATH that makes MLIR run the ``ptxas``/``fatbinary`` of ``cuda_tools`` (PATH or environment)."""
        from mlir_bridge.gpu.cuda_tools import compile_env

        return compile_env()

    def build(self, llvm_module: Path, out: Path) -> None:
        """As ``Target.build`` (translate, opt, llc, link), with the stream shim (``stream_shim.c``)
        linked into the shared object ahead of the runtime."""
        obj, shim = self.compile_object(llvm_module, out), out.with_name("stream_shim.o")
        _run("cc", ["cc", "-c", "-O2", "-fPIC", STREAM_SHIM, "-o", shim])
        self.link([obj, shim], out, system_libs=("dl", "m"))


GPU = GpuTarget()
register_target(GPU)


@dataclass(frozen=True)
class GpuBuild:
    """A built (not loaded) GPU module: the shared object and its functions' signatures."""

    key: str
    so_path: Path
    signatures: tuple[Signature, ...]


def build_gpu(text: str, pipeline: PipelineArg, *, target: GpuTarget = GPU) -> GpuBuild:
    """Lower and link ``text`` for ``target``; cached in memory and on disk; needs no GPU.

    Raises CompileError (invalid IR, a failing or crashing pass, no GPU kernel, ptxas errors).
    """
    from mlir_bridge.compile import _build

    stages, description = normalize(with_available_tools(pipeline))
    key = cache_key(text, description, target)
    with _lock:
        hit = _builds.get(key)
    if hit is not None:
        return hit
    version = toolchain.toolchain_version()
    disk = open_disk_cache()  # trusted folders and entries only (mlir_bridge.cache)
    entry = disk.load(key, version) if disk is not None else None
    if entry is not None:
        build = GpuBuild(key, entry.so_path, entry.signatures)
    else:
        workdir = Path(tempfile.mkdtemp(prefix="ust-mlir-gpu-"))
        try:
            so_path, sigs = _build(text, stages, target, workdir)
            final = disk.store(key, version, target.device, so_path, sigs) if disk is not None else None
            if final is None:  # no usable cache folder: keep the object somewhere stable
                final = Path(tempfile.mkdtemp(prefix="ust-mlir-gpu-keep-")) / so_path.name
                shutil.copyfile(so_path, final)
            build = GpuBuild(key, final, sigs)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    with _lock:
        _builds[key] = build
    return build


_NEEDS_PTXAS = ("bin", "fatbin")


def with_available_tools(pipeline: PipelineArg) -> PipelineArg:
    """``pipeline`` as the CUDA tools found here can build it: ``fatbin`` becomes ``bin`` (a cubin for the
    pipeline's chip, the device's own when one exists) when ``fatbinary`` is missing but ``ptxas`` is there
    (the ``nvidia-cuda-nvcc-cu12`` wheel carries ``ptxas`` only). Raises CompileError naming the places
    searched when a GPU object is asked for and ``ptxas`` is missing."""
    fmt = getattr(pipeline, "gpu_format", None) if dataclasses.is_dataclass(pipeline) else None
    if fmt not in _NEEDS_PTXAS:
        return pipeline
    tools = cuda_tools()
    if not tools.ptxas.found:
        raise CompileError(
            "ptxas not found: not on PATH, not in this Python environment (the gpu extra installs it: "
            "pip install 'ust-mlir[gpu]', wheel nvidia-cuda-nvcc-cu12), not under $CUDA_HOME or /usr/local/cuda; "
            "GPU objects cannot be built (reading PTX with gpu_format='isa' still works)", stage="gpu-binary")
    if fmt == "fatbin" and not tools.fatbinary.found:
        line = f"fatbinary not found: building cubins ({tools.ptxas.describe()})"
        if line not in _said:
            _said.add(line)
            log.info("ust-mlir: %s", line)
        return dataclasses.replace(pipeline, gpu_format="bin")  # type: ignore[type-var]
    return pipeline


_said: set[str] = set()


def load_gpu(build: GpuBuild, device: int = 0) -> CompiledModule:
    """Load a built GPU module for CUDA ``device`` (RuntimeError "no CUDA device" without driver/device).

    The module's constructor loads its kernels into the device's primary context when the shared object
    is opened, so the runtime's default device is set first, and each further device gets its own copy
    of the shared object (``dlopen`` runs a path's constructors once).
    """
    from mlir_bridge.gpu.call import set_device

    require_cuda_device(device)
    with _lock:
        mod = _loaded.get((build.key, device))
        if mod is None:
            path = build.so_path
            if device != 0:
                path = Path(tempfile.mkdtemp(prefix=f"ust-mlir-cuda{device}-")) / build.so_path.name
                shutil.copyfile(build.so_path, path)
            set_device(device)
            mod = _loaded[(build.key, device)] = CompiledModule(path, build.signatures, build.key, "cuda")
    return mod


_OBJECT = re.compile(r'assembly = "((?:[^"\\]|\\.)*)"')  # of a #gpu.object in gpu.binary
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|\\)")


def _unescape(s: str) -> str:
    return _ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)), s)


#: Separates the PTX of two gpu.modules in ``gpu_assembly``'s text (each is its own PTX module).
MODULE_SEPARATOR = "\n// ----- next gpu.module -----\n"


def gpu_assembly(text: str, pipeline: PipelineArg) -> str:
    """The PTX of every gpu.module of ``text`` lowered with ``pipeline``, joined by MODULE_SEPARATOR."""
    return MODULE_SEPARATOR.join(gpu_assemblies(text, pipeline))


def gpu_assemblies(text: str, pipeline: PipelineArg) -> list[str]:
    """The PTX of ``text`` lowered with ``pipeline`` switched to ``gpu_format="isa"`` (crash-isolated),
    one text per gpu.module (each assembles on its own with ``ptxas``)."""
    from mlir_bridge.compile import lower_stages

    if dataclasses.is_dataclass(pipeline) and getattr(pipeline, "gpu_format", "isa") != "isa":
        pipeline = dataclasses.replace(pipeline, gpu_format="isa")
    _, description = normalize(pipeline)
    key = cache_key(text, description, GPU)
    with _lock:
        hit = _ptx.get(key)
    if hit is not None:
        return list(hit)
    final = lower_stages(text, pipeline)[-1][1]
    found = [_unescape(m.group(1)) for m in _OBJECT.finditer(final)]
    if not found:
        raise ValueError("the lowered module holds no GPU object (is this a GPU pipeline with gpu_format='isa'?)")
    with _lock:
        _ptx[key] = tuple(found)
    return found
