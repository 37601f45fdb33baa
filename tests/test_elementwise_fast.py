"""The lean paths of add/subtract/multiply and row sums (frontend/ops/_elementwise_fast.py): two CSR or two
CSC operands (SciPy objects seen before, or Tensors) of one shape and value type go straight to the merge /
row-sum kernels. Checked against scipy and against the general path, with the general path switched off so
a wrong dispatch fails."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as NF, Tensor
from frontend.ops import _elementwise as ew

SHAPES = [(6, 9), (9, 6), (1, 1), (0, 0), (0, 4), (5, 0), (3, 7)]
DTYPES = [np.float32, np.float64, np.int32, np.int64]
SCIPY = [sp.csr_array, sp.csr_matrix, sp.csc_array, sp.csc_matrix]
OPS = [(F.add, "add", lambda a, b: a + b), (F.subtract, "sub", lambda a, b: a - b),
       (F.multiply, "mul", lambda a, b: a.multiply(b))]


def _matrix(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    d = np.round(rng.standard_normal(shape) * 10) * (rng.random(shape) < 0.4)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    if len(shape) == 2 and shape[1] > 2:
        d[:, 2] = 0  # an empty column
    return d.astype(dtype)


def _no_general_path(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")
    monkeypatch.setattr(ew, "_binary", refuse)
    monkeypatch.setattr(ew, "_numpy_reduction", refuse)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("conv", SCIPY, ids=lambda c: c.__name__)
def test_scipy_operands(conv, dtype, monkeypatch):
    """The fast path (from the first call: it makes each object's view) gives the general path's result: same
    values, type (scipy csr/csc arrays), dtype and pattern."""
    for k, shape in enumerate(SHAPES):
        da, db = _matrix(shape, k, dtype), _matrix(shape, k + 50, dtype)
        x, y = conv(da), conv(db)
        general = {name: ew._binary(name, name, x, y, None) for _, name, _ in OPS}
        with monkeypatch.context() as m:
            _no_general_path(m)
            for fn, name, ref in OPS:
                got = fn(x, y)
                want = general[name]
                assert type(got) is type(want) and got.dtype == want.dtype == dtype
                got.check_format(full_check=True)
                assert got.nnz == want.nnz
                np.testing.assert_array_equal(got.toarray(), ref(sp.csr_array(da), sp.csr_array(db)).toarray())
                np.testing.assert_array_equal(got.toarray(), want.toarray())
                w = want.toarray()  # the result works in scipy's own operations
                np.testing.assert_array_equal((got.T @ got).toarray(), w.T @ w)
                np.testing.assert_array_equal((got + got).toarray(), 2 * w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("fmt", ["CSR", "CSC"])
def test_tensor_operands(fmt, dtype, monkeypatch):
    """Tensors in CSR/CSC go the fast way on the first call; Tensor results in the operands' format."""
    f = NF.CSR if fmt == "CSR" else NF.CSC
    for k, shape in enumerate(SHAPES):
        da, db = _matrix(shape, k, dtype), _matrix(shape, k + 7, dtype)
        x, y = Tensor.from_dense(da, f), Tensor.from_dense(db, f)
        general = {name: ew._binary(name, name, x, y, None) for _, name, _ in OPS}
        with monkeypatch.context() as m:
            _no_general_path(m)
            for fn, name, _ref in OPS:
                got = fn(x, y)
                assert isinstance(got, Tensor) and got.tensor_format == f and got.dtype == dtype
                np.testing.assert_array_equal(got.to_dense(), general[name].to_dense())
                dense = da * db if name == "mul" else da + db if name == "add" else da - db
                np.testing.assert_array_equal(got.to_dense(), dense)
            got = F.sum(x, 1 if fmt == "CSR" else 0)
            np.testing.assert_array_equal(got.to_dense(), da.sum(axis=1 if fmt == "CSR" else 0).astype(dtype))


def test_values_changed_in_place(monkeypatch):
    """Values written in place between calls are read again (nothing is cached but the structure)."""
    x, y = sp.csr_array(_matrix((6, 9), 1, np.float64)), sp.csr_array(_matrix((6, 9), 2, np.float64))
    F.add(x, y), F.sum(x, 1)
    t = Tensor.from_dense(_matrix((6, 9), 3, np.float64), NF.CSR)
    with monkeypatch.context() as m:
        _no_general_path(m)
        for _ in range(2):
            x.data *= 2
            y.data[::2] = -3.5
            np.testing.assert_array_equal(F.add(x, y).toarray(), (x + y).toarray())
            np.testing.assert_array_equal(F.multiply(x, y).toarray(), x.multiply(y).toarray())
            np.testing.assert_array_equal(F.sum(x, 1), x.sum(axis=1))
            t.val[:] = t.val * 3 + 1
            np.testing.assert_array_equal(F.add(t, t).to_dense(), 2 * t.to_dense())


def test_new_index_buffers_checked():
    """An index buffer replaced by one with an out-of-range coordinate is validated again: ValueError."""
    x = sp.csr_array(_matrix((5, 4), 4, np.float64))
    y = sp.csr_array(_matrix((5, 4), 5, np.float64))
    F.add(x, y)
    bad = x.indices.copy()
    bad[0] = 99
    x.indices = bad
    with pytest.raises(ValueError, match="out of bounds"):
        F.add(x, y)
    with pytest.raises(ValueError, match="out of bounds"):
        F.sum(x, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("conv", SCIPY, ids=lambda c: c.__name__)
def test_rowsum(conv, dtype, monkeypatch):
    """``sum(A, 1)`` of CSR and ``sum(A, 0)`` of CSC through the row-sum kernel equal the general path and
    scipy (empty rows give 0)."""
    axes = (1, -1) if conv in (sp.csr_array, sp.csr_matrix) else (0, -2)
    for k, shape in enumerate(SHAPES):
        d = _matrix(shape, k, dtype)
        x = conv(d)
        general = ew._numpy_reduction("sum", x, axes[0], False, None)
        with monkeypatch.context() as m:
            _no_general_path(m)
            for axis in axes:
                got = F.sum(x, axis)
                assert type(got) is type(general) and got.dtype == general.dtype == d.sum(axis=axis).dtype
                np.testing.assert_array_equal(got, general)
                np.testing.assert_array_equal(got, d.sum(axis=axis))  # NumPy's dtype: int32 sums in int64


def test_rowsum_chunks(monkeypatch):
    """Row sums in row chunks on several threads equal one chunk; short rows go to chunks from the lower
    threshold, long ones from the higher."""
    from frontend.ops import _elementwise_fast as fast

    x = sp.csr_array(_matrix((40, 30), 9, np.float64))
    one = F.sum(x, 1)
    seen = []
    real = fast.balanced_bounds  # called for chunked runs only
    monkeypatch.setattr(fast, "balanced_bounds", lambda *a: seen.append(a[1]) or real(*a))
    monkeypatch.setattr(fast, "cpu_count", lambda: 2)
    monkeypatch.setattr(fast, "ROWSUM_PARALLEL_MIN", ((16, 1), (math.inf, 1 << 24)))
    np.testing.assert_array_equal(F.sum(sp.csr_array(x.toarray()), 1), one)  # short rows: chunks
    assert len(seen) == 1
    monkeypatch.setattr(fast, "ROWSUM_PARALLEL_MIN", ((0.5, 1), (math.inf, 1 << 24)))  # now "long" rows
    np.testing.assert_array_equal(F.sum(sp.csr_array(x.toarray()), 1), one)
    assert len(seen) == 1
    monkeypatch.setattr(fast, "ROWSUM_PARALLEL_MIN", ((math.inf, 1),))
    monkeypatch.setattr(fast, "cpu_count", lambda: 3)
    np.testing.assert_array_equal(F.sum(x, 1), one)


def test_other_operands_take_the_general_path():
    """Mixed formats, shapes, dtypes and out_format= go the general way (same answers as scipy)."""
    a, b = _matrix((6, 9), 1, np.float64), _matrix((6, 9), 2, np.float64)
    x = sp.csr_array(a)
    F.add(x, x)
    np.testing.assert_allclose(F.add(x, sp.csc_array(b)).toarray(), a + b)
    np.testing.assert_allclose(F.add(x, sp.csr_array(b.astype(np.float32))).toarray(), a + b.astype(np.float32))
    got = F.multiply(x, sp.csr_array(b), out_format="COO")
    np.testing.assert_allclose(got.toarray(), a * b)
    with pytest.raises(ValueError, match=r"\(6, 9\).*\(9, 6\)"):
        F.add(x, sp.csr_array(b.T))
    np.testing.assert_allclose(F.sum(x, 0), a.sum(axis=0))
    np.testing.assert_allclose(F.sum(sp.csr_array(a.astype(np.complex128)), 1), a.sum(axis=1))


@pytest.mark.parametrize("conv", [sp.csr_array, sp.csc_array], ids=lambda c: c.__name__)
def test_rows_that_do_not_overlap(conv):
    """Rows whose column ranges do not overlap (A before B, B before A, touching, one empty, interleaved) skip
    the merge steps; union and intersection still equal scipy's."""
    a = np.zeros((7, 12))
    b = np.zeros((7, 12))
    a[0, [0, 2]], b[0, [5, 9]] = (1, 2), (3, 4)      # A before B
    a[1, [8, 11]], b[1, [0, 3]] = (5, 6), (7, 8)     # B before A
    a[2, [1, 4]], b[2, [4, 6]] = (1, 2), (3, 4)      # touching: one shared coordinate
    a[3, [2, 3]] = (9, 9)                            # B's row empty
    b[4, [0, 11]] = (1, 1)                           # A's row empty
    a[5, [0, 5, 10]], b[5, [3, 7]] = (1, 2, 3), (4, 5)  # interleaved
    a[6, [6]], b[6, [6]] = 2, 3                      # one entry each, the same
    for x, y in ((a, b), (b, a)):
        sx, sy = conv(x), conv(y)
        for fn, _, ref in OPS:
            got = fn(sx, sy)
            got.check_format(full_check=True)
            np.testing.assert_array_equal(got.toarray(), ref(sp.csr_array(x), sp.csr_array(y)).toarray())
            np.testing.assert_array_equal(F.multiply(Tensor.from_dense(x, NF.CSR), Tensor.from_dense(y, NF.CSR)
                                                     ).to_dense(), x * y)



def _intersection_rows(n, seed):
    """A (rows, n) pair whose row pairs take every method of the intersection kernel: disjoint ranges, one
    row empty, a long row against a short one both ways (binary search, hits before/inside/after), rows
    starting with runs (run-skipping merge, runs ending at the row's end), random rows (branch-free merge),
    equal rows, and a last row that reaches the end of the buffers."""
    rng = np.random.default_rng(seed)
    rows = []
    def rnd(k, lo=0, hi=n):
        return np.sort(rng.choice(np.arange(lo, hi), size=min(k, hi - lo), replace=False))
    long_row = rnd(n // 2)
    rows.append((long_row, np.concatenate((long_row[[0, 5, -1]], [n - 1]))))    # search in A, hits at the ends
    rows.append((rnd(2), long_row))                                            # search in B
    rows.append((np.arange(3, 9), np.concatenate((np.arange(5, 8), np.arange(20, 24)))))  # runs
    rows.append((np.r_[0:4, 10:14, 30:34], np.r_[2:6, 12:14, 31:40]))          # runs, several hits per run
    rows.append((np.r_[n - 8:n], np.r_[n - 5:n]))                              # runs to the last column
    rows.append((rnd(12), rnd(12)))                                            # branch-free merge
    rows.append((rnd(40), rnd(30)))
    rows.append((np.arange(0, n, 3), np.arange(0, n, 3)))                      # every coordinate shared
    rows.append((np.arange(0, 5), np.arange(10, 15)))                          # disjoint
    rows.append((np.array([], int), rnd(5)))                                   # A empty
    rows.append((rnd(5), np.array([], int)))                                   # B empty
    rows.append((rnd(n // 3), rnd(4)))                                         # last row: search
    a, b = np.zeros((len(rows), n)), np.zeros((len(rows), n))
    for r, (ca, cb) in enumerate(rows):
        a[r, ca] = rng.integers(1, 9, len(ca))
        b[r, cb] = rng.integers(1, 9, len(cb))
    return a, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("conv", [sp.csr_array, sp.csc_array], ids=lambda c: c.__name__)
def test_merge_methods(conv, dtype, monkeypatch):
    """Every per-row method of the intersection kernel (search both ways, run-skipping and branch-free
    merges, skipped rows) and of the union kernel (run-copying and branch-free merges, rows apart), one chunk
    and row chunks, 32/64-bit indices, equal scipy's ``multiply``/``+``/``-``; A and B swapped too, and the
    last row/column reaching the buffers' ends."""
    from frontend.ops import _elementwise_fast as fast

    _no_general_path(monkeypatch)
    a, b = _intersection_rows(200, 3)
    a, b = a.astype(dtype), b.astype(dtype)
    for chunks in (False, True):
        if chunks:
            monkeypatch.setattr(fast, "INTERSECT_PARALLEL_MIN", 1)
            monkeypatch.setattr(fast, "MERGE_PARALLEL_MIN", 1)
            monkeypatch.setattr(fast, "cpu_count", lambda: 3)
        for x, y in ((a, b), (b, a)):
            for wide in (False, True):
                # CSC: the same row pairs as columns
                sx, sy = (conv(x.T), conv(y.T)) if conv is sp.csc_array else (conv(x), conv(y))
                if wide:
                    sy.indices, sy.indptr = sy.indices.astype(np.int64), sy.indptr.astype(np.int64)
                for fn, _, ref_fn in OPS:
                    got = fn(sx, sy)
                    assert type(got) is conv and got.dtype == dtype
                    got.check_format(full_check=True)
                    ref = ref_fn(sx, sy)
                    np.testing.assert_array_equal(got.toarray(), ref.toarray())
                    if fn is F.multiply:
                        assert got.nnz == ref.nnz
                    else:  # the union keeps every coordinate of either operand
                        assert got.nnz == np.count_nonzero((sx != 0).toarray() | (sy != 0).toarray())
    for shape in ((1, 1), (0, 0), (0, 4), (5, 0), (1, 7), (7, 1)):  # small and empty ones
        x, y = _matrix(shape, 1, dtype), _matrix(shape, 2, dtype)
        for fn, _, ref_fn in OPS:
            np.testing.assert_array_equal(fn(conv(x), conv(y)).toarray(), ref_fn(conv(x), conv(y)).toarray())


@pytest.mark.parametrize("chunks", [2, 3, 7, 40])
def test_union_chunks_start_exactly(chunks, monkeypatch):
    """The union's row chunks write at the exact offsets counted by ``@union_count`` (no join copy): rows
    whose entries sit in a few long rows among empty ones (empty chunks and pieces), rows that share every
    coordinate, rows apart, and more chunks than rows; equal scipy's ``+``/``-`` and leave no gap."""
    from frontend.ops import _elementwise_fast as fast

    _no_general_path(monkeypatch)
    monkeypatch.setattr(fast, "MERGE_PARALLEL_MIN", 1)
    monkeypatch.setattr(fast, "cpu_count", lambda: chunks)
    rng = np.random.default_rng(chunks)
    dense_a = np.zeros((30, 50))
    dense_a[[2, 3, 17], :] = rng.standard_normal((3, 50))  # three long rows, the rest empty
    dense_a[20:25, 10:15] = 1.0
    dense_b = np.zeros((30, 50))
    dense_b[3, ::2] = 2.0  # half of a long row of A: shared coordinates
    dense_b[17, :] = -dense_a[17, :]  # the same coordinates, values cancel: still stored
    dense_b[20:25, 30:40] = 3.0  # apart from A's entries in those rows
    dense_b[29, 49] = 4.0  # the last row and column
    for x, y in ((dense_a, dense_b), (dense_b, dense_a), (dense_a, np.zeros((30, 50)))):
        sx, sy = sp.csr_array(x), sp.csr_array(y)
        for fn, ref in ((F.add, sx + sy), (F.subtract, sx - sy)):
            got = fn(sx, sy)
            got.check_format(full_check=True)
            np.testing.assert_array_equal(got.toarray(), ref.toarray())
            assert got.nnz == np.count_nonzero((x != 0) | (y != 0))
            assert got.indptr[-1] == got.nnz == got.indices.size


def _masked_softmax(d, axis, logarithm):
    """Softmax over the nonzeros of dense ``d`` along ``axis`` in float64 (absent entries: minus infinity)."""
    mask = d != 0
    z = np.where(mask, d.astype(np.float64), -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        top = z.max(axis=axis, keepdims=True, initial=-np.inf)
        e = np.exp(z - top)
        total = e.sum(axis=axis, keepdims=True)
        ref = z - top - np.log(total) if logarithm else e / total
    return np.where(mask, ref, 0)


def _no_general_softmax(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the general path ran")
    monkeypatch.setattr(ew, "_softmax", refuse)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("conv", SCIPY, ids=lambda c: c.__name__)
def test_softmax_scipy_operands(conv, dtype, monkeypatch):
    """softmax/log_softmax of CSR along rows and CSC along columns go the lean way from the first call and
    equal the general path and the dense reference (empty rows stay empty, 1x1, empty, non-square)."""
    axes = (1, -1) if conv in (sp.csr_array, sp.csr_matrix) else (0, -2)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for k, shape in enumerate(SHAPES):
        d = _matrix(shape, k, dtype)
        for logarithm, fn in ((False, F.softmax), (True, F.log_softmax)):
            x = conv(d)
            general = ew._softmax(x, axes[0], logarithm, None)
            with monkeypatch.context() as m:
                _no_general_softmax(m)
                for axis in axes:
                    got = fn(x, axis)
                    assert type(got) is type(general) and got.dtype == general.dtype == dtype
                    got.check_format(full_check=True)
                    assert got.nnz == x.nnz
                    np.testing.assert_allclose(got.toarray(), general.toarray(), rtol=tol, atol=tol)
                    np.testing.assert_allclose(got.toarray(), _masked_softmax(d, axis, logarithm), rtol=tol,
                                               atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["CSR", "CSC"])
def test_softmax_tensor_operands(fmt, dtype, monkeypatch):
    """Tensors in CSR (rows) / CSC (columns) go the lean way; Tensor results in the operand's format."""
    f, axis = (NF.CSR, 1) if fmt == "CSR" else (NF.CSC, 0)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for k, shape in enumerate(SHAPES):
        d = _matrix(shape, k, dtype)
        x = Tensor.from_dense(d, f)
        with monkeypatch.context() as m:
            _no_general_softmax(m)
            for logarithm, fn in ((False, F.softmax), (True, F.log_softmax)):
                got = fn(x, axis)
                assert isinstance(got, Tensor) and got.tensor_format == f and got.dtype == dtype
                np.testing.assert_allclose(got.to_dense(), _masked_softmax(d, axis, logarithm), rtol=tol, atol=tol)


def _long_rows(dtype, seed):
    """A CSR matrix whose rows hold 0..70 entries (around the vector widths 8/16/32), one row per length."""
    rng = np.random.default_rng(seed)
    lengths = np.arange(71)
    d = np.zeros((len(lengths), 80), dtype)
    for r, n in enumerate(lengths):
        cols = rng.choice(80, n, replace=False)
        d[r, cols] = np.round(rng.standard_normal(n) * 8) + 0.5 if np.dtype(dtype).kind == "f" else \
            rng.integers(1, 50, n)
    return d


@pytest.mark.parametrize("dtype", DTYPES)
def test_rowsum_vector_rows(dtype, monkeypatch):
    """Rows of every length from 0 to 70 (vector steps of 16/32 plus a scalar rest) sum exactly as numpy, in
    one chunk and in row chunks, for scipy CSR/CSC and Tensors, with the general path off."""
    from frontend.ops import _elementwise_fast as fast

    d = _long_rows(dtype, 3)
    want = d.sum(axis=1).astype(dtype)
    with monkeypatch.context() as m:
        _no_general_path(m)
        for chunks in (False, True):
            if chunks:
                m.setattr(fast, "ROWSUM_PARALLEL_MIN", ((math.inf, 1),))
                m.setattr(fast, "cpu_count", lambda: 3)
            np.testing.assert_array_equal(F.sum(sp.csr_array(d), 1), want)
            np.testing.assert_array_equal(F.sum(sp.csc_array(d.T), 0), want)
            np.testing.assert_array_equal(F.sum(Tensor.from_dense(d, NF.CSR), 1).to_dense(), want)



def _guarded(values):
    """``values`` copied to the end of a readable page followed by an unreadable one (Linux ``mprotect``):
    a read past the last value faults."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    size = values.nbytes
    pages = -(-size // page) + 1
    buf = mmap.mmap(-1, (pages + 1) * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(ctypes.c_void_p(base + pages * page), page, 0) == 0  # PROT_NONE
    out = np.frombuffer(buf, values.dtype, values.size, pages * page - size)
    out[:] = values
    return out, buf


@pytest.mark.parametrize("dtype", DTYPES)
def test_rowsum_reads_no_value_past_the_rows(dtype, monkeypatch):
    """The masked rest of a row reads no value past the row's end: the values end right before an unreadable
    page and the last rows are short (1-5 entries), also a matrix whose only entries are one short row."""
    _no_general_path(monkeypatch)
    for lengths in ([40, 0, 3, 17, 5, 1], [3], [0, 2]):
        pos = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
        vals = (np.arange(pos[-1]) % 7 + 1).astype(dtype)
        guarded, keep = _guarded(vals)
        crd = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
        x = sp.csr_array((guarded, crd, pos), shape=(len(lengths), 64), copy=False)
        assert x.data.ctypes.data == guarded.ctypes.data
        want = np.array([vals[a:b].sum() for a, b in zip(pos[:-1], pos[1:])], dtype)
        np.testing.assert_array_equal(F.sum(x, 1), want)
        del x, guarded


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_vector_rows(dtype, monkeypatch):
    """Softmax over rows of every length from 0 to 70 (vector steps of 8/16 plus a scalar rest, the inlined
    exp on both), far-apart values (exp underflows to 0) and -inf entries, one chunk and row chunks."""
    from frontend.ops import _elementwise_fast as fast

    d = _long_rows(dtype, 4)
    d[40, np.flatnonzero(d[40])[:3]] = (-300, -90, -1e4)  # exp(x - max) far below the normal range
    d[50, np.flatnonzero(d[50])[0]] = -np.inf              # an entry at minus infinity gives 0
    tol = 2e-6 if dtype == np.float32 else 1e-13
    with monkeypatch.context() as m:
        _no_general_softmax(m)
        for chunks in (False, True):
            if chunks:
                m.setattr(fast, "ROW_PARALLEL_MIN", 1)
                m.setattr(fast, "cpu_count", lambda: 3)
            for logarithm, fn in ((False, F.softmax), (True, F.log_softmax)):
                want = _masked_softmax(d, 1, logarithm)
                got = fn(sp.csr_array(d), 1).toarray()
                if logarithm:  # the -inf entry: log-softmax -inf in both
                    fin = np.isfinite(want)
                    assert np.array_equal(np.isneginf(got), np.isneginf(want)) and np.isneginf(got).sum() == 1
                    np.testing.assert_allclose(got[fin], want[fin], rtol=tol, atol=tol)
                else:
                    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
                np.testing.assert_allclose(fn(sp.csc_array(d.T), 0).toarray().T, got, rtol=tol, atol=tol)


def test_prepared_calls_follow_their_operands(monkeypatch):
    """The prepared call kept on an operand is reused only with the same buffers: values written in place
    and new value/index buffers are read, another second operand gives its own answer."""
    x, y, z = (sp.csr_array(_matrix((6, 9), s, np.float64)) for s in (11, 12, 13))
    with monkeypatch.context() as m:
        _no_general_path(m)
        _no_general_softmax(m)
        for _ in range(3):
            np.testing.assert_array_equal(F.add(x, y).toarray(), (x + y).toarray())
            np.testing.assert_array_equal(F.add(x, z).toarray(), (x + z).toarray())
            np.testing.assert_array_equal(F.multiply(x, z).toarray(), x.multiply(z).toarray())
            np.testing.assert_array_equal(F.sum(x, 1), x.sum(axis=1))
            np.testing.assert_allclose(F.softmax(x, 1).toarray(), _masked_softmax(x.toarray(), 1, False),
                                       rtol=1e-13, atol=1e-13)
            x.data *= -1.5
            x.data = x.data.copy() + 1  # a new value buffer (nonzero: same pattern)
            z.data[:] = 2.0


def test_repeated_calls_on_one_operand(monkeypatch):
    """Repeated row sums / softmaxes of one operand (the prepared call run again) along both axis spellings,
    for SciPy objects and Tensors, stay equal to scipy and record their kernel for print_mlir."""
    from frontend.ops._elementwise import kernels_of

    d = _matrix((7, 5), 21, np.float64)
    x, t = sp.csr_array(d), Tensor.from_dense(d, NF.CSR)
    want = _masked_softmax(d, 1, False)
    with monkeypatch.context() as m:
        _no_general_path(m)
        _no_general_softmax(m)
        for _ in range(3):
            for axis in (1, -1):
                np.testing.assert_array_equal(F.sum(x, axis), d.sum(axis=1))
                np.testing.assert_array_equal(F.sum(t, axis).to_dense(), d.sum(axis=1))
                np.testing.assert_allclose(F.softmax(x, axis).toarray(), want, rtol=1e-13, atol=1e-13)
                np.testing.assert_allclose(F.softmax(t, axis).to_dense(), want, rtol=1e-13, atol=1e-13)
                np.testing.assert_allclose(F.log_softmax(x, axis).toarray(), _masked_softmax(d, 1, True),
                                           rtol=1e-13, atol=1e-13)
    assert len(kernels_of(F.sum, x, 1)) == 1 and len(kernels_of(F.softmax, x, 1)) == 1
    from frontend.ops import _elementwise_kernels as ek

    with ek.recorded_kernels() as outer:  # nested blocks: each records its own calls, none stays open after
        F.sum(x, 1)
        with ek.recorded_kernels() as inner:
            F.sum(x, 1)
        F.sum(x, 1)
    assert len(outer) == 2 and len(inner) == 1 and ek._open_recordings == 0


@pytest.mark.parametrize("chunks", [2, 3, 7, 40])
def test_intersection_chunks_join(chunks, monkeypatch):
    """The intersection's row chunks write from ``min(a_pos, b_pos)`` of their first row into ``min(nnz)``
    slots: equal patterns need no move (each chunk starts where the one before ended), a subset pattern, one
    with rows lost against both operands and disjoint rows move down; all equal scipy's ``multiply``."""
    from frontend.ops import _elementwise_fast as fast

    _no_general_path(monkeypatch)
    monkeypatch.setattr(fast, "INTERSECT_PARALLEL_MIN", 1)
    monkeypatch.setattr(fast, "cpu_count", lambda: chunks)
    moves = []
    real = fast._move_down
    monkeypatch.setattr(fast, "_move_down", lambda *a: moves.append(a[1:]) or real(*a))
    rng = np.random.default_rng(chunks)
    a = rng.standard_normal((37, 23)) * (rng.random((37, 23)) < 0.3)
    a[[4, 5, 30]] = 0  # empty rows
    subset = a * (rng.random(a.shape) < 0.5)
    other = rng.standard_normal(a.shape) * (rng.random(a.shape) < 0.3)
    disjoint = np.where(a == 0, 1.0, 0.0)
    for b, moved in ((2 * a, False), (subset, None), (other, None), (disjoint, None)):
        moves.clear()
        for x, y in ((a, b), (b, a)):
            got = F.multiply(sp.csr_array(x), sp.csr_array(y))
            got.check_format(full_check=True)
            ref = sp.csr_array(x).multiply(sp.csr_array(y))
            np.testing.assert_array_equal(got.toarray(), ref.toarray())
            assert got.nnz == np.count_nonzero(x * y)
        if moved is False:
            assert not moves  # equal patterns: every chunk already in place
