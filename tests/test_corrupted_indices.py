"""Index buffers corrupted in place after an operation: the next call never crashes.

Every format family and lowering path runs once on valid buffers, then its coordinates are set out of range
(too large, negative) or its positions made non-monotone and past the end, in place, and the operation runs
again. It must raise ValueError or give a finite result. The calls run in a child process (batched: one child
per corruption kind) so that a crash shows as a signal instead of ending the test run.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent('''
    import json, sys, warnings
    import numpy as np
    import scipy.sparse as sps
    import frontend as F
    from frontend import NamedFormats as N, Tensor

    warnings.simplefilter("ignore")
    KIND = sys.argv[1]
    rng = np.random.default_rng(5)
    D = rng.random((12, 10)) * (rng.random((12, 10)) < 0.4)
    D[3] = 0.0  # an empty row
    D[:, 7] = 0.0  # an empty column
    SQ = D[:10, :10].copy()
    x, X, X12 = np.ones(10), np.ones((10, 3)), np.ones((12, 3))
    WIDE = sps.random(600, 80000, density=0.004, random_state=7, format="csr")  # 192k entries
    fmt_name = {"CSR": "csr", "CSC": "csc", "COO": "coo"}

    def nm(d):  # at most 2 nonzeros in each group of 4 along the rows
        d = d.copy()
        for i in range(d.shape[0]):
            for g in range(0, d.shape[1], 4):
                nz = np.flatnonzero(d[i, g:g + 4])
                d[i, g + nz[2:]] = 0.0
        return d

    FORMATS = {"CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "DCSR": N.DCSR, "BSR": N.BSR((2, 2)),
               "DIAI": N.DIAI, "DIAJ": N.DIAJ, "DELTA": N.DELTA(8), "DELTA4": N.DELTA(4), "ELL": N.ELL,
               "NM": N.NM(2, 4)}

    def corrupt(t):
        """Writes KIND into t's index buffers in place (NumPy views: the tensor's own arrays)."""
        levels = t.tensor_format.levels
        for k in range(len(levels)):
            crd = t._crd[k]
            if crd is not None and crd.size:
                flat = crd.reshape(-1)
                if KIND == "large":
                    flat[0] = np.iinfo(flat.dtype).max
                    flat[-1] = min(np.iinfo(flat.dtype).max, 10 ** 6)
                elif KIND == "negative":
                    flat[flat.size // 2] = -3 if flat.dtype.kind == "i" else np.iinfo(flat.dtype).max
            pos = t._pos[k]
            if pos is not None and pos.size > 2 and KIND == "positions":
                flat = pos.reshape(-1)
                flat[1] = flat[-1] + 1000
                flat[-1] = flat[-1] + 7
                flat[flat.size // 2] = -5

    def cases():
        for name, fmt in FORMATS.items():
            d = nm(D) if name == "NM" else D
            yield f"{name} matvec", lambda d=d, fmt=fmt: Tensor.from_dense(d, fmt), lambda t: F.matmul(t, x)
            yield f"{name} matmul", lambda d=d, fmt=fmt: Tensor.from_dense(d, fmt), lambda t: F.matmul(t, X)
            yield f"{name} planned", lambda d=d, fmt=fmt: Tensor.from_dense(d, fmt), planned
            yield f"{name} to CSR", lambda d=d, fmt=fmt: Tensor.from_dense(d, fmt), lambda t: t.convert(N.CSR).val
        for name in ("CSR", "CSC", "COO"):
            fmt = FORMATS[name]
            mk = lambda fmt=fmt: Tensor.from_dense(SQ, fmt)
            yield f"{name} spgemm", mk, lambda t: F.matmul(t, t).to_dense()
            yield f"{name} add", mk, lambda t: F.add(t, t).to_dense()
            yield f"{name} multiply", mk, lambda t: F.multiply(t, t).to_dense()
            yield f"{name} sum rows", mk, lambda t: F.sum(t, 1)
            yield f"{name} sum cols", mk, lambda t: F.sum(t, 0)
            yield f"{name} max", mk, lambda t: F.max(t, 1)
            yield f"{name} softmax", mk, lambda t: F.softmax(t, 1).to_dense()
            yield f"{name} einsum", mk, lambda t: F.einsum("ij,jk->ik", t, X)
            yield f"{name} sddmm", mk, lambda t: F.einsum("ij,ik,jk->ij", t, X, X).to_dense()
            yield f"{name} to CSC", mk, lambda t: t.convert(N.CSC).val
            yield f"{name} to DIAI", mk, lambda t: t.convert(N.DIAI).val
            yield f"{name} to ELL", mk, lambda t: t.convert(N.ELL).val
            yield f"{name} to BSR", mk, lambda t: t.convert(N.BSR((2, 2))).val
            yield f"{name} to DELTA", mk, lambda t: t.convert(N.DELTA(8)).val
            for target in ("CSR", "CSC", "COO", "DIAJ"):  # the checked and the bounds-safe conversions
                yield f"{name} to {target} (nonsquare)", lambda fmt=fmt: Tensor.from_dense(D, fmt), \
                    lambda t, target=target: t.convert(FORMATS[target]).val
            yield f"{name} to BSR 2x3", lambda fmt=fmt: Tensor.from_dense(D, fmt), \
                lambda t: t.convert(N.BSR((2, 3))).val
            # parallel row ranges and the bucketed transpose (many columns, rows spanning many of them)
            yield f"{name} wide to CSC", lambda fmt=fmt: Tensor.from_package(WIDE.copy().asformat(fmt_name[name])), \
                lambda t: t.convert(N.CSC).val
            yield f"{name} wide to CSR", lambda fmt=fmt: Tensor.from_package(WIDE.copy().asformat(fmt_name[name])), \
                lambda t: t.convert(N.CSR).val
            yield f"{name} wide to BSR", lambda fmt=fmt: Tensor.from_package(WIDE.copy().asformat(fmt_name[name])), \
                lambda t: t.convert(N.BSR((4, 4))).val
            yield f"{name} solve", lambda fmt=fmt: Tensor.from_dense(SQ + 10 * np.eye(10), fmt), \\
                lambda t: F.solve(t, x)
        for kind in ("csr", "csc", "coo"):
            mk = lambda kind=kind: getattr(sps, kind + "_array")(D)
            yield f"scipy {kind} matvec", mk, lambda a: F.matmul(a, x)
            yield f"scipy {kind} add", mk, lambda a: F.add(a, a).toarray()
            yield f"scipy {kind} sum", mk, lambda a: F.sum(a, 1)
            yield f"scipy {kind} multiply", mk, lambda a: F.multiply(a, a).toarray()
            yield f"scipy {kind} sddmm", mk, lambda a: F.einsum("ij,ik,jk->ij", a, X12, X).toarray()
            yield f"scipy {kind} scaled sddmm", mk, lambda a: F.einsum("ij,ik,kj->ij", a, X12, X.T).toarray()
        for kind in ("csr", "csc"):  # the intersection's row-parallel chunks (more entries than one thread takes)
            big = sps.random(800, 800, density=0.5, random_state=3, format=kind)
            mk = lambda big=big: big.copy()
            yield f"scipy {kind} multiply, row chunks", mk, lambda a: F.multiply(a, a).toarray()
        mk = lambda: sps.csr_array(np.tril(SQ) + 10 * np.eye(10))
        yield "scipy csr triangular solve", mk, lambda a: F.solve(a, x)

    def planned(t):
        mm = F.Matmul(t, x)
        mm.plan()
        return mm

    def corrupt_scipy(a):
        buffers = [a.indices, a.indptr] if hasattr(a, "indptr") else list(a.coords)
        class View:  # corrupt() on the scipy object's arrays
            pass
        v = View()
        if hasattr(a, "indptr"):
            v.tensor_format = N.CSR
            v._crd, v._pos = [None, a.indices], [None, a.indptr]
        else:
            v.tensor_format = N.COO
            v._crd, v._pos = list(a.coords), [None, None]
        corrupt(v)

    def finite(r):
        if isinstance(r, F.Matmul):
            r = r.execute()
        if isinstance(r, Tensor):
            r = r.to_dense()
        if hasattr(r, "toarray"):
            r = r.toarray()
        return bool(np.isfinite(np.asarray(r, dtype=np.complex128)).all())

    for label, make, run in cases():
        print("CASE", label, flush=True)
        try:
            t = make()
            first = run(t)  # valid buffers: compiled, validated and remembered
            if not isinstance(first, F.Matmul):
                run(t)  # again: the per-call checks' copies (where a kernel is not bounds-safe) are in place
            if isinstance(first, F.Matmul):
                first.execute()
            (corrupt_scipy if not isinstance(t, Tensor) else corrupt)(t)
            again = first if isinstance(first, F.Matmul) else run(t)
            outcome = "finite" if finite(again) else "non-finite"
        except ValueError as err:
            outcome = "ValueError"
        except Exception as err:  # noqa: BLE001 - reported to the parent
            outcome = f"{type(err).__name__}: {err}"
        print("RESULT", json.dumps([label, outcome]), flush=True)
''')


@pytest.mark.parametrize("kind", ["large", "negative", "positions"])
def test_corrupted_index_buffers_never_crash(kind: str) -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, kind], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    lines = proc.stdout.splitlines()
    started = [ln[5:] for ln in lines if ln.startswith("CASE ")]
    results = dict(json.loads(ln[7:]) for ln in lines if ln.startswith("RESULT "))
    assert proc.returncode == 0, (f"child ended with {proc.returncode} during {started[-1] if started else '?'}:"
                                  f"\n{proc.stderr[-3000:]}")
    assert len(results) == len(started) > 60
    bad = {label: outcome for label, outcome in results.items() if outcome not in ("finite", "ValueError")}
    assert not bad, bad


SAFE_CONVERSIONS = [("CSR", "CSC"), ("CSC", "CSR"), ("COO", "CSR"), ("COO", "CSC"), ("CSR", "BSR"), ("CSC", "BSR"),
                    ("COO", "BSR"), ("CSR", "DIAI"), ("CSC", "DIAJ"), ("COO", "DIAI")]
CHECKED_CONVERSIONS = [("CSR", "CSR"), ("CSR", "COO"), ("CSR", "DELTA"), ("BSR", "CSR"), ("DIAI", "CSR")]


@pytest.mark.parametrize(("src", "dst"), SAFE_CONVERSIONS + CHECKED_CONVERSIONS)
def test_per_call_check_only_before_paths_that_are_not_bounds_safe(src: str, dst: str, monkeypatch) -> None:
    """The bounds-safe conversions skip the per-call index check (their results equal SciPy's); the others
    keep it."""
    import numpy as np
    import scipy.sparse as sps

    from frontend import NamedFormats as N, Tensor
    from frontend.storage import _convert

    formats = {"CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "BSR": N.BSR((2, 3)), "DIAI": N.DIAI, "DIAJ": N.DIAJ,
               "DELTA": N.DELTA(8)}
    dense = sps.random(9, 7, density=0.4, random_state=2).toarray()
    dense[4] = 0.0
    t = Tensor.from_dense(dense, formats[src])
    calls: list[object] = []
    real = _convert.validate_now
    monkeypatch.setattr(_convert, "validate_now", lambda x: calls.append(x) or real(x))
    out = t.convert(formats[dst])
    np.testing.assert_array_equal(out.to_dense(), dense)
    assert any(c is t for c in calls) == ((src, dst) in CHECKED_CONVERSIONS)
