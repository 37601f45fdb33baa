"""The GPU runtime: the CUDA target and its build (``target``), launching kernels on the caller's stream
(``call``, ``stream_shim.c``), the CUDA driver probe (``cuda_driver``) and the IR rewrites of GPU
modules (``ir``, ``kernels``, ``transforms``)."""
from .target import GPU, MODULE_SEPARATOR, STREAM_SHIM, GpuBuild, GpuTarget, build_gpu, gpu_assembly, load_gpu

__all__ = ["GPU", "GpuBuild", "GpuTarget", "MODULE_SEPARATOR", "STREAM_SHIM", "build_gpu", "gpu_assembly",
           "load_gpu"]
