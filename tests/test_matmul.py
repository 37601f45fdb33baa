"""frontend.matmul / Matmul against numpy and scipy on every MLIR-expressible format."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from concurrency import run_on_threads
from frontend import NamedFormats as N, Tensor, TensorFormat
from lowering.pipelines import Pipeline
from mlir_bridge import CompileError, Stage
from ops_util import close, dense, rand, tensor

FORMATS_2D = {
    "COO": N.COO, "CSR": N.CSR, "CSC": N.CSC, "DCSR": N.DCSR, "DCSC": N.DCSC,
    "BSR2x2": N.BSR((2, 2)), "BSR2x3": N.BSR((2, 3)), "BSR3x2": N.BSR((3, 2)),
    "BSC2x2": N.BSC((2, 2)), "BSC3x2": N.BSC((3, 2)), "Dense": N.Dense(2),
    "DenseColMajor": TensorFormat.parse("(i, j) -> (j : dense, i : dense)"),
}
FORMATS_3D = {"CSF3": N.CSF(3), "COO3": N.COO(3), "BatchedCSR": N.BatchedCSR, "Dense3": N.Dense(3)}

A = rand((6, 8), seed=1)
B = rand((8, 5), seed=2)


@pytest.mark.parametrize("name", FORMATS_2D)
def test_left_operand(name):
    r = F.matmul(tensor(A, FORMATS_2D[name]), B)
    assert isinstance(r, Tensor) and close(r, A @ B)


@pytest.mark.parametrize("name", FORMATS_2D)
def test_right_operand(name):
    r = F.matmul(A, tensor(B, FORMATS_2D[name]))
    assert close(r, A @ B)


@pytest.mark.parametrize("name", FORMATS_2D)
def test_sparse_times_sparse(name):
    fmt = FORMATS_2D[name]
    r = F.matmul(tensor(A, fmt), tensor(B, fmt))
    assert close(r, A @ B)
    if not fmt.is_dense:
        assert r.is_sparse


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("kind", ["csr", "csc"])
def test_spgemm_entries_match_scipy(kind, index_type):
    """CSR x CSR -> CSR (CSC x CSC -> CSC): same positions, coordinates and values as scipy."""
    a = getattr(sp, f"{kind}_array")(A)
    b = getattr(sp, f"{kind}_array")(B)
    for m in (a, b):
        m.indptr, m.indices = m.indptr.astype(index_type), m.indices.astype(index_type)
    r = F.matmul(a, b)
    assert type(r) is type(a) and r.format == kind
    ref = getattr(sp, f"{kind}_array")(a @ b)
    ref.sort_indices()
    np.testing.assert_array_equal(r.indptr, ref.indptr)
    np.testing.assert_array_equal(r.indices, ref.indices)
    np.testing.assert_allclose(r.data, ref.data, rtol=1e-12)
    assert r.indices.dtype == index_type


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize("shapes", [((40, 300, 2000), (0.01, 0.002)), ((4, 50, 5000), (0.2, 0.004)),
                                    ((3, 20, 70000), (0.5, 0.0005))],
                         ids=["32 words", "2 summary groups", "18 summary groups"])
def test_spgemm_wide_rows_sorted(kind, shapes):
    """Rows much sparser than the column count: the SpGEMM kernel's two-level bitmap over many words and
    summary groups still writes every row in column order."""
    (m, k, n), (da, db) = shapes
    if kind == "csc":
        m, n = n, m
    a = getattr(sp, f"{kind}_array")(sp.random_array((m, k), density=da if kind == "csr" else db, random_state=1))
    b = getattr(sp, f"{kind}_array")(sp.random_array((k, n), density=db if kind == "csr" else da, random_state=2))
    r = F.matmul(a, b)
    ref = getattr(sp, f"{kind}_array")(a @ b)
    ref.sort_indices()
    assert r.has_sorted_indices or np.all(np.diff(r.indices[r.indptr[0]:r.indptr[1]]) > 0)
    np.testing.assert_array_equal(r.indptr, ref.indptr)
    np.testing.assert_array_equal(r.indices, ref.indices)
    np.testing.assert_allclose(r.data, ref.data, rtol=1e-12)
    assert F.Matmul(a, b).path == f"kernel:spgemm-{kind}"


def test_default_output_format_follows_left_operand():
    assert F.matmul(tensor(A, N.DCSR), tensor(B, N.CSR)).tensor_format == N.DCSR
    assert F.matmul(tensor(A, N.CSC), tensor(B, N.CSR)).tensor_format == N.CSC
    assert F.matmul(tensor(A, N.BSR((2, 2))), tensor(B, N.BSR((2, 2)))).tensor_format == N.CSR
    r = F.matmul(tensor(A, N.CSR), tensor(B, N.CSR), out_format=N.DCSC)
    assert r.tensor_format == N.DCSC and close(r, A @ B)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_dtypes_and_index_types(dtype, index_type):
    a, b = rand((5, 7), dtype=dtype, seed=3), rand((7, 4), dtype=dtype, seed=4)
    r = F.matmul(tensor(a, N.CSR, index_type), b)
    assert r.dtype == dtype and close(r, a @ b, dtype)
    r = F.matmul(tensor(a, N.CSR, index_type), tensor(b, N.CSR, index_type))
    assert r.dtype == dtype and r.index_type == index_type and close(r, a @ b, dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_values(dtype):
    a, b = rand((5, 7), dtype=dtype, seed=5), rand((7, 4), dtype=dtype, seed=6)
    np.testing.assert_array_equal(F.matmul(sp.csr_array(a), b), a @ b)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_alpha_beta_transposes(ta, tb):
    a = A.T.copy() if ta else A
    b = B.T.copy() if tb else B
    c = rand((6, 5), density=1.0, seed=7)
    expect = 2.5 * A @ B + 0.5 * c
    got = F.matmul(sp.csr_array(a), b, c, alpha=2.5, beta=0.5, transpose_a=ta, transpose_b=tb)
    assert got is c and np.allclose(c, expect)


def test_beta_values():
    c0 = rand((6, 5), density=1.0, seed=8)
    for beta, expect in ((None, A @ B + c0), (1, A @ B + c0), (0, A @ B), (-1.5, A @ B - 1.5 * c0)):
        c = c0.copy()
        assert F.matmul(sp.csr_array(A), B, c, beta=beta) is c
        assert np.allclose(c, expect), beta


def test_transposed_sparse_times_sparse():
    a = sp.csr_array(A)
    r = F.matmul(a, a, transpose_b=True)
    assert r.format == "csr" and np.allclose(r.toarray(), A @ A.T)
    r = F.matmul(a, a, transpose_a=True)
    assert np.allclose(dense(r), A.T @ A)


def test_vectors():
    x, y = rand((8,), density=1.0, seed=9), rand((6,), density=1.0, seed=10)
    a = sp.csr_array(A)
    assert np.allclose(F.matmul(a, x), A @ x)                     # SpMV
    assert np.allclose(F.matmul(y, a), y @ A)                     # vector x matrix
    assert np.isclose(F.matmul(x, x), x @ x)                      # dot
    sx = tensor(rand((8,), seed=11, empty_row=False), N.SparseVector)
    assert np.isclose(F.matmul(sx, x).val, dense(sx) @ x)         # sparse dot (Tensor in, Tensor out)
    r = F.matmul(a, tensor(x, N.SparseVector))
    assert r.is_sparse and np.allclose(dense(r), A @ x)             # sparse x sparse vector -> sparse


def test_batched_broadcasting():
    b3 = rand((3, 8, 5), seed=12)
    a3 = rand((3, 6, 8), seed=13)
    assert np.allclose(dense(F.matmul(tensor(A, N.CSR), b3)), A @ b3)      # 2-D sparse x batch
    assert np.allclose(dense(F.matmul(a3, tensor(B, N.CSR))), a3 @ B)      # batch x 2-D sparse
    assert np.allclose(F.matmul(rand((1, 6, 8), seed=14), b3), rand((1, 6, 8), seed=14) @ b3)  # size-1 batch
    with pytest.raises(ValueError, match="do not broadcast"):
        F.matmul(rand((2, 6, 8)), b3)


@pytest.mark.parametrize("name", FORMATS_3D)
def test_3d_formats(name):
    a3, b3 = rand((2, 3, 4), seed=15), rand((2, 4, 5), seed=16)
    ta = tensor(a3, FORMATS_3D[name])
    assert close(F.matmul(ta, b3), a3 @ b3)
    assert close(F.matmul(b3.transpose(0, 2, 1).copy(), tensor(a3.transpose(0, 2, 1).copy(), FORMATS_3D[name])),
                 b3.transpose(0, 2, 1) @ a3.transpose(0, 2, 1))
    assert close(F.matmul(ta, tensor(b3, FORMATS_3D[name])), a3 @ b3)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0), (1, 1), (3, 3)])
def test_empty_and_tiny(shape):
    z = np.zeros(shape)
    z1 = rand(shape, density=1.0, empty_row=False) if shape == (1, 1) else z
    r = F.matmul(sp.csr_array(z1), np.ones((shape[1], 2)))
    assert r.shape == (shape[0], 2) and np.allclose(r, z1 @ np.ones((shape[1], 2)))
    r = F.matmul(sp.csr_array(z1), sp.csr_array(np.ones((shape[1], 2))))
    assert r.shape == (shape[0], 2) and np.allclose(r.toarray(), z1 @ np.ones((shape[1], 2)))


def test_packages_round_trip():
    torch = pytest.importorskip("torch")
    ta = torch.from_numpy(A).to_sparse_csr()
    r = F.matmul(ta, torch.from_numpy(B))
    assert isinstance(r, torch.Tensor) and np.allclose(r.numpy(), A @ B)
    r = F.matmul(ta, torch.from_numpy(B).to_sparse_csr())
    assert isinstance(r, torch.Tensor) and r.layout == torch.sparse_csr and np.allclose(r.to_dense().numpy(), A @ B)
    r = F.matmul(sp.csr_array(A), B)
    assert isinstance(r, np.ndarray)
    r = F.matmul(tensor(A, N.CSR), tensor(B, N.Dense(2)))
    assert isinstance(r, Tensor) and close(r, A @ B)


def test_matmul_object_plan_execute_reset():
    a, x = sp.csr_array(A), rand((8,), density=1.0, seed=17)
    with F.Matmul(a, x) as mm:
        assert mm.path == "emitter-rows" and "scf.for" in mm.mlir
        sparsifier = F.Matmul(a, x, pipeline=Pipeline())  # a custom pipeline keeps MLIR's sparsifier
        assert sparsifier.path == "sparsifier" and np.allclose(sparsifier.execute(), A @ x)
        assert "linalg.generic" in sparsifier.mlir and "#sparse_tensor.encoding" in sparsifier.mlir
        assert mm.plan() is mm
        assert np.allclose(mm.execute(), A @ x)
        x2 = x * 2
        mm.reset_operands(b=x2)
        assert np.allclose(mm.execute(), 2 * A @ x)
        a2 = sp.csr_array(A * 3)
        mm.reset_operands(a=a2)
        assert np.allclose(mm.execute(), 6 * A @ x)
        with pytest.raises(ValueError, match="same formats"):
            mm.reset_operands(b=np.ones((8, 1)))
    with pytest.raises(RuntimeError, match="released"):
        mm.execute()


def test_matmul_object_updates_c_in_place():
    c = np.ones((6, 5))
    mm = F.Matmul(sp.csr_array(A), B, c, alpha=2.0, beta=1.0)
    assert mm.execute() is c
    assert np.allclose(c, 2 * A @ B + 1)
    mm.execute()
    assert np.allclose(c, 4 * A @ B + 1)


def test_errors():
    a = sp.csr_array(A)
    with pytest.raises(ValueError, match="inner dimensions"):
        F.matmul(a, np.ones((7, 2)))
    promoted = F.matmul(a, B.astype(np.float32))  # numpy promotion: float64 result
    assert promoted.dtype == np.float64
    np.testing.assert_allclose(promoted, A @ B.astype(np.float32))
    with pytest.raises(ValueError, match="c has shape"):
        F.matmul(a, B, np.ones((5, 5)))
    with pytest.raises(TypeError, match="dtype mismatch"):
        F.matmul(a, B, np.ones((6, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="beta needs c"):
        F.matmul(a, B, beta=2.0)
    half = F.matmul(A.astype(np.float16), B.astype(np.float16))  # float32 sums, float16 result
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, (A.astype(np.float16).astype(np.float32) @ B.astype(np.float16)), rtol=2e-2)
    with pytest.raises(TypeError, match="not supported"):
        F.matmul(A.astype(np.uint16), B.astype(np.uint16))
    with pytest.raises(TypeError):
        F.matmul(a, "not an array")
    with pytest.raises(ValueError, match="at least one dimension"):
        F.matmul(np.array(2.0), B)
    # a block out_format is computed unblocked and converted (no longer refused)
    r = F.matmul(tensor(A, N.CSR), tensor(B, N.CSR), out_format=N.BSR((2, 2)))
    assert r.tensor_format == N.BSR((2, 2)) and np.allclose(r.to_dense(), A @ B)


def test_invalid_buffers_are_refused_before_the_kernel():
    t = tensor(A, N.CSR)
    bad = Tensor(N.CSR, t.shape, t._pos, [None, t.crd(1) + 100], t.val, index_type=t.index_type)
    with pytest.raises(ValueError):
        F.matmul(bad, B)


def _abort(module) -> None:
    os.abort()


def test_uncompilable_kernel_raises_python_error():
    """A pipeline that cannot reach LLVM, and one whose stage aborts the compiling process, both raise
    CompileError; the interpreter lives on."""
    a = sp.csr_array(A)
    with pytest.raises(CompileError):
        F.matmul(a, B, pipeline="builtin.module(sparse-assembler{direct-out=true})")
    stages = list(Pipeline().stages())
    with pytest.raises(CompileError, match="crashed"):
        F.matmul(a, B, pipeline=stages[:1] + [Stage("abort", module_fn=_abort)] + stages[1:])
    assert np.allclose(F.matmul(a, B), A @ B)


def test_threads():
    mats = [(sp.csr_array(rand((6, 8), seed=s)), rand((8, k), seed=s + 1)) for s, k in ((20, 3), (30, 4))]

    def work(i: int) -> None:
        a, b = mats[i % 2]
        for _ in range(20):
            assert np.allclose(F.matmul(a, b), a.toarray() @ b)
            r = F.matmul(a, a.T.tocsr() if i % 2 else sp.csr_array(a.toarray().T))
            assert np.allclose(r.toarray(), a.toarray() @ a.toarray().T)

    errors = run_on_threads(work, 6)
    assert not errors, errors


def test_print_mlir_and_cache_info(capsys):
    a = sp.csc_array(A)  # the sparsifier's stages (CSR x dense runs the emitter's row-range kernel)
    F.print_mlir(a, B, stage="linalg")
    out = capsys.readouterr().out
    assert "linalg.generic" in out and "llvm.func" not in out
    mm = F.Matmul(a, B)
    mm.print_mlir()
    out = capsys.readouterr().out
    for needle in ("linalg", "sparsified", "llvm", "llvm.func"):
        assert needle in out
    mm.plan()  # a planned kernel of its own: the count must not depend on earlier tests
    info = F.cache_info()
    assert info["plans"] >= 1 and "disk_hits" in info


def test_disk_cache_across_processes(tmp_path):
    script = (
        "import numpy as np, scipy.sparse as sp, frontend as F\n"
        "a = sp.csr_array(np.eye(7) * 2.0)\n"
        "y = F.matmul(a, np.arange(7.0))\n"
        "assert np.allclose(y, 2 * np.arange(7.0))\n"
        "i = F.cache_info(); print(i['disk_hits'], i['misses'])\n")
    env = dict(os.environ, UST_MLIR_CACHE_DIR=str(tmp_path / "cache"))
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=root,
                           timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"]
    assert runs[1].stdout.split() == ["1", "0"]
