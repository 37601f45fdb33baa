"""The CUDA runtime libraries the GPU paths load at run time are in the image, and cuSPARSE's blocked-ELL entry
points bind: CuPy finds cudart, NVRTC and cuSPARSE through cuda-pathfinder; ``mlir_bridge.gpu.cusparse`` loads
the real libcusparse and resolves every function it calls. Without a device the library refuses to create a
handle, which must come back as ``CusparseError`` (never a crash); with one, a blocked-ELL SpMM is checked
against NumPy. Exits 1 on any failure."""
from __future__ import annotations

import sys

import numpy as np


def main() -> int:
    from cuda.pathfinder import load_nvidia_dynamic_lib

    for name in ("cudart", "nvrtc", "cusparse"):
        print(f"gpu libraries: {name}: {load_nvidia_dynamic_lib(name).abs_path}")
    from mlir_bridge.gpu.cuda_driver import cuda_info
    from mlir_bridge.gpu.cusparse import BlockedEllOperand, Cusparse, CusparseError

    lib = Cusparse.load()
    print(f"gpu libraries: mlir_bridge.gpu.cusparse bound {lib.lib._name}")
    if cuda_info().available:
        import cupy

        from frontend import NamedFormats, Tensor
        from frontend.ops.gpu._matmul import gpu_matmul_plan, to_device

        d = np.zeros((8, 6))
        d[[0, 1, 4, 7], [0, 3, 5, 2]] = [1.0, 2.0, 3.0, 4.0]
        t = to_device(Tensor.from_dense(d, NamedFormats.BlockedELL((2, 2))), 0, "cupy")
        x = np.arange(1.0, 7.0)
        plan = gpu_matmul_plan(t, cupy.asarray(x))
        got = plan.execute().get()
        print(f"gpu libraries: BlockedELL SpMV on the device, path {plan.path}: {got}")
        return 0 if plan.path == "cusparse" and np.allclose(got, d @ x) else 1
    col, val, b, c = np.zeros((1, 1), np.int32), np.ones((2, 2)), np.ones((2, 1)), np.zeros((2, 1))
    try:
        lib.spmm_blocked_ell(BlockedEllOperand(2, 2, 2, 2, col.ctypes.data, val.ctypes.data, "float64"),
                             b.ctypes.data, c.ctypes.data, 1, workspace=lambda n: (0, None))
    except CusparseError as err:
        print(f"gpu libraries: no device, as expected: {err}".splitlines()[0])
        return 0
    print("gpu libraries: cuSPARSE ran without a device?")
    return 1


if __name__ == "__main__":
    sys.exit(main())
