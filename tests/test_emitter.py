"""The level-walking emitter: formats MLIR cannot encode (DIA, skew-DIA, DELTA) against numpy/scipy, and
the emitter on MLIR-encodable formats cross-checked against the sparsifier path."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.sparse as sp

import lowering
from frontend import Matmul, NamedFormats as NF, Tensor, TensorFormat, einsum, matmul
from lowering.contraction import Contraction, TensorSpec
from lowering.emitter import emit_contraction

EMITTER_FORMATS = {
    "DIAI": NF.DIAI, "DIAJ": NF.DIAJ, "SkewDIAI": NF.SkewDIAI, "SkewDIAJ": NF.SkewDIAJ,
    "DELTA1": NF.DELTA(1), "DELTA2": NF.DELTA(2), "DELTA4": NF.DELTA(4), "DELTA8": NF.DELTA(8),
    "DCSR-delta": TensorFormat.parse("(i, j) -> (i : compressed, j : delta(2))"),
    "block-delta": TensorFormat.parse("(i, j) -> (i // 2 : dense, j : delta(3), i % 2 : dense)"),
}


def matrix(m: int = 9, n: int = 13, seed: int = 0) -> np.ndarray:
    """Random entries with an empty row, an empty column, long gaps (delta padding) and a dense row."""
    rng = np.random.default_rng(seed)
    a = np.where(rng.random((m, n)) < 0.3, rng.standard_normal((m, n)), 0.0)
    if m > 3:
        a[2] = 0.0                       # empty row
        a[3] = rng.standard_normal(n)    # full row
    a[:, min(1, n - 1)] = 0.0            # empty column
    a[m - 1, n - 1] = 1.5                # far from column 0: padding for small bit widths
    return a


def dense(y):
    return y.to_dense() if isinstance(y, Tensor) else np.asarray(y)


@pytest.fixture(scope="module")
def A() -> np.ndarray:
    return matrix()


@pytest.mark.parametrize("name", list(EMITTER_FORMATS))
def test_spmv_spmm_vecmat_on_emitter_formats(A, name):
    fmt = EMITTER_FORMATS[name]
    t = Tensor.from_dense(A, fmt)
    assert fmt.mlir_support() == "emitter"
    rng = np.random.default_rng(1)
    x, X, z = rng.standard_normal(A.shape[1]), rng.standard_normal((A.shape[1], 10)), rng.standard_normal(A.shape[0])
    mm = Matmul(t, x)
    np.testing.assert_allclose(dense(mm.execute()), A @ x, rtol=1e-12, atol=1e-12)
    assert mm.path in ("emitter", "emitter-rows")  # the row-range kernel where rows can be split
    assert "scf.for" in mm.mlir and "sparse_tensor" not in mm.mlir
    np.testing.assert_allclose(dense(matmul(t, X)), A @ X, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense(matmul(z, t)), z @ A, rtol=1e-12, atol=1e-12)


def test_delta_storage_has_padding_and_empty_rows(A):
    t = Tensor.from_dense(A, NF.DELTA(1))
    assert t.nse > np.count_nonzero(A)                  # zero entries pad the long gaps
    assert t.pos(1)[3] == t.pos(1)[2]                   # row 2 is empty
    np.testing.assert_allclose(dense(matmul(t, np.ones(A.shape[1]))), A.sum(axis=1), atol=1e-12)


@pytest.mark.parametrize("fmt", [NF.DIAI, NF.DELTA(4)], ids=["DIAI", "DELTA4"])
@pytest.mark.parametrize("dtype,itype", [(np.float32, np.int32), (np.float64, np.int32), (np.float32, np.int64)])
def test_dtypes_and_index_types(A, fmt, dtype, itype):
    t = Tensor.from_dense(A.astype(dtype), fmt, index_type=itype)
    x = np.arange(A.shape[1], dtype=dtype) / 7
    y = dense(matmul(t, x))
    assert y.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, A.astype(dtype) @ x, rtol=tol, atol=tol)


@pytest.mark.parametrize("fmt", [NF.DIAJ, NF.DELTA(2)], ids=["DIAJ", "DELTA2"])
def test_alpha_beta(A, fmt):
    t = Tensor.from_dense(A, fmt)
    x = np.linspace(-1, 1, A.shape[1])
    c = np.linspace(0, 3, A.shape[0])
    want = 2.5 * (A @ x) - 0.5 * c
    got = matmul(t, x, c.copy(), alpha=2.5, beta=-0.5)
    np.testing.assert_allclose(dense(got), want, rtol=1e-12, atol=1e-12)
    got = matmul(t, x, c.copy())                      # beta = 1
    np.testing.assert_allclose(dense(got), A @ x + c, rtol=1e-12, atol=1e-12)


def test_min_plus_semiring_on_full_diagonals():
    n = 7
    band = np.diag(np.arange(1.0, n + 1)) + np.diag(np.full(n - 1, 2.0), 1) + np.diag(np.full(n - 2, 5.0), -2)
    t = Tensor.from_dense(band, NF.DIAI)
    x = np.linspace(0, 3, n)
    want = np.array([min(band[i, j] + x[j] for j in range(n) if band[i, j] != 0) for i in range(n)])
    np.testing.assert_allclose(dense(matmul(t, x, semiring="min-plus")), want)


@pytest.mark.parametrize("shape", [(1, 1), (0, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("fmt", [NF.DIAI, NF.SkewDIAJ, NF.DELTA(2)], ids=["DIAI", "SkewDIAJ", "DELTA2"])
def test_edge_shapes(fmt, shape):
    a = matrix(*shape, seed=3) if 0 not in shape else np.zeros(shape)
    x = np.arange(shape[1], dtype=np.float64) + 1
    np.testing.assert_allclose(dense(matmul(Tensor.from_dense(a, fmt), x)), a @ x, atol=1e-12)


def test_empty_matrix():
    t = Tensor.from_dense(np.zeros((6, 4)), NF.DIAI)
    assert t.nse == 0
    np.testing.assert_array_equal(dense(matmul(t, np.ones(4))), np.zeros(6))


@pytest.mark.parametrize("fmt", [NF.DIAI, NF.DELTA(4)], ids=["DIAI", "DELTA4"])
def test_prolog_and_epilog(A, fmt):
    x = np.linspace(1, 2, A.shape[1])
    got = matmul(Tensor.from_dense(A, fmt), x, prolog=lambda v: v * 2, epilog=lambda v: v + 1)
    np.testing.assert_allclose(dense(got), (2 * A) @ x + 1, rtol=1e-12, atol=1e-12)


def test_dot_with_delta_vector():
    v = np.zeros(40)
    v[[0, 3, 17, 39]] = [1.0, -2.0, 3.0, 0.5]
    t = Tensor.from_dense(v, TensorFormat.parse("(i) -> (i : delta(3))"))
    w = np.linspace(-1, 1, 40)
    np.testing.assert_allclose(float(dense(einsum("i,i->", t, w))), v @ w, rtol=1e-12)


@pytest.mark.parametrize("text", ["(b, i, j) -> (b : batch, j - i : compressed, i : range)",
                                  "(b, i, j) -> (b : batch, i : dense, j : delta(4))",
                                  "(b, i, j) -> (b : dense, j - i : compressed, i : range)"])
def test_batched(text):
    rng = np.random.default_rng(5)
    a = np.stack([matrix(6, 5, seed=s) for s in range(3)])
    x = rng.standard_normal((3, 5))
    t = Tensor.from_dense(a, TensorFormat.parse(text))
    np.testing.assert_allclose(dense(einsum("bij,bj->bi", t, x)), np.einsum("bij,bj->bi", a, x), atol=1e-12)


def test_two_stored_operands_run_on_a_converted_copy(A):
    """The emitter walks one stored operand; the other emitter-format operand is converted (a copy)."""
    t = Tensor.from_dense(A, NF.DIAI)
    mm = Matmul(t, Tensor.from_dense(A.T.copy(), NF.DIAJ))
    np.testing.assert_allclose(mm.execute().to_dense(), A @ A.T)
    assert mm.path.startswith("convert(a->CSR, b->CSR)+")


# ----- the emitter on MLIR-encodable formats, against the sparsifier ------------------------------------
@contextlib.contextmanager
def forced_emitter():
    """Route every contraction with one stored operand through the emitter (a registered kernel)."""
    entry = lowering.register_kernel(
        "*", ("*", "*"), emit_contraction, name="force-emitter",
        when=lambda c: sum(t.encoded for t in c.inputs) == 1 and not c.output.encoded)
    try:
        yield entry
    finally:
        lowering.unregister_kernel("force-emitter")


CROSS = {"CSR": NF.CSR, "COO": NF.COO, "CSC": NF.CSC, "DCSR": NF.DCSR, "BSR2x3": NF.BSR((2, 3)),
         "BSC2x2": NF.BSC((2, 2))}


@pytest.mark.parametrize("name", list(CROSS))
def test_emitter_matches_sparsifier(A, name):
    t = Tensor.from_dense(A, CROSS[name])
    rng = np.random.default_rng(2)
    x, X = rng.standard_normal(A.shape[1]), rng.standard_normal((A.shape[1], 4))
    cases = [(x, {}), (X, {"alpha": 3.0})]
    ref = [dense(matmul(t, b, **kw)) for b, kw in cases]
    with forced_emitter():
        mm = Matmul(t, x)
        assert mm.path == "kernel:force-emitter"
        got = [dense(matmul(t, b, **kw)) for b, kw in cases]
    for g, r, (b, kw) in zip(got, ref, cases):
        np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, kw.get("alpha", 1.0) * (A @ b), rtol=1e-12, atol=1e-12)


def test_emitter_semiring_matches_sparsifier(A):
    t = Tensor.from_dense(A, NF.CSR)
    x = np.linspace(-2, 2, A.shape[1])
    ref = dense(matmul(t, x, semiring="max-plus"))
    with forced_emitter():
        got = dense(matmul(t, x, semiring="max-plus"))
    np.testing.assert_allclose(got, ref)


def test_emitted_text_is_vectorized_and_parallel():
    big = sp.diags([np.ones(99), np.ones(100), np.ones(99)], [-1, 0, 1]).toarray()
    mm = Matmul(Tensor.from_dense(big, NF.DIAI), np.ones(100))
    assert "vector.load" in mm.mlir and mm.info.path == "emitter-rows"   # row ranges, vector rows
    whole = Contraction(("ik", "k"), (TensorSpec(NF.DIAI, (100, 100), "f64"),
                                               TensorSpec(None, (100,), "f64")),
                                 "i", TensorSpec(None, (100,), "f64"))
    assert "scf.parallel" in emit_contraction(whole)   # the whole-matrix variant: blocks of rows
    row_sums = Matmul(Tensor.from_dense(big, NF.DELTA(4)), np.ones(100))
    assert "iter_args" in row_sums.mlir and "scf.parallel" in row_sums.mlir   # rows: carried partial sums
    np.testing.assert_allclose(row_sums.execute().to_dense(), big.sum(axis=1))


@pytest.mark.parametrize("fmt", [NF.SkewDIAJ, NF.DELTA(2)], ids=["SkewDIAJ", "DELTA2"])
def test_integers_and_transpose(A, fmt):
    ai = (A * 10).astype(np.int64)
    ti = Tensor.from_dense(ai, fmt)
    np.testing.assert_array_equal(dense(matmul(ti, np.arange(A.shape[1], dtype=np.int64))), ai @ np.arange(A.shape[1]))
    z = np.linspace(0, 1, A.shape[0])
    np.testing.assert_allclose(dense(matmul(Tensor.from_dense(A, fmt), z, transpose_a=True)), A.T @ z, atol=1e-12)


@pytest.mark.parametrize("text", ["(a, b, i, j) -> (a : batch, b : batch, j - i : compressed, i : range)",
                                  "(a, b, i, j) -> (a : batch, b : batch, i : dense, j : delta(3))"])
def test_two_batch_axes(text):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 3, 6, 5))
    a[np.abs(a) < 0.8] = 0.0
    x = rng.standard_normal((2, 3, 5))
    got = einsum("abij,abj->abi", Tensor.from_dense(a, TensorFormat.parse(text)), x)
    np.testing.assert_allclose(dense(got), np.einsum("abij,abj->abi", a, x), atol=1e-12)


def test_lowering_level_use_without_frontend_ops(A):
    """emit_contraction + mlir_bridge.compile_module + operand_buffers, as a researcher would call them."""
    from lowering.contraction import Contraction, TensorSpec
    from lowering.emitter import operand_buffers
    from lowering.pipelines import Pipeline
    from mlir_bridge import compile_module

    t = Tensor.from_dense(A, NF.DELTA(3), index_type=np.int32)
    c = Contraction(("ij", "j"),
                    (TensorSpec(NF.DELTA(3), A.shape, "f64", 32, 32), TensorSpec(None, (A.shape[1],), "f64")),
                    "i", TensorSpec(None, (A.shape[0],), "f64"))
    fn = compile_module(emit_contraction(c), Pipeline()).function("main")
    x = np.linspace(0, 1, A.shape[1])
    np.testing.assert_allclose(fn(*operand_buffers(t), x), A @ x, atol=1e-12)
