"""Zero-copy interop: every (package, format) view shares memory, round-trips, and bad input is refused."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from frontend import NamedFormats
from frontend.interop._layouts import compressed_format, coo_format, dense_format
from frontend.storage._buffers import data_pointer
from frontend.tensor import Tensor

SHAPES = [(5, 7), (1, 1), (0, 0), (6, 4), (4, 6)]
DTYPES = [np.float32, np.float64, np.complex128]


def _matrix(shape, dtype, seed=0, empty_row=True):
    """A random matrix with some zero rows (row 1 empty when there is one)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * (rng.random(shape) < 0.4)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * a
    if empty_row and shape[0] > 1:
        a[1] = 0
    return a.astype(dtype)


def _same(a, b):
    return data_pointer(a) == data_pointer(b)


# ----- NumPy -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", DTYPES + [np.int64])
def test_numpy_views(order, dtype):
    a = np.asarray(_matrix((5, 7), dtype), order=order)
    t = Tensor.from_package(a)
    assert t.tensor_format == (NamedFormats.Dense(2) if order == "C" else dense_format((1, 0)))
    assert np.shares_memory(t.val, a) and t.val.flags.c_contiguous
    assert t.package == "numpy" and t.device == "cpu" and t.shape == (5, 7)
    a[2, 3] = 42
    assert t.val[(2, 3) if order == "C" else (3, 2)] == 42
    assert t.to_package() is a
    t._source = None
    back = t.to_package()
    assert np.shares_memory(back, a) and np.array_equal(back, a)


def test_numpy_nd_permuted_scalar_and_empty():
    x = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    t = Tensor.from_package(x)
    assert t.tensor_format == dense_format((1, 2, 0)) and np.shares_memory(t.val, x)
    f = np.asfortranarray(np.ones((2, 3, 4)))
    assert Tensor.from_package(f).tensor_format == dense_format((2, 1, 0))
    s = Tensor.from_package(np.array(3.5))
    assert s.tensor_format == NamedFormats.Scalar and float(s.val) == 3.5
    e = Tensor.from_package(np.zeros((0, 3)))
    assert e.shape == (0, 3) and e.nse == 0
    v = Tensor.from_package(np.arange(4.0))
    assert v.tensor_format == NamedFormats.DenseVector


def test_numpy_copies_non_views():
    x = np.arange(24.0).reshape(4, 6)[:, ::2]
    t = Tensor.from_package(x)  # a slice is no permutation of a contiguous block: a C-ordered copy
    assert t.tensor_format == dense_format((0, 1)) and not np.shares_memory(t.val, x)
    assert np.array_equal(t.to_package(), x)
    r = Tensor.from_package(np.arange(5.0)[::-1])
    assert np.array_equal(r.to_dense(), [4.0, 3, 2, 1, 0])
    with pytest.raises(TypeError, match="cannot view"):
        Tensor.from_package([1, 2, 3])


# ----- SciPy -----------------------------------------------------------------------------------------
SCIPY_FORMATS = {
    "csr": (lambda s: NamedFormats.CSR, "indptr", "indices"),
    "csc": (lambda s: NamedFormats.CSC, "indptr", "indices"),
    "bsr": (lambda s: NamedFormats.BSR(s.blocksize), "indptr", "indices"),
    "coo": (lambda s: NamedFormats.COO, None, "row"),
    "dia": (lambda s: NamedFormats.DIAJ, None, "offsets"),
}


def _scipy(a, fmt, index_dtype, matrix):
    base = sp.csr_matrix(a) if matrix else sp.csr_array(a)
    s = base.asformat(fmt) if fmt != "bsr" else base.tobsr(blocksize=(2, 1) if a.shape[0] % 2 == 0 else (1, 1))
    if fmt in ("coo", "bsr"):
        s.sum_duplicates()  # scipy's tobsr leaves indices unsorted
    for name in ("indptr", "indices", "offsets"):
        if hasattr(s, name):
            setattr(s, name, getattr(s, name).astype(index_dtype))
    if fmt == "coo":
        s.coords = tuple(c.astype(index_dtype) for c in s.coords)
    return s


@pytest.mark.parametrize("fmt", list(SCIPY_FORMATS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scipy_views(fmt, shape, index_dtype):
    a = _matrix(shape, np.float64)
    s = _scipy(a, fmt, index_dtype, matrix=shape[0] % 2 == 1)
    t = Tensor.from_package(s)
    want_fmt, pos_name, crd_name = SCIPY_FORMATS[fmt]
    assert t.tensor_format == want_fmt(s)
    assert t.index_type == np.dtype(index_dtype) and t.package == "scipy" and t.shape == shape
    k = 0 if fmt in ("coo", "dia") else 1
    if pos_name:
        assert _same(t.pos(k), getattr(s, pos_name))
    assert t.crd(k).dtype == np.dtype(index_dtype) and _same(t.crd(k), getattr(s, crd_name))
    if s.data.size:
        assert _same(t.val, s.data)
        s.data.reshape(-1)[0] = 123.0
        assert t.val[0] == 123.0
    assert t.to_package() is s
    t._source = None  # as if converted: build scipy's own object from the buffers
    back = t.to_package("scipy")
    assert back.format == fmt and np.array_equal(back.toarray(), s.toarray())
    if s.data.size:
        assert np.shares_memory(back.data, s.data)
    if fmt != "dia":
        th = t.to_package("torch")
        assert np.array_equal(th.to_dense().numpy(), s.toarray())


@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_value_dtypes(dtype):
    a = _matrix((6, 5), dtype, seed=3)
    for fmt in ("csr", "coo", "dia"):
        s = sp.csr_array(a).asformat(fmt)
        t = Tensor.from_package(s)
        assert t.dtype == np.dtype(dtype)
        t._source = None
        assert np.array_equal(t.to_package().toarray(), a)


def test_scipy_coo_nd():
    a = np.zeros((3, 4, 5))
    a[0, 1, 2], a[2, 3, 4], a[2, 0, 0] = 1, 2, 3
    s = sp.coo_array(a)
    t = Tensor.from_package(s)
    assert t.tensor_format == NamedFormats.COO(3) and list(t.pos(0)) == [0, 3]
    t._source = None
    assert np.array_equal(t.to_package().toarray(), a)


def test_scipy_dia_copies_when_layout_differs():
    data = np.array([[1.0, 2, 3, 4, 9, 9], [5, 6, 7, 8, 9, 9]])
    s = sp.dia_array((data, [1, -1]), shape=(4, 4))  # unsorted offsets, 6 columns for 4
    t = Tensor.from_package(s)
    assert list(t.crd(0)) == [-1, 1] and t.val.shape == (8,)
    assert not np.shares_memory(t.val, s.data)
    assert np.array_equal(t.to_package().toarray(), s.toarray())  # source dropped: rebuilt from buffers
    far = sp.dia_array((np.ones((2, 3)), [0, 7]), shape=(3, 3))  # diagonal 7 is outside the matrix
    t2 = Tensor.from_package(far)
    assert list(t2.crd(0)) == [0]
    assert np.array_equal(t2.to_package().toarray(), np.eye(3))


def test_scipy_refusals():
    s = sp.csr_array(np.eye(3))
    s.indices = np.array([0, 1, 2], dtype=np.int32)
    s.indptr = np.array([0, 2, 3, 3], dtype=np.int32)
    s.indices[:2] = [1, 0]  # row 0 unsorted
    s.has_sorted_indices = False  # valid to scipy: viewed through a sorted copy, s left as it is
    assert np.array_equal(Tensor.from_package(s).to_dense(), s.toarray())
    assert s.indices[:2].tolist() == [1, 0]
    s.indices[0] = 7  # out of range: refused, without the sorting hint
    with pytest.raises(ValueError, match=r"scipy csr input: .*out of bounds \[0, 3\)$"):
        Tensor.from_package(s)
    dup = sp.coo_array((np.ones(2), ([0, 0], [1, 1])), shape=(2, 2))
    dup.has_canonical_format = True  # claimed canonical, but not: refused
    with pytest.raises(ValueError, match=r"scipy coo input: level 1 .*strictly increasing.*sum_duplicates"):
        Tensor.from_package(dup)
    unsorted = sp.coo_array((np.ones(2), ([1, 0], [0, 1])), shape=(2, 2))
    unsorted.has_canonical_format = True
    with pytest.raises(ValueError, match=r"scipy coo input: level 0 .*non-decreasing"):
        Tensor.from_package(unsorted)
    bsr = sp.csr_array(np.ones((4, 4))).tobsr(blocksize=(2, 2))
    bsr.indices[:2] = bsr.indices[1::-1].copy()
    bsr.has_sorted_indices = False
    assert not Tensor.from_package(bsr).tensor_format.levels[1].ordered  # viewed as nonordered
    dup = sp.csr_array(np.ones((4, 4))).tobsr(blocksize=(2, 2))
    dup.indices[:2] = [0, 0]
    dup.has_sorted_indices = False
    with pytest.raises(ValueError, match=r"scipy bsr input: .*stored twice"):
        Tensor.from_package(dup)
    strided = sp.csr_array(np.eye(3))
    strided.indices = np.arange(6, dtype=np.int32)[::2]
    strided.has_canonical_format = True
    with pytest.raises(ValueError, match="not contiguous"):
        Tensor.from_package(strided)
    short = sp.csr_array(np.eye(3))
    short.indptr = np.array([0, 1, 2], dtype=np.int32)
    short.has_canonical_format = True
    with pytest.raises(ValueError, match="indptr has 3 entries"):
        Tensor.from_package(short)
    lil = sp.lil_array(np.eye(2))
    assert np.array_equal(Tensor.from_package(lil).to_dense(), np.eye(2))  # lil/dok: a CSR copy


# ----- torch ------------------------------------------------------------------------------------------
def _torch_sparse(d, layout, blocks=(2, 3), dense_dim=None):
    return {"coo": lambda: d.to_sparse(d.dim() - (dense_dim or 0)).coalesce(),
            "csr": lambda: d.to_sparse_csr(dense_dim=dense_dim),
            "csc": lambda: d.to_sparse_csc(dense_dim=dense_dim),
            "bsr": lambda: d.to_sparse_bsr(blocks, dense_dim=dense_dim),
            "bsc": lambda: d.to_sparse_bsc(blocks, dense_dim=dense_dim)}[layout]()


def _torch_buffers(x):
    if x.layout == torch.sparse_coo:
        return x._indices(), x._values()
    if x.layout in (torch.sparse_csr, torch.sparse_bsr):
        return x.crow_indices(), x.values()
    return x.ccol_indices(), x.values()


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr", "bsc"])
@pytest.mark.parametrize("shape", [(4, 6), (1, 1), (0, 0), (6, 3)])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_torch_sparse_views(layout, shape, index_dtype):
    blocks = (2, 3) if shape[0] % 2 == 0 and shape[1] % 3 == 0 and shape[0] else (1, 1)
    d = torch.from_numpy(_matrix(shape, np.float64, seed=1))
    x = _torch_sparse(d, layout, blocks)
    if layout != "coo":
        comp = x.crow_indices() if layout in ("csr", "bsr") else x.ccol_indices()
        plain = x.col_indices() if layout in ("csr", "bsr") else x.row_indices()
        x = torch.sparse_compressed_tensor(comp.to(index_dtype), plain.to(index_dtype), x.values(),
                                           size=shape, layout=x.layout, check_invariants=True)
    t = Tensor.from_package(x)
    want = {"coo": NamedFormats.COO, "csr": NamedFormats.CSR, "csc": NamedFormats.CSC,
            "bsr": NamedFormats.BSR(blocks), "bsc": NamedFormats.BSC(blocks)}[layout]
    assert t.tensor_format == want and t.package == "torch" and t.device == "cpu"
    assert t.index_type == (np.dtype(np.int64) if layout == "coo" else np.dtype(str(index_dtype)[6:]))
    idx, values = _torch_buffers(x)
    assert isinstance(t.val, np.ndarray)
    if values.numel():
        assert data_pointer(t.val) == values.data_ptr()
        values.view(-1)[0] = 77.0
        assert t.val[0] == 77.0
        if layout == "coo":
            assert data_pointer(t.crd(0)) == idx.data_ptr()
        else:
            assert data_pointer(t.pos(1)) == idx.data_ptr()
    assert t.to_package() is x
    t._source = None
    back = t.to_package()
    assert back.layout == x.layout and torch.equal(back.to_dense(), x.to_dense())
    if values.numel():
        assert back.values().data_ptr() == values.data_ptr()
    if layout != "bsc":
        assert np.array_equal(t.to_package("scipy").toarray(), x.to_dense().numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
def test_torch_strided_views(dtype):
    x = torch.randn(3, 4, 5, dtype=dtype).permute(2, 0, 1)
    t = Tensor.from_package(x)
    assert t.tensor_format == dense_format((1, 2, 0)) and t.val.flags.c_contiguous
    assert data_pointer(t.val) == x.data_ptr()
    x[1, 2, 3] = 5
    assert t.val[2, 3, 1] == 5
    assert t.to_package() is x
    t._source = None
    assert torch.equal(t.to_package(), x) and t.to_package().data_ptr() == x.data_ptr()
    assert np.shares_memory(t.to_package("numpy"), t.val)
    sliced = torch.randn(4, 6)[:, ::2]  # a C-ordered copy
    assert torch.equal(torch.from_numpy(Tensor.from_package(sliced).to_dense()), sliced)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr", "bsc"])
def test_torch_hybrid(layout):
    d = torch.zeros(4, 6, 3)
    d[0, 1], d[2, 5], d[3, 0] = 1.0, torch.tensor([1.0, 2, 3]), -1.0
    x = _torch_sparse(d, layout, (2, 3), dense_dim=1)
    t = Tensor.from_package(x)
    want = (coo_format(2, 1) if layout == "coo" else
            compressed_format(layout.upper(), 0, 1, (2, 3) if layout[0] == "b" else None))
    assert t.tensor_format == want and t.val.ndim == 1
    t._source = None
    assert torch.equal(t.to_package().to_dense(), d)


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr", "bsc"])
def test_torch_batched(layout):
    d = torch.zeros(2, 4, 6)
    d[0, 0, 0], d[0, 3, 5], d[1, 1, 2], d[1, 2, 4] = 1, 2, 3, 4  # same count per batch
    x = _torch_sparse(d, layout, (2, 3))
    t = Tensor.from_package(x)
    assert t.tensor_format == compressed_format(layout.upper(), 1, 0, (2, 3) if layout[0] == "b" else None)
    assert t.tensor_format.levels[0].format.value == "batch"
    assert t.pos(2).shape[0] == 2 and t.val.shape[0] == 2
    assert data_pointer(t.val) == x.values().data_ptr()
    t._source = None
    assert torch.equal(t.to_package().to_dense(), d)


def test_torch_refusals():
    i = torch.tensor([[1, 0, 1], [0, 1, 0]])
    unco = torch.sparse_coo_tensor(i, torch.ones(3), (2, 2), check_invariants=False)
    assert np.array_equal(Tensor.from_package(unco).to_dense(), unco.to_dense().numpy())  # a sorted copy
    bad = torch.sparse_csr_tensor(torch.tensor([0, 2, 2]), torch.tensor([1, 0]), torch.ones(2), (2, 2),
                                  check_invariants=False)
    with pytest.raises(ValueError, match=r"torch sparse_csr input: .*strictly increasing.*check_invariants"):
        Tensor.from_package(bad)
    dup = torch.sparse_csr_tensor(torch.tensor([0, 2, 2]), torch.tensor([1, 1]), torch.ones(2), (2, 2),
                                  check_invariants=False)
    with pytest.raises(ValueError, match="strictly increasing"):
        Tensor.from_package(dup)
    oob = torch.sparse_csr_tensor(torch.tensor([0, 1, 1]), torch.tensor([5]), torch.ones(1), (2, 2),
                                  check_invariants=False)
    with pytest.raises(ValueError, match="torch sparse_csr input: .*5"):
        Tensor.from_package(oob)


# ----- to_package refusals -----------------------------------------------------------------------------
def _csr_tensor(**kw):
    defaults = dict(pos=[None, np.array([0, 1, 2])], crd=[None, np.array([0, 1])], values=np.ones(2))
    defaults.update(kw)
    return Tensor(NamedFormats.CSR, (2, 2), defaults["pos"], defaults["crd"], defaults["values"],
                  index_type=np.dtype(np.int64))


def test_to_package_refusals():
    dcsr = Tensor(NamedFormats.DCSR, (2, 2), [np.array([0, 1]), np.array([0, 1])],
                  [np.array([1]), np.array([0])], np.ones(1), index_type=np.dtype(np.int64))
    for pkg in ("scipy", "torch", "numpy"):
        with pytest.raises(TypeError, match=rf"{pkg} has no object for format .*compressed.*DCSR"):
            dcsr.to_package(pkg)
    with pytest.raises(TypeError, match="numpy has no sparse"):
        _csr_tensor().to_package("numpy")
    dia = Tensor(NamedFormats.DIAJ, (2, 2), [np.array([0, 1]), None], [np.array([0]), None], np.ones(2),
                 index_type=np.dtype(np.int64))
    with pytest.raises(TypeError, match="torch has no DIA"):
        dia.to_package("torch")
    bsc = Tensor(NamedFormats.BSC((1, 1)), (2, 2), [None, np.array([0, 1, 2]), None, None],
                 [None, np.array([0, 1]), None, None], np.ones(2), index_type=np.dtype(np.int64))
    with pytest.raises(TypeError, match="scipy has no sparse type"):
        bsc.to_package("scipy")
    with pytest.raises(ValueError, match="unknown package"):
        _csr_tensor().to_package("jax")
    with pytest.raises(ValueError, match="positions have shape|pos must have"):
        _csr_tensor(pos=[None, np.array([0, 2])]).to_package("torch")
    with pytest.raises(ValueError, match="not contiguous"):
        _csr_tensor(crd=[None, np.arange(4)[::2]]).to_package("scipy")
    mixed = _csr_tensor(crd=[None, np.array([0, 1], dtype=np.int32)]).to_package("scipy")  # int32 coordinates
    assert mixed.indices.dtype == mixed.indptr.dtype == np.int64  # under int64 positions: widened for scipy
    with pytest.raises(ValueError, match="do not fill|values buffer holds"):
        _csr_tensor(values=np.ones(3)).to_package("torch")


def test_cross_package_sharing():
    s = sp.random(8, 9, density=0.3, format="csr", random_state=1)
    th = Tensor.from_package(s).to_package("torch")
    assert th.layout == torch.sparse_csr and th.values().data_ptr() == data_pointer(s.data)
    x = torch.randn(3, 4).t()
    arr = Tensor.from_package(x).to_package("numpy")
    assert arr.shape == (4, 3) and data_pointer(arr) == x.data_ptr()


# ----- GPU packages (skipped without a device) -------------------------------------------------------------
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("layout", ["strided", "coo", "csr", "bsr"])
def test_torch_cuda_views(layout):
    d = torch.from_numpy(_matrix((4, 6), np.float64)).cuda()
    x = d if layout == "strided" else _torch_sparse(d, layout)
    t = Tensor.from_package(x)
    assert t.device.startswith("cuda") and isinstance(t.val, torch.Tensor)
    vals = x if layout == "strided" else _torch_buffers(x)[1]
    assert t.val.data_ptr() == vals.data_ptr()
    t._source = None
    back = t.to_package()
    assert torch.equal(back.to_dense() if layout != "strided" else back, d)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["dense", "coo", "csr", "csc", "dia"])
def test_cupy_views(fmt):
    cupy = pytest.importorskip("cupy")
    csp = pytest.importorskip("cupyx.scipy.sparse")
    a = _matrix((4, 6), np.float64)
    x = cupy.asarray(a) if fmt == "dense" else getattr(csp, f"{fmt}_matrix")(sp.csr_matrix(a).asformat(fmt))
    if fmt == "coo":
        x.sum_duplicates()
    t = Tensor.from_package(x)
    assert t.package == "cupy" and t.device.startswith("cuda")
    vals = x if fmt == "dense" else x.data
    assert data_pointer(t.val) == data_pointer(vals)
    back = t.to_package()
    assert back is x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128])
@pytest.mark.parametrize("layout", ["coo", "csr", "csc", "bsr", "bsc"])
def test_torch_value_dtypes(dtype, layout):
    d = torch.from_numpy(_matrix((4, 6), np.complex128 if dtype.is_complex else np.float64, seed=5)).to(dtype)
    x = _torch_sparse(d, layout)
    t = Tensor.from_package(x)
    assert t.dtype == np.dtype(str(dtype)[6:])
    assert data_pointer(t.val) == _torch_buffers(x)[1].data_ptr()
    t._source = None
    assert torch.equal(t.to_package().to_dense(), d)


TARGETS = {  # format -> packages with a native object for it
    "CSR": ("scipy", "torch"), "CSC": ("scipy", "torch"), "COO": ("scipy", "torch"),
    "BSR((2, 3))": ("scipy", "torch"), "BSC((2, 3))": ("torch",), "DIAJ": ("scipy",),
    "Dense(2)": ("numpy", "torch", "scipy"),
}


@pytest.mark.parametrize("name", list(TARGETS))
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_converted_tensors_to_package(name, index_type):
    a = _matrix((6, 9), np.float64, seed=7)
    t = Tensor.from_package(a).convert(NamedFormats.lookup(name), index_type=index_type)
    for pkg in ("numpy", "scipy", "torch"):
        if pkg not in TARGETS[name]:
            with pytest.raises(TypeError, match=pkg):
                t.to_package(pkg)
            continue
        obj = t.to_package(pkg)
        dense = obj if isinstance(obj, np.ndarray) else (
            obj.to_dense().numpy() if isinstance(obj, torch.Tensor) and obj.layout != torch.strided else
            (obj.numpy() if isinstance(obj, torch.Tensor) else obj.toarray()))
        assert np.array_equal(dense, a), (name, pkg)
        vals = obj if isinstance(obj, (np.ndarray, torch.Tensor)) and name == "Dense(2)" else (
            obj.data if pkg == "scipy" else (obj._values() if obj.layout == torch.sparse_coo else obj.values()))
        assert np.shares_memory(np.asarray(vals), t.val)


def test_views_of_the_same_object_are_reused_and_refreshed():
    s = sp.random(50, 60, density=0.1, format="csr", random_state=3)
    t1, t2 = Tensor.from_package(s), Tensor.from_package(s)
    assert t1 is not t2 and t2.val is t1.val and t2.crd(1) is t1.crd(1) and t2.to_package() is s
    from frontend.storage._validate import is_validated
    assert is_validated(t2)
    s.indices = s.indices.astype(np.int64)  # new buffers: a new view, validated again
    s.indptr = s.indptr.astype(np.int64)
    t3 = Tensor.from_package(s)
    assert t3.crd(1) is not t1.crd(1) and t3.index_type == np.int64 and _same(t3.crd(1), s.indices)
    x = torch.eye(3).to_sparse_csr()
    assert Tensor.from_package(x).val is Tensor.from_package(x).val


def test_to_package_after_buffers_were_replaced():
    s = sp.csr_array(np.eye(3))
    t = Tensor.from_package(s)
    other = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 4.0]])
    t.copy_(Tensor.from_package(other).convert(NamedFormats.CSR))  # new structure: new buffers
    back = t.to_package()
    assert back is not s and np.array_equal(back.toarray(), other)
    same = Tensor.from_package(s)
    same.copy_(Tensor.from_package(2 * np.eye(3)).convert(NamedFormats.CSR))  # same structure: in place
    assert same.to_package() is s and np.array_equal(s.toarray(), 2 * np.eye(3))
