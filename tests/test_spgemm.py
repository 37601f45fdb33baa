"""SpGEMM (CSR x CSR -> CSR, CSC x CSC -> CSC) against scipy: shapes, index and value types, thread counts,
and each way :class:`frontend.ops._two_pass.TwoPassFunction` can run a product (whole function, two
passes on one thread, two passes in chunks)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend.ops._two_pass import PARALLEL_MIN_PRODUCTS, TwoPassFunction, _balanced
from lowering.kernels import spgemm as spgemm_kernel

DTYPES = [np.float32, np.float64, np.complex128]


def sparse(kind: str, shape: tuple[int, int], density: float, seed: int, dtype=np.float64,
           index=np.int32) -> sp.sparray:
    rng = np.random.default_rng(seed)
    m = sp.random_array(shape, density=density, format=kind, random_state=seed, dtype=np.float64)
    m = getattr(sp, f"{kind}_array")(m.astype(dtype))
    if np.dtype(dtype).kind == "c":
        m.data = m.data + 1j * rng.standard_normal(m.nnz)
    m.indptr, m.indices = m.indptr.astype(index), m.indices.astype(index)
    return m


def check(got: sp.sparray, a: sp.sparray, b: sp.sparray) -> None:
    """Same positions, coordinates (sorted) and values as scipy's product (scipy drops exact zeros)."""
    ref = (a @ b).astype(got.dtype)
    ref = type(a)(ref)
    ref.sort_indices()
    assert type(got) is type(a) and got.format == a.format and got.shape == ref.shape
    assert got.indices.dtype == a.indices.dtype
    g = got.copy()
    g.eliminate_zeros()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    tol = 1e-4 if np.dtype(got.dtype) in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(g.data, ref.data, rtol=tol, atol=tol)
    lo, hi = got.indptr[:-1], got.indptr[1:]
    for r in range(got.indptr.shape[0] - 1):
        assert np.all(np.diff(got.indices[lo[r]:hi[r]]) > 0)


SHAPES = {
    "empty": ((0, 0, 0), (0.0, 0.0)),
    "1x1": ((1, 1, 1), (1.0, 1.0)),
    "empty inner": ((5, 0, 4), (0.0, 0.0)),
    "non-square": ((37, 23, 51), (0.1, 0.1)),
    "empty rows/cols": ((40, 30, 20), (0.03, 0.05)),
    "rows > 64 columns": ((30, 40, 300), (0.3, 0.3)),
    "rows > 4096 columns": ((12, 60, 9000), (0.3, 0.01)),
}


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("threads", [None, 1, 2, 1000])
def test_shapes_and_threads(kind, shape, threads):
    (m, k, n), (da, db) = SHAPES[shape]
    a, b = sparse(kind, (m, k), da, 1), sparse(kind, (k, n), db, 2)
    check(F.matmul(a, b, threads=threads), a, b)
    mm = F.Matmul(a, b, threads=threads)
    assert mm.path == f"kernel:spgemm-{kind}"
    check(mm.execute(), a, b)


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_value_and_index_types(kind, dtype, index):
    a = sparse(kind, (60, 45), 0.08, 3, dtype, index)
    b = sparse(kind, (45, 70), 0.08, 4, dtype, index)
    for threads in (1, 3):
        check(F.matmul(a, b, threads=threads), a, b)


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("chunks", [None, 1, 2, 3, 7, 10_000])
def test_each_variant_forced(kind, chunks):
    """The whole function (None), two passes on the calling thread (1), and in chunks (more than rows too)."""
    a, b = sparse(kind, (90, 70), 0.05, 5), sparse(kind, (70, 5000), 0.02, 6)
    keep = np.ones(90)
    keep[3] = 0  # an empty row of A
    a = type(a)(sp.diags_array(keep) @ a)
    a.eliminate_zeros()
    a.sort_indices()
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    mm = F.Matmul(a, b, threads=1).plan()
    fn = mm.backend.prepared.kernel.function
    assert isinstance(fn, TwoPassFunction)
    args = tuple(mm.backend.prepared.kernel.flatten(mm.backend.prepared.tensors, mm.backend.prepared.extra))
    pos, crd, val = fn.run(args, chunks)
    rows = a.shape[0] if kind == "csr" else b.shape[1]
    shape = (a.shape[0], b.shape[1])
    check(type(a)((val, crd, pos), shape=shape), a, b)
    assert pos.shape == (rows + 1,)


def test_auto_chooses_by_work():
    """Small products run as one call of the whole function; large ones in chunks (``threads=1``: one)."""
    small = sparse("csr", (50, 50), 0.05, 7)
    big = sparse("csr", (4_000, 4_000), 0.005, 8)  # about 1.6M products: 3x the parallel threshold
    fn = F.Matmul(small, small).plan().backend.prepared.kernel.function
    assert fn.chunks((small.indptr, small.indices, small.data) * 2) is None
    args = (big.indptr, big.indices, big.data) * 2
    assert fn.products(args) >= PARALLEL_MIN_PRODUCTS
    assert F.Matmul(big, big, threads=1).plan().backend.prepared.kernel.function.chunks(args) == 1
    assert F.Matmul(big, big, threads=2).plan().backend.prepared.kernel.function.chunks(args) == 2
    check(F.matmul(big, big), big, big)
    check(F.matmul(big, big, threads=1), big, big)
    check(F.matmul(big, big, threads=3), big, big)


def test_balanced_bounds_cover_every_row_once():
    pos = np.array([0, 0, 10, 10, 11, 30, 30, 31])
    for n in (1, 2, 3, 7, 50):
        b = _balanced(pos, n)
        assert b[0] == 0 and b[-1] == 7 and all(x < y for x, y in zip(b, b[1:]))
    assert _balanced(np.zeros(1, np.int64), 4) == [0, 0]


def test_prepared_calls_rebind():
    """Matmul.execute and frontend.matmul's cached signature reuse the prepared call on new operands."""
    a, b = sparse("csr", (40, 30), 0.1, 9), sparse("csr", (30, 20), 0.1, 10)
    a2 = sparse("csr", (40, 30), 0.1, 11)
    mm = F.Matmul(a, b).plan()
    check(mm.execute(), a, b)
    mm.reset_operands(a=a2)
    check(mm.execute(), a2, b)
    for x in (a, a2, a):
        check(F.matmul(x, b), x, b)


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("chunks", [None, 3])
def test_prefetching_variant(kind, dtype, chunks):
    """A right operand of PREFETCH_MIN_BYTES or more turns on the look-ahead prefetches (short-wide A @ A.T
    shape: long rows of A over B's scattered rows); the look-ahead clamps at the end of every chunk of rows.
    Empty rows of A; the whole function and two passes in chunks, against scipy."""
    rows_b = 160_000  # one entry a row: B's columns and values pass the threshold for every dtype here
    per = np.dtype(np.int32).itemsize + np.dtype(dtype).itemsize
    assert rows_b * per >= spgemm_kernel.PREFETCH_MIN_BYTES > 0
    rng = np.random.default_rng(12)
    b = sp.csr_array((rng.standard_normal(rows_b).astype(dtype), rng.integers(0, 40, rows_b).astype(np.int32),
                      np.arange(rows_b + 1, dtype=np.int32)), shape=(rows_b, 40))
    a = sparse("csr", (30, rows_b), 0.0004, 13, dtype)  # ~64 entries a row: longer than the look-ahead
    a = sp.csr_array(sp.diags_array(np.where(np.arange(30) % 7 == 3, 0.0, 1.0)) @ a)  # empty rows
    a.eliminate_zeros()
    a.sort_indices()
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    if kind == "csc":  # the same product transposed: C^T = B^T A^T on CSC operands
        a, b = sp.csc_array(b.T), sp.csc_array(a.T)
        a.indptr, a.indices, b.indptr, b.indices = (x.astype(np.int32) for x in (a.indptr, a.indices, b.indptr,
                                                                                  b.indices))
    check(F.matmul(a, b, threads=chunks), a, b)
    mm = F.Matmul(a, b, threads=1).plan()
    fn = mm.backend.prepared.kernel.function
    args = tuple(mm.backend.prepared.kernel.flatten(mm.backend.prepared.tensors, mm.backend.prepared.extra))
    pos, crd, val = fn.run(args, chunks)
    check(type(a)((val, crd, pos), shape=(a.shape[0], b.shape[1])), a, b)
