"""Semirings, prologs and epilogs: traced Python scalar functions, only stored entries take part."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N
from frontend.ops._semiring import Semiring, logical_and, logical_or, maximum, minimum
from lowering.scalar_fn import trace
from ops_util import dense, rand, tensor


def reference(a: np.ndarray, b: np.ndarray, add, mul, init: np.ndarray, b_sparse: bool = False) -> np.ndarray:
    """C[i, j] = add-fold of init[i, j] and mul(a[i, k], b[k, j]) over k where a (and b, if sparse) store."""
    out = init.astype(a.dtype).copy()
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            for k in range(a.shape[1]):
                if a[i, k] != 0 and (not b_sparse or b[k, j] != 0):
                    out[i, j] = add(out[i, j], mul(a[i, k], b[k, j]))
    return out


A = rand((5, 6), seed=1)
B = rand((6, 4), density=1.0, seed=2)


def test_issue_example_max_plus():
    a = sp.csr_array(np.diag([2.0, 4.0]))
    c = np.full((2, 2), 3.0)
    assert F.matmul(a, np.ones((2, 2)), c, semiring="max-plus") is c
    np.testing.assert_array_equal(c, [[3, 3], [5, 5]])


@pytest.mark.parametrize("name,add,mul,ident", [
    ("min-plus", min, lambda x, y: x + y, np.inf),
    ("max-plus", max, lambda x, y: x + y, -np.inf),
    ("or-and", lambda x, y: float(bool(x) or bool(y)), lambda x, y: float(bool(x) and bool(y)), 0.0),
])
def test_predefined_with_dense_result(name, add, mul, ident):
    r = F.matmul(sp.csr_array(A), B, semiring=name)
    assert np.array_equal(r, reference(A, B, add, mul, np.full((5, 4), ident)))
    c = rand((5, 4), density=1.0, seed=3)
    ref = reference(A, B, add, mul, c)
    F.matmul(sp.csr_array(A), B, c, semiring=name)
    assert np.allclose(c, ref)


def test_semiring_sparse_times_sparse_to_sparse():
    b = rand((6, 4), seed=4)
    r = F.matmul(tensor(A, N.CSR), tensor(b, N.CSR), semiring="min-plus")
    assert r.is_sparse
    ref = reference(A, b, min, lambda x, y: x + y, np.full((5, 4), np.inf), b_sparse=True)
    got = dense(r)
    stored = np.isfinite(ref)
    assert np.allclose(got[stored], ref[stored]) and np.all(got[~stored] == 0)


def test_user_semiring_tuple_and_object():
    def add(x, y):
        return maximum(x, y) * 1.0

    def mul(x, y):
        return (x - y) / 2 + 1

    r = F.matmul(sp.csr_array(A), B, semiring=(add, mul, -1e300))
    ref = reference(A, B, max, lambda x, y: (x - y) / 2 + 1, np.full((5, 4), -1e300))
    assert np.allclose(r, ref)
    sr = Semiring(add=minimum, mul=lambda x, y: -x * y, identity=1e300, name="min-negtimes")
    r = F.matmul(sp.csr_array(A), B, semiring=sr)
    assert np.allclose(r, reference(A, B, min, lambda x, y: -x * y, np.full((5, 4), 1e300)))


def test_integer_semiring():
    a, b = rand((5, 6), dtype=np.int64, seed=5), rand((6, 4), density=1.0, dtype=np.int64, seed=6)
    r = F.matmul(sp.csr_array(a), b, semiring="min-plus")
    big = np.iinfo(np.int64).max
    ref = reference(a, b, min, lambda x, y: x + y, np.full((5, 4), big))
    assert np.array_equal(r, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_prolog_epilog(dtype):
    a, b = rand((5, 6), dtype=dtype, seed=7), rand((6, 4), dtype=dtype, seed=8)
    r = F.matmul(sp.csr_array(a), b, prolog=lambda x: x * 2 + 1, epilog=lambda y: y - 3)
    ref = np.where(a != 0, a * 2 + 1, 0) @ b - 3
    assert np.allclose(r, ref, rtol=1e-4)


def test_prolog_epilog_sparse_result():
    b = rand((6, 4), seed=9)
    r = F.matmul(tensor(A, N.CSR), tensor(b, N.CSR), prolog=lambda x: -x, epilog=lambda y: y * y)
    ref = (-A) @ b
    got = dense(r)
    assert r.is_sparse and np.allclose(got, ref * ref)


def test_tracing():
    fn = trace(lambda x, y: maximum(x, y) + logical_and(x, 2.0) - logical_or(0, y) / 4, 2, "f64")
    text = "\n".join(fn.lines)
    for op in ("arith.maximumf", "arith.addf", "arith.cmpf", "arith.andi", "arith.ori", "arith.select",
               "arith.divf", "arith.subf"):
        assert op in text
    assert "arith.maxsi" in "\n".join(trace(maximum, 2, "i32").lines)
    assert "complex.mul" in "\n".join(trace(lambda x, y: x * y, 2, "complex<f64>").lines)


def test_semiring_errors():
    with pytest.raises(ValueError, match="unknown semiring"):
        F.matmul(sp.csr_array(A), B, semiring="plus-max")
    with pytest.raises(TypeError, match="cannot branch"):
        F.matmul(sp.csr_array(A), B, semiring=(lambda x, y: x if x > y else y, lambda x, y: x * y))
    with pytest.raises(TypeError, match="not defined"):
        F.matmul(sp.csr_array(A.astype(complex)), B.astype(complex), semiring="max-plus")
    with pytest.raises(ValueError, match="alpha/beta"):
        F.matmul(sp.csr_array(A), B, np.zeros((5, 4)), semiring="min-plus", beta=2.0)
    with pytest.raises(TypeError):
        F.matmul(sp.csr_array(A), B, semiring=42)


def test_fresh_lambdas_reuse_one_plan():
    a = sp.csr_array(A)
    F.matmul(a, B, semiring=(minimum, lambda x, y: x + y, 1e300), epilog=lambda y: y * 2)
    before = F.cache_info()["plans"]
    for _ in range(5):
        r = F.matmul(a, B, semiring=(minimum, lambda x, y: x + y, 1e300), epilog=lambda y: y * 2)
    assert F.cache_info()["plans"] == before
    assert np.allclose(r, 2 * reference(A, B, min, lambda x, y: x + y, np.full((5, 4), 1e300)))


@pytest.mark.parametrize("name", ["or-and", "min-plus", "max-plus"])
def test_c_folds_in_the_same_in_every_format(name):
    """``c`` is combined with the semiring's add of the identity-started fold in every format, also where an
    element has no product (or-and: ``c or 0`` is 0/1; min/max-plus: c itself); empty rows, an empty matrix,
    1x1 and non-square shapes, f32 and f64 (rotating over the formats)."""
    from frontend import NamedFormats as NF, Tensor

    add = {"or-and": lambda x, y: ((x != 0) | (y != 0)).astype(x.dtype), "min-plus": np.minimum,
           "max-plus": np.maximum}[name]
    ident = {"or-and": 0.0, "min-plus": np.inf, "max-plus": -np.inf}[name]
    mul = {"or-and": lambda x, y: ((x != 0) & (y != 0)).astype(np.float64), "min-plus": np.add,
           "max-plus": np.add}[name]
    rng = np.random.default_rng(7)
    shapes = [(4, 6), (1, 1), (3, 5), (2, 4)]
    for k, fmt in enumerate((NF.CSR, NF.COO, NF.CSC, NF.BSR((2, 2)), NF.BSC((2, 2)), NF.DIAI, NF.DELTA(2))):
        shape, dtype = shapes[k % len(shapes)], (np.float32, np.float64)[k % 2]
        d = np.where(rng.random(shape) < 0.4, rng.standard_normal(shape), 0)
        if shape[0] > 2:
            d[1] = 0  # an empty row
        if shape == (2, 4):
            d[:] = 0  # an empty matrix
        b = rng.standard_normal((shape[1], 3))
        prods = np.where((d != 0)[:, :, None], mul(d[:, :, None], b[None, :, :]), ident)
        want = add(np.full((shape[0], 3), -0.5), prods.min(1) if name == "min-plus" else prods.max(1))
        c = np.full((shape[0], 3), -0.5, dtype)
        got = F.matmul(Tensor.from_dense(d.astype(dtype), fmt), b.astype(dtype), c, semiring=name)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5, err_msg=f"{fmt.name} {shape}")


def test_issue12_repros_give_the_csr_answer():
    """Two regressions: min-plus on BSR((2, 2)) (was neither min-plus nor the product) and a
    diagonal matrix under min-plus in BSR/DIA (padding took part); every format gives the CSR answer."""
    from frontend import NamedFormats as NF, Tensor

    rng = np.random.default_rng(0)
    d, x = rng.standard_normal((4, 4)), rng.standard_normal(4)
    got = F.matmul(Tensor.from_dense(d, NF.BSR((2, 2))), Tensor.from_package(x), semiring="min-plus").to_dense()
    np.testing.assert_allclose(got, np.min(d + x, axis=1))
    diag = np.diag([1.0, 2.0, 3.0, 4.0])
    five = Tensor.from_package(np.full(4, 5.0))
    for fmt in (NF.CSR, NF.BSR((2, 2)), NF.BSC((2, 2)), NF.DIAI, NF.DIAJ, NF.SkewDIAI, NF.DELTA(2)):
        got = F.matmul(Tensor.from_dense(diag, fmt), five, semiring="min-plus").to_dense()
        np.testing.assert_allclose(got, [6.0, 7.0, 8.0, 9.0], err_msg=fmt.name)
