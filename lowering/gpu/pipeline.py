"""The sparsifier for NVIDIA GPUs (NVVM), as ``GpuPipeline`` stages (``gpu_stages``, registered for target
"gpu" by :mod:`lowering.builtins`).

Follows LLVM 22's ``buildSparsifier`` with a GPU triple (``mlir-opt --sparsifier="parallelization-
strategy=... gpu-triple=... gpu-chip=..." --dump-pass-pipeline``), split into stages::

    prepare      sparse-assembler, generalize + fuse           (as on the CPU)
      [before_sparsification]
    sparsify     sparsification-and-bufferization{parallelization-strategy=...}
      [after_bufferization]
    gpu-outline  storage specifiers, canonicalize, sparse-gpu-codegen (outer parallel loop -> kernel)
    gpu-loops    what is left as linalg / scf.parallel (dense operands, fills, emitter loops): tiled by
                 num_threads, mapped to blocks x threads, outlined (gpu-kernel-outlining)
    gpu-atomics  racy kernel stores -> memref.atomic_rmw         (mlir_bridge.gpu.transforms)
    gpu-grid     one thread per outer iteration (the sparsifier launches a single block)
    device-resident (resident=True) kernels read the caller's device buffers, no staging copies
    gpu-kernels  gpu.module(strip-debuginfo, convert-scf-to-cf, convert-gpu-to-nvvm)
    lower        host loops, vectors, math to LLVM-ready IR     (as on the CPU)
      [before_llvm]
    gpu-binary   nvvm-attach-target{chip, triple, O}, gpu-to-llvm, gpu-module-to-binary{format}
    to-llvm      convert-to-llvm, reconcile-unrealized-casts

``resident=False`` keeps the sparsifier's own host code (it copies host buffers to the device
and back) - what ``mlir-opt --sparsifier`` produces; useful to inspect, not what the runtime calls.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir_bridge import Stage

from .. import pipelines
from ..pipelines import Pipeline, registered_passes

GPU_TRIPLE = "nvptx64-nvidia-cuda"
GPU_FORMATS = ("fatbin", "bin", "isa", "offload", "llvm")
#: Chips compiled for when no device tells which one (``GpuPipeline.for_chips``).
DEFAULT_CHIPS = ("sm_90", "sm_80")


def _gpu_fn(name: str):  # noqa: ANN202 - module-level callables for Stage(module_fn=...)
    def run(module) -> None:  # noqa: ANN001 - an mlir.ir.Module
        from mlir_bridge.gpu import transforms as gpu_transforms

        getattr(gpu_transforms, name)(module)

    run.__name__ = run.__qualname__ = f"gpu_{name}"
    return run


gpu_require_kernels = _gpu_fn("require_kernels")
gpu_atomic_scatter = _gpu_fn("atomic_scatter")
gpu_device_resident = _gpu_fn("device_resident")
gpu_grid_size = _gpu_fn("grid_size")


@dataclass(frozen=True)
class GpuPipeline(Pipeline):
    """The sparsifier for an NVIDIA chip (``gpu_chip`` ``sm_XY``) producing ``gpu_format`` objects.

    ``parallelization_strategy`` must not be ``"none"`` (no GPU code would appear);
    ``num_threads`` is the block size of generated kernels; ``resident``: see the module docstring.
    """

    target: str = "gpu"
    parallelization_strategy: str = "dense-outer-loop"
    gpu_chip: str = "sm_90"
    gpu_format: str = "fatbin"
    gpu_triple: str = GPU_TRIPLE
    gpu_features: str = ""
    gpu_opt_level: int = 3
    num_threads: int = 256
    resident: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.parallelization_strategy == "none":
            raise ValueError("a GPU pipeline needs a parallelization_strategy other than 'none'")
        if self.vl != 0:
            raise ValueError("vl (CPU vector length) must be 0 for the GPU pipeline")
        chip = self.gpu_chip
        if not (chip.startswith("sm_") and chip[3:].rstrip("af").isdigit()):
            raise ValueError(f"gpu_chip must look like 'sm_90' / 'sm_90a', got {chip!r}")
        if self.gpu_format not in GPU_FORMATS:
            raise ValueError(f"gpu_format must be one of {GPU_FORMATS}, got {self.gpu_format!r}")
        if not 0 <= self.gpu_opt_level <= 3:
            raise ValueError(f"gpu_opt_level must be 0..3, got {self.gpu_opt_level!r}")
        if not isinstance(self.num_threads, int) or not 32 <= self.num_threads <= 1024:
            raise ValueError(f"num_threads must be an int in 32..1024, got {self.num_threads!r}")

    def pass_pipeline(self) -> str:
        """The pass stages only, as one string (for mlir-opt; Python rewrites and hooks left out)."""
        inner = [s.passes[len("builtin.module("):-1] for s in self.stages() if s.passes is not None
                 and s.name in ("prepare", "sparsify", "gpu-outline", "gpu-kernels", "lower",
                                "gpu-binary", "to-llvm")]
        return "builtin.module(" + ",".join(inner) + ")"

    @staticmethod
    def loops_stage(num_threads: int) -> Stage:
        """``gpu-loops``: linalg and scf.parallel loops -> tiles of ``num_threads`` -> outlined kernels."""
        return Stage("gpu-loops", passes="builtin.module(func.func(convert-linalg-to-parallel-loops,"
                                         f"scf-parallel-loop-tiling{{parallel-loop-tile-sizes={num_threads} "
                                         "no-min-max-bounds=true},gpu-map-parallel-loops,"
                                         "convert-parallel-loops-to-gpu),gpu-kernel-outlining,"
                                         "gpu.module(lower-affine),canonicalize)")

    @staticmethod
    def for_chips(chips: tuple[str, ...] | None = None, **options) -> tuple[GpuPipeline, ...]:
        """One pipeline per chip: ``chips``, else the device's chip, else ``DEFAULT_CHIPS``."""
        return tuple(GpuPipeline(gpu_chip=c, **options) for c in (chips or default_chips()))


def default_chips() -> tuple[str, ...]:
    """``(sm_XY of CUDA device 0,)`` when a device exists, else ``DEFAULT_CHIPS``."""
    from mlir_bridge.gpu.cuda_driver import cuda_info

    info = cuda_info()
    return (info.chip(0),) if info.available else DEFAULT_CHIPS


def _host_lowering(p: Pipeline) -> str:
    idx32 = pipelines._on_off(p.enable_index_optimizations)
    vec2llvm = (f"convert-vector-to-llvm{{enable-x86vector=false force-32bit-vector-indices={idx32} "
                f"reassociate-fp-reductions={pipelines._on_off(p.reassociate_fp_reductions)}}}")
    return ",".join([
        "func.func(convert-linalg-to-loops)", "func.func(convert-vector-to-scf)",
        "func.func(expand-realloc)", "func.func(convert-scf-to-cf)", "expand-strided-metadata",
        "lower-affine", vec2llvm, "func.func(convert-complex-to-standard)", "func.func(arith-expand)",
        "func.func(convert-math-to-llvm)", "convert-math-to-libm", "convert-complex-to-libm", vec2llvm])


def gpu_stages(p: Pipeline) -> tuple[Stage, ...]:
    if not isinstance(p, GpuPipeline):
        p = GpuPipeline(**{f: getattr(p, f) for f in ("vl", "reassociate_fp_reductions",
                                                      "enable_index_optimizations", "enable_x86vector")},
                        parallelization_strategy=(p.parallelization_strategy
                                                  if p.parallelization_strategy != "none" else "dense-outer-loop"))
    idx32 = pipelines._on_off(p.enable_index_optimizations)
    sparsify = (f"sparsification-and-bufferization{{enable-gpu-libgen=false enable-simd-index32={idx32} "
                f"enable-vla-vectorization=false parallelization-strategy={p.parallelization_strategy} "
                f"sparse-emit-strategy=functional vl=0}}")
    attach = (f"nvvm-attach-target{{chip={p.gpu_chip} triple={p.gpu_triple} O={p.gpu_opt_level}"
              + (f" features={p.gpu_features}" if p.gpu_features else "") + "}")
    resident = (Stage("device-resident", module_fn=gpu_device_resident, version="1"),) if p.resident else (
        Stage("gpu-require-kernels", module_fn=gpu_require_kernels, version="1"),)
    return (
        Stage("prepare", passes="builtin.module(sparse-assembler{direct-out=true},"
                                "func.func(linalg-generalize-named-ops),func.func(linalg-fuse-elementwise-ops))"),
        *registered_passes("before_sparsification"),
        Stage("sparsify", passes=f"builtin.module({sparsify})"),
        *registered_passes("after_bufferization"),
        Stage("gpu-outline", passes="builtin.module(sparse-storage-specifier-to-llvm,func.func(canonicalize),"
                                    f"sparse-gpu-codegen{{num-threads={p.num_threads}}})"),
        GpuPipeline.loops_stage(p.num_threads),
        *resident,
        Stage("gpu-atomics", module_fn=gpu_atomic_scatter, version="2"),
        Stage("gpu-grid", module_fn=gpu_grid_size, version="1"),
        Stage("gpu-kernels", passes="builtin.module(gpu.module(strip-debuginfo),gpu.module(convert-scf-to-cf),"
                                    "gpu.module(convert-gpu-to-nvvm))"),
        Stage("lower", passes=f"builtin.module({_host_lowering(p)})"),
        *registered_passes("before_llvm"),
        Stage("gpu-binary", passes=f"builtin.module({attach},gpu-to-llvm,"
                                   f"gpu-module-to-binary{{format={p.gpu_format}}})"),
        Stage("to-llvm", passes="builtin.module(convert-to-llvm,reconcile-unrealized-casts)"),
    )

