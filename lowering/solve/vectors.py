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


@dataclass(frozen=True)
class Team:
    """How the sweeps of one function split across ``threads`` (1 = sequential code, no parallel op).

    With several threads a sweep is one ``scf.parallel`` over ``threads`` chunks; each chunk writes its
    partial sums to ``partials`` (``memref<?xf64>``, one cache line of 8 per chunk, so no false sharing),
    and the sums are combined in chunk order afterwards: results are deterministic for a fixed thread
    count. Row sweeps (SpMV) split at ``rows`` (``memref<?xindex>``, ``threads + 1`` row boundaries
    balanced by nonzeros, see :func:`row_split`); vector sweeps split into equal ranges.
    """

    threads: int = 1
    partials: str = ""
    rows: str = ""

    @property
    def parallel(self) -> bool:
        return self.threads > 1


SEQUENTIAL = Team()
_LINE = 8  # f64 partial sums per chunk (one 64-byte cache line)


def team_buffers(f: FuncBuilder, threads: int, A: Csr, n: str) -> Team:
    """Allocate a Team's scratch buffers (free them with :func:`free_team`); SEQUENTIAL for one thread."""
    if threads == 1:
        return SEQUENTIAL
    partials = f.alloc("memref<?xf64>", f.c(threads * _LINE))
    return Team(threads, partials, row_split(f, A, n, threads))


def free_team(f: FuncBuilder, team: Team) -> None:
    if team.parallel:
        f.dealloc(team.partials, "memref<?xf64>")
        f.dealloc(team.rows, "memref<?xindex>")


def row_split(f: FuncBuilder, A: Csr, n: str, parts: int) -> str:
    """``parts + 1`` row boundaries cutting ``A`` into runs of about equal ``nonzeros + rows``.

    Boundary ``c`` is the first row ``i`` with ``pos[i] + i >= c * (nnz + n) / parts`` (binary search).
    """
    T = "memref<?xindex>"
    c0, c1 = f.c(0), f.c(1)
    rows = f.alloc(T, f.c(parts + 1))
    total = f.add(A.idx.load(f, A.pos, n), n, "index")
    f.store(c0, rows, c0, T)
    f.store(n, rows, f.c(parts), T)
    with f.loop(c1, f.c(parts)) as lp:
        target = f.op(f"arith.divui {f.mul(total, lp.iv, 'index')}, {f.c(parts)} : index", "n")
        with f.while_([(c0, "index"), (n, "index")]) as w:
            lo, hi = w.before
            w.cond(f.cmpi("ult", lo, hi))
            lo, hi = w.after
            mid = f.op(f"arith.divui {f.add(lo, hi, 'index')}, {f.c(2)} : index", "n")
            below = f.cmpi("ult", f.add(A.idx.load(f, A.pos, mid), mid, "index"), target)
            w.yield_(f.select(below, f.add(mid, c1, "index"), lo, "index"), f.select(below, hi, mid, "index"))
        f.store(w.results[0], rows, lp.iv, T)
    return rows


def sweep(f: FuncBuilder, n: str, elem: str, body: Body, nsums: int = 0, width: int = 4,
          unroll: int = 2, team: Team = SEQUENTIAL, by_rows: bool = False) -> list[str]:
    """``for i in 0..n: body(i, lanes)``, returning the f64 sums of its terms.

    The main loop takes ``unroll`` groups of ``width`` lanes per step (SIMD vectors, separate
    partial sums per group, so dot products are not bound by one add chain); a scalar loop does the
    rest. ``width=1, unroll=1`` gives plain scalar code (for bodies that gather, like SpMV rows).
    With a parallel ``team`` each thread runs this on its chunk (``by_rows``: the team's row split).
    """
    if not team.parallel:
        return _sweep_range(f, f.c(0), n, elem, body, nsums, width, unroll)
    T, F = team.threads, "memref<?xf64>"
    step = width * unroll
    chunk = f.mul(f.op(f"arith.ceildivui {n}, {f.c(T * step)} : index", "n"), f.c(step), "index")
    cid = f.fresh("t")
    f.emit(f"scf.parallel ({cid}) = ({f.c(0)}) to ({f.c(T)}) step ({f.c(1)}) {{")
    with f.nested():
        if by_rows:
            lo = f.load(team.rows, cid, "memref<?xindex>")
            hi = f.load(team.rows, f.add(cid, f.c(1), "index"), "memref<?xindex>")
        else:
            lo = f.op(f"arith.minui {f.mul(cid, chunk, 'index')}, {n} : index", "n")
            hi = f.op(f"arith.minui {f.add(lo, chunk, 'index')}, {n} : index", "n")
        sums = _sweep_range(f, lo, hi, elem, body, nsums, width, unroll)
        for k, s_ in enumerate(sums):
            f.store(s_, team.partials, f.add(f.mul(cid, f.c(_LINE), "index"), f.c(k), "index"), F)
    f.emit("}")
    out = []
    for k in range(nsums):
        with f.loop(f.c(0), f.c(T), [(f.c(0.0, "f64"), "f64")]) as cl:
            part = f.load(team.partials, f.add(f.mul(cl.iv, f.c(_LINE), "index"), f.c(k), "index"), F)
            f.yield_(cl, f.add(cl.args[0], part, "f64"))
        out.append(cl.results[0])
    return out


def _sweep_range(f: FuncBuilder, lo: str, hi: str, elem: str, body: Body, nsums: int, width: int,
                 unroll: int) -> list[str]:
    """The sequential sweep over ``lo..hi``."""
    wide, one = Lanes(elem, width), Lanes(elem, 1)
    step = f.c(width * unroll)
    span = f.sub(hi, lo, "index")
    nmain = f.add(lo, f.mul(f.op(f"arith.divui {span}, {step} : index"), step, "index"), "index")
    zero = f.c(0.0, "f64")
    vzero = wide.splat(f, zero, wide=True)
    with f.loop(lo, nmain, [(vzero, wide.t64)] * (nsums * unroll), step=step) as lp:
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
    with f.loop(nmain, hi, [(s_, "f64") for s_ in sums]) as rl:
        terms = body(rl.iv, one)
        f.yield_(rl, *[f.add(a, t, "f64") for a, t in zip(rl.args, terms)])
    return list(rl.results)


def product(f: FuncBuilder, a: str, b: str, lanes: Lanes) -> str:
    """``a * b`` as f64 lanes."""
    if lanes.elem == "f64":
        return f.mul(a, b, lanes.t)
    return f.mul(lanes.widen(f, a), lanes.widen(f, b), lanes.t64)


def dot(f: FuncBuilder, n: str, a: str, b: str, elem: str, team: Team = SEQUENTIAL) -> str:
    """``sum a[i] * b[i]`` in f64."""
    def body(i: str, L: Lanes) -> list[str]:
        return [product(f, L.ld(f, a, i), L.ld(f, b, i), L)]
    return sweep(f, n, elem, body, 1, team=team)[0]


def sqrt(f: FuncBuilder, v: str) -> str:
    return f.op(f"math.sqrt {v} : f64")


def residual(f: FuncBuilder, A: Csr, n: str, b: str, x: str, r: str, team: Team = SEQUENTIAL) -> str:
    """``r = b - A x``; returns ``||r||^2`` (f64)."""
    E = A.elem

    def body(i: str, L: Lanes) -> list[str]:
        ri = f.sub(L.ld(f, b, i), A.row_dot(f, i, x), E)
        L.st(f, ri, r, i)
        return [product(f, ri, ri, L)]
    return sweep(f, n, E, body, 1, width=1, unroll=1, team=team, by_rows=True)[0]


def spmv(f: FuncBuilder, A: Csr, n: str, x: str, y: str, dots: Sequence[str] = (), team: Team = SEQUENTIAL,
         offset: str | None = None) -> list[str]:
    """``y = A x`` (into ``y[offset:]`` when given); returns ``dot(w, y)`` for each vector ``w`` in ``dots``."""
    E = A.elem

    def body(i: str, L: Lanes) -> list[str]:
        yi = A.row_dot(f, i, x)
        L.st(f, yi, y, f.add(offset, i, "index") if offset else i)
        return [product(f, L.ld(f, w, i) if w != y else yi, yi, L) for w in dots]
    return sweep(f, n, E, body, len(dots), width=1, unroll=1, team=team, by_rows=True)
