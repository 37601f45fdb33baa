"""Hand-written MLIR kernels for the mlir_bridge tests and benchmark (other layers generate these)."""
from __future__ import annotations

import numpy as np

MLIR_TYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
INDEX_DTYPES = {0: np.int64, 8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def csr_encoding(width: int = 0) -> str:
    return (f"#sparse_tensor.encoding<{{ map = (i, j) -> (i : dense, j : compressed), "
            f"posWidth = {width}, crdWidth = {width} }}>")


def spmv(m: int, n: int, dtype=np.float64, width: int = 0, name: str = "spmv") -> str:
    """``y = A @ x + y`` with A CSR (m x n); lowered args: pos, crd, val, x, y -> y."""
    t = MLIR_TYPES[np.dtype(dtype)]
    return f"""
#CSR = {csr_encoding(width)}
#trait = {{
  indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>],
  iterator_types = ["parallel", "reduction"]
}}
func.func @{name}(%A: tensor<{m}x{n}x{t}, #CSR>, %x: tensor<{n}x{t}>, %y: tensor<{m}x{t}>) -> tensor<{m}x{t}> {{
  %0 = linalg.generic #trait ins(%A, %x : tensor<{m}x{n}x{t}, #CSR>, tensor<{n}x{t}>) outs(%y : tensor<{m}x{t}>) {{
    ^bb0(%a: {t}, %b: {t}, %c: {t}):
      %p = arith.mulf %a, %b : {t}
      %s = arith.addf %c, %p : {t}
      linalg.yield %s : {t}
  }} -> tensor<{m}x{t}>
  return %0 : tensor<{m}x{t}>
}}
"""


def spgemm(m: int, k: int, n: int, dtype=np.float64, width: int = 0, name: str = "spgemm") -> str:
    """``C = A @ B``, all CSR; lowered args: A pos, crd, val, B pos, crd, val -> C pos, crd, val."""
    t = MLIR_TYPES[np.dtype(dtype)]
    return f"""
#CSR = {csr_encoding(width)}
#trait = {{
  indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>],
  iterator_types = ["parallel", "parallel", "reduction"]
}}
func.func @{name}(%A: tensor<{m}x{k}x{t}, #CSR>, %B: tensor<{k}x{n}x{t}, #CSR>) -> tensor<{m}x{n}x{t}, #CSR> {{
  %e = tensor.empty() : tensor<{m}x{n}x{t}, #CSR>
  %0 = linalg.generic #trait ins(%A, %B : tensor<{m}x{k}x{t}, #CSR>, tensor<{k}x{n}x{t}, #CSR>)
                            outs(%e : tensor<{m}x{n}x{t}, #CSR>) {{
    ^bb0(%a: {t}, %b: {t}, %c: {t}):
      %p = arith.mulf %a, %b : {t}
      %s = arith.addf %c, %p : {t}
      linalg.yield %s : {t}
  }} -> tensor<{m}x{n}x{t}, #CSR>
  return %0 : tensor<{m}x{n}x{t}, #CSR>
}}
"""


#: Scalars in and out, results that alias inputs (whole and sliced), fresh allocations.
MISC = """
func.func @mixed(%x: tensor<?xf64>, %k: i32, %s: f32) -> (i32, tensor<?xf64>, f64, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %sd = arith.extf %s : f32 to f64
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %b: f64):
      %p = arith.mulf %a, %sd : f64
      linalg.yield %p : f64
  } -> tensor<?xf64>
  %v = tensor.extract %x[%c0] : tensor<?xf64>
  %k2 = arith.addi %k, %k : i32
  return %k2, %r, %v, %x : i32, tensor<?xf64>, f64, tensor<?xf64>
}
func.func @twice(%a: f64, %n: index) -> f64 {
  %f = arith.index_cast %n : index to i64
  %g = arith.sitofp %f : i64 to f64
  %r = arith.mulf %a, %g : f64
  return %r : f64
}
func.func @tail(%x: memref<?x3xf32>, %c3: index) -> memref<?x3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x3xf32>
  %m = arith.subi %n, %c1 : index
  %v = memref.reinterpret_cast %x to offset: [%c3], sizes: [%m, 3], strides: [3, 1]
       : memref<?x3xf32> to memref<?x3xf32, strided<[3, 1], offset: ?>>
  %r = memref.cast %v : memref<?x3xf32, strided<[3, 1], offset: ?>> to memref<?x3xf32>
  return %r : memref<?x3xf32>
}
func.func @pair(%x: tensor<?xf64>) -> (tensor<?xf64>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xf64>) outs(%e : tensor<?xf64>) {
    ^bb0(%a: f64, %b: f64):
      %p = arith.addf %a, %a : f64
      linalg.yield %p : f64
  } -> tensor<?xf64>
  return %r, %r : tensor<?xf64>, tensor<?xf64>
}
"""

#: A diagonal format in the only form that parses ([s0]); the sparsifier asserts on it.
DIA_SPMV = """
#DIA = #sparse_tensor.encoding<{ map = [s0](i, j) -> (j - i : compressed, i : dense) }>
#trait = {
  indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>],
  iterator_types = ["parallel", "reduction"]
}
func.func @spmv(%A: tensor<4x4xf64, #DIA>, %x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %0 = linalg.generic #trait ins(%A, %x : tensor<4x4xf64, #DIA>, tensor<4xf64>) outs(%y : tensor<4xf64>) {
    ^bb0(%a: f64, %b: f64, %c: f64):
      %p = arith.mulf %a, %b : f64
      %s = arith.addf %c, %p : f64
      linalg.yield %s : f64
  } -> tensor<4xf64>
  return %0 : tensor<4xf64>
}
"""


def random_csr(m: int, n: int, density: float, dtype=np.float64, seed: int = 0, empty_rows: int = 0):
    """A scipy CSR with sorted indices; the first ``empty_rows`` rows and the last one are empty."""
    import scipy.sparse as sp

    a = sp.random(m, n, density=density, format="lil", dtype=dtype, random_state=seed)
    for r in list(range(min(empty_rows, m))) + ([m - 1] if empty_rows else []):
        a.rows[r], a.data[r] = [], []
    a = a.tocsr()
    a.sort_indices()
    return a


def csr_buffers(a, width: int = 0):
    """(pos, crd, val) of a scipy CSR with the index dtype of ``width``."""
    it = INDEX_DTYPES[width]
    return (np.ascontiguousarray(a.indptr, dtype=it), np.ascontiguousarray(a.indices, dtype=it),
            np.ascontiguousarray(a.data))
