"""Operations on extreme extents (0, 1, 2**31 - 1, 2**31, 2**40, 2**62) with a few stored entries, in every format
family: each either gives the answer computed from the entries (dictionaries, no kernel) or raises
``MemoryError``/``ValueError`` with a message, and none kills the process. The cases run in a child process under
an address-space limit (a kernel that allocates by the extents would fail there), many per child."""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import frontend as F
from frontend import Tensor

ROOT = Path(__file__).resolve().parents[1]
EXTENTS = (0, 1, 2**31 - 1, 2**31, 2**40, 2**62)
FORMATS = ("CSR", "CSC", "COO", "DCSR", "BSR((2, 2))", "DIAI", "DELTA(8)", "ELL", "NM(2, 4)")
OPERATIONS = ("matmul", "einsum", "add", "multiply", "sum", "sum1", "max", "softmax", "convert", "solve")
LIMIT = 6 << 30  # address space of the child: far below what an extent-sized allocation needs

CHILD = r'''
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
import numpy as np
import frontend as F
from frontend import Tensor
from frontend.storage import entries

def build(fmt, shape, ents):
    ents = sorted(ents)
    rows = np.array([e[0] for e in ents], dtype=np.int64)
    cols = np.array([e[1] for e in ents], dtype=np.int64)
    vals = np.array([e[2] for e in ents], dtype=np.float64)
    t = Tensor.from_buffers("COO", shape, pos=[np.array([0, len(ents)], dtype=np.int64), None], crd=[rows, cols],
                            values=vals)
    return t if fmt == "COO" else t.convert(fmt)

def stored(x):
    """coordinates -> value of a result's nonzeros (a Tensor, an array or a scalar)."""
    if isinstance(x, Tensor):
        if not x.is_sparse:
            x = np.asarray(x.val)
        else:
            dims, vals = entries(x)
            out = {}
            for c, v in zip(zip(*[d.tolist() for d in dims]), np.asarray(vals).tolist()):
                out[c] = out.get(c, 0.0) + v
            return {c: v for c, v in out.items() if v != 0}
    a = np.asarray(x)
    return {tuple(int(i) for i in c): float(a[c]) for c in zip(*np.nonzero(a))} if a.ndim else {(): float(a)}

def same(got, want):
    keys = set(got) | set(want)
    return all(abs(got.get(k, 0.0) - want.get(k, 0.0)) <= 1e-9 * (1 + abs(want.get(k, 0.0))) for k in keys)

def run(case):
    a = build(case["fmt"], case["shape_a"], case["a"])
    op = case["op"]
    if op == "matmul":
        return F.matmul(a, build(case["fmt"], case["shape_b"], case["b"]))
    if op == "einsum":
        return F.einsum("ij,jk->ik", a, build(case["fmt"], case["shape_b"], case["b"]))
    if op in ("add", "multiply"):
        return getattr(F, op)(a, build(case["fmt"], case["shape_a"], case["b"]))
    if op == "sum":
        return F.sum(a)
    if op == "sum1":
        return F.sum(a, 1)
    if op == "max":
        return F.max(a)
    if op == "softmax":
        return F.softmax(a, 1)
    if op == "convert":
        return a.convert("COO")
    if op == "solve":
        return F.solve(a, np.ones(case["shape_a"][0]))
    raise AssertionError(op)

import time as _time
for case in json.loads(sys.stdin.read()):
    _t0 = _time.time()
    try:
        got = run(case)
    except (MemoryError, ValueError) as err:
        print(json.dumps({"case": case, "refused": f"{type(err).__name__}: {err}"}), flush=True)
        continue
    except Exception as err:
        print(json.dumps({"case": case, "error": f"{type(err).__name__}: {err}"}), flush=True)
        continue
    ok = same(stored(got), {tuple(k): v for k, v in case["want"]})
    print(json.dumps({"case": case, "seconds": _time.time() - _t0, "ok": ok}), flush=True)
'''.replace("ADDRESS_LIMIT", str(LIMIT))


# ----- the answers, from the entries alone -----------------------------------------------------------------------
def _dict(entries: list) -> dict:
    return {(i, j): v for i, j, v in entries}


def _expected(op: str, shape: tuple[int, int], a: list, b: list) -> dict | None:
    """coordinates -> value of the nonzeros of the answer; None when the operation must refuse (no answer)."""
    da, db = _dict(a), _dict(b)
    m, n = shape
    if op in ("matmul", "einsum"):
        out: dict = {}
        for (i, k), v in da.items():
            for (k2, j), w in db.items():
                if k == k2:
                    out[(i, j)] = out.get((i, j), 0.0) + v * w
        return out
    if op == "add":
        out = dict(da)
        for c, w in db.items():
            out[c] = out.get(c, 0.0) + w
        return out
    if op == "multiply":
        return {c: v * db[c] for c, v in da.items() if c in db}
    if op == "sum":
        return {(): sum(da.values())}
    if op == "sum1":
        out = {}
        for (i, _), v in da.items():
            out[(i,)] = out.get((i,), 0.0) + v
        return out
    if op == "max":
        if m * n == 0:
            return None
        top = max(da.values(), default=0.0)
        return {(): top if len(da) == m * n else max(top, 0.0)}
    if op == "softmax":
        out = {}
        for i in {i for i, _ in da}:
            row = {c: v for c, v in da.items() if c[0] == i}
            top = max(row.values())
            total = sum(np.exp(v - top) for v in row.values())
            out.update({c: float(np.exp(v - top) / total) for c, v in row.items()})
        return out
    if op == "convert":
        return da
    if op == "solve":
        return {(k,): 1.0 / v for (k, _), v in da.items()}
    raise AssertionError(op)


def _entries(rng: random.Random, shape: tuple[int, int], count: int) -> list:
    if 0 in shape:
        return []
    coords = {(rng.choice([0, shape[0] - 1]), rng.choice([0, 5 % shape[1], shape[1] - 1])) for _ in range(count)}
    return [[i, j, float(rng.randint(1, 4))] for i, j in sorted(coords)]


def case(rng: random.Random, op: str, fmt: str) -> dict:
    """One case of ``op`` on ``fmt`` operands: extents from :data:`EXTENTS`, up to two entries each."""
    m, n, k = (rng.choice(EXTENTS) for _ in range(3))
    if op == "solve":
        m = n = rng.choice((0, 1))
        a = [] if m == 0 else [[0, 0, float(rng.randint(1, 4))]]
    else:
        a = _entries(rng, (m, n), rng.randint(0, 2))
    shape_b = [n, k] if op in ("matmul", "einsum") else [m, n]
    b = _entries(rng, (shape_b[0], shape_b[1]), rng.randint(0, 2))
    want = _expected(op, (m, n), a, b)
    return {"op": op, "fmt": fmt, "shape_a": [m, n], "a": a, "shape_b": shape_b, "b": b,
            "want": None if want is None else [[list(c), v] for c, v in want.items()]}


def _run_child(batch: list[dict]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(batch), capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode >= 0, (f"the child died of signal {signal.Signals(-proc.returncode).name}; "
                                  f"last output:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(out) == len(batch), proc.stderr[-3000:]
    return out


def _check(results: list[dict]) -> None:
    for r in results:
        case = {k: r["case"][k] for k in ("op", "fmt", "shape_a", "shape_b", "a", "b")}
        assert "error" not in r, f"{case}: {r.get('error')}"
        if "refused" in r:
            assert len(r["refused"]) > 20, f"{case}: an unclear refusal {r['refused']!r}"
        elif r["case"]["want"] is None:
            pytest.fail(f"{case}: returned where the operation has no answer")
        else:
            assert r["ok"], f"{case}: wrong answer"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_extreme_shapes_in_a_child(seed):
    """Every operation on every format family, extents and entries drawn from ``seed``: one child per draw."""
    rng = random.Random(seed)
    _check(_run_child([case(rng, op, fmt) for op in OPERATIONS for fmt in FORMATS]))


def test_hypersparse_operations_answer():
    """The operations whose memory follows the stored entries give the answer on 2**31 .. 2**62 extents (COO and
    DCSR operands), in the child under the address-space limit."""
    batch = []
    for n in (2**31, 2**40, 2**62):
        a = [[0, 5, 1.0], [n - 1, n - 1, 2.0]]
        for fmt in ("COO", "DCSR"):
            for op in ("matmul", "einsum", "add", "multiply", "sum", "max", "softmax", "convert"):
                want = _expected(op, (n, n), a, a)
                batch.append({"op": op, "fmt": fmt, "shape_a": [n, n], "a": a, "shape_b": [n, n], "b": a,
                              "want": [[list(c), v] for c, v in want.items()]})  # type: ignore[union-attr]
    results = _run_child(batch)
    _check(results)
    assert all("ok" in r for r in results), [r for r in results if "ok" not in r]


def test_hypersparse_matmul_scipy_is_fast():
    sp = pytest.importorskip("scipy.sparse")
    n = 2**31
    H = sp.coo_array(([1.0, 2.0], ([0, n - 1], [5, n - 1])), shape=(n, n))
    F.matmul(H, H)  # the compact kernel compiled (or read from the disk cache)
    start = time.perf_counter()
    R = F.matmul(H, H)
    assert time.perf_counter() - start < 5.0  # milliseconds in practice: no loop over the extents
    assert R.shape == (n, n) and R.nnz == 1
    assert (int(R.coords[0][0]), int(R.coords[1][0]), float(R.data[0])) == (n - 1, n - 1, 4.0)


def test_dense_results_of_hypersparse_operands_raise_memory_error():
    n = 2**40
    t = Tensor.from_buffers("COO", (n, n), pos=[np.array([0, 1]), None], crd=[np.array([3]), np.array([4])],
                            values=np.array([1.5]))
    with pytest.raises(MemoryError, match=r"sum: .* shapes \(1099511627776, 1099511627776\)"):
        F.sum(t, 0)
    with pytest.raises(MemoryError, match="convert to CSR"):
        t.convert("CSR")
    assert float(F.sum(t)) == 1.5 and float(F.max(t)) == 1.5


@pytest.mark.parametrize("shape, index, match", [
    ((2**64, 4), np.int64, "dimension 0 has extent 18446744073709551616, more than 2\\*\\*63 - 1"),
    ((4, 2**63), np.int64, "dimension 1 has extent"),
    ((2**31, 4), np.int32, "dimension 0 has extent 2147483648, more than int32 index buffers hold"),
])
def test_extents_must_fit_the_index_type(shape, index, match):
    with pytest.raises(ValueError, match=match):
        Tensor.from_buffers("COO", shape, pos=[np.array([0, 1], dtype=index), None],
                            crd=[np.array([0], dtype=index), np.array([1], dtype=index)], values=np.array([1.0]))


def test_largest_extents_are_accepted():
    t = Tensor.from_buffers("COO", (2**63 - 1, 2**31 - 1), pos=[np.array([0, 1]), None],
                            crd=[np.array([2**63 - 2]), np.array([7])], values=np.array([3.0]))
    assert float(F.sum(t)) == 3.0
    t32 = Tensor.from_buffers("CSR", (1, 2**31 - 1), pos=[None, np.array([0, 1], dtype=np.int32)],
                              crd=[None, np.array([2**31 - 2], dtype=np.int32)], values=np.array([2.0]))
    assert t32.index_type == np.int32
