"""Differential tests: every format x operation x dtype x shape against a dense NumPy reference.

Driven by hypothesis (failures shrink to a minimal operand and call): the "ci" profile (default) runs a
fixed, bounded set of examples; ``UST_MLIR_DIFF_PROFILE=long pytest tests/test_differential.py`` runs many
more with fresh seeds. The reference and the operands are in ``tests/diff_model.py``; a refusal fails the
test unless it is a documented meaningless combination (``diff_model.MEANINGLESS``, README).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import frontend as F
from diff_model import (
    BINARY,
    DENSITIES,
    DTYPES,
    NAMED_2D,
    SEMIRINGS,
    SETTINGS,
    SHAPES_2D,
    Operand,
    dense_operand,
    format_2d,
    is_documented_refusal,
    ref_elementwise,
    ref_matmul,
    sparse_2d,
    to_numpy,
    tolerance,
    transposed,
)
from frontend import NamedFormats as N, Tensor
from frontend.storage._convert import coordinates

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def run(fn: Any) -> Any:
    """Call ``fn``; a refusal that is not a documented meaningless combination fails the test."""
    try:
        return fn()
    except (TypeError, ValueError) as err:
        if is_documented_refusal(err):
            return None
        raise


def check(got: Any, want: np.ndarray, dtype: Any, what: str) -> None:
    np.testing.assert_allclose(to_numpy(got), want, err_msg=what, **tolerance(dtype))


@st.composite
def matmul_case(draw: Any) -> dict[str, Any]:
    """A stored a, a dense or stored b (vector or matrix), transposes, and alpha/beta/c."""
    dtype = draw(st.sampled_from(DTYPES))
    m, k = draw(st.sampled_from(SHAPES_2D))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = draw(sparse_2d((k, m) if ta else (m, k), dtype))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    kind = draw(st.sampled_from(["vector", "matrix", "fortran", "sparse"]))
    n = draw(st.sampled_from([1, 3]))
    if kind == "vector":
        b, tb = dense_operand(rng, (k,), dtype), False
    elif kind == "sparse":  # a sparse result (both stored; either may be an all-dense generated format)
        b = draw(sparse_2d((n, k) if tb else (k, n), dtype))
    else:
        b = dense_operand(rng, (n, k) if tb else (k, n), dtype, fortran=kind == "fortran")
    scale = draw(st.sampled_from(["none", "alpha", "c", "beta"])) if kind != "sparse" else "none"
    return {"dtype": dtype, "a": a, "b": b, "ta": ta, "tb": tb, "scale": scale, "rng": rng}


@settings(**SETTINGS)
@given(matmul_case())
def test_matmul(case: dict[str, Any]) -> None:
    """SpMV, SpMM, sparse x sparse, with transposes and alpha/beta/c: ``alpha op(a) @ op(b) + beta c``."""
    a, b, dtype = case["a"], case["b"], case["dtype"]
    oa = transposed(a) if case["ta"] else a
    ob = transposed(b) if case["tb"] else b
    bm = ob if ob.d.ndim == 2 else Operand(ob.d[:, None], ob.p[:, None], ob.t, ob.fmt)
    want, _ = ref_matmul(oa, bm)
    want = want if ob.d.ndim == 2 else want[:, 0]
    kw: dict[str, Any] = {"transpose_a": case["ta"], "transpose_b": case["tb"]}
    c = None
    if case["scale"] in ("alpha", "beta"):
        kw["alpha"] = dtype(2.5)
        want = want * dtype(2.5)
    if case["scale"] in ("c", "beta"):
        c = case["rng"].standard_normal(want.shape).astype(dtype)
        beta = dtype(0.5) if case["scale"] == "beta" else dtype(1)
        if case["scale"] == "beta":
            kw["beta"] = beta
        want = want + beta * c
    got = run(lambda: F.matmul(a.t, b.t, c, **kw))
    check(got, want, dtype, f"matmul {a} {b} {kw}")


@st.composite
def semiring_case(draw: Any) -> dict[str, Any]:
    sr = draw(st.sampled_from(SEMIRINGS[1:]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    m, k = draw(st.sampled_from(SHAPES_2D))
    a = draw(sparse_2d((m, k), dtype))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    sparse_b = draw(st.booleans())
    b = draw(sparse_2d((k, 3), dtype)) if sparse_b else dense_operand(rng, (k, 3), dtype)
    with_c = not sparse_b and draw(st.booleans())
    return {"sr": sr, "dtype": dtype, "a": a, "b": b, "c": rng.standard_normal((m, 3)).astype(dtype) if with_c
            else None}


@settings(**SETTINGS)
@given(semiring_case())
def test_semiring(case: dict[str, Any]) -> None:
    """Predefined and traced semirings: only stored entries take part (padding does not), c folds in."""
    a, b, sr, c, dtype = case["a"], case["b"], case["sr"], case["c"], case["dtype"]
    want, hit = ref_matmul(a, b, sr)
    cc = None if c is None else c.copy()
    got = run(lambda: F.matmul(a.t, b.t, cc, semiring=sr.arg))
    what = f"{sr.name} {a} {b} c={c is not None}"
    if isinstance(got, Tensor) and got.is_sparse:  # sparse x sparse: entries where some product exists
        g = got.to_dense()
        np.testing.assert_allclose(g[hit], want[hit], err_msg=what, **tolerance(dtype))
        assert not g[~hit].any(), what
        return
    if c is not None:
        want = sr.add(c, want)
    check(got, want, dtype, what)


@settings(**SETTINGS)
@given(st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), st.data())
def test_prolog_epilog(dtype: Any, shape: tuple[int, int], data: Any) -> None:
    """A prolog that is not zero at zero sees stored entries only; the epilog maps every result element."""
    a = data.draw(sparse_2d(shape, dtype))
    b = dense_operand(np.random.default_rng(1), (shape[1], 2), dtype)
    want, _ = ref_matmul(a, b, prolog=lambda v: v * 2 + 1)
    got = run(lambda: F.matmul(a.t, b.t, prolog=lambda v: v * 2 + 1, epilog=lambda r: r - 1))
    check(got, want - 1, dtype, f"prolog/epilog {a}")


OUT_FORMATS = ["CSR", "CSC", "COO", "DCSR", "DCSC", "BSR2x2", "BSC2x2", "DIAI", "DELTA8"]


@settings(**SETTINGS)
@given(st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), st.sampled_from(OUT_FORMATS), st.data())
def test_sparse_times_sparse(dtype: Any, shape: tuple[int, int], out: str, data: Any) -> None:
    """Sparse x sparse into an out_format of every family (a sparse result), complex and all-dense generated
    operands included."""
    a = data.draw(sparse_2d(shape, dtype))
    b = data.draw(sparse_2d((shape[1], shape[0]), dtype))
    got = run(lambda: F.matmul(a.t, b.t, out_format=NAMED_2D[out]))
    if got is not None:
        assert got.tensor_format == NAMED_2D[out]
        check(got, ref_matmul(a, b)[0], dtype, f"{a} @ {b} -> {out}")


ELEMENTWISE = ["add", "subtract", "multiply", "sum", "max", "min", "softmax"]


@settings(**dict(SETTINGS, max_examples=max(1, SETTINGS["max_examples"] // 2)))  # cheap ops: half the examples
@given(st.sampled_from(ELEMENTWISE), st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), st.data())
def test_elementwise(op: str, dtype: Any, shape: tuple[int, int], data: Any) -> None:
    """add/subtract/multiply of a stored operand and a stored or dense one, sum/max/min along an axis or all,
    softmax along an axis: values against ``diff_model.ref_elementwise`` (padding is never an entry)."""
    if op in ("max", "min", "softmax") and np.dtype(dtype).kind == "c":
        dtype = np.float64  # no order on complex numbers (a documented refusal)
    a = data.draw(sparse_2d(shape, dtype))
    b = None
    if op in BINARY:
        rng = np.random.default_rng(data.draw(st.integers(0, 99)))
        b = data.draw(sparse_2d(shape, dtype)) if data.draw(st.booleans()) else dense_operand(rng, shape, dtype)
    axis = data.draw(st.sampled_from([0, 1] if op == "softmax" else [None, 0, 1])) if b is None else None
    want = ref_elementwise(op, a, b, axis)
    fn = getattr(F, op)
    got = run(lambda: fn(a.t, b.t) if b is not None else fn(a.t, axis))
    check(got, want, dtype, f"{op} {a} {b} axis={axis}")


@settings(**SETTINGS)
@given(st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), st.data())
def test_sddmm(dtype: Any, shape: tuple[int, int], data: Any) -> None:
    """``einsum("ij,ik,kj->ij")``: a sparse result at a's stored entries."""
    a = data.draw(sparse_2d(shape, dtype))
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal((shape[0], 3)).astype(dtype), rng.standard_normal((3, shape[1])).astype(dtype)
    got = run(lambda: F.einsum("ij,ik,kj->ij", a.t, u, v))
    check(got, np.where(a.p, a.d * (u @ v), 0), dtype, f"sddmm {a}")


@settings(**SETTINGS)
@given(st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), st.sampled_from(OUT_FORMATS), st.data())
def test_einsum_transposition(dtype: Any, shape: tuple[int, int], out: str, data: Any) -> None:
    """``einsum("ij->ji")`` into another format, and a transposed SpMV ``"ij,i->j"``."""
    a = data.draw(sparse_2d(shape, dtype))
    got = run(lambda: F.einsum("ij->ji", a.t, out_format=NAMED_2D[out]))
    if got is not None:
        check(got, a.d.T, dtype, f"{a}^T -> {out}")
    x = np.random.default_rng(3).standard_normal(shape[0]).astype(dtype)
    check(run(lambda: F.einsum("ij,i->j", a.t, x)), a.d.T @ x, dtype, f"{a}^T x")


BATCHED = {"CSF3": N.CSF(3), "BatchedCSR": N.BatchedCSR}


@settings(**SETTINGS)
@given(st.sampled_from([np.float32, np.float64]), st.sampled_from(sorted(BATCHED)), st.sampled_from(DENSITIES),
       st.integers(0, 99))
def test_batched_einsum(dtype: Any, fmt: str, density: float, seed: int) -> None:
    """``einsum("bij,bjk->bik")`` on 3-D CSF and batched CSR."""
    rng = np.random.default_rng(seed)
    d = np.where(rng.random((2, 3, 4)) < density, rng.standard_normal((2, 3, 4)), 0).astype(dtype)
    b = rng.standard_normal((2, 4, 5)).astype(dtype)
    got = run(lambda: F.einsum("bij,bjk->bik", Tensor.from_dense(d, BATCHED[fmt]), b))
    check(got, d @ b, dtype, f"batched {fmt}")


def _stored(t: Tensor) -> set[tuple[int, ...]]:
    dims, _ = coordinates(t)
    return set(map(tuple, dims.T.tolist()))


@settings(**SETTINGS)
@given(st.sampled_from(DTYPES), st.sampled_from(SHAPES_2D), format_2d(), st.data())
def test_convert(dtype: Any, shape: tuple[int, int], target: Any, data: Any) -> None:
    """Any format to any format: same values, and the stored entries are the operand's."""
    a = data.draw(sparse_2d(shape, dtype))
    got = run(lambda: a.t.convert(target[1]))
    if got is None:
        return
    check(got, a.d, dtype, f"{a} -> {target[0]}")
    # conversion drops the zeros of padded and dense sources and does not make them entries of padded targets
    drop = _padded(target[1]) or a.t.tensor_format.is_dense
    want = {tuple(ix) for ix in np.argwhere(a.p & (a.d != 0) if drop else a.p)}
    assert _stored(got) == want, f"{a} -> {target[0]}: stored entries differ"


def _padded(fmt: Any) -> bool:
    from frontend.format import stores_padding
    return stores_padding(fmt)


@settings(**SETTINGS)
@given(st.sampled_from(sorted(NAMED_2D)), st.sampled_from([1, 4, 6]), st.sampled_from(["spd", "lower", "upper"]),
       st.integers(0, 99))
def test_solve(fmt: str, n: int, kind: str, seed: int) -> None:
    """``solve`` on SPD and triangular systems in every format."""
    rng = np.random.default_rng(seed)
    m = np.where(rng.random((n, n)) < 0.5, rng.standard_normal((n, n)), 0)
    if kind == "spd":
        d = m @ m.T + n * np.eye(n)
    else:
        d = (np.tril(m) if kind == "lower" else np.triu(m)) + (2 + n) * np.eye(n)
    if NAMED_2D[fmt] == N.NM(2, 4):
        return  # an SPD or triangular matrix is not 2:4 in general (the format refuses it when built)
    rhs = rng.standard_normal(n)
    got = run(lambda: F.solve(Tensor.from_dense(d, NAMED_2D[fmt]), rhs, tol=1e-12))
    np.testing.assert_allclose(to_numpy(got), np.linalg.solve(d, rhs), rtol=1e-7, atol=1e-9,
                               err_msg=f"solve {kind} {fmt} n={n}")
