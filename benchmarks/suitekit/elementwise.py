"""The suite's elementwise rows: ``add`` (A + B, the union), ``multiply`` (A * B, the intersection),
``rowsum`` (``sum(A, axis=1)``) and ``softmax`` (over each row's stored entries), ours through
``frontend.add``/``multiply``/``sum``/``softmax`` on scipy CSR inputs (scipy results).

``B`` is A with its rows in reverse order and its values halved: another pattern of the same shape, so the
union and the intersection differ from A's pattern. Peers: scipy (``+``, ``.multiply``, ``.sum(axis=1)``;
softmax as NumPy ``reduceat`` over the rows), torch (CSR ``+``/``*``, ``sum`` over CSR, ``torch.sparse.softmax``
on COO: torch has no CSR softmax) and GraphBLAS (``ewise_add``/``ewise_mult``/``reduce_rowwise``; softmax as
row maxima, ``diag(-max) any.plus A``, ``exp``, row sums and ``diag(1/sum) any.times E``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

import frontend as F

from .matrices import Case, canonical
from .ops import (
    Bench,
    Contender,
    Settings,
    csr_bytes,
    dense_same,
    keeping_first,
    sparse_same,
    tolerance,
    torch_csr,
    torch_to_scipy,
)
from .peers import Peers


def second_operand(a: sp.csr_array) -> sp.csr_array:
    """A's rows reversed, values halved (same shape and nnz, another pattern)."""
    return canonical(sp.csr_array(a[::-1] * 0.5), a.dtype)


def _binary(kind: str) -> Callable[[Case, Peers, Settings], Bench]:
    ours_fn = F.add if kind == "add" else F.multiply

    def op(case: Case, peers: Peers, s: Settings) -> Bench:
        a = case.matrix
        b = second_operand(a)
        ours, kept = keeping_first(lambda: ours_fn(a, b))
        out = {"ours": Contender(ours)}
        if peers.get("scipy"):
            out["scipy"] = Contender((lambda: a + b) if kind == "add" else (lambda: a.multiply(b)))
        if torch := peers.get("torch"):
            at, bt = torch_csr(torch, a), torch_csr(torch, b)
            out["torch"] = Contender((lambda: at + bt) if kind == "add" else (lambda: at * bt), torch_to_scipy)
        if gb := peers.get("graphblas"):
            ag, bg = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
            run = (lambda: ag.ewise_add(bg).new()) if kind == "add" else (lambda: ag.ewise_mult(bg).new())
            out["graphblas"] = Contender(run, lambda r: gb.io.to_scipy_sparse(r, format="csr"))
        return Bench(out, sparse_same(tolerance(a.dtype)),
                     lambda: csr_bytes(a) + csr_bytes(b) + csr_bytes(sp.csr_array(kept[0])),
                     "A + B (union)" if kind == "add" else "A * B (intersection)")
    op.__doc__ = f"elementwise {kind} of two CSR matrices"
    return op


def rowsum(case: Case, peers: Peers, s: Settings) -> Bench:
    """``sum(A, axis=1)``: a dense vector."""
    a = case.matrix
    out = {"ours": Contender(lambda: F.sum(a, 1))}
    if peers.get("scipy"):
        out["scipy"] = Contender(lambda: a.sum(axis=1))
    if torch := peers.get("torch"):
        at = torch_csr(torch, a)
        out["torch"] = Contender(lambda: torch.sum(at, 1, keepdim=True), lambda r: r.to_dense().numpy().ravel())
    if gb := peers.get("graphblas"):
        ag = gb.io.from_scipy_sparse(a)
        out["graphblas"] = Contender(lambda: ag.reduce_rowwise().new().to_dense(fill_value=0.0))
    nbytes = a.data.nbytes + a.indptr.nbytes + a.shape[0] * a.dtype.itemsize
    return Bench(out, dense_same(tolerance(a.dtype)), lambda: nbytes)


def numpy_softmax(a: sp.csr_array) -> Callable[[], sp.csr_array]:
    """Row softmax over the stored entries with NumPy: ``maximum.reduceat``, ``exp``, ``add.reduceat``."""
    counts = np.diff(a.indptr)
    nonempty = np.flatnonzero(counts)
    starts = a.indptr[nonempty]
    rep = counts[nonempty]

    def run() -> sp.csr_array:
        if a.nnz == 0:
            return sp.csr_array(a.shape, dtype=a.dtype)
        m = np.maximum.reduceat(a.data, starts)
        e = np.exp(a.data - np.repeat(m, rep))
        total = np.add.reduceat(e, starts)
        e /= np.repeat(total, rep)
        return sp.csr_array((e, a.indices, a.indptr), shape=a.shape)
    return run


def softmax(case: Case, peers: Peers, s: Settings) -> Bench:
    """``softmax(A, axis=1)`` over each row's stored entries (absent entries are minus infinity)."""
    a = case.matrix
    out = {"ours": Contender(lambda: F.softmax(a, 1))}
    if peers.get("scipy"):
        out["scipy"] = Contender(numpy_softmax(a))
    if torch := peers.get("torch"):
        ac = torch_csr(torch, a).to_sparse_coo().coalesce()
        out["torch"] = Contender(lambda: torch.sparse.softmax(ac, 1),
                                 lambda r: torch_to_scipy(r.to_sparse_csr()))
    if gb := peers.get("graphblas"):
        ag = gb.io.from_scipy_sparse(a)

        def graphblas() -> Any:
            m = ag.reduce_rowwise(gb.monoid.max).new()
            z = gb.semiring.any_plus(m.apply(gb.unary.ainv).new().diag() @ ag).new()
            e = z.apply(gb.unary.exp).new()
            total = e.reduce_rowwise().new()
            return gb.semiring.any_times(total.apply(gb.unary.minv).new().diag() @ e).new()
        out["graphblas"] = Contender(graphblas, lambda r: gb.io.to_scipy_sparse(r, format="csr"))
    nbytes = 2 * a.data.nbytes + a.indptr.nbytes
    return Bench(out, sparse_same(tolerance(a.dtype)), lambda: nbytes, "row softmax over stored entries")


ELEMENTWISE_OPS: dict[str, Callable[[Case, Peers, Settings], Bench]] = {
    "add": _binary("add"), "multiply": _binary("multiply"), "rowsum": rowsum, "softmax": softmax,
}
