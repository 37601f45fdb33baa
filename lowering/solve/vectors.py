"""Inline loop emitters for dense vectors and a CSR matrix: fused sweeps, SpMV rows, norms."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .builder import FuncBuilder
from .values import IndexBuf, Lanes, vec

#: body(i, lanes) -> the f64 terms (type ``lanes.t64``) that sweep() adds to its sums at index i.
Body = Callable[[str, Lanes], Sequence[str]]


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


def sweep(f: FuncBuilder, n: str, elem: str, body: Body, nsums: int = 0, width: int = 4,
          unroll: int = 2) -> list[str]:
    """``for i in 0..n: body(i, lanes)``, returning the f64 sums of its terms.

    The main loop takes ``unroll`` groups of ``width`` lanes per step (SIMD vectors, separate
    partial sums per group, so dot products are not bound by one add chain); a scalar loop does the
    rest. ``width=1, unroll=1`` gives plain scalar code (for bodies that gather, like SpMV rows).
    """
    wide, one = Lanes(elem, width), Lanes(elem, 1)
    step = f.c(width * unroll)
    nmain = f.mul(f.op(f"arith.divui {n}, {step} : index"), step, "index")
    zero = f.c(0.0, "f64")
    vzero = wide.splat(f, zero, wide=True)
    with f.loop(f.c(0), nmain, [(vzero, wide.t64)] * (nsums * unroll), step=step) as lp:
        out = list(lp.args)
        for u in range(unroll):
            i = f.add(lp.iv, f.c(u * width), "index") if u else lp.iv
            for k, term in enumerate(body(i, wide)):
                out[u * nsums + k] = f.add(out[u * nsums + k], term, wide.t64)
        f.yield_(lp, *out)
    sums = []
    for k in range(nsums):
        acc = lp.results[k]
        for u in range(1, unroll):
            acc = f.add(acc, lp.results[u * nsums + k], wide.t64)
        if width > 1:
            acc = f.op(f"vector.reduction <add>, {acc} : {wide.t64} into f64")
        sums.append(acc)
    with f.loop(nmain, n, [(s_, "f64") for s_ in sums]) as rl:
        terms = body(rl.iv, one)
        f.yield_(rl, *[f.add(a, t, "f64") for a, t in zip(rl.args, terms)])
    return list(rl.results)


def product(f: FuncBuilder, a: str, b: str, lanes: Lanes) -> str:
    """``a * b`` as f64 lanes."""
    if lanes.elem == "f64":
        return f.mul(a, b, lanes.t)
    return f.mul(lanes.widen(f, a), lanes.widen(f, b), lanes.t64)


def dot(f: FuncBuilder, n: str, a: str, b: str, elem: str) -> str:
    """``sum a[i] * b[i]`` in f64."""
    def body(i: str, L: Lanes) -> list[str]:
        return [product(f, L.ld(f, a, i), L.ld(f, b, i), L)]
    return sweep(f, n, elem, body, 1)[0]


def sqrt(f: FuncBuilder, v: str) -> str:
    return f.op(f"math.sqrt {v} : f64")


def residual(f: FuncBuilder, A: Csr, n: str, b: str, x: str, r: str) -> str:
    """``r = b - A x``; returns ``||r||^2`` (f64)."""
    E = A.elem

    def body(i: str, L: Lanes) -> list[str]:
        ri = f.sub(L.ld(f, b, i), A.row_dot(f, i, x), E)
        L.st(f, ri, r, i)
        return [product(f, ri, ri, L)]
    return sweep(f, n, E, body, 1, width=1, unroll=1)[0]


def spmv(f: FuncBuilder, A: Csr, n: str, x: str, y: str, dots: Sequence[str] = ()) -> list[str]:
    """``y = A x``; returns ``dot(w, y)`` for each vector ``w`` in ``dots`` (fused)."""
    E = A.elem

    def body(i: str, L: Lanes) -> list[str]:
        yi = A.row_dot(f, i, x)
        L.st(f, yi, y, i)
        return [product(f, L.ld(f, w, i) if w != y else yi, yi, L) for w in dots]
    return sweep(f, n, E, body, len(dots), width=1, unroll=1)
