"""LLVM's sparse-tensor integration tests (mlir/test/Integration/Dialect/SparseTensor/CPU/) ported to the public
API: the same inputs and the expected outputs their FileCheck lines print (stored values in storage order,
positions and coordinates, or the dense result), each also checked against numpy.

Ported: sparse_binary.mlir (vector_mul, vector_index, add_tensor_1/2, triangular), sparse_select.mlir
(vecSelect, matUpperTriangle), sparse_matrix_ops.mlir (matrix_scale,
matrix_add, matrix_mul on DCSR), sparse_reductions.mlir (sum and product reductions with an initial
value), sparse_unary.mlir (vector_magnify, matrix_clip, matrix_slice), sparse_reduce_custom.mlir
(min-plus products CSR x CSR and CSR x CSC). Not ported: the bitwise and/or/xor reductions (the scalar
tracer has no bitwise operators), unary kernels with a non-empty ``absent`` region (vector_complement,
vector_negation), which fill implicit zeros, while ``apply`` leaves them alone by design, and binary kernels
with custom ``left``/``right``/``overlap`` regions other than add/subtract/multiply (vector_min,
vector_setdiff, matrix_intersect, sub_with_thres, intersect_equal, only_left_right): the public API has no
user binary regions.
"""
from __future__ import annotations

import numpy as np
import pytest

import frontend as F
from frontend import NamedFormats as NF, Tensor
from frontend.ops import maximum, minimum, where


def sparse(shape, coords, values, fmt):
    d = np.zeros(shape)
    for c, v in zip(coords, values):
        d[tuple(c)] = v
    return d, Tensor.from_dense(d, fmt)


def buffers(t: Tensor):
    """(positions, coordinates) of each level as lists (None for dense levels) and the values."""
    pos = [None if p is None else np.asarray(p).tolist() for p in t._pos]
    crd = [None if c is None else np.asarray(c).tolist() for c in t._crd]
    return pos, crd, np.asarray(t.val).tolist()


# ----- sparse_select.mlir -----
V1 = sparse((10,), [[1], [3], [5], [7], [9]], [1.0, 2.0, -4.0, 0.0, 5.0], NF.SparseVector)
M1_SELECT = sparse((5, 5), [[0, 3], [1, 4], [2, 1], [2, 3], [3, 3], [3, 4], [4, 2]],
                   [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], NF.CSR)


def test_sparse_select_vec_select():
    d, v = V1
    v = Tensor(NF.SparseVector, (10,), [np.array([0, 5])], [np.array([1, 3, 5, 7, 9])],
               np.array([1.0, 2.0, -4.0, 0.0, 5.0]))  # the stored explicit zero at 7 is an entry
    got = F.select(v, lambda x: x >= 1.0)
    assert got.nse == 3
    pos, crd, val = buffers(got)
    assert pos[0] == [0, 3] and crd[0] == [1, 3, 9] and val == [1, 2, 5]
    np.testing.assert_array_equal(got.to_dense(), np.where(d >= 1.0, d, 0))


def test_sparse_select_upper_triangle():
    d, m = M1_SELECT
    got = F.select(m, lambda x, i, j: j > i)
    pos, crd, val = buffers(got)
    assert got.nse == 4 and pos[1] == [0, 1, 2, 3, 4, 4] and crd[1] == [3, 4, 3, 4] and val == [1, 2, 4, 6]
    np.testing.assert_array_equal(got.to_dense(), np.triu(d, 1))


# ----- sparse_matrix_ops.mlir -----
M1 = sparse((4, 8), [[0, 0], [0, 1], [1, 7], [2, 2], [2, 4], [2, 7], [3, 0], [3, 2], [3, 3]],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], NF.DCSR)
M2 = sparse((4, 8), [[0, 0], [0, 7], [1, 0], [1, 6], [2, 1], [2, 7]], [6.0, 5.0, 4.0, 3.0, 2.0, 1.0], NF.DCSR)


def test_sparse_matrix_ops_scale_add_mul():
    (d1, m1), (d2, m2) = M1, M2
    scaled = F.multiply(m1, 2.0)
    assert scaled.tensor_format == NF.DCSR
    pos, crd, val = buffers(scaled)
    assert pos[0] == [0, 4] and crd[0] == [0, 1, 2, 3] and pos[1] == [0, 2, 3, 6, 9]
    assert crd[1] == [0, 1, 7, 2, 4, 7, 0, 2, 3] and val == [2, 4, 6, 8, 10, 12, 14, 16, 18]
    total = F.add(scaled, m2)
    pos, crd, val = buffers(total)
    assert total.nse == 13 and pos[0] == [0, 4] and crd[0] == [0, 1, 2, 3] and pos[1] == [0, 3, 6, 10, 13]
    assert crd[1] == [0, 1, 7, 0, 6, 7, 1, 2, 4, 7, 0, 2, 3]
    assert val == [8, 4, 5, 4, 3, 6, 2, 8, 10, 13, 14, 16, 18]
    np.testing.assert_array_equal(total.to_dense(), 2 * d1 + d2)
    prod = F.multiply(scaled, m2)
    pos, crd, val = buffers(prod)
    assert prod.nse == 2 and pos[0] == [0, 2] and crd[0] == [0, 2] and pos[1] == [0, 1, 2] and crd[1] == [0, 7]
    assert val == [12, 12]
    np.testing.assert_array_equal(prod.to_dense(), 2 * d1 * d2)


# ----- sparse_reductions.mlir -----
I32 = np.array([0, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0],
               dtype=np.int32)
F32 = np.zeros(32, dtype=np.float32)
F32[[1, 4, 10, 20, 24, 29, 31]] = [1.0, 4.0, 3.0, 2.5, 2.0, 4.0, 9.0]
I32_DENSE = np.ones(32, dtype=np.int32)
I32_DENSE[[2, 20, 30, 31]] = [7, 3, 7, 3]
F32_DENSE = np.ones(32, dtype=np.float32)
F32_DENSE[[3, 10, 20, 31]] = [3.5, 2.0, 3.0, 4.0]


def test_sparse_reductions_with_initial_values():
    sv_i, sv_f = Tensor.from_dense(I32, NF.SparseVector), Tensor.from_dense(F32, NF.SparseVector)
    assert F.reduce(sv_i, None, "plus", 7) == 26 == 7 + I32.sum()
    assert F.reduce(sv_f, None, "plus", 2.0) == pytest.approx(27.5) == 2.0 + F32.sum()
    assert F.reduce(I32_DENSE, None, "times", 7) == 3087 == 7 * np.prod(I32_DENSE)
    assert F.reduce(F32_DENSE, None, "times", 2.0) == pytest.approx(168.0) == 2.0 * np.prod(F32_DENSE)


# ----- sparse_unary.mlir -----
SV1 = sparse((32,), [[0], [3], [11], [17], [20], [21], [28], [29], [31]],
             [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], NF.SparseVector)
UNARY_M1 = sparse((4, 8), [[0, 0], [0, 1], [1, 7], [2, 2], [2, 4], [2, 7], [3, 0], [3, 2], [3, 3]],
                  [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], NF.DCSR)


def test_sparse_unary_vector_magnify():
    d, v = SV1
    got = F.apply(v, lambda x, i: x * i)
    assert np.asarray(got.val).tolist() == [0, 6, 33, 68, 100, 126, 196, 232, 279]
    np.testing.assert_array_equal(got.to_dense(), d * np.arange(32))


def test_sparse_unary_matrix_clip_and_slice():
    d, m = UNARY_M1
    clipped = F.apply(m, lambda x: minimum(maximum(x, 3.0), 7.0))
    assert clipped.tensor_format == NF.DCSR
    assert np.asarray(clipped.val).tolist() == [3, 3, 3, 4, 5, 6, 7, 7, 7]
    np.testing.assert_array_equal(clipped.to_dense(), np.where(d != 0, np.clip(d, 3, 7), 0))
    rows, cols = m.shape
    sliced = F.apply(m, lambda x, i, j: where(2 * j < cols, 99.0, where(2 * i < rows, 99.0, x)))
    assert np.asarray(sliced.val).tolist() == [99, 99, 99, 99, 5, 6, 99, 99, 99]
    i, j = np.indices(d.shape)
    want = np.where(d != 0, np.where((2 * i < rows) | (2 * j < cols), 99.0, d), 0)
    np.testing.assert_array_equal(sliced.to_dense(), want)


# ----- sparse_reduce_custom.mlir (min-plus products with a sparse result) -----
def test_sparse_reduce_custom_min_plus():
    d1, m1 = sparse((4, 5), [[0, 0], [0, 1], [1, 0], [2, 2], [2, 3], [2, 4], [3, 0], [3, 2], [3, 3]],
                    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], NF.CSR)
    d2, m2r = sparse((5, 4), [[0, 0], [1, 3], [2, 0], [2, 3], [3, 1], [4, 1]], [6.0, 5.0, 4.0, 3.0, 2.0, 11.0],
                     NF.CSR)
    m2c = m2r.convert(tensor_format=NF.CSC)
    want = np.array([[7, 0, 0, 7], [9, 0, 0, 0], [8, 7, 0, 7], [12, 11, 0, 11]], dtype=float)
    stored1, stored2 = d1 != 0, d2 != 0
    ref = np.where(stored1[:, :, None] & stored2[None], d1[:, :, None] + d2[None], np.inf).min(1)
    np.testing.assert_array_equal(np.where(np.isinf(ref), 0, ref), want)  # numpy agrees with LLVM's output
    for m2 in (m2r, m2c):
        got = F.matmul(m1, m2, semiring="min-plus", out_format=NF.CSR)
        assert np.asarray(got.val).tolist() == [7, 7, 9, 8, 7, 7, 12, 11, 11]
        np.testing.assert_array_equal(got.to_dense(), want)


# ----- sparse_binary.mlir ----------------------------------------------------------------------------------------
V3 = np.array([float(k % 10) for k in range(32)])
M3 = np.array([[1.0, 0.0, 3.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 4.0], [3.0, 4.0, 0.0, 0.0]])
M4 = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.5, 0.0, 0.0], [1.0, 5.0, 2.0, 0.0], [2.0, 0.0, 0.0, 0.0]])


def test_sparse_binary_vector_mul_and_index():
    d, v = SV1
    prod = F.multiply(v, V3)  # sparse x dense: the sparse pattern, products of 0 stay stored
    pos, crd, val = buffers(prod)
    assert prod.nse == 9 and pos[0] == [0, 9] and crd[0] == [0, 3, 11, 17, 20, 21, 28, 29, 31]
    assert val == [0, 6, 3, 28, 0, 6, 56, 72, 9]
    np.testing.assert_array_equal(prod.to_dense(), d * V3)
    index = F.apply(v, lambda x, i: i)
    assert np.asarray(index.val).tolist() == [0, 3, 11, 17, 20, 21, 28, 29, 31]


def test_sparse_binary_add_tensor_and_triangular():
    m3, m4 = Tensor.from_dense(M3, NF.DCSR), Tensor.from_dense(M4, NF.DCSR)
    total = F.add(m3, m4)
    pos, crd, val = buffers(total)
    assert total.tensor_format == NF.DCSR and total.nse == 10 and pos[0] == [0, 4] and crd[0] == [0, 1, 2, 3]
    assert pos[1] == [0, 3, 4, 8, 10] and crd[1] == [0, 2, 3, 1, 0, 1, 2, 3, 0, 1]
    assert val == [2, 4, 1, 2.5, 1, 5, 2, 4, 5, 4]
    np.testing.assert_array_equal(total.to_dense(), M3 + M4)
    # triangular: overlap x + y above/on the diagonal, x - y below; left identity; right y or -y
    tri = F.add(m3, F.apply(m4, lambda y, i, j: where(j >= i, y, -y)))
    pos, crd, val = buffers(tri)
    assert pos[1] == [0, 3, 4, 8, 10] and crd[1] == [0, 2, 3, 1, 0, 1, 2, 3, 0, 1]
    assert val == [2, 4, 1, 2.5, -1, -5, 2, 4, 1, 4]
    i, j = np.indices(M3.shape)
    np.testing.assert_array_equal(tri.to_dense(), M3 + np.where(j >= i, M4, -M4))
