"""Inline loop emitters for dense vectors and a CSR matrix: fused sweeps, SpMV rows, norms."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .builder import FuncBuilder
from .values import IndexBuf, to_f64, vec

#: body(i) -> the f64 terms that sweep() adds to its sums at index i.
Body = Callable[[str], Sequence[str]]


@dataclass(frozen=True)
class Csr:
    """A CSR matrix's buffers inside a function: ``pos``, ``crd``, ``val`` (SSA names)."""

    pos: str
    crd: str
    val: str
    idx: IndexBuf
    elem: str

    def row_dot(self, f: FuncBuilder, i: str, x: str) -> str:
        """``sum_k val[k] * x[crd[k]]`` over row ``i`` (element type).

        Two partial sums over entry pairs, then the odd entry: long rows are not bound by the
        latency of one add chain.
        """
        E = self.elem
        lo = self.idx.load(f, self.pos, i)
        hi = self.idx.load(f, self.pos, f.add(i, f.c(1), "index"))
        two = f.c(2)
        mid = f.add(lo, f.mul(f.op(f"arith.divui {f.sub(hi, lo, 'index')}, {two} : index"), two, "index"),
                    "index")
        zero = f.c(0.0, E)

        def term(k: str) -> str:
            return f.mul(f.load(self.val, k, vec(E)), f.load(x, self.idx.load(f, self.crd, k), vec(E)), E)
        with f.loop(lo, mid, [(zero, E), (zero, E)], step=two) as kl:
            f.yield_(kl, f.add(kl.args[0], term(kl.iv), E),
                     f.add(kl.args[1], term(f.add(kl.iv, f.c(1), "index")), E))
        acc = f.add(kl.results[0], kl.results[1], E)
        with f.loop(mid, hi, [(acc, E)]) as rl:
            f.yield_(rl, f.add(rl.args[0], term(rl.iv), E))
        return rl.results[0]


def sweep(f: FuncBuilder, n: str, body: Body, nsums: int = 0, unroll: int = 4) -> list[str]:
    """``for i in 0..n: body(i)``, returning the f64 sums of its terms.

    Unrolled ``unroll`` times with separate partial sums (breaks the add latency chain of
    dot products), then a remainder loop.
    """
    zero = f.c(0.0, "f64")
    step = f.c(unroll)
    nmain = f.mul(f.op(f"arith.divui {n}, {step} : index"), step, "index")
    inits = [(zero, "f64")] * (nsums * unroll)
    with f.loop(f.c(0), nmain, inits, step=step) as lp:
        out = list(lp.args)
        for u in range(unroll):
            i = f.add(lp.iv, f.c(u), "index") if u else lp.iv
            for s, term in enumerate(body(i)):
                out[u * nsums + s] = f.add(out[u * nsums + s], term, "f64")
        f.yield_(lp, *out)
    parts = lp.results
    sums = []
    for s in range(nsums):
        acc = parts[s]
        for u in range(1, unroll):
            acc = f.add(acc, parts[u * nsums + s], "f64")
        sums.append(acc)
    with f.loop(nmain, n, [(s, "f64") for s in sums]) as rl:
        terms = body(rl.iv)
        f.yield_(rl, *[f.add(a, t, "f64") for a, t in zip(rl.args, terms)])
    return list(rl.results)


def product(f: FuncBuilder, a: str, b: str, elem: str) -> str:
    """``a * b`` as f64 (elements of type ``elem``)."""
    return to_f64(f, f.mul(a, b, elem), elem) if elem == "f64" else f.mul(to_f64(f, a, elem),
                                                                             to_f64(f, b, elem), "f64")


def dot(f: FuncBuilder, n: str, a: str, b: str, elem: str) -> str:
    """``sum a[i] * b[i]`` in f64."""
    def body(i: str) -> list[str]:
        return [product(f, f.load(a, i, vec(elem)), f.load(b, i, vec(elem)), elem)]
    return sweep(f, n, body, 1)[0]


def sqrt(f: FuncBuilder, v: str) -> str:
    return f.op(f"math.sqrt {v} : f64")


def residual(f: FuncBuilder, A: Csr, n: str, b: str, x: str, r: str) -> str:
    """``r = b - A x``; returns ``||r||^2`` (f64)."""
    E = A.elem

    def body(i: str) -> list[str]:
        ri = f.sub(f.load(b, i, vec(E)), A.row_dot(f, i, x), E)
        f.store(ri, r, i, vec(E))
        return [product(f, ri, ri, E)]
    return sweep(f, n, body, 1, unroll=1)[0]


def spmv(f: FuncBuilder, A: Csr, n: str, x: str, y: str, dots: Sequence[str] = ()) -> list[str]:
    """``y = A x``; returns ``dot(w, y)`` for each vector ``w`` in ``dots`` (fused)."""
    E = A.elem

    def body(i: str) -> list[str]:
        yi = A.row_dot(f, i, x)
        f.store(yi, y, i, vec(E))
        return [product(f, f.load(w, i, vec(E)) if w != y else yi, yi, E) for w in dots]
    return sweep(f, n, body, len(dots), unroll=1)
