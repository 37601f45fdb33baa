"""Compile a CSR SpMV for the GPU down to a device binary embedded in the host object, with no device: a fatbin
when ``fatbinary`` is there, else a cubin (the CUDA 12 nvcc wheel carries ptxas only). Proves an image can build
GPU kernels; exits 1 when ptxas is missing or the build fails."""
from __future__ import annotations

import shutil
import sys

from frontend import NamedFormats
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import lower_gpu
from mlir_bridge.gpu import build_gpu

FATBIN_MAGIC = bytes.fromhex("50ed55ba")
CUBIN_SECTION = b".nv.info"  # a section every cubin has


def main() -> int:
    from mlir_bridge.gpu.cuda_tools import cuda_tools

    print(f"gpu build check: {cuda_tools().describe()} (PATH: ptxas={shutil.which('ptxas')})")
    spmv = Contraction(("ik", "k"), (TensorSpec(NamedFormats.CSR, (8, 6), "f32", 32, 32),
                                     TensorSpec(None, (6,), "f32", 32, 32)), "i", TensorSpec(None, (8,), "f32"))
    low = lower_gpu(spmv, "sm_80")
    build = build_gpu(low.text, low.pipeline)
    blob = build.so_path.read_bytes()
    kind = "fatbin" if FATBIN_MAGIC in blob else "cubin" if CUBIN_SECTION in blob else None
    print(f"gpu build check: CSR SpMV for sm_80 -> {build.so_path} (embedded device binary: {kind})")
    return 0 if kind else 1


if __name__ == "__main__":
    sys.exit(main())
