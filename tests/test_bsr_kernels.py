"""BSR SpMV/SpMM (``lowering.emitter.blocked``) against NumPy's dense products: several block shapes (square,
rectangular, 1x1, larger than the kernel takes), 0x0, 1x1, non-square, empty block rows, several dtypes; row
chunks on several threads give the same bits as one thread."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as NF, Tensor
from lowering.emitter import blocked
from ops_util import assert_threads_match_one_thread, small_int_operand


def blocks(mb: int, nb: int, block: tuple[int, int], dtype: type, seed: int = 0) -> sp.csr_array:
    """``mb x nb`` blocks of shape ``block``, about a third of them stored, every third block row empty."""
    rng = np.random.default_rng(seed)
    pattern = (rng.random((mb, nb)) < 0.35).astype(float)
    pattern[::3] = 0
    dense = np.kron(pattern, np.ones(block)) * rng.integers(-4, 5, (mb * block[0], nb * block[1]))
    return sp.csr_array(dense.astype(dtype))


@pytest.mark.parametrize("block", [(1, 1), (2, 2), (3, 2), (4, 4), (2, 5), (8, 8), (17, 1)])
@pytest.mark.parametrize("mb, nb", [(0, 0), (1, 1), (7, 4), (3, 9)])
@pytest.mark.parametrize("cols", [0, 3, 11])
def test_bsr_product_matches_numpy(block: tuple[int, int], mb: int, nb: int, cols: int) -> None:
    a = blocks(mb, nb, block, np.float64, mb * 7 + nb)
    x = small_int_operand(a.shape[1], cols, np.float64)
    t = Tensor.from_package(a).convert(NF.BSR(block))
    got = np.asarray(F.matmul(t, x))
    ref = a.toarray() @ x
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_bsr_dtypes(dtype: type) -> None:
    a = blocks(6, 5, (4, 4), dtype)
    t = Tensor.from_package(a).convert(NF.BSR((4, 4)))
    for cols in (0, 9):
        x = small_int_operand(a.shape[1], cols, dtype)
        got = np.asarray(F.matmul(t, x))
        assert got.dtype == np.result_type(a.dtype, x.dtype)
        np.testing.assert_array_equal(got, a.toarray() @ x)


def test_the_kernel_takes_blocks_up_to_its_limit() -> None:
    a = blocks(5, 5, (4, 4), np.float64)
    x = np.ones(a.shape[1])
    text = F.Matmul(Tensor.from_package(a).convert(NF.BSR((4, 4))), x).mlir
    assert "vector<4xf64>" in text and "vector.reduction" in text
    assert blocked.MAX_BLOCK >= 16


@pytest.mark.parametrize("block, cols", [((4, 4), 0), ((4, 4), 6), ((3, 2), 0)])
def test_threads_give_the_bits_of_one_thread(block: tuple[int, int], cols: int) -> None:
    a = blocks(900, 700, block, np.float64, 3)
    a.data = np.random.default_rng(1).standard_normal(a.nnz)
    x = small_int_operand(a.shape[1], cols, np.float64) + 0.25
    t = Tensor.from_package(a).convert(NF.BSR(block))
    assert_threads_match_one_thread(t, x, a @ x)


def test_scipy_bsr_and_alpha_beta() -> None:
    """scipy's ``bsr_array`` runs the same kernel; alpha and c keep the generic walk."""
    a = blocks(10, 8, (2, 2), np.float64)
    b = sp.bsr_array(a, blocksize=(2, 2))
    x = small_int_operand(a.shape[1], 0, np.float64)
    np.testing.assert_allclose(F.matmul(b, x), a @ x)
    c = np.ones(a.shape[0])
    np.testing.assert_allclose(F.matmul(b, x, c.copy(), alpha=2.0, beta=-1.0), 2.0 * (a @ x) - c)


def test_whole_matrix_variant() -> None:
    """The variant without row arguments (imported models' single-thread kernels) over all block rows."""
    from lowering import Pipeline
    from lowering.contraction import Contraction, TensorSpec
    from lowering.emitter import emit_contraction
    from mlir_bridge import compile_module

    a = blocks(30, 20, (4, 4), np.float64, 5)
    t = Tensor.from_package(a).convert(NF.BSR((4, 4)))
    c = Contraction(("abik", "bk"), (TensorSpec(blocked.BLOCK_VIEW, (30, 20, 4, 4), "f64", 32, 32),
                                     TensorSpec(None, (20, 4), "f64")), "ai", TensorSpec(None, (30, 4), "f64"))
    assert blocked.applies(c)
    fn = compile_module(emit_contraction(c), Pipeline()).function("main")
    x = np.linspace(0, 1, 80)
    got = fn(np.asarray(t.pos(1)), np.asarray(t.crd(1)), np.asarray(t.val).reshape(-1), x.reshape(20, 4))
    np.testing.assert_allclose(np.asarray(got).reshape(-1), a @ x)
