"""Tensor storage: from_buffers and every validation error, the validation cache, accessors,
get_value, copy_/clone and the printed form."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from frontend import LevelFormat as F, LevelProperty as P, NamedFormats as N, Tensor, TensorFormat
from frontend.format import Dimension
from frontend.storage._guard import thaw
from frontend.storage._validate import _VALIDATED, is_validated, validate, validate_now

I, J = Dimension("i"), Dimension("j")

REPR_4x5 = """---- Sparse Tensor<VAL=int64,POS=int64,CRD=int64,DIM=2,LVL=2>
format   : (i, j) -> (i : dense, j : compressed)
device   : cpu
dim      : [4, 5]
lvl      : [4, 5]
nse      : 19
pos[1]   : [0, 4, 9, 14, 19] #5
crd[1]   : [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4] #19
values   : [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19] #19
data     : 344 bytes
sparsity : 5.00%
----"""


def _csr_4x5() -> Tensor:
    return Tensor.from_dense(np.arange(20, dtype=np.int64).reshape(4, 5), N.CSR)


def test_repr_matches_the_issue_layout() -> None:
    assert repr(_csr_4x5()) == REPR_4x5


def test_repr_dense_and_abbreviated() -> None:
    d = Tensor.from_dense(np.eye(3))
    text = repr(d)
    assert text.splitlines()[0] == "---- Dense Tensor<VAL=float64,DIM=2,LVL=2>"
    assert "values   : [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0] #9" in text
    assert "sparsity : 66.67%" in text and "data     : 72 bytes" in text
    big = Tensor.from_dense(np.arange(1, 101).reshape(10, 10), N.COO)
    assert "values   : [1, 2, 3, 4, 5, 6, 7, 8, ..., 93, 94, 95, 96, 97, 98, 99, 100] #100" in repr(big)
    delta = Tensor.from_dense(np.eye(4, dtype=np.float32), N.DELTA(2), index_type=np.int32)
    assert repr(delta).splitlines()[0] == "---- Sparse Tensor<VAL=float32,POS=int32,CRD=uint8,DIM=2,LVL=2>"
    assert "sparsity : n/a (empty)" in repr(Tensor.from_dense(np.zeros((0, 3)), N.CSR))


def test_accessors() -> None:
    t = _csr_4x5().convert(N.BSR((2, 2)), index_type=np.int32)
    assert t.shape == (4, 5) and t.levels == [2, 3, 2, 2] and t.index_type == np.int32
    assert t.nse == len(t.val) == 4 * 5 // 4 * 4 + 4 and t.is_sparse
    assert t.pos(0) is None and t.pos(1).dtype == np.int32 and t.crd(1).dtype == np.int32
    assert [b.dtype for b in t.buffers()] == [np.int32, np.int32, np.int64]
    assert t.dtype == np.int64 and t.ndim == 2


@pytest.mark.parametrize("fmt", [N.CSR, N.COO, N.DCSC, N.BSR((2, 3)), N.DIAI, N.SkewDIAJ, N.DELTA(2),
                                 N.Dense(2)])
def test_get_value(fmt: TensorFormat) -> None:
    a = np.array([[0, 1.5, 0, 0, 2], [0, 0, 0, 0, 0], [3, 0, 0, 0, 4]])
    t = Tensor.from_dense(a, fmt)
    for ij in np.ndindex(*a.shape):
        v = t.get_value(ij)
        assert v == a[ij] if a[ij] else v in (None, 0.0)
    assert Tensor.from_dense(a, N.CSR).get_value((1, 1)) is None
    with pytest.raises(IndexError):
        t.get_value((3, 0))
    with pytest.raises(ValueError, match="needs 2 coordinates"):
        t.get_value((1,))


def test_clone_and_copy() -> None:
    t = _csr_4x5()
    c = t.clone()
    c.val[0] = 100
    assert t.val[0] == 1 and c.get_value((0, 1)) == 100
    val_buffer = t.val
    t.copy_(c)  # same structure: values written in place
    assert t.val is val_buffer and t.get_value((0, 1)) == 100
    sparse = Tensor.from_dense(np.diag([1, 2, 3, 4]).astype(np.int64)[:, :4].repeat(1, 0)[:4, :4], N.COO)
    u = Tensor.from_dense(np.zeros((4, 4), dtype=np.float32), N.CSR, index_type=np.int32)
    u.copy_(sparse)  # new structure: buffers replaced, format/types kept
    assert u.tensor_format == N.CSR and u.dtype == np.float32 and u.pos(1).dtype == np.int32
    np.testing.assert_array_equal(u.to_dense(), np.diag([1, 2, 3, 4]))
    with pytest.raises(ValueError, match="shape"):
        u.copy_(t)


def test_from_buffers_lists_and_dicts() -> None:
    a = Tensor.from_buffers(N.CSR, (2, 3), pos=[None, np.array([0, 1, 2])], crd=[None, np.array([2, 0])],
                            values=np.array([1.0, 2.0]))
    b = Tensor.from_buffers(N.CSR, (2, 3), pos={1: np.array([0, 1, 2], dtype=np.int32)},
                            crd={1: np.array([2, 0], dtype=np.int32)}, values=np.array([1.0, 2.0]))
    assert b.index_type == np.int32 and a.index_type == np.int64
    np.testing.assert_array_equal(a.to_dense(), b.to_dense())
    c = Tensor.from_buffers(N.CSR, (2, 3), pos={1: [0, 1, 2]}, crd={1: [2, 0]}, values=[1.0, 2.0])
    np.testing.assert_array_equal(c.to_dense(), a.to_dense())
    with pytest.raises(ValueError, match="level 5"):
        Tensor.from_buffers(N.CSR, (2, 3), pos={5: np.array([0])}, values=np.zeros(0))


# ----- validation errors ------------------------------------------------------------------------------
def _csr(pos, crd, vals=None, shape=(2, 4)):
    pos, crd = np.asarray(pos), np.asarray(crd)
    vals = np.ones(len(crd)) if vals is None else vals
    return Tensor.from_buffers(N.CSR, shape, pos=[None, pos], crd=[None, crd], values=vals)


@pytest.mark.parametrize("pos, crd, message", [
    ([1, 2, 3], [0, 1, 2], r"level 1 \(j : compressed\): pos must start at 0, got 1"),
    ([0, 2, 1], [0, 1], r"pos must be non-decreasing; pos\[1\] = 2 > pos\[2\] = 1"),
    ([0, 1, 3], [0, 1], r"pos ends at 3 but crd has 2 entries"),
    ([0, 1], [0], r"pos must have 2 \+ 1 = 3 entries, got 2"),
    ([0, 1, 2], [0, 4], r"coordinate 4 at crd\[1\] is out of bounds \[0, 4\)"),
    ([0, 1, 2], [-1, 0], r"coordinate -1 at crd\[0\] is out of bounds"),
    ([0, 2, 2], [3, 1], r"strictly increasing within a parent; crd\[0\] = 3, crd\[1\] = 1"),
    ([0, 2, 2], [1, 1], r"strictly increasing"),
])
def test_csr_value_errors(pos, crd, message) -> None:
    with pytest.raises(ValueError, match=message):
        _csr(pos, crd)


def test_sorted_check_ignores_segment_boundaries() -> None:
    _csr([0, 2, 3], [1, 3, 0])  # row 1 may start below row 0's last coordinate


def test_type_and_layout_errors() -> None:
    with pytest.raises(TypeError, match=r"level 1 \(j : compressed\): pos must be int8, int16, int32 or int64, "
                                        "got float64"):
        _csr(np.array([0.0, 1, 2]), np.array([0, 1]))
    with pytest.raises(TypeError, match="pos must be int8, int16, int32 or int64, got uint16"):
        _csr(np.array([0, 1, 2], dtype=np.uint16), np.array([0, 1], dtype=np.uint16))
    dcsr = dict(pos=[np.array([0, 2], np.int32), np.array([0, 1, 2], np.int32)], values=np.ones(2))
    with pytest.raises(TypeError, match=r"level 1 \(j : compressed\): crd must be int32 \(the coordinates type of "
                                        r"every level\), got int64"):
        Tensor.from_buffers(N.DCSR, (2, 4), crd=[np.array([0, 1], np.int32), np.array([0, 1], np.int64)], **dcsr)
    dcsr["pos"][1] = dcsr["pos"][1].astype(np.int64)
    with pytest.raises(TypeError, match=r"level 1 \(j : compressed\): pos must be int32 \(the index type\), "
                                        "got int64"):
        Tensor.from_buffers(N.DCSR, (2, 4), crd=[np.array([0, 1], np.int16), np.array([0, 1], np.int16)], **dcsr)
    with pytest.raises(ValueError, match="crd buffer is not contiguous"):
        _csr([0, 1, 2], np.array([0, 9, 1, 9])[::2])
    with pytest.raises(ValueError, match=r"crd must have shape \(\*\[\], n\)"):
        _csr([0, 1, 2], np.array([[0, 1]]))
    with pytest.raises(ValueError, match="the levels store 2 entries, the values buffer holds 3"):
        _csr([0, 1, 2], [0, 1], np.ones(3))
    with pytest.raises(TypeError, match="values must be numeric"):
        _csr([0, 1, 2], [0, 1], np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"level 1 \(j : compressed\): missing its crd buffer"):
        Tensor.from_buffers(N.CSR, (2, 4), pos=[None, np.array([0, 0, 0])], crd=[None, None], values=np.ones(0))
    with pytest.raises(ValueError, match=r"level 0 \(i : dense\): this level has no pos buffer"):
        Tensor.from_buffers(N.CSR, (2, 4), pos=[np.array([0]), np.array([0, 0, 0])],
                            crd=[None, np.zeros(0, np.int64)], values=np.ones(0))
    with pytest.raises(ValueError, match="dense values must have the level extents"):
        Tensor.from_buffers(N.Dense(2), (2, 3), values=np.ones((3, 2)))
    with pytest.raises(TypeError, match="index_type must be int8, int16, int32 or int64, got uint8"):
        Tensor.from_buffers(N.Dense(2), (2, 3), values=np.ones((2, 3)), index_type=np.uint8)
    with pytest.raises(ValueError, match="negative extent"):
        Tensor.from_buffers(N.Dense(2), (-1, 3), values=np.ones((0, 3)))


def test_coo_order_and_uniqueness() -> None:
    def coo(rows, cols, fmt=N.COO):
        return Tensor.from_buffers(fmt, (3, 3), pos=[np.array([0, len(rows)]), None],
                                   crd=[np.array(rows), np.array(cols)], values=np.ones(len(rows)))
    coo([0, 0, 2], [0, 2, 1])
    with pytest.raises(ValueError,
                       match=r"level 0 \(i : compressed\(nonunique\)\): coordinates must be non-decreasing"):
        coo([0, 2, 1], [0, 0, 0])
    with pytest.raises(ValueError, match=r"level 1 \(j : singleton\(soa\)\): coordinates must be strictly increasing"):
        coo([0, 0, 1], [2, 1, 0])
    with pytest.raises(ValueError, match="strictly increasing"):
        coo([1, 1], [1, 1])  # a duplicate in a unique format
    with pytest.raises(ValueError, match=r"crd must have one coordinate per parent position \(3\), got 2"):
        Tensor.from_buffers(N.COO, (3, 3), pos=[np.array([0, 3]), None], crd=[np.array([0, 1, 2]), np.array([0, 1])],
                            values=np.ones(3))
    unordered = TensorFormat([I, J], [(I, F.DENSE), (J, (F.COMPRESSED, P.UNORDERED))])
    Tensor.from_buffers(unordered, (1, 3), pos=[None, np.array([0, 2])], crd=[None, np.array([2, 0])],
                        values=np.ones(2))
    with pytest.raises(ValueError, match="coordinate 2 stored twice"):
        Tensor.from_buffers(unordered, (1, 3), pos=[None, np.array([0, 2])], crd=[None, np.array([2, 2])],
                            values=np.ones(2))


def test_delta_structured_loose_errors() -> None:
    packed = np.array([0 | 2 << 2], dtype=np.uint8)  # DELTA(2) gaps 0, 2 packed four to a byte
    t = Tensor.from_buffers(N.DELTA(2), (1, 4), pos=[None, np.array([0, 2])], crd=[None, packed], values=np.ones(2))
    assert t.get_value((0, 3)) == 1.0 and t.get_value((0, 0)) == 1.0 and t.get_value((0, 1)) is None
    with pytest.raises(TypeError, match=r"crd must be uint8, got int64"):
        Tensor.from_buffers(N.DELTA(2), (1, 4), pos=[None, np.array([0, 2])], crd=[None, np.array([0, 2])],
                            values=np.ones(2))
    with pytest.raises(ValueError, match=r"crd must hold 2 gaps packed 4 to a byte .* got 2 bytes"):
        Tensor.from_buffers(N.DELTA(2), (1, 4), pos=[None, np.array([0, 2])], crd=[None, np.array([0, 2], np.uint8)],
                            values=np.ones(2))
    with pytest.raises(ValueError, match=r"gap 9 at crd\[1\] exceeds 7 = 2\*\*3 - 1"):
        Tensor.from_buffers(N.DELTA(3), (1, 19), pos=[None, np.array([0, 2])], crd=[None, np.array([0, 9], np.uint8)],
                            values=np.ones(2))
    with pytest.raises(ValueError, match=r"coordinate 4 at crd\[1\] is out of bounds \[0, 4\)"):
        Tensor.from_buffers(N.DELTA(2), (1, 4), pos=[None, np.array([0, 2])],
                            crd=[None, np.array([1 | 2 << 2], np.uint8)], values=np.ones(2))
    nm = N.NM(2, 4)
    ok = np.array([0, 3], dtype=np.int64)
    Tensor.from_buffers(nm, (1, 4), crd={2: ok}, values=np.ones(2))
    with pytest.raises(ValueError, match=r"structured\[2, 4\]\): coordinate 4 at crd\[1\] is out of bounds \[0, 4\)"):
        Tensor.from_buffers(nm, (1, 4), crd={2: np.array([0, 4])}, values=np.ones(2))
    with pytest.raises(ValueError, match=r"coordinates of group 0 must be strictly increasing, got \[3, 1\]"):
        Tensor.from_buffers(nm, (1, 4), crd={2: np.array([3, 1])}, values=np.ones(2))
    with pytest.raises(ValueError, match=r"crd must have 2 entries \(2 per group of 4\), got 3"):
        Tensor.from_buffers(nm, (1, 4), crd={2: np.array([0, 1, 2])}, values=np.ones(3))
    loose = TensorFormat([I, J], [(I, F.DENSE), (J, F.LOOSE_COMPRESSED)])
    t = Tensor.from_buffers(loose, (2, 3), pos=[None, np.array([0, 1, 3, 4])], crd=[None, np.array([2, 9, 9, 0])],
                            values=np.array([1.0, 0, 0, 2]))
    np.testing.assert_array_equal(t.to_dense(), [[0, 0, 1], [2, 0, 0]])
    np.testing.assert_array_equal(t.convert(N.CSR).convert(loose).to_dense(), t.to_dense())
    with pytest.raises(ValueError, match=r"pos pairs must satisfy 0 <= lo <= hi <= 4"):
        Tensor.from_buffers(loose, (2, 3), pos=[None, np.array([0, 1, 3, 2])], crd=[None, np.array([2, 9, 9, 0])],
                            values=np.ones(4))


def test_batched_validation() -> None:
    t = Tensor.from_dense(np.arange(24.0).reshape(2, 3, 4) % 3, N.BatchedCSR)
    validate(Tensor(t.tensor_format, t.shape, t._pos, t._crd, t.val))
    with pytest.raises(ValueError, match=r"pos must have shape \(\*\[2\], n\)"):
        Tensor.from_buffers(N.BatchedCSR, (2, 3, 4), pos={2: t.pos(2)[0]}, crd={2: t.crd(2)}, values=t.val)
    bad = t.crd(2).copy()
    bad[1, 0] = 7
    with pytest.raises(ValueError, match=r"in batch \(1,\): coordinate 7"):
        Tensor.from_buffers(N.BatchedCSR, (2, 3, 4), pos={2: t.pos(2)}, crd={2: bad}, values=t.val)


def test_validation_is_cached_per_buffer_set() -> None:
    t = _csr([0, 1, 2], [0, 1])
    assert is_validated(t)
    assert t.crd(1).flags.writeable  # the caller's buffers are never frozen
    twin = Tensor(t.tensor_format, t.shape, t._pos, t._crd, t.val)
    assert is_validated(twin)  # same buffers, another tensor: remembered too
    t.crd(1)[0] = 99  # NumPy has no version counter: the memo cannot see this write ...
    assert is_validated(t)
    with pytest.raises(ValueError, match="out of bounds"):
        validate_now(t)  # ... so kernels that are not bounds-safe check the contents on every call
    assert thaw(t.crd(1)) is t.crd(1)  # a no-op kept for one release
    t.crd(1)[0] = 0
    validate_now(twin)
    assert is_validated(t) and t.crd(1).flags.writeable
    key = twin.buffer_key()
    assert key in _VALIDATED
    del t, twin
    gc.collect()
    assert key not in _VALIDATED  # forgotten when its buffers die


def test_torch_buffers() -> None:
    torch = pytest.importorskip("torch")
    t = Tensor.from_buffers(N.CSR, (2, 3), pos=[None, torch.tensor([0, 1, 2], dtype=torch.int32)],
                            crd=[None, torch.tensor([2, 0], dtype=torch.int32)], values=torch.tensor([1.0, 2.0]),
                            package="torch")
    assert t.index_type == np.int32 and t.get_value((0, 2)) == 1.0
    assert repr(t).splitlines()[0] == "---- Sparse Tensor<VAL=float32,POS=int32,CRD=int32,DIM=2,LVL=2>"
    np.testing.assert_array_equal(t.to_dense(), [[0, 0, 1], [2, 0, 0]])
    u = t.convert(N.COO)
    assert u.dtype == np.float32 and u.index_type == np.int32
    assert u.package == "torch" and u.device == "cpu" and isinstance(u.val, np.ndarray)  # CPU: NumPy views
    c = t.clone()
    assert isinstance(c.val, torch.Tensor) and c.val.data_ptr() != t.val.data_ptr()
    values = t.val
    t.copy_(Tensor.from_dense(np.array([[0, 0, 5.0], [7.0, 0, 0]])))
    assert t.val is values and values.tolist() == [5.0, 7.0]
    with pytest.raises(ValueError, match="not contiguous"):
        Tensor.from_buffers(N.CSR, (2, 3), pos=[None, torch.tensor([0, 1, 2])],
                            crd=[None, torch.tensor([2, 9, 0, 9])[::2]], values=torch.tensor([1.0, 2.0]))
