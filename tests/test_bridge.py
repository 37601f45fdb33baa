"""mlir_bridge: compiling, calling, results, errors and crash isolation."""
import gc

import numpy as np
import pytest
import scipy.sparse as sp

import mlir_bridge as mb
from bridge_kernels import DIA_SPMV, MISC, csr_buffers, random_csr, spgemm, spmv
from lowering.pipelines import WIDEN_I1, Pipeline, register_pass, unregister_pass

PIPE = Pipeline()


@pytest.fixture(scope="module", params=[(np.float64, 0), (np.float64, 32), (np.float32, 32), (np.float32, 64)],
                ids=lambda p: f"{np.dtype(p[0]).name}-w{p[1]}")
def spmv_case(request):
    dtype, width = request.param
    fn = mb.compile_module(spmv(7, 5, dtype, width), PIPE).function("spmv")
    return fn, dtype, width


@pytest.fixture(scope="module")
def spmv64():
    return mb.compile_module(spmv(7, 5), PIPE).function("spmv")


@pytest.fixture(scope="module")
def misc():
    return mb.compile_module(MISC, PIPE)


@pytest.mark.parametrize("seed,density,empty_rows", [(0, 0.4, 2), (1, 0.0, 0), (2, 1.0, 0)])
def test_spmv_matches_scipy(spmv_case, seed, density, empty_rows):
    fn, dtype, width = spmv_case
    a = random_csr(7, 5, density, dtype, seed, empty_rows)
    x = np.random.default_rng(seed).standard_normal(5).astype(dtype)
    y0 = np.random.default_rng(seed + 9).standard_normal(7).astype(dtype)
    y = y0.copy()
    out = fn(*csr_buffers(a, width), x, y)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, a @ x + y0, rtol=tol, atol=tol)
    assert out is y  # the kernel wrote into y and returned it


def test_spmv_square_1x1():
    fn = mb.compile_module(spmv(1, 1), PIPE).function("spmv")
    out = fn(np.array([0, 1]), np.array([0]), np.array([3.0]), np.array([2.0]), np.array([1.0]))
    assert out.tolist() == [7.0]


def test_signature_recorded(spmv64):
    sig = spmv64.signature
    assert [str(a) for a in sig.args] == ["memref<?xindex>", "memref<?xindex>", "memref<?xf64>",
                                          "memref<5xf64>", "memref<7xf64>"]
    assert [str(r) for r in sig.results] == ["memref<7xf64>"]


def test_torch_tensors(spmv64):
    torch = pytest.importorskip("torch")
    a = random_csr(7, 5, 0.5, seed=3)
    pos, crd, val = (torch.from_numpy(b) for b in csr_buffers(a))
    x, y = torch.arange(5, dtype=torch.float64), torch.zeros(7, dtype=torch.float64)
    out = spmv64(pos, crd, val, x, y)
    np.testing.assert_allclose(out, a @ x.numpy())
    np.testing.assert_allclose(y.numpy(), out)  # aliases the tensor's memory
    with pytest.raises(TypeError, match="dtype"):
        spmv64(pos, crd, val, x.float(), y)


def test_bound_call_and_rebind(spmv64):
    a = random_csr(7, 5, 0.5, seed=4)
    x, y = np.ones(5), np.zeros(7)
    call = spmv64.bind(*csr_buffers(a), x, y)
    np.testing.assert_allclose(call(), a @ x)
    np.testing.assert_allclose(call(), 2 * (a @ x))  # y accumulates in place
    y2, x2 = np.zeros(7), np.arange(5.0)
    call.rebind(4, y2)
    call.rebind(3, x2)
    assert call() is y2
    np.testing.assert_allclose(y2, a @ x2)
    b = random_csr(7, 5, 0.3, seed=5)
    for i, buf in enumerate(csr_buffers(b)):
        call.rebind(i, buf)
    y2[:] = 0
    np.testing.assert_allclose(call(), b @ x2)
    with pytest.raises(ValueError, match="shape"):
        call.rebind(3, np.ones(6))
    with pytest.raises(IndexError):
        call.rebind(5, x2)


def test_argument_errors(spmv64):
    pos, crd, val = csr_buffers(random_csr(7, 5, 0.5))
    x, y = np.ones(5), np.zeros(7)
    with pytest.raises(TypeError, match="takes 5 arguments"):
        spmv64(pos, crd, val, x)
    with pytest.raises(TypeError, match="argument 0 .*dtype int64, got int32"):
        spmv64(pos.astype(np.int32), crd, val, x, y)
    with pytest.raises(ValueError, match="argument 3 .*shape"):
        spmv64(pos, crd, val, np.ones(4), y)
    with pytest.raises(ValueError, match="rank 1"):
        spmv64(pos, crd, val, np.ones((5, 1)), y)
    with pytest.raises(ValueError, match="C-contiguous"):
        spmv64(pos, crd, val, np.ones(10)[::2], y)
    with pytest.raises(TypeError, match="expected an array"):
        spmv64(pos, crd, val, [1.0] * 5, y)


def test_scalars_mixed_results_and_aliasing(misc):
    x = np.arange(5.0)
    k2, scaled, first, same = misc.function("mixed")(x, 7, 2.5)
    assert k2 == 14 and first == 0.0
    np.testing.assert_allclose(scaled, 2.5 * x)
    assert not np.shares_memory(scaled, x)  # a fresh allocation owned by the array
    assert same is x
    assert misc.function("twice")(1.5, 3) == 4.5
    with pytest.raises(TypeError, match="argument 1"):
        misc.function("mixed")(x, 1.5, 2.0)


def test_result_view_of_input(misc):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    tail = misc.function("tail")(x, 3)
    np.testing.assert_array_equal(tail, x[1:])
    assert np.shares_memory(tail, x)
    del x
    gc.collect()
    np.testing.assert_array_equal(tail, np.arange(3, 12, dtype=np.float32).reshape(3, 3))  # kept alive


def test_two_results_share_one_allocation(misc):
    a, b = misc.function("pair")(np.arange(4.0))
    np.testing.assert_array_equal(a, [0, 2, 4, 6])
    assert np.shares_memory(a, b)
    del a
    gc.collect()
    np.testing.assert_array_equal(b, [0, 2, 4, 6])  # freed once, when both are gone


def test_zero_length_results(misc):
    x = np.zeros(0)
    k2, scaled, _, same = misc.function("mixed")(np.zeros(1), 0, 1.0)
    assert scaled.shape == (1,)
    tail = misc.function("tail")(np.zeros((1, 3), np.float32), 3)
    assert tail.shape == (0, 3)
    assert misc.function("pair")(x)[0].shape == (0,)


def test_unknown_function(misc):
    with pytest.raises(KeyError, match="mixed"):
        misc.function("nope")


@pytest.fixture(scope="module")
def spgemm_fns():
    shapes = [(6, 4, 5), (3, 3, 3), (1, 1, 1)]
    return {s: mb.compile_module(spgemm(*s), PIPE).function("spgemm") for s in shapes}


@pytest.mark.parametrize("shape,densities,empty_rows", [
    ((6, 4, 5), (0.4, 0.5), 2), ((6, 4, 5), (0.0, 0.5), 0), ((6, 4, 5), (0.5, 0.0), 0),
    ((3, 3, 3), (1.0, 1.0), 0), ((1, 1, 1), (1.0, 1.0), 0), ((1, 1, 1), (0.0, 1.0), 0)])
def test_spgemm_matches_scipy(spgemm_fns, shape, densities, empty_rows):
    m, k, n = shape
    a = random_csr(m, k, densities[0], seed=m + k, empty_rows=empty_rows)
    b = random_csr(k, n, densities[1], seed=k + n + 1)
    pos, crd, val = spgemm_fns[shape](*csr_buffers(a), *csr_buffers(b))
    c = (a @ b).tocsr()
    c.sort_indices()
    c.eliminate_zeros()  # explicit zeros would only appear with cancellation (none with positive data)
    np.testing.assert_array_equal(pos, c.indptr)
    np.testing.assert_array_equal(crd, c.indices)
    np.testing.assert_allclose(val, c.data, rtol=1e-12)
    assert pos.dtype == np.int64 and val.dtype == np.float64


def test_i1_bug_without_workaround_is_a_compile_error():
    text = spgemm(2, 2, 2, name="spgemm_no_workaround")
    unregister_pass("after_bufferization", WIDEN_I1.name)
    try:
        with pytest.raises(mb.CompileError) as info:
            mb.compile_module(text, PIPE)
    finally:
        register_pass("after_bufferization", WIDEN_I1)
    assert "integralElementType.getWidth() >= 8" in info.value.diagnostics
    assert "SIGABRT" in str(info.value)
    # the interpreter survived, and the same IR compiles with the workaround back in place
    fn = mb.compile_module(text, PIPE).function("spgemm_no_workaround")
    eye = sp.identity(2, format="csr")
    assert fn(*csr_buffers(eye), *csr_buffers(eye))[1].tolist() == [0, 1]


def test_sparsifier_assertion_is_a_compile_error():
    with pytest.raises(mb.CompileError) as info:
        mb.compile_module(DIA_SPMV, PIPE)
    assert info.value.stage == "sparsify"
    assert "Assertion" in info.value.diagnostics
    with pytest.raises(mb.CompileError, match="crashed in stage 'sparsify'"):
        mb.lower_stages(DIA_SPMV, PIPE)


def test_invalid_ir_reports_diagnostics():
    with pytest.raises(mb.CompileError) as info:
        mb.compile_module("func.func @f(%a: f64) -> f64 {\n  %0 = arith.addi %a, %a : f64\n  return %0 : f64\n}", PIPE)
    assert info.value.stage == "verify"
    assert "integer" in info.value.diagnostics


def test_pass_failure_reports_diagnostics():
    with pytest.raises(mb.CompileError) as info:
        mb.compile_module(spmv(2, 2), "builtin.module(no-such-pass)")
    assert "no-such-pass" in str(info.value)
    with pytest.raises(mb.CompileError, match="no public function|not lowered|llvm"):
        mb.compile_module("func.func private @f()", "builtin.module(canonicalize)")


def test_lower_stages_and_hooks():
    stages = mb.lower_stages(spmv(3, 3), PIPE)
    names = [n for n, _ in stages]
    assert names == ["input", "prepare", "sparsify", "widen-i1", "lower", "to-llvm"]
    assert "linalg.generic {indexing_maps" in stages[0][1] and "#sparse_tensor.encoding" in stages[0][1]
    assert "scf.for" in stages[2][1] and "linalg.generic {indexing_maps" not in stages[2][1]
    assert "llvm.func @_mlir_ciface_spmv" in stages[-1][1]
    before = PIPE.describe()
    register_pass("before_llvm", "builtin.module(canonicalize)", name="extra-canon")
    try:
        assert PIPE.describe() != before
        assert [n for n, _ in mb.lower_stages(spmv(3, 3), PIPE)][-2:] == ["extra-canon", "to-llvm"]
        with pytest.raises(ValueError, match="already registered"):
            register_pass("before_llvm", "builtin.module(cse)", name="extra-canon")
    finally:
        unregister_pass("before_llvm", "extra-canon")
    assert PIPE.describe() == before
    with pytest.raises(ValueError, match="hook point"):
        register_pass("nowhere", "builtin.module(cse)", name="x")


def test_pipeline_options_in_description():
    p = Pipeline(vl=8, reassociate_fp_reductions=True, enable_index_optimizations=True)
    d = p.describe()
    assert "vl=8" in d and "reassociate-fp-reductions=true" in d and "enable-simd-index32=true" in d
    assert hash(p) == hash(Pipeline(vl=8, reassociate_fp_reductions=True, enable_index_optimizations=True))
    with pytest.raises(ValueError):
        Pipeline(parallelization_strategy="everything")
    fn = mb.compile_module(spmv(7, 5), p).function("spmv")
    a = random_csr(7, 5, 0.5, seed=8)
    np.testing.assert_allclose(fn(*csr_buffers(a), np.ones(5), np.zeros(7)), a @ np.ones(5))


def _add_to_sub(text: str) -> str:
    return text.replace("arith.addf", "arith.subf")


def test_text_stage_at_hook_changes_code_and_key():
    text = spmv(4, 4, name="spmv_hooked")
    plain = mb.compile_module(text, PIPE)
    register_pass("before_sparsification", _add_to_sub, name="add-to-sub")
    try:
        hooked = mb.compile_module(text, PIPE)
    finally:
        unregister_pass("before_sparsification", "add-to-sub")
    assert hooked is not plain and hooked.key != plain.key
    a = random_csr(4, 4, 0.6, seed=6)
    x = np.arange(4.0)
    np.testing.assert_allclose(hooked.function("spmv_hooked")(*csr_buffers(a), x, np.zeros(4)), -(a @ x))
    np.testing.assert_allclose(plain.function("spmv_hooked")(*csr_buffers(a), x, np.zeros(4)), a @ x)
    assert mb.compile_module(text, PIPE) is plain


def test_stage_validation():
    with pytest.raises(ValueError, match="exactly one"):
        mb.Stage("x")
    with pytest.raises(ValueError, match="builtin.module"):
        mb.Stage("x", passes="canonicalize")
    with pytest.raises(ValueError, match="duplicate"):
        mb.compile_module(spmv(2, 2), [mb.Stage("a", passes="builtin.module(cse)")] * 2)


DOUBLE = """
func.func @double(%x: memref<?xf64>, %y: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %w = arith.addf %v, %v : f64
    memref.store %w, %y[%i] : memref<?xf64>
  }
  return
}
"""


def test_rebind_same_swaps_the_data_pointer_only():
    fn = mb.compile_module(DOUBLE, PIPE).function("double")
    x, y = np.arange(4.0), np.zeros(4)
    call = fn.bind(x, y)
    assert call() is None and np.array_equal(y, 2 * x)
    for _ in range(3):  # fresh outputs and inputs of the same shape and dtype: only the pointer changes
        x2, y2 = np.random.default_rng(0).random(4), np.empty(4)
        call.rebind_same(0, x2)
        call.rebind_same(1, y2)
        call()
        np.testing.assert_array_equal(y2, 2 * x2)
    # anything else goes through the checked rebind: a new shape is taken whole, bad arguments are refused
    x3, y3 = np.arange(6.0), np.zeros(6)
    call.rebind_same(0, x3)
    call.rebind_same(1, y3)
    call()
    np.testing.assert_array_equal(y3, 2 * x3)
    with pytest.raises(TypeError, match="dtype"):
        call.rebind_same(1, np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        call.rebind_same(1, np.zeros(12)[::2])
    with pytest.raises(TypeError, match="array"):
        call.rebind_same(1, [0.0] * 6)


def test_run_fresh_writes_into_each_fresh_output():
    fn = mb.compile_module(DOUBLE, PIPE).function("double")
    x = np.arange(5.0)
    call = fn.bind(x, np.zeros(5))
    outs = [np.empty(5) for _ in range(3)]
    for y in outs:  # each run writes its own output; the earlier ones keep their values
        assert call.run_fresh(1, y) is None
    for y in outs:
        np.testing.assert_array_equal(y, 2 * x)
    # another shape or dtype takes the checked rebind: taken whole, or refused
    y6 = np.empty(6)
    call.rebind_same(0, np.arange(6.0))
    call.run_fresh(1, y6)
    np.testing.assert_array_equal(y6, 2 * np.arange(6.0))
    with pytest.raises(TypeError, match="dtype"):
        call.run_fresh(1, np.empty(6, np.float32))
    with pytest.raises(ValueError, match="contiguous"):  # same shape and dtype, but strided: never pointed at
        call.run_fresh(1, np.empty(12)[::2])


def test_run_fresh_decodes_results_when_the_kernel_returns_them(spmv64):
    """A kernel returning memrefs never takes the unchecked path (its results may alias inputs)."""
    a = random_csr(7, 5, 0.5, seed=6)
    call = spmv64.bind(*csr_buffers(a), np.ones(5), np.zeros(7))
    y2 = np.zeros(7)
    call.run_fresh(4, y2)
    np.testing.assert_allclose(y2, a @ np.ones(5))


def test_rebind_same_keeps_result_aliasing(spmv64):
    """Kernels returning memrefs (which may alias inputs) always take the checked rebind."""
    a = random_csr(7, 5, 0.5, seed=6)
    x, y = np.ones(5), np.zeros(7)
    call = spmv64.bind(*csr_buffers(a), x, y)
    y2 = np.zeros(7)
    call.rebind_same(4, y2)
    assert call() is y2
    np.testing.assert_allclose(y2, a @ x)


ZERO_FILL = """
func.func @main(%out: memref<?xf64>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %n = memref.dim %out, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %z, %out[%i] : memref<?xf64>
  }
  return
}
"""


def test_host_triple_reaches_opt_and_llc():
    """Without a triple ``llc`` expands a zero-fill loop's ``llvm.memset`` into a byte-at-a-time loop; with the
    host's triple (in the cache key too) it calls the C library's memset."""
    from mlir_bridge import toolchain
    from mlir_bridge.target import CPU

    triple = toolchain.host_triple()
    assert triple and f"llc={triple}" in CPU.fingerprint() and CPU.effective_triple() == triple
    mod = mb.compile_module(ZERO_FILL, Pipeline())
    out = np.full(1000, np.nan)
    mod.function("main")(out)
    assert not out.any()
    assert b"memset" in open(mod.path, "rb").read()


@pytest.mark.parametrize("in_child", [True, False])
def test_llvm_ir_from_the_compile_child_or_mlir_translate(in_child, monkeypatch):
    """The CPU target takes the LLVM IR the compile child translated (``llvm.ll``, no ``mlir-translate``
    process); a target that does not (``translate_in_child=False``, the CUDA one) runs ``mlir-translate``.
    Both give a module that computes the same result."""
    import dataclasses

    from mlir_bridge import target as tgt_mod
    from mlir_bridge.target import CPU

    ran = []
    real = tgt_mod._run
    monkeypatch.setattr(tgt_mod, "_run", lambda stage, cmd: ran.append(stage) or real(stage, cmd))
    monkeypatch.setenv("UST_MLIR_CACHE", "0")  # compile, never load from disk
    target = CPU if in_child else dataclasses.replace(CPU, name="cpu-translate", translate_in_child=False)
    fn = f"zero_fill_{in_child}"  # a text of its own: never in the memory cache yet
    mod = mb.compile_module(ZERO_FILL.replace("@main", f"@{fn}"), Pipeline(), target=target)
    out = np.full(100, np.nan)
    mod.function(fn)(out)
    assert not out.any()
    assert ("translate" in ran) is not in_child and "llc" in ran
