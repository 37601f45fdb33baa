"""Bit-packed DELTA(1)/(2)/(4) gaps (``8 // bits`` to a byte) next to byte-per-gap DELTA(3)/(8)/(12): storage
bytes, the packed layout, round trips and products against scipy/numpy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from frontend import Matmul, NamedFormats as NF, Tensor, TensorFormat
from frontend.format import delta_packed
from frontend.storage._layout import delta_crd_length, pack_gaps, unpack_gaps

BITS = [1, 2, 3, 4, 8, 12]


def matrix(m: int, n: int, density: float, dtype, seed: int = 0) -> np.ndarray:
    """Random nonzeros, an empty row, a row whose only entry is far right (long gap: padding entries)."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, n)) * (rng.random((m, n)) < density)).astype(dtype)
    if m > 2:
        a[1] = 0
    if m > 3 and n > 1:
        a[3] = 0
        a[3, n - 1] = 2.5
    return a


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_pack_unpack_round_trip_and_byte_count(bits):
    rng = np.random.default_rng(bits)
    for count in (0, 1, 3, 4, 5, 7, 8, 9, 31):  # counts that do and do not fill the last byte
        gaps = rng.integers(0, 1 << bits, count).astype(np.uint8)
        packed = pack_gaps(gaps, bits)
        assert packed.dtype == np.uint8 and len(packed) == -(-count * bits // 8) == delta_crd_length(bits, count)
        slots = unpack_gaps(packed, bits)
        np.testing.assert_array_equal(slots[:count], gaps)
        assert not slots[count:].any()  # the last byte's unused slots are zero
    assert pack_gaps(np.array([1, 0, 3, 2], np.uint8), 2).tolist() == [1 | 0 << 2 | 3 << 4 | 2 << 6]


@pytest.mark.parametrize("bits", BITS)
def test_storage_bytes_reflect_packing(bits):
    a = matrix(40, 70, 0.4, np.float32)
    t = Tensor.from_dense(a, NF.DELTA(bits), index_type=np.int32)
    gaps = t.pos(1)[-1]
    want = -(-int(gaps) * bits // 8) if bits in (1, 2, 4) else int(gaps)
    assert delta_packed(bits) == (bits in (1, 2, 4))
    assert t.crd(1).size == want and t.crd(1).dtype == (np.uint16 if bits > 8 else np.uint8)
    assert t.nbytes == t.pos(1).nbytes + t.crd(1).nbytes + t.val.nbytes
    np.testing.assert_array_equal(t.to_dense(), a)


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_spmm_against_scipy(bits, dtype):
    rng = np.random.default_rng(1)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for shape in [(9, 13), (13, 5), (1, 1), (0, 4), (4, 0), (2, 300)]:  # non-square, 1x1, empty, long gaps
        a = matrix(*shape, 0.3, dtype, seed=sum(shape))
        t = Tensor.from_package(sp.csr_matrix(a)).convert(NF.DELTA(bits))
        np.testing.assert_array_equal(t.to_dense(), a)
        x = rng.standard_normal(shape[1]).astype(dtype)
        ref = sp.csr_matrix(a.astype(np.float64))
        y = np.asarray(Matmul(t, x, threads=1).plan().execute().to_dense())
        np.testing.assert_allclose(y, ref @ x.astype(np.float64), rtol=tol, atol=tol)
    xm = rng.standard_normal((shape[1], 3)).astype(dtype)  # the last shape: SpMM and two threads
    np.testing.assert_allclose(np.asarray(Matmul(t, xm).plan().execute().to_dense()), ref @ xm.astype(np.float64),
                               rtol=tol, atol=tol)
    y = np.asarray(Matmul(t, x, threads=2).plan().execute().to_dense())
    np.testing.assert_allclose(y, ref @ x.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("bits", [1, 2, 4])
def test_packed_same_answer_as_csr_and_delta8(bits):
    a = matrix(50, 257, 0.05, np.float64, seed=3)  # gaps beyond 2**bits: many padding entries
    x = np.linspace(-1, 1, 257)
    csr = Tensor.from_dense(a, NF.CSR)
    packed = csr.convert(NF.DELTA(bits))
    assert packed.nse > csr.nse  # padding entries
    ys = [np.asarray(Matmul(t, x).plan().execute().to_dense()) for t in (csr, packed, csr.convert(NF.DELTA(8)))]
    np.testing.assert_allclose(ys[1], ys[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ys[2], ys[0], rtol=1e-12, atol=1e-12)
    back = packed.convert(NF.CSR)  # padding zeros are not entries
    np.testing.assert_array_equal(back.to_dense(), a)
    assert back.nse == csr.nse


def test_packed_level_under_compressed_and_in_batches():
    a = matrix(8, 20, 0.3, np.float64, seed=5)
    x = np.arange(20.0)
    fmt = TensorFormat.parse("(i, j) -> (i : compressed, j : delta(2))")
    t = Tensor.from_dense(a, fmt)
    np.testing.assert_array_equal(t.to_dense(), a)
    np.testing.assert_allclose(np.asarray(Matmul(t, x).plan().execute().to_dense()), a @ x, atol=1e-12)
    stack = np.stack([a, matrix(8, 20, 0.6, np.float64, seed=6)])
    bfmt = TensorFormat.parse("(b, i, j) -> (b : batch, i : dense, j : delta(4))")
    bt = Tensor.from_dense(stack, bfmt)
    np.testing.assert_array_equal(bt.to_dense(), stack)
    assert bt.get_value((1, 3, 19)) == stack[1, 3, 19]


def test_packed_buffers_from_the_user_are_checked():
    pos = np.array([0, 3])
    ok = np.array([1 | 0 << 4, 2], np.uint8)  # DELTA(4): gaps 1, 0, 2 -> columns 1, 2, 5
    t = Tensor.from_buffers(NF.DELTA(4), (1, 6), pos=[None, pos], crd=[None, ok], values=np.array([1.0, 2, 3]))
    np.testing.assert_array_equal(t.to_dense(), [[0, 1, 2, 0, 0, 3]])
    with pytest.raises(ValueError, match=r"crd must hold 3 gaps packed 2 to a byte .* got 3 bytes"):
        Tensor.from_buffers(NF.DELTA(4), (1, 6), pos=[None, pos], crd=[None, np.array([1, 0, 2], np.uint8)],
                            values=np.array([1.0, 2, 3]))
    with pytest.raises(ValueError, match=r"out of bounds \[0, 6\)"):
        Tensor.from_buffers(NF.DELTA(4), (1, 6), pos=[None, pos], crd=[None, np.array([1, 9], np.uint8)],
                            values=np.array([1.0, 2, 3]))


@pytest.mark.parametrize("bits", [2, 4])
def test_packed_delta_lowers_to_ptx(bits):
    """The GPU path (``emitter-gpu``) walks packed gaps with the same rule: PTX that ptxas accepts."""
    import functools

    from lowering.contraction import Contraction, TensorSpec
    from lowering.gpu.dispatch import gpu_path, lower_gpu
    from mlir_bridge.gpu import gpu_assembly
    from test_gpu_lowering import _ptxas

    spec = functools.partial(TensorSpec, pos_width=32, crd_width=32)
    c = Contraction(("ik", "k"), (spec(NF.DELTA(bits), (8, 6), "f32"), spec(None, (6,), "f32")), "i",
                    TensorSpec(None, (8,), "f32"))
    low = lower_gpu(c, "sm_90", gpu_path(c, "emitter-gpu"))
    assert "arith.shrui" in low.text
    ptx = gpu_assembly(low.text, low.pipeline)
    assert ".entry" in ptx
    _ptxas(ptx, "sm_90")


@pytest.mark.parametrize("bits", [2, 8])
def test_unrolled_delta_walk_prefetches_on_the_cpu_only(bits):
    """Unrolled delta walks prefetch values and gaps ahead once per iteration (emitted text), not with
    ``prefetch=False`` (the GPU path); results stay scipy's for rows longer than the prefetch distance."""
    from lowering.contraction import Contraction, TensorSpec
    from lowering.emitter import emit_contraction
    from lowering.emitter.rules import DELTA_PREFETCH

    a = matrix(5, 3 * DELTA_PREFETCH, 0.5, np.float64, seed=bits)
    x = np.linspace(-1, 1, a.shape[1])
    mm = Matmul(Tensor.from_dense(a, NF.DELTA(bits)), x, threads=1).plan()
    np.testing.assert_allclose(np.asarray(mm.execute().to_dense()), a @ x, rtol=1e-12, atol=1e-12)
    assert mm.mlir.count("memref.prefetch") == 2
    c = Contraction(("ik", "k"), (TensorSpec(NF.DELTA(bits), (8, 6), "f64", 32, 32), TensorSpec(None, (6,), "f64")),
                    "i", TensorSpec(None, (8,), "f64"))
    assert emit_contraction(c).count("memref.prefetch") == 2
    assert "memref.prefetch" not in emit_contraction(c, prefetch=False)
