"""The extension API: registered kernels, passes, per-call pipelines and level rules change what runs
(each test proves its extension ran), and bad registrations raise clear errors."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import lowering
from frontend import Matmul, NamedFormats as NF, Tensor, TensorFormat, matmul
from lowering.custom_pipeline import with_stages
from lowering.emitter import rules
from ops_util import SEVENS_TEMPLATE

ROOT = pathlib.Path(__file__).resolve().parents[1]


def tridiag(n: int = 8) -> np.ndarray:
    return np.diag(np.arange(1.0, n + 1)) + np.diag(np.full(n - 1, -1.0), 1) + np.diag(np.full(n - 1, 0.5), -1)


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----- kernels ---------------------------------------------------------------------------------------
def test_worked_example_dia_spmv_kernel_runs():
    ex = _example("custom_kernel")
    a = tridiag(50)
    x = np.linspace(-1, 1, 50)
    t = Tensor.from_dense(a, NF.DIAI)
    ex.register()
    try:
        mm = Matmul(t, x)
        np.testing.assert_allclose(mm.execute().to_dense(), a @ x, atol=1e-12)
        assert mm.path == "kernel:dia-spmv"
        assert "arith.maxsi" in mm.mlir and "%ndiag" in mm.mlir      # the hand-written text was compiled
        assert Matmul(t, x, alpha=2.0).path == "emitter-rows"         # when= keeps other cases generated
        assert Matmul(Tensor.from_dense(a, NF.DIAJ), x).path == "emitter-rows"   # pattern: DIA-I only
    finally:
        lowering.unregister_kernel("dia-spmv")
    assert Matmul(t, x).path == "emitter-rows"


def test_template_kernel_changes_what_runs_and_cache_follows_registry():
    a = tridiag(6)
    t = Tensor.from_dense(a, NF.SkewDIAI)
    x = np.ones(6)
    before = matmul(t, x).to_dense()
    lowering.register_kernel("matvec", (NF.SkewDIAI, "dense"), SEVENS_TEMPLATE, name="sevens")
    try:
        np.testing.assert_array_equal(matmul(t, x).to_dense(), np.full(6, 7.0))   # the template ran
    finally:
        lowering.unregister_kernel("sevens")
    np.testing.assert_allclose(matmul(t, x).to_dense(), before)                    # and is gone again


def test_bad_kernel_registrations():
    with pytest.raises(ValueError, match="unknown op"):
        lowering.register_kernel("spmv!", (NF.DIAI, "dense"), lambda c: "")
    with pytest.raises(TypeError, match="pattern"):
        lowering.register_kernel("matvec", "dense", lambda c: "")
    with pytest.raises(TypeError, match="pattern entry"):
        lowering.register_kernel("matvec", (NF.DIAI, 3), lambda c: "")
    with pytest.raises(TypeError, match="builder"):
        lowering.register_kernel("matvec", (NF.DIAI, "dense"), 42)
    with pytest.raises(ValueError, match=r"func.func @\$name"):
        lowering.register_kernel("matvec", (NF.DIAI, "dense"), "module {}")
    with pytest.raises(KeyError, match="no kernel named"):
        lowering.unregister_kernel("nope")
    lowering.register_kernel("matvec", (NF.DIAI, "dense"), lambda c: "", name="dup")
    try:
        with pytest.raises(ValueError, match="already|registered"):
            lowering.register_kernel("matvec", (NF.DIAI, "dense"), lambda c: "", name="dup")
    finally:
        lowering.unregister_kernel("dup")


def test_bad_template_placeholder_is_reported():
    t = Tensor.from_dense(tridiag(4), NF.DIAJ)
    lowering.register_kernel("matvec", (NF.DIAJ, "dense"), "func.func @$name() { $nope }", name="bad-tpl")
    try:
        with pytest.raises(ValueError, match="placeholder 'nope'"):
            matmul(t, np.ones(4))
    finally:
        lowering.unregister_kernel("bad-tpl")


def test_op_names():
    from frontend.ops._contractions import matmul_op
    from frontend.ops._options import MatmulOptions

    t = Tensor.from_dense(tridiag(4), NF.DIAI)
    assert lowering.op_name(matmul_op(t, np.ones(4), None, MatmulOptions()).describe()) == "matvec"
    assert lowering.op_name(matmul_op(t, np.ones((4, 2)), None, MatmulOptions()).describe()) == "matmul"
    assert lowering.op_name(matmul_op(np.ones(4), t, None, MatmulOptions()).describe()) == "vecmat"


# ----- passes ----------------------------------------------------------------------------------------
def mul_to_add(text: str) -> str:
    """A (deliberately wrong) pass whose effect is visible in the results: products become sums."""
    return text.replace("arith.mulf", "arith.addf")


def _sum_of_stored(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.array([sum(a[i, j] + x[j] for j in np.flatnonzero(a[i])) for i in range(a.shape[0])])


@pytest.mark.parametrize("fmt", [NF.DIAI, NF.CSC], ids=["emitter", "sparsifier"])
def test_registered_pass_runs_on_both_paths(fmt):
    a = tridiag(7)
    x = np.linspace(1, 2, 7)
    t = Tensor.from_dense(a, fmt)
    # the emitter adds over stored entries; the sparsifier sees a + x as a union over every column
    want = _sum_of_stored(a, x) if fmt.mlir_support() == "emitter" else a.sum(axis=1) + x.sum()
    lowering.register_pass("before_sparsification", mul_to_add, name="mul-to-add")
    try:
        np.testing.assert_allclose(matmul(t, x).to_dense(), want)
    finally:
        lowering.unregister_pass("before_sparsification", "mul-to-add")
    np.testing.assert_allclose(matmul(t, x).to_dense(), a @ x)


def test_per_call_pipeline_is_part_of_the_key():
    a = tridiag(5)
    x = np.linspace(1, 2, 5)
    t = Tensor.from_dense(a, NF.DIAJ)
    pipe = with_stages(before_sparsification=[mul_to_add])
    np.testing.assert_allclose(Matmul(t, x, pipeline=pipe).execute().to_dense(), _sum_of_stored(a, x))
    np.testing.assert_allclose(Matmul(t, x).execute().to_dense(), a @ x)
    np.testing.assert_allclose(matmul(t, x, pipeline=pipe).to_dense(), _sum_of_stored(a, x))


def test_custom_pass_example_stamps_the_module():
    ex = _example("custom_pass")
    t = Tensor.from_dense(tridiag(6), NF.DELTA(4))
    mm = Matmul(t, np.ones(6), pipeline=with_stages(after_bufferization=[ex.stamp_loop_count]))
    assert "ust.loops = " in dict(mm.stages())["lower"]


def test_bad_pass_registrations():
    with pytest.raises(ValueError, match="unknown hook point"):
        lowering.register_pass("after_everything", "builtin.module()", name="x")
    with pytest.raises(ValueError, match="unknown hook point"):
        with_stages(after_everything=["builtin.module()"])
    with pytest.raises(ValueError, match="builtin.module"):
        with_stages(before_llvm=["canonicalize"])


# ----- level rules ------------------------------------------------------------------------------------
def reversed_compressed(ctx, k, parent, carry, inner):
    """Walks each compressed segment from its last entry to its first."""
    b, args = ctx.b, ctx.args[k]
    lo = b.load_index(args.pos, ctx.at(parent))
    hi = b.load_index(args.pos, ctx.at(b.add(parent, b.index(1))))
    last = b.sub(b.add(lo, hi), b.index(1))

    def entry(t, c, lanes):
        p = b.op(f"arith.subi {last}, {t} : index", "index", "rev")   # p = lo + hi - 1 - t
        return inner(p, b.load_index(args.crd, ctx.at(p)), c, 1)

    return ctx.loop(k, lo, hi, carry, entry)


@pytest.mark.parametrize("fmt", [NF.DELTA(8), NF.CSR], ids=["delta", "compressed"])
def test_gather_vectorization_flag(fmt):
    name = fmt.levels[-1].format.value
    a = tridiag(37)
    a[5] = 0.0
    a[7, :] = np.arange(37.0)                                       # one long row (vector body + tail)
    x = np.linspace(-1, 1, 37)
    t = Tensor.from_dense(a, fmt)
    rule = rules.rule_for(name)
    force = lowering.register_kernel("*", ("*", "*"), lowering.emitter.emit_contraction, name="force",
                                     when=lambda c: sum(s.encoded for s in c.inputs) == 1)
    lowering.register_level_rule(name, rule, gather=True, replace=True)
    try:
        mm = Matmul(t, x)
        assert "vector.gather" in mm.mlir
        np.testing.assert_allclose(mm.execute().to_dense(), a @ x, atol=1e-12)
        if name == "delta":  # bit-packed gaps are decoded one at a time, even with gathers on
            mm = Matmul(Tensor.from_dense(a, NF.DELTA(4)), x)
            assert "vector.gather" not in mm.mlir and "arith.shrui" in mm.mlir
            np.testing.assert_allclose(mm.execute().to_dense(), a @ x, atol=1e-12)
    finally:
        lowering.register_level_rule(name, rule, replace=True)
        lowering.unregister_kernel(force.name)
    assert "vector.gather" not in Matmul(t, x).mlir


def test_replacing_a_level_rule():
    fmt = TensorFormat.parse("(i, j) -> (i : compressed, j : delta(3))")
    a = tridiag(9)
    a[4] = 0.0
    x = np.linspace(-1, 1, 9)
    t = Tensor.from_dense(a, fmt)
    original = rules.rule_for("compressed")
    with pytest.raises(ValueError, match="replace=True"):
        lowering.register_level_rule("compressed", reversed_compressed)
    lowering.register_level_rule("compressed", reversed_compressed, replace=True)
    try:
        mm = Matmul(t, x)
        assert "%rev" in mm.mlir                                   # the new rule generated the loop
        np.testing.assert_allclose(mm.execute().to_dense(), a @ x, atol=1e-12)
    finally:
        lowering.register_level_rule("compressed", original, replace=True)
    assert "%rev" not in Matmul(t, x).mlir
    with pytest.raises(TypeError, match="callable"):
        lowering.register_level_rule("compressed", 3, replace=True)
