"""ust-mlir in one minute: define a format, multiply a scipy matrix through MLIR, check against scipy.

    make demo        (or: .venv/bin/python examples/quickstart.py)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import frontend as F  # noqa: E402
from frontend import Dimension, LevelFormat, NamedFormats, TensorFormat  # noqa: E402

# 1. A format in the DSL: CSR is (i, j) -> (i : dense, j : compressed).
i, j = Dimension("i"), Dimension("j")
csr = TensorFormat([i, j], {i: LevelFormat.DENSE, j: LevelFormat.COMPRESSED}, name="MyCSR")
print("format  :", csr)
print("same as NamedFormats.CSR:", csr == NamedFormats.CSR)
print("encoding:", csr.to_mlir(pos_width=32, crd_width=32))
print("BSR 2x3 :", NamedFormats.BSR((2, 3)).to_mlir())

# 2. A scipy matrix times a vector and a matrix, compiled by MLIR's sparsifier (cached afterwards).
a = sp.random_array((300, 200), density=0.02, format="csr", random_state=0)
x = np.linspace(0.0, 1.0, 200)
t0 = time.perf_counter()
y = F.matmul(a, x)
t1 = time.perf_counter()
y_again = F.matmul(a, x)
t2 = time.perf_counter()
print(f"\nSpMV 300x200, {a.nnz} nonzeros: first call {1e3 * (t1 - t0):.1f} ms (compile or disk cache), "
      f"second call {1e6 * (t2 - t1):.0f} us")
print("matches scipy A @ x:", np.allclose(y, a @ x), "| max |diff| =", float(np.abs(y - a @ x).max()))

c = F.matmul(a, a.T.tocsr())  # CSR x CSR -> CSR (sparse result in scipy's CSR)
ref = (a @ a.T).tocsr()
ref.sort_indices()
same = (np.array_equal(c.indptr, ref.indptr) and np.array_equal(c.indices, ref.indices)
        and np.allclose(c.data, ref.data))
print(f"SpGEMM A @ A.T -> {type(c).__name__} with {c.nnz} nonzeros; identical to scipy entry by entry:", same)

# 3. The MLIR: the linalg.generic the op becomes (the module before lowering).
mm = F.Matmul(a, x)
print("\n----- MLIR (path:", mm.path + ") -----")
print(mm.mlir)

# 4. A semiring: max-plus of diag(2, 4) and ones, accumulated into C = 3 (only stored entries count).
c3 = np.full((2, 2), 3.0)
F.matmul(sp.csr_array(np.diag([2.0, 4.0])), np.ones((2, 2)), c3, semiring="max-plus")
print("max-plus:", c3.tolist())
print("cache:", {k: v for k, v in F.cache_info().items() if k in ("plans", "memory_hits", "disk_hits", "misses")})
