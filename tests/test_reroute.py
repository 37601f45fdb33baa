"""Operands no kernel takes as they are (frontend/ops/_reroute.py), against NumPy references:

- sparse x sparse with a sparse result in f32/f64/c128, including an all-dense operand stored in a
  non-row-major level order (it becomes a row-major copy), and out_formats of every family;
- mixed sparse families whose result the sparsifier cannot insert in order (CSC x CSR -> CSC: the other
  operand is converted) stay right when the same structure is called again with other operands;
- one-shot calls reuse a converted copy while the operand's buffers and values are unchanged, make a new
  one when the values change in place, and do not grow memory over repeated calls.
"""
from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest

import frontend as F
from frontend import NamedFormats as N, Tensor, TensorFormat
from frontend.ops import _reroute

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = [np.float32, np.float64, np.complex128]
#: (m, k, n): empty, 1x1, vector-like and non-square shapes.
SHAPES = [(0, 3, 2), (3, 0, 2), (1, 1, 1), (1, 5, 1), (4, 6, 3), (6, 6, 6), (7, 3, 5)]
FORTRAN = TensorFormat.parse("(i, j) -> (j : dense, i : dense)")
FORMATS = {"CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "DCSR": N.DCSR, "DCSC": N.DCSC, "BSR": N.BSR((2, 2)),
           "DIAI": N.DIAI, "DELTA2": N.DELTA(2), "fortran": FORTRAN,
           "loose": TensorFormat.parse("(i, j) -> (j : dense, i : loose_compressed)")}


def _matrix(rng: np.random.Generator, shape: tuple[int, int], dtype: Any, density: float = 0.5) -> np.ndarray:
    d = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        d = d + 1j * rng.standard_normal(shape)
    d = np.where(rng.random(shape) < density, d, 0).astype(dtype)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    return d


def _tol(dtype: Any) -> dict[str, float]:
    return {"rtol": 1e-4, "atol": 1e-4} if np.dtype(dtype) == np.float32 else {"rtol": 1e-10, "atol": 1e-10}


PAIRS = [("fortran", "CSR"), ("CSR", "fortran"), ("fortran", "fortran"), ("fortran", "COO"), ("loose", "fortran"),
         ("DIAI", "DCSR")]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_sparse_result_every_dtype_and_shape(dtype: Any, pair: int) -> None:
    """A sparse result (out_format=CSR) with an all-dense column-ordered operand, in f32/f64/c128; the shapes
    rotate over the pairs so that every dtype meets empty, 1x1, vector-like and non-square ones."""
    rng = np.random.default_rng(0)
    fa, fb = PAIRS[pair]
    m, k, n = SHAPES[(pair + DTYPES.index(dtype)) % len(SHAPES)]
    a, b = _matrix(rng, (m, k), dtype), _matrix(rng, (k, n), dtype)
    got = F.matmul(Tensor.from_dense(a, FORMATS[fa]), Tensor.from_dense(b, FORMATS[fb]), out_format=N.CSR)
    assert got.tensor_format == N.CSR and got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.to_dense(), a @ b, err_msg=f"{fa} x {fb} {(m, k, n)}", **_tol(dtype))


@pytest.mark.parametrize("out,fa,fb", [("CSC", "CSR", "CSC"), ("COO", "COO", "fortran"), ("DCSR", "DIAI", "DCSR"),
                                       ("BSR", "COO", "CSR"), ("DIAI", "DCSC", "fortran"), ("DELTA2", "CSC", "COO")])
def test_complex_sparse_results_in_every_family(out: str, fa: str, fb: str) -> None:
    """c128 sparse x sparse (or x column-ordered dense) with a transposed a into out_formats of every family."""
    rng = np.random.default_rng(1)
    a, b = _matrix(rng, (6, 4), np.complex128), _matrix(rng, (6, 5), np.complex128)
    got = F.matmul(Tensor.from_dense(a, FORMATS[fa]), Tensor.from_dense(b, FORMATS[fb]), transpose_a=True,
                   out_format=FORMATS[out])
    assert got.tensor_format == FORMATS[out]
    np.testing.assert_allclose(got.to_dense(), a.T @ b, rtol=1e-12, atol=1e-12, err_msg=f"{fa} x {fb} -> {out}")


def test_fortran_operand_becomes_row_major_copy() -> None:
    """An all-dense operand in column order next to a sparse result is copied row-major (reported)."""
    a = np.arange(12.0).reshape(3, 4)
    b = Tensor.from_dense(np.eye(4), N.CSR)
    mm = F.Matmul(Tensor.from_dense(a, FORTRAN), b, out_format=N.CSR)
    assert mm.path.startswith("convert(a->row-major)+")
    np.testing.assert_array_equal(mm.execute().to_dense(), a)


@pytest.mark.parametrize("fa,fb,dtype", [("CSC", "CSR", np.float64), ("DCSC", "CSR", np.complex128),
                                         ("CSC", "DCSR", np.float32), ("COO", "CSC", np.complex128)])
def test_mixed_families_repeated(dtype: Any, fa: str, fb: str) -> None:
    """Mixed families whose result needs the other operand converted: right on every call of the structure
    (the converted operand is replayed for new operands, one-shot and planned)."""
    rng = np.random.default_rng(2)
    for call in range(3):
        a, b = _matrix(rng, (5, 6), dtype), _matrix(rng, (6, 4), dtype)
        ta, tb = Tensor.from_dense(a, FORMATS[fa]), Tensor.from_dense(b, FORMATS[fb])
        got = F.matmul(ta, tb) if call != 1 else F.Matmul(ta, tb).execute()
        np.testing.assert_allclose(got.to_dense(), a @ b, err_msg=f"{fa} x {fb} call {call}", **_tol(dtype))


def test_nm_block_operand_with_fortran_dense() -> None:
    """n:m (a block-like format) times a column-ordered dense operand, transposed: the dense operand is read
    in dimension order when split into blocks."""
    a = np.zeros((5, 1), np.float32)
    a[0, 0], a[3, 0] = 1.5, -2.0
    b = np.asfortranarray(np.arange(15, dtype=np.float32).reshape(5, 3))
    got = F.matmul(Tensor.from_dense(a, N.NM(2, 4)), b, transpose_a=True)
    np.testing.assert_allclose(got.to_dense(), a.T @ b)


# ----- one-shot calls reuse the converted copy -----------------------------------------------------------------
def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record every conversion the reroute makes."""
    made: list[Any] = []
    real = Tensor.convert

    def convert(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        made.append(args[0] if args else kwargs.get("tensor_format"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Tensor, "convert", convert)
    return made


@pytest.mark.parametrize("fmt", ["DIAI", "DELTA2", "BSR"])
def test_one_shot_reuses_conversion(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated one-shot calls over the same buffers convert once; values changed in place convert again
    (the result follows them); other buffers of the same structure run through the template."""
    rng = np.random.default_rng(3)
    d = _matrix(rng, (6, 6), np.float64)
    a = Tensor.from_dense(d, FORMATS[fmt])
    b = Tensor.from_dense(_matrix(rng, (6, 4), np.float64), N.CSR)
    F.matmul(a, b)  # compiles, makes the copy
    made = _counting(monkeypatch)
    for _ in range(5):
        got = F.matmul(a, b)
    np.testing.assert_allclose(got.to_dense(), d @ b.to_dense())
    assert made == [], made
    nz = np.flatnonzero(np.asarray(a.val))
    a.val[nz] *= 2  # in place: the copy is stale and is made again
    got = F.matmul(a, b)
    assert len(made) == 1
    np.testing.assert_allclose(got.to_dense(), (2 * d) @ b.to_dense())
    other = Tensor.from_dense(_matrix(rng, (6, 6), np.float64), FORMATS[fmt])
    np.testing.assert_allclose(F.matmul(other, b).to_dense(), other.to_dense() @ b.to_dense())


def test_one_shot_memory_does_not_grow() -> None:
    """A loop of one-shot calls that reroute (a DIA operand next to a sparse one, a column-ordered dense
    operand next to a sparse result) holds no more memory after many calls than after a few."""
    rng = np.random.default_rng(4)
    a = Tensor.from_dense(_matrix(rng, (200, 200), np.float64, 0.05), N.DIAI)
    b = Tensor.from_dense(_matrix(rng, (200, 50), np.float64, 0.05), N.CSR)
    f = Tensor.from_dense(_matrix(rng, (50, 200), np.float64), FORTRAN)
    csr = a.convert(N.CSR)

    def calls(n: int) -> None:
        for _ in range(n):
            F.matmul(a, b)
            F.matmul(f, csr, out_format=N.CSR)

    calls(5)
    gc.collect()
    tracemalloc.start()
    try:
        calls(5)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        calls(200)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - first < 64 * 1024, (first, after)


def test_converted_copies_die_with_their_operand() -> None:
    """The remembered copy is dropped with the operand's buffers (no entry per operand ever seen)."""
    from frontend.ops import _stats

    rng = np.random.default_rng(5)
    b = Tensor.from_dense(_matrix(rng, (6, 4), np.float64), N.CSR)
    before = len(_stats._MEMO)
    for _ in range(20):
        a = Tensor.from_dense(_matrix(rng, (6, 6), np.float64), N.DIAI)
        F.matmul(a, b)
    del a
    gc.collect()
    assert len(_stats._MEMO) <= before + 2


def test_converted_is_the_same_copy_until_values_change() -> None:
    rng = np.random.default_rng(6)
    a = Tensor.from_dense(_matrix(rng, (4, 4), np.float64), N.DIAI)
    first = _reroute.converted(a, N.CSR)
    assert _reroute.converted(a, N.CSR) is first
    np.asarray(a.val)[:] += 1.0
    again = _reroute.converted(a, N.CSR)
    assert again is not first
    np.testing.assert_allclose(again.to_dense(), a.to_dense())


@pytest.mark.parametrize("fa,fb,out,ta", [("CSC", "CSR", None, False), ("CSR", "CSR", "DCSC", False),
                                          ("COO", "dense", "COO", True), ("DCSC", "CSR", None, False)])
def test_reset_operands_replays_the_fallback(fa: str, fb: str, out: str | None, ta: bool) -> None:
    """A plan whose sparse result needed a fallback (operands converted, or the result computed in another
    format) keeps it for ``reset_operands``: the new operands are converted the same way."""
    rng = np.random.default_rng(8)
    mm = None
    for call in range(2):
        a, b = _matrix(rng, (6, 5) if ta else (5, 6), np.float64), _matrix(rng, (6, 4), np.float64)
        ta_, tb_ = Tensor.from_dense(a, FORMATS[fa]), b if fb == "dense" else Tensor.from_dense(b, FORMATS[fb])
        if mm is None:
            mm = F.Matmul(ta_, tb_, out_format=None if out is None else FORMATS[out], transpose_a=ta)
            mm.plan()
        else:
            mm.reset_operands(a=ta_, b=tb_)
        assert mm.path.startswith("convert(")
        got = mm.execute()
        np.testing.assert_allclose(got.to_dense(), (a.T if ta else a) @ b, err_msg=f"{fa} x {fb} call {call}")
