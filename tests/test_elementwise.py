"""Elementwise operations and reductions (frontend.add/subtract/multiply/apply/select/sum/max/min/prod/reduce/
softmax/log_softmax) on every named format and format pair, against numpy/scipy/torch references."""
import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as NF, Tensor
from frontend.ops import minimum

FORMATS = {"CSR": NF.CSR, "CSC": NF.CSC, "COO": NF.COO, "DCSR": NF.DCSR, "BSR": NF.BSR((2, 3)), "DIA": NF.DIAI,
           "DELTA8": NF.DELTA(8)}


def _matrix(shape, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    d = rng.standard_normal(shape) * (rng.random(shape) < 0.35)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    if np.dtype(dtype).kind == "c":
        d = d + 1j * d[::-1, ::-1] * (d != 0)
    return d.astype(dtype)


def _tensor(d, name):
    return Tensor.from_package(sp.csr_array(d)).convert(tensor_format=FORMATS[name])


def _dense(x):
    if isinstance(x, Tensor):
        return x.to_dense()
    if sp.issparse(x):
        return x.toarray()
    return np.asarray(x)


A = _matrix((6, 9), 1)
B = _matrix((6, 9), 2)


@pytest.mark.parametrize("fa", FORMATS)
@pytest.mark.parametrize("fb", FORMATS)
def test_add_multiply_format_pairs(fa, fb):
    ta, tb = _tensor(A, fa), _tensor(B, fb)
    np.testing.assert_allclose(_dense(F.add(ta, tb)), A + B)
    np.testing.assert_allclose(_dense(F.multiply(ta, tb)), A * B)


@pytest.mark.parametrize("fa", ["CSR", "COO", "DIA"])
def test_subtract_and_sparse_results(fa):
    ta, tb = _tensor(A, fa), _tensor(B, "CSC")
    r = F.subtract(ta, tb)
    assert isinstance(r, Tensor) and r.is_sparse
    np.testing.assert_allclose(_dense(r), A - B)
    assert r.nse <= np.count_nonzero((A != 0) | (B != 0))  # the union, not a dense result


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_dtypes(dtype):
    a, b = sp.csr_array(_matrix((6, 9), 1, dtype)), sp.csr_array(_matrix((6, 9), 2, dtype))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    r = F.add(a, b)
    assert isinstance(r, sp.csr_array) and r.dtype == dtype  # scipy in, scipy out
    np.testing.assert_allclose(r.toarray(), a.toarray() + b.toarray(), rtol=tol)
    np.testing.assert_allclose(_dense(F.multiply(a, b)), (a.multiply(b)).toarray(), rtol=tol)


@pytest.mark.parametrize("name", ["CSR", "BSR", "DIA", "DELTA8"])
def test_sparse_with_dense_scalars_and_vectors(name):
    t = _tensor(A, name)
    r, c = np.arange(1.0, 7.0), np.arange(1.0, 10.0)
    cases = [(F.multiply(t, B), A * B), (F.add(t, B), A + B), (F.multiply(t, 3.0), A * 3),
             (F.multiply(t, r[:, None]), A * r[:, None]), (F.multiply(t, c), A * c), (F.add(t, c), A + c),
             (F.subtract(2.0, t), 2.0 - A)]
    for got, ref in cases:
        np.testing.assert_allclose(_dense(got), ref)
    sampled = F.multiply(t, B)
    assert isinstance(sampled, Tensor) and sampled.is_sparse  # the sparse operand's pattern


def test_shapes_and_formats():
    one = sp.csr_array(np.array([[2.5]]))
    np.testing.assert_allclose(_dense(F.add(one, one)), [[5.0]])
    r = F.add(_tensor(A, "DIA"), _tensor(B, "DIA"))
    assert r.tensor_format == NF.DIAI  # DIA + DIA -> DIA
    assert F.add(_tensor(A, "BSR"), _tensor(B, "CSR")).tensor_format == NF.CSR  # BSR + CSR -> CSR
    assert F.add(_tensor(A, "CSR"), _tensor(B, "COO")).tensor_format == NF.CSR  # CSR + COO -> CSR
    for fmt in (NF.DCSR, "DCSR", "(i, j) -> (i : compressed, j : compressed)"):
        got = F.multiply(_tensor(A, "CSR"), _tensor(B, "CSR"), out_format=fmt)
        assert got.tensor_format == NF.DCSR
        np.testing.assert_allclose(got.to_dense(), A * B)


def test_bad_broadcasts_name_both_shapes():
    with pytest.raises(ValueError, match=r"\(6, 9\).*\(5, 9\)"):
        F.add(sp.csr_array(A), np.ones((5, 9)))
    with pytest.raises(ValueError, match=r"\(6, 9\).*\(4,\)"):
        F.multiply(sp.csr_array(A), np.ones(4))


@pytest.mark.parametrize("name", FORMATS)
def test_apply_select(name):
    t = _tensor(A, name)
    stored = A != 0
    np.testing.assert_allclose(_dense(F.apply(t, lambda v: v * 2 + 1)), np.where(stored, A * 2 + 1, 0))
    np.testing.assert_allclose(_dense(F.apply(t, lambda v: F.where(v > 0, v, 0.0))), np.maximum(A, 0))
    i, j = np.indices(A.shape)
    np.testing.assert_allclose(_dense(F.apply(t, lambda v, i, j: v + 10 * i + j)), np.where(stored, A + 10 * i + j, 0))
    kept = F.select(t, lambda v: v >= 0.5)
    np.testing.assert_allclose(_dense(kept), np.where(A >= 0.5, A, 0))
    upper = F.select(t, lambda v, i, j: F.where(j > i, v < 1.0, 0.0))  # predicate of value and coordinates
    np.testing.assert_allclose(_dense(upper), np.where((j > i) & (A < 1.0), A, 0))
    assert upper.is_sparse


@pytest.mark.parametrize("name", FORMATS)
def test_scipy_reductions(name):
    t, ref = _tensor(A, name), sp.csr_array(A)
    for axis in (None, 0, 1):
        np.testing.assert_allclose(_dense(F.sum(t, axis)), np.ravel(ref.sum(axis=axis)))
        for fn in ("max", "min"):
            want = getattr(ref, fn)(axis=axis)
            np.testing.assert_allclose(_dense(getattr(F, fn)(t, axis)), _dense(want))
        np.testing.assert_allclose(_dense(F.prod(t, axis)), np.prod(A, axis=axis))


def test_reduce_over_stored_entries():
    t = _tensor(A, "CSR")
    stored = A != 0
    rmax = np.where(stored.any(1), np.where(stored, A, -np.inf).max(1), -np.inf)
    np.testing.assert_allclose(_dense(F.reduce(t, 1, "max")), rmax)
    np.testing.assert_allclose(_dense(F.reduce(t, 1, "plus")), A.sum(1))
    np.testing.assert_allclose(_dense(F.reduce(t, 0, "times")), np.where(stored, A, 1).prod(0))
    smallest = _dense(F.reduce(t, 1, lambda x, y: minimum(x, y), 5.0))
    np.testing.assert_allclose(smallest, np.where(stored, A, 5.0).min(1))
    np.testing.assert_allclose(_dense(F.reduce(t, 1, "any")), stored.any(1).astype(float))


@pytest.mark.parametrize("name", ["CSR", "CSC", "COO", "BSR", "DIA"])
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_matches_torch(name, axis):
    torch = pytest.importorskip("torch")
    idx = np.array(np.nonzero(A))
    ref = torch.sparse_coo_tensor(idx, A[A != 0], A.shape).coalesce()
    t = _tensor(A, name)
    got = F.softmax(t, axis)
    np.testing.assert_allclose(_dense(got), torch.sparse.softmax(ref, axis).to_dense().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(_dense(got) != 0, A != 0)  # the pattern; the empty row stays empty
    want = torch.sparse.log_softmax(ref, axis).to_dense().numpy()
    np.testing.assert_allclose(_dense(F.log_softmax(t, axis)), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 3])
def test_softmax_row_kernel_matches_reference(dtype, index, threads, monkeypatch):
    """The one-kernel softmax (CSR rows, CSC columns) equals the masked dense reference and the four-kernel
    sparsifier path, on row chunks (threads) and with empty rows, a 1x1 and an empty matrix."""
    from frontend.ops import _elementwise as ew

    for shape, seed in (((40, 30), 3), ((1, 1), 4), ((0, 5), 5)):
        d = _matrix(shape, seed, dtype) if shape[0] else np.zeros(shape, dtype)
        if shape == (1, 1):
            d[0, 0] = 0.5
        for fmt, axis in ((sp.csr_array, 1), (sp.csc_array, 0)):
            m = fmt(d)
            m.indices, m.indptr = m.indices.astype(index), m.indptr.astype(index)
            mask = d != 0
            z = np.where(mask, d, -np.inf)
            with np.errstate(invalid="ignore"):
                e = np.exp(z - z.max(axis=axis, keepdims=True, initial=-np.inf))
                ref = np.where(mask, e / e.sum(axis=axis, keepdims=True), 0)
                lref = np.where(mask, np.log(np.where(mask, ref, 1)), 0)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            got = F.softmax(m, axis, threads=threads)
            assert type(got) is fmt and got.dtype == dtype
            np.testing.assert_allclose(got.toarray(), ref, rtol=tol, atol=tol)
            np.testing.assert_allclose(F.log_softmax(m, axis, threads=threads).toarray(), lref, rtol=tol, atol=tol)
            if threads == 1 and shape == (40, 30):
                monkeypatch.setattr(ew, "_row_softmax", lambda *a, **k: None)
                np.testing.assert_allclose(F.softmax(m, axis).toarray(), ref, rtol=tol, atol=tol)
                monkeypatch.undo()


@pytest.mark.parametrize(("op", "args", "count", "ops"), [
    (F.add, (A, B), 1, ["scf.while", "arith.addf"]),          # CSR + CSR: the row merge kernel
    (F.multiply, (A, B), 1, ["scf.while", "arith.mulf"]),
    (F.add, (A, "COO"), 1, ["linalg.generic", "arith.addf"]),   # CSR + COO: the sparsifier
    (F.apply, (A, lambda v: v * 2), 1, ["sparse_tensor.unary"]),
    (F.select, (A, lambda v: v > 0), 1, ["sparse_tensor.select"]),
    (F.sum, (A, 1), 1, ["scf.for", "arith.addf"]),             # CSR rows: the row-sum kernel
    (F.max, (A, 1), 2, ["sparse_tensor.reduce"]),
    (F.reduce, (A, 1, "max"), 1, ["sparse_tensor.reduce"]),
    (F.softmax, (A, 1), 1, ["vector.load", "math.fma", "scf.for"]),  # one row kernel (inlined vector exp)
    (F.softmax, (A, 0), 4, ["sparse_tensor.binary", "sparse_tensor.reduce"]),  # CSR columns: four
])
def test_print_mlir_elementwise(op, args, count, ops):
    import io

    args = tuple(sp.csr_array(x) if isinstance(x, np.ndarray) else x for x in args)
    if len(args) == 2 and isinstance(args[1], str):
        args = (args[0], sp.coo_array(B))
    buf = io.StringIO()
    F.print_mlir(op, *args, stage="linalg", file=buf)
    text = buf.getvalue()
    assert text.count("// =====") == count
    for name in ops:
        assert name in text, name
    buf = io.StringIO()
    F.print_mlir(op, *args, stage="llvm", file=buf)
    assert any(f"llvm.func @{name}" in buf.getvalue() for name in ("main", "merge", "rowsum"))
    with pytest.raises(TypeError, match="not an elementwise operation"):
        from frontend.ops._elementwise import kernels_of
        kernels_of(print, A)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("chunks", [False, True])
def test_csr_merge_kernel(dtype, chunks, monkeypatch):
    """CSR+CSR / CSC+CSC add, subtract and multiply through the one-pass row merge kernel, one chunk and row
    chunks joined (threads), against scipy; empty rows, a 1x1, empty matrices and mixed index widths."""
    from frontend.ops import _elementwise_fast as ew

    if chunks:
        monkeypatch.setattr(ew, "MERGE_PARALLEL_MIN", 1)
        monkeypatch.setattr(ew, "cpu_count", lambda: 3)
    for (m, n), seed in (((30, 20), 1), ((1, 1), 2), ((0, 4), 3), ((5, 0), 4)):
        a, b = (sp.csr_array((_matrix((m, n), s) * 10).astype(dtype)) if m and n else sp.csr_array((m, n), dtype=dtype)
                for s in (seed, seed + 9))
        b.indices, b.indptr = b.indices.astype(np.int64), b.indptr.astype(np.int64)
        for conv in (sp.csr_array, sp.csc_array):
            x, y = conv(a), conv(b)
            for fn, ref in ((F.add, a + b), (F.subtract, a - b), (F.multiply, a.multiply(b))):
                got = fn(x, y)
                assert type(got) is conv and got.dtype == dtype
                got.check_format(full_check=True)
                np.testing.assert_array_equal(got.toarray(), ref.toarray())
    got = F.add(sp.csr_array(A), sp.csr_array(B))
    assert got.nnz == np.count_nonzero((A != 0) | (B != 0))  # the union's entries, exactly sized


@pytest.mark.parametrize("fmt", ["(i, j) -> (i : dense, j : dense)", "(i, j) -> (j : dense, i : dense)"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (4, 5), (6, 2)])
def test_dense_operand_reductions(fmt, dtype, shape):
    """max/min/prod/softmax of all-dense Tensors (row- and column-ordered): every element is an entry (the
    reduction's function is inlined; the sparsifier cannot legalize sparse_tensor.reduce on dense data)."""
    from frontend import TensorFormat

    d = _matrix(shape, 3, dtype)
    t = Tensor.from_dense(d, TensorFormat.parse(fmt))
    tol = {"rtol": 1e-5, "atol": 1e-6}
    for axis in (None, 0, 1):
        np.testing.assert_allclose(_dense(F.max(t, axis)), d.max(axis=axis), **tol)
        np.testing.assert_allclose(_dense(F.min(t, axis)), d.min(axis=axis), **tol)
        np.testing.assert_allclose(_dense(F.prod(t, axis)), d.prod(axis=axis), **tol)
    for axis in (0, 1):
        e = np.exp(d - d.max(axis=axis, keepdims=True))
        np.testing.assert_allclose(_dense(F.softmax(t, axis)), e / e.sum(axis=axis, keepdims=True), **tol)
