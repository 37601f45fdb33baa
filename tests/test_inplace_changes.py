"""scipy's in-place methods on an operand after an operation: they work (nothing is frozen) and the next
operation gives scipy's answer for the changed matrix."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sps

import frontend

RNG = np.random.default_rng(11)


def _dense(shape: tuple[int, int]) -> np.ndarray:
    d = RNG.random(shape) * (RNG.random(shape) < 0.45)
    d[2] = 0.0  # an empty row
    return d


def _operand(kind: str, shape: tuple[int, int]) -> Any:
    """A canonical scipy matrix of ``kind`` storing some explicit zeros."""
    csr = sps.csr_array(_dense(shape))
    csr.data[::4] = 0.0
    return {"csr": csr, "csc": csr.tocsc(), "coo": csr.tocoo()}[kind]


def _array(r: Any) -> np.ndarray:
    r = r.toarray() if hasattr(r, "toarray") else r.to_dense() if hasattr(r, "to_dense") else r
    return np.asarray(r, dtype=float).reshape(-1)


OPS: dict[str, Callable[[Any, Any], tuple[Any, np.ndarray]]] = {
    "matmul": lambda a, b: (frontend.matmul(a, np.arange(1.0, a.shape[1] + 1)),
                            a.toarray() @ np.arange(1.0, a.shape[1] + 1)),
    "add": lambda a, b: (frontend.add(a, b), a.toarray() + b.toarray()),
    "sum": lambda a, b: (frontend.sum(a, 1), a.toarray().sum(1)),
    "multiply": lambda a, b: (frontend.multiply(a, b), a.toarray() * b.toarray()),
    "sddmm": lambda a, b: (frontend.einsum("ij,ik,jk->ij", a, _X[:a.shape[0]], _X[:a.shape[1]]),
                           a.toarray() * (_X[:a.shape[0]] @ _X[:a.shape[1]].T)),
}
_X = RNG.random((12, 3))


def _check(op: str, a: Any, b: Any) -> None:
    got, want = OPS[op](a, b)
    np.testing.assert_allclose(_array(got), want.reshape(-1), rtol=1e-12, atol=1e-12)


def _major_minor(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions, coordinates, values) as arrays scipy keeps: COO gives its row-sorted (row, col) as
    positions made from the rows."""
    if a.format == "coo":
        return np.searchsorted(a.row, np.arange(a.shape[0] + 1)), a.col, a.data
    return a.indptr, a.indices, a.data


def _first_row_with(a: Any, entries: int) -> int:
    ptr = _major_minor(a)[0]
    return int(np.flatnonzero(np.diff(ptr) >= entries)[0])


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_scipy_in_place_methods_then_the_next_operation(kind: str, op: str) -> None:
    shape = (9, 7)
    a, b = _operand(kind, shape), _operand(kind, shape)
    _check(op, a, b)
    assert all(x.flags.writeable for x in (getattr(a, "indices", a.data), getattr(a, "indptr", a.data)))

    a.eliminate_zeros()  # new, shorter index arrays (scipy's prune) over positions changed in place
    _check(op, a, b)

    ptr, crd, val = _major_minor(a)
    r = _first_row_with(a, 2)
    lo = int(ptr[r])
    if hasattr(a, "sort_indices"):  # CSR/CSC: a row unsorted in place, then scipy sorts it back in place
        crd[[lo, lo + 1]], val[[lo, lo + 1]] = crd[[lo + 1, lo]], val[[lo + 1, lo]]
        a.has_sorted_indices = False
        a.sort_indices()
        _check(op, a, b)

    crd[lo + 1] = crd[lo]  # a duplicate entry, then summed by scipy
    a.has_canonical_format = False
    a.sum_duplicates()
    _check(op, a, b)

    ptr, crd, val = _major_minor(a)
    r = _first_row_with(a, 1)
    lo, hi = int(ptr[r]), int(ptr[r + 1])
    limit = int(crd[lo + 1]) if hi - lo > 1 else (shape[1] if kind != "csc" else shape[0])
    free = [c for c in range(limit) if c != int(crd[lo])]
    assert free
    crd[lo] = free[-1]  # A.indices[k] = ...: an entry moved to another column, the row still sorted
    _check(op, a, b)
    a.data[lo] = 5.0  # and a value changed in place
    _check(op, a, b)


def test_index_write_seen_by_a_planned_matmul() -> None:
    a = _operand("csr", (6, 5))
    x = np.arange(1.0, 6.0)
    mm = frontend.Matmul(a, x)
    mm.plan()
    np.testing.assert_allclose(mm.execute(), a.toarray() @ x)
    r = _first_row_with(a, 1)
    lo = int(a.indptr[r])
    a.indices[lo] = 0 if a.indices[lo] != 0 else 1
    a.has_sorted_indices = False
    a.sort_indices()
    np.testing.assert_allclose(mm.execute(), a.toarray() @ x)


def test_index_write_seen_by_a_planned_triangular_solve() -> None:
    d = np.tril(_dense((8, 8))) + 4.0 * np.eye(8)
    a = sps.csr_array(d)
    b = np.arange(1.0, 9.0)
    s = frontend.Solve(a, lower=True).plan()
    for _ in range(3):  # repeat calls: the per-call compare runs against the plan's copies
        np.testing.assert_allclose(s.execute(b), np.linalg.solve(a.toarray(), b))
    r = next(i for i in range(1, 8) if a.indptr[i + 1] - a.indptr[i] >= 2)
    lo = int(a.indptr[r])
    free = [c for c in range(r) if c not in a.indices[a.indptr[r]:a.indptr[r + 1]]]
    if free:
        a.indices[lo] = free[0]  # an off-diagonal entry moved to another column below the diagonal, in place
        a.has_sorted_indices = False
        a.sort_indices()
    np.testing.assert_allclose(s.execute(b), np.linalg.solve(a.toarray(), b))


@pytest.mark.parametrize("n", [6, 300, 2000])  # index buffers compared as bytes, with memcmp, copied late
def test_repeat_conversions_check_in_place_writes(n: int) -> None:
    d = _dense((n, n))
    t = frontend.Tensor.from_package(sps.csr_array(d))
    for _ in range(3):
        np.testing.assert_array_equal(t.convert(frontend.NamedFormats.CSC).to_dense(), d)
    crd = t._crd[1]
    r = _first_row_with(sps.csr_array(d), 1)
    lo = int(t._pos[1][r])
    crd[lo] = n + 5  # out of range, in place: the next conversion names it
    with pytest.raises(ValueError, match="out of bounds"):
        t.convert(frontend.NamedFormats.CSC)
    crd[lo] = int(np.flatnonzero(d[r])[0])  # restored: converted again
    np.testing.assert_array_equal(t.convert(frontend.NamedFormats.CSC).to_dense(), d)
