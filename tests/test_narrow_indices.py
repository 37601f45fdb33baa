"""int8 and int16 index buffers: positions and coordinates of one narrow type (``index_type``) or narrow
coordinates under wider positions (``crd_type``), through conversion, validation, exports and the kernels."""
from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sps
import torch

import frontend as F
from frontend import NamedFormats as N, Tensor

FORMATS = ["CSR", "CSC", "COO", "DCSR", "BSR((2, 2))"]
# (positions type, coordinates type, values): narrow coordinates under int32 positions, and all-narrow buffers
CASES = [(np.int32, np.int16, np.float32), (np.int16, np.int8, np.float64)]


def _matrix(m: int, n: int, dtype: type, seed: int, density: float = 0.3) -> np.ndarray:
    """A random ``m x n`` matrix with an empty row and an empty column (when there are any)."""
    rng = np.random.default_rng(seed)
    a = np.where(rng.random((m, n)) < density, rng.standard_normal((m, n)), 0).astype(dtype)
    if m > 2:
        a[m // 2] = 0
    if n > 2:
        a[:, n // 3] = 0
    return a


def _dense(r: object) -> np.ndarray:
    if isinstance(r, Tensor):
        return r.to_dense()
    return np.asarray(r)


def _narrow(a: np.ndarray, fmt: str, it: type, ct: type) -> Tensor:
    t = Tensor.from_dense(a).convert(fmt, index_type=it, crd_type=ct)
    assert t.index_type == np.dtype(it) and t.crd_type == np.dtype(ct)
    return t


def _tol(dtype: type) -> dict:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}


def _problem(dtype: type) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    mats = [_matrix(12, 18, dtype, 1), _matrix(18, 10, dtype, 3), _matrix(12, 18, dtype, 2)]
    return mats, rng.standard_normal(18).astype(dtype), rng.standard_normal((18, 3)).astype(dtype)


_OPS = [  # (a, b, c, x, xs) -> result
    lambda p, q, r, x, xs: F.matmul(p, x), lambda p, q, r, x, xs: F.matmul(p, xs),
    lambda p, q, r, x, xs: F.matmul(p, q), lambda p, q, r, x, xs: F.add(p, r),
    lambda p, q, r, x, xs: F.multiply(p, r), lambda p, q, r, x, xs: F.sum(p, 0),
    lambda p, q, r, x, xs: F.sum(p, 1), lambda p, q, r, x, xs: F.sum(p),
]


@functools.cache
def _int32_csr_results(dtype: type) -> list[np.ndarray]:
    """The operations on int32 CSR (SciPy's layout) of the same matrices (what narrow types must reproduce)."""
    (a, b, c), x, xs = _problem(dtype)
    ts = [Tensor.from_dense(m).convert("CSR", index_type=np.int32) for m in (a, b, c)]
    return [_dense(op(*ts, x, xs)) for op in _OPS]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("it, ct, dtype", CASES)
def test_operations_match_numpy_and_int32_csr(fmt: str, it: type, ct: type, dtype: type) -> None:
    (a, b, c), x, xs = _problem(dtype)
    ta, tb, tc = _narrow(a, fmt, it, ct), _narrow(b, fmt, it, ct), _narrow(c, fmt, it, ct)
    wants = [a @ x, a @ xs, a @ b, a + c, a * c, a.sum(0), a.sum(1), a.sum()]
    tol = _tol(dtype)
    for op, want, ref in zip(_OPS, wants, _int32_csr_results(dtype)):
        got = _dense(op(ta, tb, tc, x, xs))
        np.testing.assert_allclose(got, want, **tol)
        np.testing.assert_allclose(got, ref, **tol)
    np.testing.assert_array_equal(ta.to_dense(), a)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape, it, ct", [((0, 0), np.int8, np.int8), ((1, 1), np.int32, np.int8),
                                           ((9, 4), np.int8, np.int8), ((3, 6), np.int64, np.int16)])
def test_small_shapes_and_round_trips(fmt: str, shape: tuple[int, int], it: type, ct: type) -> None:
    a = _matrix(*shape, np.float64, sum(shape), density=0.5)
    x = np.arange(shape[1], dtype=np.float64)
    t = _narrow(a, fmt, it, ct)
    np.testing.assert_array_equal(t.to_dense(), a)
    np.testing.assert_allclose(_dense(F.matmul(t, x)), a @ x, rtol=1e-12)
    for target in FORMATS:  # conversions keep the types (they fit every level here)
        u = t.convert(target)
        assert (u.index_type, u.crd_type) == (np.dtype(it), np.dtype(ct))
        np.testing.assert_array_equal(u.to_dense(), a)
    w = t.convert(index_type=np.int64)  # and back to the widest
    assert w.index_type == w.crd_type == np.int64
    np.testing.assert_array_equal(w.to_dense(), a)


# ----- the edges of each width ------------------------------------------------------------------------------------
def _edge_csr(n: int, m: int = 3) -> np.ndarray:
    """An ``m x n`` matrix with entries in the first and the last column (coordinate ``n - 1``)."""
    a = np.zeros((m, n))
    a[0, n - 1], a[m - 1, 0], a[m - 1, n - 1] = 2.0, 3.0, -1.5
    return a


@pytest.mark.parametrize("ct, n", [(np.int8, 127), (np.int8, 128), (np.int16, 32767), (np.int16, 32768)])
def test_largest_extents_a_narrow_type_addresses(ct: type, n: int) -> None:
    a = _edge_csr(n)
    x = np.linspace(-1.0, 1.0, n)
    t = Tensor.from_dense(a).convert("CSR", index_type=np.int32, crd_type=ct)
    assert t.crd_type == ct and int(t.crd(1).max()) == n - 1  # the last coordinate is not read as negative
    np.testing.assert_allclose(F.matmul(t, x), a @ x, rtol=1e-12)
    np.testing.assert_array_equal(t.to_dense(), a)
    np.testing.assert_allclose(F.sum(t, 0), a.sum(0))
    s = t.to_package("scipy")
    assert s.indices.dtype == s.indptr.dtype == np.int32
    np.testing.assert_array_equal(s.toarray(), a)
    csc = t.convert("CSC")  # its coordinates address the 3 rows: they stay narrow
    assert csc.crd_type == ct
    np.testing.assert_array_equal(csc.to_dense(), a)
    coo = Tensor.from_dense(a).convert("COO", index_type=np.int32, crd_type=ct)
    np.testing.assert_allclose(F.matmul(coo, x), a @ x, rtol=1e-12)


@pytest.mark.parametrize("ct, n, wider", [(np.int8, 129, "int16"), (np.int16, 32769, "int32")])
def test_extents_beyond_a_narrow_type_are_refused(ct: type, n: int, wider: str) -> None:
    t = Tensor.from_dense(_edge_csr(n))
    with pytest.raises(ValueError, match=rf"dimension 1 \(j, extent {n}\) addresses coordinates 0..{n - 1}, "
                                         rf"beyond {np.dtype(ct)} .*crd_type=np.{wider}"):
        t.convert("CSR", index_type=np.int32, crd_type=ct)
    with pytest.raises(ValueError, match=rf"dimension 1 \(j, extent {n}\)"):
        t.convert("COO", index_type=ct)
    with pytest.raises(ValueError, match=rf"dimension 0 \(i, extent {n}\)"):  # CSC coordinates address rows
        Tensor.from_dense(_edge_csr(n).T.copy()).convert("CSC", index_type=np.int64, crd_type=ct)
    with pytest.raises(ValueError, match=rf"dimension 1 \(j, extent {n}\)"):  # from buffers too
        Tensor.from_buffers("CSR", (1, n), pos=[None, np.array([0, 1], np.int32)], crd=[None, np.array([0], ct)],
                            values=np.ones(1))


def test_implicit_types_widen_the_coordinates_a_target_needs() -> None:
    a = _matrix(300, 100, np.float64, 5, density=0.05)
    t = _narrow(a, "CSR", np.int32, np.int8)  # 100 columns fit int8 coordinates
    c = t.convert("CSC")  # 300 rows do not: int16 coordinates
    assert (c.index_type, c.crd_type) == (np.int32, np.int16)
    np.testing.assert_array_equal(c.to_dense(), a)


def test_positions_beyond_the_type_are_refused() -> None:
    a = _matrix(20, 20, np.float64, 6, density=0.6)  # over 127 entries
    t = Tensor.from_dense(a, "CSR")
    with pytest.raises(ValueError, match=r"positions of level 1 reach \d+, beyond int8 \(127\); convert with "
                                         r"index_type=np.int16 \(positions\) and crd_type=np.int8"):
        t.convert(index_type=np.int8)
    u = t.convert(index_type=np.int16, crd_type=np.int8)
    np.testing.assert_array_equal(u.to_dense(), a)


def test_negative_and_mixed_narrow_buffers_are_refused() -> None:
    # coordinate 200 does not fit int8: as a wrapped-around -56 it is out of bounds, never a column
    with pytest.raises(ValueError, match=r"coordinate -56 at crd\[1\] is out of bounds \[0, 100\)"):
        Tensor.from_buffers("CSR", (2, 100), pos=[None, np.array([0, 2, 2], np.int8)],
                            crd=[None, np.array([3, 200], np.int64).astype(np.int8)], values=np.ones(2))
    with pytest.raises(TypeError, match="crd_type must be int8, int16, int32 or int64, got uint8"):
        Tensor.from_dense(np.eye(3)).convert("CSR", crd_type=np.uint8)


def test_delta_gaps_keep_their_type_under_narrow_coordinates() -> None:
    a = _matrix(10, 40, np.float64, 7)
    t = Tensor.from_dense(a).convert("DELTA(8)", index_type=np.int16)
    assert t.index_type == np.int16 and t.crd(1).dtype == np.uint8
    x = np.arange(40.0)
    np.testing.assert_allclose(F.matmul(t, x), a @ x, rtol=1e-12)


# ----- what the kernels and the packages see --------------------------------------------------------------------------
def test_kernels_read_the_narrow_buffers() -> None:
    a = _matrix(16, 24, np.float32, 8)
    x = np.ones(24, np.float32)
    csr = F.Matmul(_narrow(a, "CSR", np.int32, np.int16), x)
    assert csr.path == "emitter-rows" and "memref<?xi16>" in csr.mlir  # the row kernel loads int16 columns
    coo = F.Matmul(_narrow(a, "COO", np.int32, np.int8), x)
    assert coo.path == "sparsifier"
    assert set(re.findall(r"posWidth = \d+, crdWidth = \d+", coo.mlir)) == {"posWidth = 32, crdWidth = 8"}
    np.testing.assert_allclose(coo.execute(), a @ x, rtol=1e-5)
    sparsified = dict(coo.stages())["sparsify"]  # MLIR zero-extends narrow coordinates: signed 0..127 agree
    assert re.search(r"arith\.extui %\w+ : i8 to", sparsified)


def test_sparse_results_of_narrow_operands_have_wide_indices() -> None:
    a = _matrix(30, 30, np.float64, 9, density=0.12)  # int8 holds a's positions, not those of a + a.T
    ta, tb = _narrow(a, "CSR", np.int8, np.int8), _narrow(a.T.copy(), "CSR", np.int8, np.int8)
    for r, want in ((F.add(ta, tb), a + a.T), (F.matmul(ta, tb), a @ a.T), (F.multiply(ta, tb), a * a.T)):
        assert r.index_type == np.int32 and r.crd_type == np.int32
        np.testing.assert_allclose(r.to_dense(), want, rtol=1e-12)


@pytest.mark.parametrize("fmt", ["CSR", "CSC", "COO", "BSR((2, 2))"])
def test_exports_widen_to_what_packages_take(fmt: str) -> None:
    a = _matrix(8, 6, np.float64, 10)
    t = _narrow(a, fmt, np.int16, np.int8)
    s = t.to_package("scipy")
    idx = [s.coords[0], s.coords[1]] if fmt == "COO" else [s.indices, s.indptr]
    assert {i.dtype for i in idx} == {np.dtype(np.int32)}
    np.testing.assert_array_equal(s.toarray(), a)
    p = t.to_package("torch")
    np.testing.assert_array_equal(p.to_dense().numpy(), a)
    assert {getattr(p, f)().dtype for f in (("indices",) if fmt == "COO" else
                                           ("crow_indices", "col_indices") if fmt == "CSR" else
                                           ("ccol_indices", "row_indices") if fmt == "CSC" else
                                           ("crow_indices", "col_indices"))} <= {torch.int32, torch.int64}
    if fmt != "BSR((2, 2))":  # pydata/sparse: COO, and CSR/CSC as GCXS
        g = t.to_package("sparse")
        assert (g.coords if fmt == "COO" else g.indices).dtype == np.int32
        np.testing.assert_array_equal(g.todense(), a)
    np.testing.assert_array_equal(t.to_dense(), a)
    assert t.crd_type == np.int8  # the tensor itself is unchanged


def test_from_buffers_keeps_narrow_buffers_and_widths_in_encodings() -> None:
    pos, crd = np.array([0, 2, 2, 3], np.int16), np.array([0, 127, 5], np.int8)
    t = Tensor.from_buffers(N.CSR, (3, 128), pos=[None, pos], crd=[None, crd], values=np.array([1.0, 2.0, 3.0]))
    assert t.pos(1) is pos and t.crd(1) is crd and (t.index_type, t.crd_type) == (np.int16, np.int8)
    want = np.zeros((3, 128))
    want[0, 0], want[0, 127], want[2, 5] = 1.0, 2.0, 3.0
    np.testing.assert_array_equal(t.to_dense(), want)
    np.testing.assert_allclose(F.matmul(t, np.arange(128.0)), want @ np.arange(128.0))
    assert "posWidth = 16, crdWidth = 8" in N.CSR.to_mlir(pos_width=16, crd_width=8)


def test_operator_results_outgrowing_int8_positions() -> None:
    a, b = _matrix(20, 30, np.float64, 11, 0.2), _matrix(20, 30, np.float64, 12, 0.2)
    ta, tb = _narrow(a, "CSR", np.int8, np.int8), _narrow(b, "CSR", np.int8, np.int8)  # ~120 entries each
    for got, want in ((np.maximum(ta, tb), np.maximum(a, b)), (ta - tb, a - b), (ta[3:9], a[3:9]),
                      (-ta, -a), (abs(ta) ** 2, a ** 2)):
        np.testing.assert_allclose(_dense(got), want, rtol=1e-12)
        if isinstance(got, Tensor) and got.is_sparse and got.nse > 127:
            assert got.index_type.itemsize >= 4


def test_optimize_keeps_coordinates_narrow() -> None:
    a = sps.random_array((300, 120), density=0.05, random_state=3, format="csr", dtype=np.float32)
    assert F.optimize(Tensor.from_package(a))[0].crd_type == np.int32      # off by default
    t, report = F.optimize(Tensor.from_package(a), narrow=True)
    assert report.chosen.name == "CSR" and t.index_type == np.int32 and t.crd_type == np.int8
    x = np.linspace(-1, 1, 120).astype(np.float32)
    np.testing.assert_allclose(F.matmul(t, x), a @ x, rtol=1e-5, atol=1e-6)
    wide = sps.random_array((50, 40000), density=0.001, random_state=4, format="csr", dtype=np.float32)  # > int16
    t, _ = F.optimize(Tensor.from_package(wide), narrow=True)
    assert t.crd_type == np.int32
    f64 = sps.random_array((300, 120), density=0.05, random_state=3, format="csr")  # float64: int32 kept
    assert F.optimize(Tensor.from_package(f64), narrow=True)[0].crd_type == np.int32


CORRUPT_CHILD = """
import numpy as np, frontend as F
from frontend import Tensor
d = np.where(np.random.default_rng(0).random((12, 10)) < 0.4, 1.5, 0.0)
x = np.ones(10)
for fmt in ("CSR", "COO", "DCSR", "ELL", "DIAI"):  # row kernel, sparsifier (twice), emitter (twice)
    for it, ct in ((np.int32, np.int16), (np.int8, np.int8)):
        for bad in ("large", "negative"):
            for run in (lambda t: F.matmul(t, x), lambda t: F.sum(t, 1)):
                t = Tensor.from_dense(d).convert(fmt, index_type=it, crd_type=ct, max_fill=None)
                run(t)
                c = next(c for c in t._crd if c is not None and c.size)
                c[0] = np.iinfo(c.dtype).max if bad == "large" else -3  # in place, after validation
                try:
                    out = np.asarray(F.Tensor.to_dense(r) if isinstance(r := run(t), Tensor) else r)
                    outcome = "finite" if np.isfinite(out).all() else "nonfinite"
                except ValueError:
                    outcome = "ValueError"
                print(fmt, np.dtype(ct), bad, outcome, flush=True)
"""


def test_corrupted_narrow_coordinates_never_crash() -> None:
    """Narrow coordinates set out of range in place: the kernels clamp them or the operands are refused."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", CORRUPT_CHILD], cwd=root, capture_output=True, text=True,
                          timeout=600)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, f"child ended with {proc.returncode} after {lines[-1:]}:\n{proc.stderr[-3000:]}"
    assert len(lines) == 5 * 2 * 2 * 2
    assert all(ln.split()[-1] in ("finite", "ValueError") for ln in lines), lines


@pytest.mark.parametrize("fmt", ["CSR", "CSC", "COO"])
def test_sddmm_kernel_reads_narrow_buffers(fmt: str) -> None:
    a = _matrix(14, 22, np.float64, 13, 0.2)
    rng = np.random.default_rng(14)
    x, y = rng.standard_normal((14, 4)), rng.standard_normal((4, 22))
    for it, ct in ((np.int32, np.int16), (np.int8, np.int8)):
        t = _narrow(a, fmt, it, ct)
        assert F.paths_of(F.einsum, "ij,ik,kj->ij", t, x, y) == ["kernel:sddmm"]
        np.testing.assert_allclose(_dense(F.einsum("ij,ik,kj->ij", t, x, y)), a * (x @ y), rtol=1e-12, atol=1e-12)


def test_copy_and_clone_keep_the_narrow_types() -> None:
    a, b = _matrix(6, 9, np.float64, 15), _matrix(6, 9, np.float64, 16)
    t = _narrow(a, "CSR", np.int32, np.int8)
    c = t.clone()
    assert (c.index_type, c.crd_type) == (np.int32, np.int8) and c.crd(1) is not t.crd(1)
    t.copy_(Tensor.from_dense(b, "COO"))
    assert (t.index_type, t.crd_type) == (np.int32, np.int8)
    np.testing.assert_array_equal(t.to_dense(), b)
    np.testing.assert_array_equal(c.to_dense(), a)
