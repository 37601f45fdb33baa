"""Run GPU modules against the fake driver (tests/fake_cuda/fake_libcuda.c); print what it saw as JSON.

Started by tests/test_gpu_lowering.py in a child process with LD_LIBRARY_PATH pointing at the fake
libcuda.so.1. Builds and loads a CSR SpMV (sparsifier kernel), a dense SpMV (gpu-loops kernel) and a
DELTA SpMV (emitter kernel), calls each on host arrays (the fake driver never dereferences them),
once on a caller's stream and once without.
"""
from __future__ import annotations

import ctypes
import json

import numpy as np
import scipy.sparse as sp

from frontend import NamedFormats as N
from frontend.tensor import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import lower_gpu
from mlir_bridge.gpu import build_gpu, load_gpu
from mlir_bridge.gpu.cuda_driver import cuda_info


def main() -> None:
    fake = ctypes.CDLL("libcuda.so.1")
    fake.fake_log.restype = ctypes.c_char_p
    n, m = 2000, 300
    a = sp.random(n, m, density=0.01, format="csr", dtype=np.float32, random_state=0)
    x, y = np.ones(m, np.float32), np.zeros(n, np.float32)
    delta = Tensor.from_dense(a.toarray(), N.DELTA(8))
    cases = {
        "csr": (N.CSR, "sparsifier-gpu", [a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data]),
        "dense": (None, "sparsifier-gpu", [a.toarray()]),
        "delta": (N.DELTA(8), "emitter-gpu", [delta.pos(1).astype(np.int32), delta.crd(1).view(np.int8),
                                               delta.val]),
    }
    out = {"info": [cuda_info().device_count, cuda_info().chip(0)]}
    for name, (fmt, path, bufs) in cases.items():
        c = Contraction(("ik", "k"), (TensorSpec(fmt, (n, m), "f32", 32, 32), TensorSpec(None, (m,), "f32")), "i",
                        TensorSpec(None, (n,), "f32"), init="c")
        low = lower_gpu(c, "sm_90", path)
        fake.fake_clear()
        mod = load_gpu(build_gpu(low.text, low.pipeline))
        loaded = fake.fake_log().decode()
        fn = mod.function("main")
        args = bufs + [x, y]
        fake.fake_clear()
        mod._lib.ust_set_stream(ctypes.c_void_p(0x777), 1)
        fn(*args)
        mod._lib.ust_set_stream(None, 0)
        on_stream = fake.fake_log().decode()
        fake.fake_clear()
        fn(*args)
        own = fake.fake_log().decode()
        out[name] = {"load": loaded, "on_stream": on_stream, "own": own,
                     "pointers": [hex(b.ctypes.data) for b in args]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
