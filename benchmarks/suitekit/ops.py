"""The suite's operations. For one matrix each builds a :class:`Bench`: our contender first, then each
installed peer's, how to compare results, and the bytes the operation must move (for the bound).

Bytes of the bound: the stored operand's buffers (values, indices, positions: of the format the row names,
e.g. DIA-I or DELTA(8) for those rows), each dense operand once and the result; for CG, per iteration
the matrix and 11 n-vectors (SpMV in/out, fused x/r updates with the dot product, p update) times our
iteration count. An operation that does not fit a matrix raises :class:`Skip`.

SpMV, SpMM and CG also time the ``"optimize"`` contender: ``Matmul(..., optimize=True)`` (CG: the solver's
layout from ``frontend.optimize``'s choice, DIA for DIA-I, else CSR), with the chosen storage's bytes
(``Bench.chosen_bytes``) beside CSR's; where the choice is the default's own storage it is not timed again.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import frontend as F
from frontend import NamedFormats, Tensor

from .matrices import Case, canonical
from .peers import Peers

TOL = 1e-8  # CG relative residual
CG_CAP = 200  # CG iterations on matrices above CG_CAP_ROWS rows (both sides stop there: time per iteration)
CG_CAP_ROWS = 100_000
CG_VECTORS = 10  # vector streams of one CG iteration: SpMV 2, r and r.r 3, x and p 5 (docs/solve.md)
SDDMM_K = 16


class Skip(Exception):
    """The operation does not apply to this matrix (the message says why)."""


@dataclass
class Settings:
    threads: Any = "auto"  # our ``threads=`` for matmul-family kernels
    spgemm_max_flops: float = 50e6  # multiply-adds; larger products are skipped (time budget)
    spmm_max_work: float = 400e6  # nnz x columns, same
    sddmm_max_work: float = 200e6


@dataclass
class Contender:
    run: Callable[[], Any]
    result: Callable[[Any], Any] = lambda out: out  # native output -> numpy array or scipy CSR


@dataclass
class Bench:
    contenders: dict[str, Contender]  # "ours" first
    same: Callable[[Any, Any], bool]  # (our result, a peer's result) -> agree?
    bytes: Callable[[], float]  # evaluated after our first run
    note: str = ""
    keep: list[Any] = field(default_factory=list)  # objects the contenders need alive
    chosen: str = ""  # the storage optimize chose ("" where there is no optimize contender)
    chosen_bytes: Callable[[], float] | None = None  # the bytes the optimize contender moves in it


def keeping_first(fn: Callable[[], Any]) -> tuple[Callable[[], Any], list[Any]]:
    """``fn`` wrapped to keep its first result (the bytes a sparse result moves are counted from it) and
    the list that holds it. Later results are dropped after each call, as the peers' are: keeping the latest
    instead made each call allocate its result while the previous one was still alive, and on this VM memory
    the process has not just freed comes back slowly (ours 4-5x the call on one 1M-row add or SpGEMM per suite
    run, 150-200 ms of system time; the same happened to scipy when it was the one to allocate it)."""
    kept: list[Any] = []

    def run() -> Any:
        result = fn()
        if not kept:
            kept.append(result)
        return result
    return run, kept


def csr_bytes(a: sp.csr_array) -> int:
    return a.data.nbytes + a.indices.nbytes + a.indptr.nbytes


def dia_bytes(a: sp.csr_array) -> int:
    """Bytes of ``a``'s values stored by diagonals (one full-length row of values per occupied diagonal)."""
    rows = np.repeat(np.arange(a.shape[0], dtype=np.int64), np.diff(a.indptr))
    return np.unique(a.indices.astype(np.int64) - rows).size * a.shape[0] * a.dtype.itemsize


def tensor_bytes(t: Tensor) -> int:
    return sum(b.nbytes for b in t.buffers())


def tolerance(dtype: Any) -> float:
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-8


def dense_same(tol: float) -> Callable[[Any, Any], bool]:
    def same(a: Any, b: Any) -> bool:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        finite = b[np.isfinite(b)]
        scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol * scale))
    return same


def sparse_same(tol: float) -> Callable[[Any, Any], bool]:
    def same(a: Any, b: Any) -> bool:
        a, b = sp.csr_array(a, dtype=np.float64), sp.csr_array(b, dtype=np.float64)
        if a.shape != b.shape:
            return False
        scale = max(1.0, float(abs(b).max()) if b.nnz else 0.0)
        diff = abs(a - b)
        return (float(diff.max()) if diff.nnz else 0.0) <= tol * scale
    return same


def dense(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def torch_csr(torch: Any, a: sp.csr_array) -> Any:
    return torch.sparse_csr_tensor(torch.from_numpy(a.indptr), torch.from_numpy(a.indices),
                                   torch.from_numpy(a.data), size=a.shape)


def torch_to_scipy(t: Any) -> sp.csr_array:
    return sp.csr_array((t.values().numpy(), t.col_indices().numpy(), t.crow_indices().numpy()), shape=tuple(t.shape))


def gb_dense(gb: Any, x: np.ndarray) -> Any:
    return (gb.Vector if x.ndim == 1 else gb.Matrix).from_dense(x)


def product_peers(a: sp.csr_array, b: np.ndarray, peers: Peers) -> dict[str, Contender]:
    """``a @ b`` (vector or dense matrix) with each peer's CSR product."""
    out: dict[str, Contender] = {}
    if peers.get("scipy"):
        out["scipy"] = Contender(lambda: a @ b)
    if torch := peers.get("torch"):
        at, bt = torch_csr(torch, a), torch.from_numpy(b)
        out["torch"] = Contender(lambda: at @ bt, lambda r: r.numpy())
    if mkl := peers.get("mkl"):
        out["mkl"] = Contender(lambda: mkl.dot_product_mkl(a, b))
    if gb := peers.get("graphblas"):
        ag, bg = gb.io.from_scipy_sparse(a), gb_dense(gb, b)
        prod = ag.mxv if b.ndim == 1 else ag.mxm
        out["graphblas"] = Contender(lambda: prod(bg).new().to_dense(fill_value=0.0))
    return out


def ours_matmul(a: Any, b: np.ndarray, s: Settings, **kwargs: Any) -> Contender:
    mm = F.Matmul(a, b, threads=s.threads, **kwargs).plan()
    as_numpy = (lambda r: r.to_package("numpy")) if isinstance(a, Tensor) else (lambda r: r)
    return Contender(mm.execute, as_numpy)


def optimized(bench: Bench, a: sp.csr_array, b: np.ndarray, s: Settings, io: int) -> Bench:
    """``bench`` with the ``"optimize"`` contender (``Matmul(a, b, optimize=True)``) after ours, unless the
    chosen storage is CSR (then it is the default plan: not timed twice); its storage and bytes either way."""
    mm = F.Matmul(a, b, threads=s.threads, optimize=True).plan()
    chosen = mm.format_choice.chosen
    bench.chosen, bench.chosen_bytes = chosen.name, lambda: chosen.bytes + io
    if chosen.name != "CSR":
        bench.contenders = {"ours": bench.contenders["ours"], "optimize": Contender(mm.execute),
                            **{k: v for k, v in bench.contenders.items() if k != "ours"}}
    return bench


def spmv(case: Case, peers: Peers, s: Settings) -> Bench:
    a = case.matrix
    x = dense(np.random.default_rng(0), (a.shape[1],), a.dtype)
    io = (a.shape[0] + a.shape[1]) * a.dtype.itemsize
    return optimized(Bench({"ours": ours_matmul(a, x, s), **product_peers(a, x, peers)},
                           dense_same(tolerance(a.dtype)), lambda: csr_bytes(a) + io), a, x, s, io)


def spmm(k: int) -> Callable[[Case, Peers, Settings], Bench]:
    def op(case: Case, peers: Peers, s: Settings) -> Bench:
        a = case.matrix
        if a.nnz * k > s.spmm_max_work:
            raise Skip(f"nnz x {k} above {s.spmm_max_work:.0e}")
        b = dense(np.random.default_rng(0), (a.shape[1], k), a.dtype)
        io = (a.shape[0] + a.shape[1]) * k * a.dtype.itemsize
        return optimized(Bench({"ours": ours_matmul(a, b, s), **product_peers(a, b, peers)},
                               dense_same(tolerance(a.dtype)), lambda: csr_bytes(a) + io), a, b, s, io)
    op.__doc__ = f"SpMM with {k} dense columns"
    return op


def spgemm(case: Case, peers: Peers, s: Settings) -> Bench:
    """``A @ A`` for square matrices, ``A @ A.T`` otherwise."""
    a = case.matrix
    b = a if a.shape[0] == a.shape[1] else canonical(a.T, a.dtype)
    flops = float(np.dot(np.bincount(a.indices, minlength=a.shape[1]).astype(np.float64), np.diff(b.indptr)))
    if flops > s.spgemm_max_flops:
        raise Skip(f"{flops:.1e} multiply-adds above {s.spgemm_max_flops:.0e}")
    mm = F.Matmul(a, b).plan()
    ours, kept = keeping_first(mm.execute)
    out = {"ours": Contender(ours)}
    if peers.get("scipy"):
        out["scipy"] = Contender(lambda: a @ b)
    if torch := peers.get("torch"):
        at, bt = torch_csr(torch, a), torch_csr(torch, b)
        out["torch"] = Contender(lambda: at @ bt, torch_to_scipy)
    if mkl := peers.get("mkl"):
        out["mkl"] = Contender(lambda: mkl.dot_product_mkl(a, b))
    if gb := peers.get("graphblas"):
        ag, bg = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
        out["graphblas"] = Contender(lambda: ag.mxm(bg).new(), lambda r: gb.io.to_scipy_sparse(r, format="csr"))
    note = "A @ A" if b is a else "A @ A.T"
    return Bench(out, sparse_same(tolerance(a.dtype)),
                 lambda: csr_bytes(a) + (0 if b is a else csr_bytes(b)) + csr_bytes(sp.csr_array(kept[0])), note)


def sddmm(case: Case, peers: Peers, s: Settings) -> Bench:
    """``einsum("ij,ik,kj->ij", A, X, Y)``: A's values times (X @ Y) at A's entries."""
    a, k = case.matrix, SDDMM_K
    if a.nnz * k > s.sddmm_max_work:
        raise Skip(f"nnz x {k} above {s.sddmm_max_work:.0e}")
    rng = np.random.default_rng(0)
    x, y = dense(rng, (a.shape[0], k), a.dtype), dense(rng, (k, a.shape[1]), a.dtype)
    out = {"ours": Contender(lambda: F.einsum("ij,ik,kj->ij", a, x, y))}
    if peers.get("scipy"):
        out["scipy"] = Contender(row_gather_sddmm(a, x, y))
    if torch := peers.get("torch"):
        at, xt, yt = torch_csr(torch, a), torch.from_numpy(x), torch.from_numpy(y)

        def sampled() -> Any:
            r = torch.sparse.sampled_addmm(at, xt, yt, beta=0.0)
            r.values().mul_(at.values())
            return r
        out["torch"] = Contender(sampled, torch_to_scipy)
    if gb := peers.get("graphblas"):
        # X @ (Y.T).T under A's mask: the dot-product form (GraphBLAS computes only the masked entries)
        ag, xg, ytg = gb.io.from_scipy_sparse(a), gb.Matrix.from_dense(x), gb.Matrix.from_dense(y.T.copy())
        out["graphblas"] = Contender(lambda: ag.ewise_mult(xg.mxm(ytg.T).new(mask=ag.S)).new(),
                                     lambda r: gb.io.to_scipy_sparse(r, format="csr"))
    io = (x.size + y.size) * a.dtype.itemsize
    return Bench(out, sparse_same(tolerance(a.dtype)), lambda: 2 * csr_bytes(a) + io, f"k={k}")


def row_gather_sddmm(a: sp.csr_array, x: np.ndarray, y: np.ndarray, chunk: int = 1 << 18) -> Callable[[], Any]:
    """NumPy SDDMM: gather X's rows and Y's columns per stored entry, multiply and sum (in chunks of entries)."""
    rows = np.repeat(np.arange(a.shape[0], dtype=np.int32), np.diff(a.indptr))
    yt = np.ascontiguousarray(y.T)

    def run() -> sp.csr_array:
        vals = np.empty_like(a.data)
        for lo in range(0, a.nnz, chunk):
            hi = min(lo + chunk, a.nnz)
            vals[lo:hi] = a.data[lo:hi] * np.einsum("ij,ij->i", x[rows[lo:hi]], yt[a.indices[lo:hi]])
        return sp.csr_array((vals, a.indices, a.indptr), shape=a.shape)
    return run


def semiring_spmv(kind: str) -> Callable[[Case, Peers, Settings], Bench]:
    """``kind`` = "min-plus" or "max-plus": y_i = min/max over stored j of (A_ij + x_j); empty rows give the
    identity (+inf / -inf)."""
    ident, ufunc, reduce = (np.inf, np.minimum, "amin") if kind == "min-plus" else (-np.inf, np.maximum, "amax")

    def op(case: Case, peers: Peers, s: Settings) -> Bench:
        a = case.matrix
        x = dense(np.random.default_rng(0), (a.shape[1],), a.dtype)
        out = {"ours": ours_matmul(a, x, s, semiring=kind)}
        counts = np.diff(a.indptr)
        if peers.get("scipy"):
            nonempty = np.flatnonzero(counts)
            starts = a.indptr[nonempty]

            def reduceat() -> np.ndarray:
                y = np.full(a.shape[0], ident, dtype=a.dtype)
                y[nonempty] = ufunc.reduceat(a.data + x[a.indices], starts)
                return y
            out["scipy"] = Contender(reduceat)
        if torch := peers.get("torch"):
            rows = torch.from_numpy(np.repeat(np.arange(a.shape[0], dtype=np.int64), counts))
            vals, cols, xt = torch.from_numpy(a.data), torch.from_numpy(a.indices), torch.from_numpy(x)

            def scatter() -> Any:
                y = torch.full((a.shape[0],), ident, dtype=vals.dtype)
                return y.scatter_reduce_(0, rows, vals + xt[cols], reduce=reduce)
            out["torch"] = Contender(scatter, lambda r: r.numpy())
        if gb := peers.get("graphblas"):
            ag, xg = gb.io.from_scipy_sparse(a), gb.Vector.from_dense(x)
            semiring = gb.semiring.min_plus if kind == "min-plus" else gb.semiring.max_plus
            out["graphblas"] = Contender(lambda: ag.mxv(xg, op=semiring).new().to_dense(fill_value=ident))
        io = (a.shape[0] + a.shape[1]) * a.dtype.itemsize
        return Bench(out, dense_same(tolerance(a.dtype)), lambda: csr_bytes(a) + io)
    op.__doc__ = f"{kind} SpMV"
    return op


def dia_spmv(case: Case, peers: Peers, s: Settings) -> Bench:
    """Our DIA-I tensor against scipy's dia_array (and the other peers' CSR SpMV)."""
    a = case.matrix
    if not case.banded:
        raise Skip("not banded")
    d = Tensor.from_package(a).convert(tensor_format=NamedFormats.DIAI)
    x = dense(np.random.default_rng(0), (a.shape[1],), a.dtype)
    out = {"ours": ours_matmul(d, x, s), **product_peers(a, x, peers)}
    if peers.get("scipy"):
        ad = sp.dia_array(a)
        out["scipy"] = Contender(lambda: ad @ x)
    io = (a.shape[0] + a.shape[1]) * a.dtype.itemsize
    return Bench(out, dense_same(tolerance(a.dtype)), lambda: tensor_bytes(d) + io,
                 "scipy: dia_array; torch/mkl/graphblas: CSR", keep=[d])


def delta_padding(a: sp.csr_array, bits: int) -> int:
    """Zero entries DELTA(bits) inserts: one per 2^bits columns of gap between neighbours in a row."""
    first = np.zeros(a.nnz, dtype=bool)
    first[a.indptr[:-1][np.diff(a.indptr) > 0]] = True
    gaps = np.diff(a.indices.astype(np.int64), prepend=0)
    gaps[first] = a.indices[first].astype(np.int64) + 1
    return int((np.maximum(gaps - 1, 0) >> bits).sum())


def delta_spmv(case: Case, peers: Peers, s: Settings) -> Bench:
    """Our DELTA(8) tensor against the peers' CSR SpMV (skipped where padding would add over half the nnz)."""
    a = case.matrix
    if delta_padding(a, 8) > a.nnz // 2:
        raise Skip("column gaps too wide for DELTA(8)")
    d = Tensor.from_package(a).convert(tensor_format=NamedFormats.DELTA(8))
    x = dense(np.random.default_rng(0), (a.shape[1],), a.dtype)
    io = (a.shape[0] + a.shape[1]) * a.dtype.itemsize
    return Bench({"ours": ours_matmul(d, x, s), **product_peers(a, x, peers)}, dense_same(tolerance(a.dtype)),
                 lambda: tensor_bytes(d) + io, "peers: CSR", keep=[d])


def trsv(case: Case, peers: Peers, s: Settings) -> Bench:
    """Forward substitution on ``tril(A)``."""
    a = case.matrix
    if a.shape[0] != a.shape[1] or np.any(a.diagonal() == 0):
        raise Skip("needs a square matrix with a full diagonal")
    low = canonical(sp.tril(a), a.dtype)
    b = dense(np.random.default_rng(0), (a.shape[0],), a.dtype)
    solver = F.Solve(low, lower=True).plan()
    out = {"ours": Contender(lambda: solver.execute(b))}
    if peers.get("scipy"):
        out["scipy"] = Contender(lambda: sla.spsolve_triangular(low, b, lower=True))
    if torch := peers.get("torch"):
        lt, bt = torch_csr(torch, low), torch.from_numpy(b)[:, None]
        out["torch"] = Contender(lambda: torch.triangular_solve(bt, lt, upper=False).solution,
                                 lambda r: r.numpy()[:, 0])
    return Bench(out, dense_same(1e3 * tolerance(a.dtype)), lambda: csr_bytes(low) + 2 * b.nbytes)


def cg(case: Case, peers: Peers, s: Settings) -> Bench:
    """CG to relative residual ``TOL`` (at most ``CG_CAP`` iterations on large matrices, for both sides)."""
    a = case.matrix
    if not case.spd:
        raise Skip("not SPD")
    n = a.shape[0]
    maxiter = CG_CAP if n > CG_CAP_ROWS else 10 * n
    b = dense(np.random.default_rng(0), (n,), a.dtype)
    solver = F.Solve(a, method="cg", tol=TOL, maxiter=maxiter, on_failure="warn").plan()

    def ours() -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solver.execute(b)
    out = {"ours": Contender(ours)}
    if peers.get("scipy"):
        out["scipy"] = Contender(lambda: sla.cg(a, b, rtol=TOL, atol=0.0, maxiter=maxiter)[0])
    bnorm = float(np.linalg.norm(b))

    def same(x: Any, y: Any) -> bool:  # same residual: iterates drift apart in floating point
        res = [float(np.linalg.norm(b - a @ v)) / bnorm for v in (x, y)]
        return res[0] <= max(10 * TOL, 2 * res[1])
    note = f"at most {maxiter} iterations" if maxiter == CG_CAP else f"to {TOL:g}"
    walked = dia_bytes(a) if solver.info.format == "DIA" else csr_bytes(a)  # the matrix as our kernel streams it
    if solver.info.format != "CSR":
        note += f", walks {solver.info.format}"
    bench = Bench(out, same, lambda: solver.info.iterations * (walked + CG_VECTORS * b.nbytes), note)
    # optimize: the layout frontend.optimize's choice implies (DIA-I -> DIA, anything else -> CSR)
    choice = F.optimize(a)[1].chosen
    layout = "DIA" if choice.name == "DIAI" else "CSR"
    steps = (dia_bytes(a) if layout == "DIA" else csr_bytes(a)) + CG_VECTORS * b.nbytes
    if layout != solver.info.format:
        opt = F.Solve(a, method="cg", tol=TOL, maxiter=maxiter, on_failure="warn", layout=layout.lower()).plan()

        def ours_optimized() -> np.ndarray:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return opt.execute(b)
        bench.contenders = {"ours": out["ours"], "optimize": Contender(ours_optimized),
                            **{k: v for k, v in out.items() if k != "ours"}}
        bench.chosen_bytes = lambda: opt.info.iterations * steps
    else:
        bench.chosen_bytes = lambda: solver.info.iterations * steps
    bench.chosen = f"{choice.name} ({layout})"
    return bench


OPS: dict[str, Callable[[Case, Peers, Settings], Bench]] = {
    "spmv": spmv, "spmm16": spmm(16), "spmm64": spmm(64), "spgemm": spgemm, "sddmm": sddmm,
    "minplus": semiring_spmv("min-plus"), "maxplus": semiring_spmv("max-plus"), "dia": dia_spmv,
    "delta": delta_spmv, "trsv": trsv, "cg": cg,
}
