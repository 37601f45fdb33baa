"""DIA-I and DIA-J SpMV/SpMM (``lowering.emitter.diagonal``) against NumPy's dense products: diagonals partly or
wholly outside the matrix, empty rows, 0x0, 1x1, non-square, scipy's ``dia_array`` (narrow and wide data),
several dtypes; row chunks on several threads give the same bits as one thread."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as NF, Tensor
from lowering import Pipeline
from lowering.contraction import Contraction, TensorSpec
from lowering.emitter import diagonal, emit_contraction
from mlir_bridge import compile_module
from ops_util import assert_threads_match_one_thread, small_int_operand

# (rows, cols, offsets): the last four have diagonals partly or wholly outside the matrix (the last: no row
# has every diagonal inside)
SHAPES = [(0, 0, [0]), (1, 1, [0]), (6, 11, [-2, 0, 3]), (11, 6, [-4, 1]), (70, 70, [-9, -1, 0, 1, 9]),
          (5, 9, [-7, -1, 2, 12]), (9, 5, [-3, 0, 6]), (40, 3, [-39, -20, 2]), (90, 90, [-50, 0, 3, 50])]


def banded(m: int, n: int, offsets: list[int], dtype: type, seed: int = 0) -> sp.csr_array:
    """A matrix with values on ``offsets`` (zeros on every third row: empty rows), as CSR."""
    rng = np.random.default_rng(seed)
    data = rng.integers(-4, 5, (len(offsets), max(n, 1))).astype(dtype)
    a = sp.dia_array((data, offsets), shape=(m, n)).tocsr() if m and n else sp.csr_array((m, n), dtype=dtype)
    dense = a.toarray()
    dense[::3] = 0
    return sp.csr_array(dense)


@pytest.mark.parametrize("m, n, offsets", SHAPES)
@pytest.mark.parametrize("fmt", ["DIAI", "DIAJ"])
@pytest.mark.parametrize("cols", [0, 5])
def test_dia_product_matches_numpy(m: int, n: int, offsets: list[int], fmt: str, cols: int) -> None:
    a = banded(m, n, offsets, np.float64)
    x = small_int_operand(n, cols, np.float64)
    t = Tensor.from_package(a).convert(fmt)
    ref = a.toarray() @ x
    got = np.asarray(F.matmul(t, x))
    np.testing.assert_allclose(got, ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
@pytest.mark.parametrize("fmt", ["DIAI", "DIAJ"])
def test_dia_dtypes(dtype: type, fmt: str) -> None:
    a = banded(13, 10, [-3, 0, 2, 8], dtype)
    for cols in (0, 9):
        x = small_int_operand(10, cols, dtype)
        got = np.asarray(F.matmul(Tensor.from_package(a).convert(fmt), x))
        assert got.dtype == np.result_type(a.dtype, x.dtype)
        np.testing.assert_array_equal(got, a.toarray() @ x)


@pytest.mark.parametrize("width", [4, 9, 14])
def test_scipy_dia_array_runs_on_row_ranges(width: int) -> None:
    """scipy's ``dia_array`` is viewed as DIA-J (narrow data: ``range(w)``) and runs the same row-range kernel."""
    rng = np.random.default_rng(width)
    offsets = np.array([-5, -1, 0, 3], dtype=np.int32)
    a = sp.dia_array((rng.standard_normal((4, width)), offsets), shape=(12, 9))
    x = rng.standard_normal(9)
    mm = F.Matmul(a, x)
    assert mm.info.path == "emitter-rows"
    np.testing.assert_allclose(mm.execute(), a.toarray() @ x)
    np.testing.assert_allclose(F.matmul(a, np.ones((9, 3))), a.toarray() @ np.ones((9, 3)))


@pytest.mark.parametrize("fmt", ["DIAI", "DIAJ"])
@pytest.mark.parametrize("cols", [0, 3])
def test_threads_give_the_bits_of_one_thread(fmt: str, cols: int) -> None:
    n = 3000
    a = sp.diags_array([np.random.default_rng(abs(k)).standard_normal(n - abs(k)) for k in (-70, -1, 0, 1, 2, 70)],
                       offsets=[-70, -1, 0, 1, 2, 70]).tocsr()
    x = small_int_operand(n, cols, np.float64) + 0.25
    t = Tensor.from_package(a).convert(fmt)
    assert_threads_match_one_thread(t, x, a @ x)


@pytest.mark.parametrize("fmt", [NF.DIAI, NF.DIAJ])
def test_whole_matrix_variant_in_row_blocks(fmt) -> None:
    """The variant without row arguments (a custom pipeline's) walks blocks of rows; same result."""
    m, n = diagonal.BLOCK_ROWS + 37, diagonal.BLOCK_ROWS + 5
    a = sp.diags_array([np.full(n, 2.0), np.full(n, -1.0)], offsets=[0, 3], shape=(m, n)).tocsr()
    t = Tensor.from_package(a).convert(fmt)
    c = Contraction(("ik", "k"), (TensorSpec(fmt, (m, n), "f64", 64, 64), TensorSpec(None, (n,), "f64")), "i",
                    TensorSpec(None, (m,), "f64"))
    assert diagonal.applies(c)
    text = emit_contraction(c)
    assert "scf.parallel" in text and "vector.load" in text
    fn = compile_module(text, Pipeline()).function("main")
    x = np.linspace(-1, 1, n)
    args = [np.asarray(t.pos(0), np.int64), np.asarray(t.crd(0), np.int64), np.asarray(t.val), x]
    np.testing.assert_allclose(fn(*args), a @ x)


def test_other_dia_products_keep_the_generic_walk() -> None:
    """Semirings, alpha and c go through the generic walk (DIA-I still in row ranges) and stay right."""
    a = banded(30, 30, [-2, 0, 1], np.float64)
    x = small_int_operand(30, 0, np.float64)
    t = Tensor.from_package(a).convert("DIAI")
    c = np.ones(30)
    np.testing.assert_allclose(F.matmul(t, x, c.copy(), alpha=2.0, beta=3.0), 2.0 * (a @ x) + 3.0 * c)
    ref = np.where(a.toarray() != 0, a.toarray() + x[None, :], -np.inf).max(axis=1)
    got = np.asarray(F.matmul(Tensor.from_package(a).convert("DIAJ"), x, semiring="max-plus"))
    rows = np.diff(a.indptr) > 0
    np.testing.assert_allclose(got[rows], ref[rows])


@pytest.mark.parametrize("fmt", ["DIAI", "DIAJ"])
def test_wide_spmm_in_column_groups(fmt: str) -> None:
    """More output columns than the registers hold: the columns in groups, one row at a time."""
    a = banded(37, 29, [-6, -1, 0, 2, 30], np.float64)
    x = small_int_operand(29, 140, np.float64)
    np.testing.assert_allclose(F.matmul(Tensor.from_package(a).convert(fmt), x), a.toarray() @ x)
