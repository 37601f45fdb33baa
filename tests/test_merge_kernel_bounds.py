"""The union and intersection row kernels (``add``/``sub``/``mul`` of two CSR matrices) on arbitrary index
buffers, in one thread and in row chunks: random valid operands give SciPy's answer; random position and
coordinate buffers (non-monotone, past the end, negative, out of range) never make a kernel read or write
outside its buffers: the result is a valid matrix (non-decreasing positions, coordinates inside it) or a
ValueError names the positions. The kernels run in a child process,
so a crash shows as a signal instead of ending the test run.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent('''
    import sys, warnings
    import numpy as np
    import scipy.sparse as sps
    from frontend.ops import _elementwise_fast as E

    warnings.simplefilter("ignore")
    CHUNKS = int(sys.argv[1])
    if CHUNKS > 1:  # row chunks on every call, whatever the size
        E.MERGE_PARALLEL_MIN = E.INTERSECT_PARALLEL_MIN = 0
        E.cpu_count = lambda: CHUNKS
    rng = np.random.default_rng(CHUNKS)
    ELEMS = {np.float64: ("f64", "float"), np.float32: ("f32", "float"), np.int64: ("i64", "int")}
    REF = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a.multiply(b)}

    def operand(rows, cols, density, dtype, index):
        a = sps.random_array((rows, cols), density=density, rng=rng, format="csr", dtype=np.float64)
        a = sps.csr_array(a.astype(dtype))
        return sps.csr_array((a.data, a.indices.astype(index), a.indptr.astype(index)), shape=a.shape)

    checked = refused = 0
    for trial in range(60):  # valid operands: SciPy's answer
        rows, cols = int(rng.integers(0, 40)), int(rng.integers(1, 40))
        dtype = list(ELEMS)[trial % 3]
        index = np.int32 if trial % 2 else np.int64
        a, b = (operand(rows, cols, rng.random() * 0.5, dtype, index) for _ in range(2))
        for op in ("add", "sub", "mul"):
            pos, crd, val = E.merge_buffers(op, (a.indptr, a.indices, a.data), (b.indptr, b.indices, b.data),
                                            *ELEMS[dtype], 32 if index is np.int32 else 64, cols)
            got = sps.csr_array((val, crd, pos), shape=a.shape).toarray()
            assert np.array_equal(got, REF[op](a, b).toarray()), (op, rows, cols, dtype)
            checked += 1
    for trial in range(300):  # corrupted operands: any result, coordinates in range, no crash
        rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 30))
        a, b = (operand(rows, cols, 0.4, np.float64, np.int32) for _ in range(2))
        for m in (a, b):
            kind = trial % 4
            if kind == 0 and m.indptr.size:  # positions anywhere, in any order
                m.indptr[:] = rng.integers(-5, m.nnz + 20, m.indptr.size)
            elif kind == 1 and m.nnz:  # coordinates out of range and negative
                m.indices[rng.integers(0, m.nnz, 3)] = rng.integers(-2**31, 2**31 - 1, 3)
            elif kind == 2:  # rows overlapping the whole buffer
                m.indptr[1::2] = m.nnz
                m.indptr[2::2] = 0
            elif m.nnz:  # positions far past the end, coordinates reversed
                m.indptr[-1] = 2**31 - 1
                m.indices[:] = m.indices[::-1]
        for op in ("add", "mul"):
            checked += 1
            try:
                pos, crd, val = E.merge_buffers(op, (a.indptr, a.indices, a.data), (b.indptr, b.indices, b.data),
                                                "f64", "float", 32, cols)
            except ValueError as err:  # chunks that found positions out of order
                assert "not non-decreasing" in str(err)
                refused += 1
                continue
            assert np.all(np.diff(pos) >= 0) and pos[0] == 0 and pos[-1] == crd.size, (op, trial)
            assert pos.size == rows + 1 and crd.size == val.size <= a.data.size + b.data.size
            assert ((crd >= 0) & (crd < cols)).all(), (op, trial)
    print("CHECKED", checked, "REFUSED", refused, file=sys.stderr)
    print("CHECKED", checked)
''')


def _run(chunks: int) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(chunks)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CHECKED 780" in proc.stdout


def test_merge_kernels_one_thread() -> None:
    _run(1)


def test_merge_kernels_in_row_chunks() -> None:
    _run(3)
