"""Compile a CSR SpMV for the GPU down to a fatbin (ptxas + fatbinary through gpu-module-to-binary), with no
device: proves an image can build GPU kernels. Exits 1 when a tool is missing or the build fails."""
from __future__ import annotations

import shutil
import sys

from frontend import NamedFormats
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import lower_gpu
from mlir_bridge.gpu import build_gpu

FATBIN_MAGIC = bytes.fromhex("50ed55ba")


def main() -> int:
    for tool in ("ptxas", "fatbinary"):
        print(f"gpu build check: {tool}: {shutil.which(tool) or 'not on PATH'}")
    spmv = Contraction(("ik", "k"), (TensorSpec(NamedFormats.CSR, (8, 6), "f32", 32, 32),
                                     TensorSpec(None, (6,), "f32", 32, 32)), "i", TensorSpec(None, (8,), "f32"))
    low = lower_gpu(spmv, "sm_80")
    build = build_gpu(low.text, low.pipeline)
    has_fatbin = FATBIN_MAGIC in build.so_path.read_bytes()
    print(f"gpu build check: CSR SpMV for sm_80 -> {build.so_path} (fatbin embedded: {has_fatbin})")
    return 0 if has_fatbin else 1


if __name__ == "__main__":
    sys.exit(main())
