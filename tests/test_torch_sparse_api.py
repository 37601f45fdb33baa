"""torch.sparse's calls on a TorchUST against torch.sparse (or dense torch where torch.sparse lacks the call):
accessors, indexing, reductions, norms, conversions, ``*_like``, in-place updates, comparisons, ``clamp``,
``where`` and ``cat``, for CSR, CSC, COO, BSR and DELTA; gradients with gradcheck."""
from __future__ import annotations

import math

import pytest
import torch

from frontend.torch_interface import TorchUST

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

# 5 x 4, row 2 and column 1 empty, mixed signs
DENSE = torch.tensor([[1.5, 0.0, -2.0, 0.0],
                      [0.0, 0.0, 3.0, 0.25],
                      [0.0, 0.0, 0.0, 0.0],
                      [-0.5, 0.0, 0.0, 4.0],
                      [2.0, 0.0, -1.0, 0.0]], dtype=torch.float64)

TORCH_LAYOUTS = {
    "CSR": (lambda d: d.to_sparse_csr(), torch.sparse_csr),
    "CSC": (lambda d: d.to_sparse_csc(), torch.sparse_csc),
    "COO": (lambda d: d.to_sparse_coo(), torch.sparse_coo),
    "BSR": (lambda d: d.to_sparse_bsr((1, 2)), torch.sparse_bsr),
}
FORMATS = [*TORCH_LAYOUTS, "DELTA"]


def make(fmt: str, d: torch.Tensor = DENSE) -> TorchUST:
    if fmt == "DELTA":
        return TorchUST.from_torch(d, "DELTA(8)")
    return TorchUST.from_torch(TORCH_LAYOUTS[fmt][0](d))


def dense_of(x: torch.Tensor) -> torch.Tensor:
    if isinstance(x, TorchUST):
        return x.dense()
    return x.to_dense() if x.layout != torch.strided else x


# ----- accessors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(TORCH_LAYOUTS))
def test_accessors_match_torch(fmt: str) -> None:
    ref = TORCH_LAYOUTS[fmt][0](DENSE)
    w = TorchUST.from_torch(ref)
    assert w.layout == ref.layout
    assert w.is_sparse == ref.is_sparse and w.is_sparse_csr == ref.is_sparse_csr
    assert w._nnz() == ref._nnz()
    assert w.values().data_ptr() == ref.values().data_ptr()  # zero-copy
    torch.testing.assert_close(w.values().reshape(ref.values().shape), ref.values())  # BSR: stored flat
    names = {"CSR": ("crow_indices", "col_indices"), "BSR": ("crow_indices", "col_indices"),
             "CSC": ("ccol_indices", "row_indices"), "COO": ("indices",)}[fmt]
    for name in names:
        got, want = getattr(w, name)(), getattr(ref, name)()
        assert torch.equal(got.to(torch.int64), want.to(torch.int64)), name
        if fmt != "COO":
            assert got.data_ptr() == want.data_ptr(), name  # the stored buffer itself
    wrong = "indices" if fmt != "COO" else "crow_indices"
    with pytest.raises(RuntimeError, match="expected a TorchUST of layout"):
        getattr(w, wrong)()


def test_accessors_of_a_format_without_torch_layout() -> None:
    w = make("DELTA")
    assert w.layout == torch.strided and not w.is_sparse and not w.is_sparse_csr
    assert w._nnz() == w.ust.nse
    assert w.values() is w.values()  # the stored values, the same tensor every time
    with pytest.raises(RuntimeError, match="to_sparse_coo"):
        w.crow_indices()
    torch.testing.assert_close(w.to_sparse_coo().indices(), DENSE.to_sparse_coo().indices())


def test_values_attribute_spelling_still_works_with_a_warning() -> None:
    w = make("CSR")
    with pytest.warns(DeprecationWarning, match=r"W\.values\(\)"):
        assert w.values.shape == w.values().shape


# ----- indexing -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_indexing_and_select(fmt: str) -> None:
    w = make(fmt)
    for i in (0, 2, 4, -1):
        row = w[i]
        assert isinstance(row, TorchUST) and row.is_sparse  # as torch: a COO tensor of one dimension less
        torch.testing.assert_close(row.dense(), DENSE[i])
        torch.testing.assert_close(w.select(1, i % 4).dense(), DENSE.select(1, i % 4))
        torch.testing.assert_close(w[:, i % 4].dense(), DENSE[:, i % 4])
        for j in (0, 1, 3):
            torch.testing.assert_close(w[i, j], DENSE[i, j])
    if fmt in TORCH_LAYOUTS:
        torch.testing.assert_close(w[1].dense(), TORCH_LAYOUTS[fmt][0](DENSE)[1].to_dense())
    with pytest.raises(IndexError):
        w[5]
    with pytest.raises(IndexError):
        w.select(2, 0)


# ----- reductions and norms -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_sparse_sum(fmt: str) -> None:
    w = make(fmt)
    torch.testing.assert_close(torch.sparse.sum(w), DENSE.sum())
    for dim in (0, 1, -1, (0, 1)):
        got = torch.sparse.sum(w, dim)
        torch.testing.assert_close(dense_of(got), DENSE.sum(dim))
    if fmt == "COO":  # torch's own sparse result: the same stored coordinates
        ref = torch.sparse.sum(DENSE.to_sparse_coo(), 1)
        torch.testing.assert_close(torch.sparse.sum(w, 1).indices(), ref.indices())
    torch.testing.assert_close(torch.sparse.sum(w, 0, dtype=torch.float32).dense(), DENSE.sum(0).float())


@pytest.mark.parametrize("fmt", FORMATS)
def test_norms(fmt: str) -> None:
    w = make(fmt)
    torch.testing.assert_close(torch.norm(w), torch.norm(DENSE))
    torch.testing.assert_close(w.norm(1), DENSE.norm(1))
    for ord in (1, 2, 0.5, 3, math.inf, -math.inf, 0, -1):
        torch.testing.assert_close(torch.linalg.vector_norm(w, ord), torch.linalg.vector_norm(DENSE, ord))
    for ord in (1, 2, math.inf):
        for dim in (0, 1):
            torch.testing.assert_close(torch.linalg.vector_norm(w, ord, dim=dim),
                                       torch.linalg.vector_norm(DENSE, ord, dim=dim))
    torch.testing.assert_close(torch.linalg.vector_norm(w, 2, dim=1, keepdim=True),
                               torch.linalg.vector_norm(DENSE, 2, dim=1, keepdim=True))
    if fmt == "COO":
        torch.testing.assert_close(torch.norm(w), torch.norm(DENSE.to_sparse_coo()))
    with pytest.raises(NotImplementedError, match="allow_dense_fallback"):
        torch.norm(w, "nuc")  # no sparse answer: the clear error


def test_reductions_of_edge_shapes() -> None:
    for d in (torch.zeros(1, 1, dtype=torch.float64), torch.tensor([[2.5]], dtype=torch.float64),
              torch.zeros(3, 0, dtype=torch.float64), torch.zeros(0, 0, dtype=torch.float64)):
        for fmt in ("CSR", "COO"):
            w = make(fmt, d)
            torch.testing.assert_close(torch.sparse.sum(w), d.sum())
            torch.testing.assert_close(torch.norm(w), torch.norm(d))
            torch.testing.assert_close(torch.cat([w, w]).dense(), torch.cat([d, d]))
            torch.testing.assert_close(dense_of(torch.sparse.sum(w, 1)), d.sum(1))


# ----- conversions ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_conversions(fmt: str) -> None:
    w = make(fmt)
    for name, args, fname, layout in (("to_sparse_coo", (), "COO", torch.sparse_coo),
                                      ("to_sparse_csr", (), "CSR", torch.sparse_csr),
                                      ("to_sparse_csc", (), "CSC", torch.sparse_csc),
                                      ("to_sparse_bsr", ((1, 2),), "BSR1x2", torch.sparse_bsr)):
        got = getattr(w, name)(*args)
        assert isinstance(got, TorchUST) and got.format_name == fname and got.layout == layout
        torch.testing.assert_close(got.dense(), DENSE)
        torch.testing.assert_close(got.to_torch().to_dense(), getattr(DENSE, name)(*args).to_dense())
    assert w.to_sparse().layout == torch.sparse_coo
    assert w.to_sparse(layout=torch.sparse_bsc, blocksize=(1, 1)).layout == torch.sparse_bsc
    torch.testing.assert_close(w.to_dense(), DENSE)


# ----- *_like and in-place updates ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_like(fmt: str) -> None:
    w = make(fmt)
    for fn, args in ((torch.zeros_like, ()), (torch.ones_like, ()), (torch.full_like, (2.5,))):
        got = fn(w, *args)
        assert isinstance(got, TorchUST) and got.format_name == w.format_name
        assert got.values().shape == w.values().shape and got.values().data_ptr() != w.values().data_ptr()
        torch.testing.assert_close(got.values(), fn(w.values(), *args))
        if fmt in TORCH_LAYOUTS and fmt != "COO":  # torch fills a compressed tensor's stored values alike
            torch.testing.assert_close(got.dense(), fn(TORCH_LAYOUTS[fmt][0](DENSE), *args).to_dense())
    assert torch.zeros_like(w, dtype=torch.float32).dtype == torch.float32
    assert torch.empty_like(w).values().shape == w.values().shape


@pytest.mark.parametrize("fmt", FORMATS)
def test_inplace_updates_keep_the_pattern(fmt: str) -> None:
    mask = (DENSE != 0).to(DENSE.dtype)
    w = make(fmt).clone()
    v = make(fmt, DENSE * 3).clone()
    pos = (DENSE.abs() + 1) * mask
    expect = DENSE.clone()
    steps = [
        (lambda: w.mul_(2), lambda e: e * 2),
        (lambda: w.add_(v, alpha=0.5), lambda e: e + 0.5 * DENSE * 3),
        (lambda: w.sub_(v), lambda e: e - DENSE * 3),
        (lambda: w.addcmul_(v, v, value=0.1), lambda e: e + 0.1 * (DENSE * 3) ** 2),
        (lambda: w.addcdiv_(v, make(fmt, pos).clone().add_(1.0), value=-0.2),
         lambda e: e - 0.2 * torch.where(mask > 0, DENSE * 3 / (pos + 1), 0.0)),
        (lambda: w.lerp_(v, 0.25), lambda e: e + 0.25 * (DENSE * 3 - e)),
        (lambda: w.div_(4), lambda e: e / 4),
        (lambda: w.abs_(), torch.abs),
        (lambda: w.neg_(), torch.neg),
        (lambda: w.clamp_(-1.0, 0.0), lambda e: e.clamp(-1.0, 0.0)),
        (lambda: w.copy_(v), lambda e: DENSE * 3),
        (lambda: w.add_(DENSE), lambda e: e + DENSE),  # a dense operand inside the pattern
        (lambda: w.zero_(), torch.zeros_like),
    ]
    values = w.values()
    for k, (update, ref) in enumerate(steps):
        assert update() is w
        expect = ref(expect)
        torch.testing.assert_close(w.dense(), expect, msg=f"step {k}")
    assert w.values() is values  # updated in place
    torch.testing.assert_close(make(fmt).sqrt().dense(), DENSE.sqrt(), equal_nan=True)
    pos_w = make(fmt, pos)
    torch.testing.assert_close((pos_w / pos_w.clone().mul_(2)).values(), torch.full_like(pos_w.values(), 0.5)
                               .masked_fill(pos_w.values() == 0, torch.nan), equal_nan=True)  # padding: 0/0
    torch.testing.assert_close(torch.maximum(make(fmt), make(fmt, -DENSE)).dense(), DENSE.abs())
    with pytest.raises(ValueError, match="outside the stored pattern"):
        w.add_(torch.ones_like(DENSE))
    with pytest.raises(ValueError, match="min <= 0 <= max"):
        w.clamp_(min=1.0)


# ----- comparisons, clamp, where, cat ----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_comparisons_clamp_where(fmt: str) -> None:
    w = make(fmt)
    for got, want in ((w > 0.5, DENSE > 0.5), (w >= 1.5, DENSE >= 1.5), (w < 0.5, DENSE < 0.5),
                      (w <= -0.5, DENSE <= -0.5), (w == 0, DENSE == 0), (w != 3.0, DENSE != 3.0),
                      (0.5 < w, DENSE > 0.5), (torch.gt(w, 1.0), DENSE > 1.0)):
        assert got.dtype == torch.bool
        assert torch.equal(dense_of(got), want)
    assert isinstance(w > 0.5, TorchUST) and not isinstance(w < 0.5, TorchUST)  # False at 0: pattern kept
    assert isinstance(w.clamp(-1.0, 1.0), TorchUST)
    for lo, hi in ((-1.0, 1.0), (0.1, None), (None, -0.2)):
        torch.testing.assert_close(dense_of(torch.clamp(w, lo, hi)), torch.clamp(DENSE, lo, hi))
    x = torch.arange(20, dtype=torch.float64).reshape(5, 4)
    torch.testing.assert_close(torch.where(w > 0.5, x, -x), torch.where(DENSE > 0.5, x, -x))
    torch.testing.assert_close(torch.where(w != 0, w, 7.0), torch.where(DENSE != 0, DENSE, 7.0))
    for got, want in zip(torch.where(w > 0.5), torch.where(DENSE > 0.5)):
        assert torch.equal(got, want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cat(fmt: str) -> None:
    w, v = make(fmt), make(fmt, DENSE.flip(0) * 2)
    got = torch.cat([w, v, w])
    assert isinstance(got, TorchUST) and got.format_name == w.format_name
    torch.testing.assert_close(got.dense(), torch.cat([DENSE, DENSE.flip(0) * 2, DENSE]))
    torch.testing.assert_close(torch.cat([w, v], dim=1).dense(), torch.cat([DENSE, DENSE.flip(0) * 2], 1))
    if fmt == "COO":
        ref = torch.cat([DENSE.to_sparse_coo(), (DENSE.flip(0) * 2).to_sparse_coo()])
        torch.testing.assert_close(torch.cat([w, v]).dense(), ref.to_dense())
    with pytest.raises(RuntimeError, match="do not match"):
        torch.cat([w, make(fmt, DENSE[:, :2].contiguous())])


# ----- gradients --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["CSR", "COO", "BSR", "DELTA"])
def test_gradcheck_of_the_new_calls(fmt: str) -> None:
    w = make(fmt)
    x = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    index, _ = w.entries()  # the entries are the parameters (padding slots of BSR/DELTA stay zero)

    def on(ev: torch.Tensor) -> TorchUST:
        flat = torch.zeros(w.values().numel(), dtype=ev.dtype).index_put((index,), ev)
        return TorchUST.with_values(w, flat.reshape(w.values().shape))

    vals = w.values().detach().reshape(-1)[index].clone().requires_grad_(True)
    funcs = {
        "select": lambda v: on(v)[1].values(),
        "getitem": lambda v: on(v)[3, 3] * 2,
        "sparse_sum_dim": lambda v: torch.sparse.sum(on(v), 0).values(),
        "norm": lambda v: torch.norm(on(v)),
        "norm_dim": lambda v: torch.linalg.vector_norm(on(v), 3, dim=1),
        "to_coo": lambda v: on(v).to_sparse_coo().values(),
        "to_dense_row": lambda v: on(v)[4].to_dense(),
        "cat": lambda v: torch.cat([on(v), on(v * 2)]).values(),
        "where": lambda v: torch.where(w > 0.5, on(v), x),
        "clamp_dense": lambda v: torch.clamp(on(v), min=0.1),
    }
    for name, f in funcs.items():
        assert torch.autograd.gradcheck(f, (vals,)), name
