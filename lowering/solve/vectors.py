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
class Dia:
    """A DIA matrix's buffers inside a function: ``off`` (``memref<?xi64>``, the sorted diagonal offsets
    ``column - row``, at least one) and ``val`` (``ndiag * n`` entries, ``val[d * n + i] = A[i, i + off[d]]``,
    zero where that column is outside the matrix).

    Rows whose every diagonal lands inside the matrix (:meth:`interior`) are computed ``width`` rows at a
    time with contiguous vector loads of ``val`` and ``x`` and all diagonals summed in registers (one pass
    over ``y``); the few rows at the ends check each column (:meth:`row_dot`).
    """

    off: str
    val: str
    elem: str

    OFF = "memref<?xi64>"

    def offset(self, f: FuncBuilder, d: str) -> str:
        return f.cast("arith.index_cast", f.load(self.off, d, self.OFF), "i64", "index")

    def interior(self, f: FuncBuilder, n: str) -> tuple[str, str, str]:
        """``(ndiag, lo, hi)``: rows ``lo..hi`` read only columns inside ``0..n`` on every diagonal."""
        nd = f.dim(self.off, self.OFF)
        first, last = self.offset(f, f.c(0)), self.offset(f, f.sub(nd, f.c(1), "index"))
        c0 = f.c(0)
        below = f.sub(c0, first, "index")  # rows whose lowest diagonal starts left of column 0
        lo = f.op(f"arith.minsi {n}, {f.op(f'arith.maxsi {c0}, {below} : index', 'n')} : index", "n")
        hi = f.op(f"arith.minsi {n}, {f.sub(n, last, 'index')} : index", "n")
        return nd, lo, f.op(f"arith.maxsi {lo}, {hi} : index", "n")

    def row_dot(self, f: FuncBuilder, i: str, x: str, n: str, nd: str) -> str:
        """Row ``i`` of ``A x`` (element type), skipping columns outside ``0..n``."""
        E = self.elem
        zero = f.c(0.0, E)
        with f.loop(f.c(0), nd, [(zero, E)]) as dl:
            j = f.add(i, self.offset(f, dl.iv), "index")
            inside = f.cmpi("ult", j, n)  # a negative column wraps to a huge index
            xj = f.load(x, f.select(inside, j, f.c(0), "index"), vec(E))
            term = f.mul(f.load(self.val, f.add(f.mul(dl.iv, n, "index"), i, "index"), vec(E)), xj, E)
            f.yield_(dl, f.add(dl.args[0], f.select(inside, term, zero, E), E))
        return dl.results[0]

    def lanes_dot(self, f: FuncBuilder, i: str, L: Lanes, x: str, n: str, nd: str) -> str:
        """Rows ``i..i+width`` of ``A x`` (interior rows only: no column checks)."""
        with f.loop(f.c(0), nd, [(L.zero(f), L.t)]) as dl:
            v = L.ld(f, self.val, f.add(f.mul(dl.iv, n, "index"), i, "index"))
            xv = L.ld(f, x, f.add(i, self.offset(f, dl.iv), "index"))
            f.yield_(dl, f.add(dl.args[0], f.mul(v, xv, L.t), L.t))
        return dl.results[0]


Matrix = Csr | Dia
#: Rows of a DIA matrix handled at once in the interior (one or two SIMD registers).
DIA_WIDTH = 8


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


def team_buffers(f: FuncBuilder, threads: int, A: Matrix, n: str) -> Team:
    """Allocate a Team's scratch buffers (free them with :func:`free_team`); SEQUENTIAL for one thread.

    A DIA matrix has the same work per row, so its rows split into equal ranges (no ``rows``)."""
    if threads == 1:
        return SEQUENTIAL
    partials = f.alloc("memref<?xf64>", f.c(threads * _LINE))
    return Team(threads, partials, row_split(f, A, n, threads) if isinstance(A, Csr) else "")


def free_team(f: FuncBuilder, team: Team) -> None:
    if team.parallel:
        f.dealloc(team.partials, "memref<?xf64>")
        if team.rows:
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
          unroll: int = 2, team: Team = SEQUENTIAL, by_rows: bool = False, start: str | None = None) -> list[str]:
    """``for i in start..n: body(i, lanes)`` (``start`` 0 when None), returning the f64 sums of its terms.

    The main loop takes ``unroll`` groups of ``width`` lanes per step (SIMD vectors, separate
    partial sums per group, so dot products are not bound by one add chain); a scalar loop does the
    rest. ``width=1, unroll=1`` gives plain scalar code (for bodies that gather, like SpMV rows).
    With a parallel ``team`` each thread runs this on its chunk (``by_rows``: the team's row split).
    """
    first = start if start is not None else f.c(0)
    if not team.parallel:
        return _sweep_range(f, first, n, elem, body, nsums, width, unroll)
    T, F = team.threads, "memref<?xf64>"
    step = width * unroll
    span = f.sub(n, first, "index") if start is not None else n
    chunk = f.mul(f.op(f"arith.ceildivui {span}, {f.c(T * step)} : index", "n"), f.c(step), "index")
    cid = f.fresh("t")
    f.emit(f"scf.parallel ({cid}) = ({f.c(0)}) to ({f.c(T)}) step ({f.c(1)}) {{")
    with f.nested():
        if by_rows:
            lo = f.load(team.rows, cid, "memref<?xindex>")
            hi = f.load(team.rows, f.add(cid, f.c(1), "index"), "memref<?xindex>")
        else:
            lo = f.op(f"arith.minui {f.add(first, f.mul(cid, chunk, 'index'), 'index')}, {n} : index", "n")
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


#: rows(i, lanes, (A x)[i..i+lanes]) -> the f64 terms its caller sums (see :func:`matrix_rows`).
RowBody = Callable[[str, Lanes, str], Sequence[str]]


def matrix_rows(f: FuncBuilder, A: Matrix, n: str, x: str, body: RowBody, nsums: int,
                team: Team = SEQUENTIAL) -> list[str]:
    """``body(i, lanes, (A x)[rows])`` for every row, returning the f64 sums of its terms.

    CSR: one row at a time, split by nonzeros across the team. DIA: the interior rows ``DIA_WIDTH`` at a
    time across the team, the rows at both ends (columns checked) sequentially.
    """
    if isinstance(A, Csr):
        def row(i: str, L: Lanes) -> Sequence[str]:
            return body(i, L, A.row_dot(f, i, x))
        return sweep(f, n, A.elem, row, nsums, width=1, unroll=1, team=team, by_rows=True)
    nd, lo, hi = A.interior(f, n)

    def edge(i: str, L: Lanes) -> Sequence[str]:
        return body(i, L, A.row_dot(f, i, x, n, nd))

    def inner(i: str, L: Lanes) -> Sequence[str]:
        return body(i, L, A.lanes_dot(f, i, L, x, n, nd))
    head = sweep(f, lo, A.elem, edge, nsums, width=1, unroll=1)
    mid = sweep(f, hi, A.elem, inner, nsums, width=DIA_WIDTH, unroll=1, team=team, start=lo)
    tail = sweep(f, n, A.elem, edge, nsums, width=1, unroll=1, start=hi)
    return [f.add(f.add(a, b, "f64"), c, "f64") for a, b, c in zip(head, mid, tail)]


def residual(f: FuncBuilder, A: Matrix, n: str, b: str, x: str, r: str, team: Team = SEQUENTIAL) -> str:
    """``r = b - A x``; returns ``||r||^2`` (f64)."""
    def body(i: str, L: Lanes, ax: str) -> list[str]:
        ri = f.sub(L.ld(f, b, i), ax, L.t)
        L.st(f, ri, r, i)
        return [product(f, ri, ri, L)]
    return matrix_rows(f, A, n, x, body, 1, team)[0]


def spmv(f: FuncBuilder, A: Matrix, n: str, x: str, y: str, dots: Sequence[str] = (), team: Team = SEQUENTIAL,
         offset: str | None = None) -> list[str]:
    """``y = A x`` (into ``y[offset:]`` when given); returns ``dot(w, y)`` for each vector ``w`` in ``dots``."""
    def body(i: str, L: Lanes, yi: str) -> list[str]:
        L.st(f, yi, y, f.add(offset, i, "index") if offset else i)
        return [product(f, L.ld(f, w, i) if w != y else yi, yi, L) for w in dots]
    return matrix_rows(f, A, n, x, body, len(dots), team)
