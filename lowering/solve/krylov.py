"""CG, BiCGSTAB and restarted GMRES, each one MLIR function holding the whole iteration.

Signature of every solver (``A`` in CSR, preconditioner arguments from ``Preconditioner.args``)::

    @<name>(pos, crd, val, <precond...>, b, x, tol: f64, maxiter: index) -> (iterations, relres)

With ``layout="dia"`` the matrix arguments are ``off, val`` instead (see :class:`lowering.solve.vectors.Dia`):
the same iteration with a third fewer bytes per SpMV on banded matrices (no column indices).

``x`` holds the initial guess and receives the solution. The driver loop computes the true residual
``r = b - A x``, runs the method's inner iteration until its recursive residual reaches
``tol * ||b||`` (or ``maxiter``, or a breakdown), then recomputes the true residual and restarts if
that one is still too large; ``relres`` is the final true relative residual (NaN/Inf propagate, so
the caller can refuse garbage). ``b`` must not be zero (the caller returns ``x = 0`` itself).
Vectors have the matrix element type; dot products, norms and Krylov coefficients are f64.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .builder import FuncBuilder
from .precond import Preconditioner
from .values import FLOAT_TYPES, IndexBuf, Lanes, check_choice, check_positive, from_f64, vec
from .vectors import Csr, Dia, Matrix, Team, dot, free_team, product, residual, spmv, sqrt, sweep, team_buffers

METHODS = ("cg", "bicgstab", "gmres")
LAYOUTS = ("csr", "dia")


@dataclass(frozen=True)
class KrylovSpec:
    """Everything that changes the generated code of one iterative solver."""

    method: str
    elem: str
    index_width: int
    preconditioner: str = "none"
    restart: int = 30
    threads: int = 1
    layout: str = "csr"

    def __post_init__(self) -> None:
        check_choice("method", self.method, METHODS)
        check_choice("layout", self.layout, LAYOUTS)
        if self.layout == "dia" and self.preconditioner == "ilu0":
            raise ValueError("the ILU(0) preconditioner needs layout='csr'")
        check_choice("element type", self.elem, FLOAT_TYPES)
        check_positive("restart", self.restart)
        check_positive("threads", self.threads)
        IndexBuf(self.index_width)

    @property
    def name(self) -> str:
        extra = f"_m{self.restart}" if self.method == "gmres" else ""
        par = f"_t{self.threads}" if self.threads > 1 else ""
        dia = "_dia" if self.layout == "dia" else ""
        return f"{self.method}{extra}_{self.preconditioner}_{self.elem}_i{self.index_width}{par}{dia}"


@dataclass
class _Ctx:
    f: FuncBuilder
    A: Matrix
    M: Preconditioner
    n: str
    b: str
    x: str
    r: str
    thresh: str
    thr2: str
    maxiter: str
    restart: int
    team: Team

    @property
    def E(self) -> str:
        return self.A.elem

    def vector(self) -> str:
        return self.f.alloc(vec(self.E), self.n)

    def precondition(self, src: str, dst: str) -> str:
        """``M^-1 src`` in ``dst`` (or ``src`` itself for the identity)."""
        if self.M.identity:
            return src
        self.M.apply(self.f, self.A, self.n, src, dst, self.team)
        return dst

    def ld(self, mem: str, i: str) -> str:
        return self.f.load(mem, i, vec(self.E))

    def st(self, value: str, mem: str, i: str) -> None:
        self.f.store(value, mem, i, vec(self.E))

    def sweep(self, body: Callable[[str, Lanes], list[str]], nsums: int = 0, unroll: int = 2) -> list[str]:
        return sweep(self.f, self.n, self.E, body, nsums, unroll=unroll, team=self.team)

    def dot(self, a: str, b: str) -> str:
        return dot(self.f, self.n, a, b, self.E, self.team)

    def spmv(self, x: str, y: str, dots: Sequence[str] = (), offset: str | None = None) -> list[str]:
        return spmv(self.f, self.A, self.n, x, y, dots, self.team, offset)

    def narrow(self, v: str) -> str:
        """An f64 coefficient in the element type."""
        return from_f64(self.f, v, self.E)


Inner = Callable[[_Ctx, str], tuple[str, list[str]]]


def _cg(c: _Ctx, it0: str) -> tuple[str, list[str]]:
    """Preconditioned CG from residual ``r``; returns (iterations, buffers to free)."""
    f = c.f
    p, q = c.vector(), c.vector()
    z0 = c.vector() if not c.M.identity else c.r
    z = c.precondition(c.r, z0)
    rz0 = c.dot(c.r, z)

    def init(i: str, L: Lanes) -> list[str]:
        L.st(f, L.ld(f, z, i), p, i)
        return []
    c.sweep(init)
    true = f.c(1, "i1")
    with f.while_([(it0, "index"), (rz0, "f64"), (rz0 if c.M.identity else f.c(float("inf"), "f64"), "f64"),
                   (true, "i1")]) as w:
        it, rz, rr, ok = w.before
        go = f.andi(f.andi(ok, f.cmpi("ult", it, c.maxiter)), f.cmpf("ogt", rr, c.thr2))
        w.cond(go)
        it, rz, rr, ok = w.after
        pq = c.spmv(p, q, dots=[p])[0]
        good = f.cmpf("ogt", pq, f.c(0.0, "f64"))
        alpha64 = f.select(good, f.div(rz, pq, "f64"), f.c(0.0, "f64"), "f64")
        alpha = c.narrow(alpha64)

        jacobi = c.M.kind == "jacobi"  # z = dinv * r is never stored: both passes recompute it

        def update(i: str, L: Lanes) -> list[str]:
            ri = f.sub(L.ld(f, c.r, i), f.mul(L.splat(f, alpha), L.ld(f, q, i), L.t), L.t)
            L.st(f, ri, c.r, i)
            if jacobi:
                return [product(f, ri, ri, L), product(f, ri, f.mul(L.ld(f, "%dinv", i), ri, L.t), L)]
            return [product(f, ri, ri, L)]
        sums = c.sweep(update, 2 if jacobi else 1)
        rr2 = sums[0]
        if jacobi:
            z, rz2 = c.r, sums[1]
        else:
            z = c.precondition(c.r, z0)
            rz2 = rr2 if c.M.identity else c.dot(c.r, z)
        beta = c.narrow(f.select(good, f.div(rz2, rz, "f64"), f.c(0.0, "f64"), "f64"))

        def direction(i: str, L: Lanes) -> list[str]:  # x += alpha p and the new p, one read of p
            pi = L.ld(f, p, i)
            L.st(f, f.add(L.ld(f, c.x, i), f.mul(L.splat(f, alpha), pi, L.t), L.t), c.x, i)
            zi = f.mul(L.ld(f, "%dinv", i), L.ld(f, c.r, i), L.t) if jacobi else L.ld(f, z, i)
            L.st(f, f.add(zi, f.mul(L.splat(f, beta), pi, L.t), L.t), p, i)
            return []
        c.sweep(direction)
        w.yield_(f.add(it, f.c(1), "index"), rz2, rr2, good)
    bufs = [p, q] + ([z0] if not c.M.identity else [])
    return w.results[0], bufs


def _bicgstab(c: _Ctx, it0: str) -> tuple[str, list[str]]:
    """Right-preconditioned BiCGSTAB from residual ``r``."""
    f = c.f
    zero, one = f.c(0.0, "f64"), f.c(1.0, "f64")
    rhat, p, v, t = c.vector(), c.vector(), c.vector(), c.vector()
    phat0 = shat0 = None
    if not c.M.identity:
        phat0, shat0 = c.vector(), c.vector()

    def init(i: str, L: Lanes) -> list[str]:
        ri = L.ld(f, c.r, i)
        L.st(f, ri, rhat, i)
        L.st(f, L.zero(f), p, i)
        L.st(f, L.zero(f), v, i)
        return [product(f, ri, ri, L)]
    rho0 = c.sweep(init, 1)[0]  # dot(rhat, r) with rhat = r

    def nonzero(v64: str) -> str:
        return f.cmpf("one", v64, zero)

    def safe_div(a: str, b: str) -> str:
        return f.select(nonzero(b), f.div(a, b, "f64"), zero, "f64")

    # state: iterations, rho/alpha/omega of the previous step, ||r||^2, no breakdown, dot(rhat, r)
    with f.while_([(it0, "index"), (one, "f64"), (one, "f64"), (one, "f64"), (f.c(float("inf"), "f64"), "f64"),
                   (f.c(1, "i1"), "i1"), (rho0, "f64")]) as w:
        it, rho_old, alpha_old, omega_old, rr, ok, rho = w.before
        go = f.andi(f.andi(ok, f.cmpi("ult", it, c.maxiter)), f.cmpf("ogt", rr, c.thr2))
        w.cond(go)
        it, rho_old, alpha_old, omega_old, rr, ok, rho = w.after
        beta = c.narrow(f.mul(safe_div(rho, rho_old), safe_div(alpha_old, omega_old), "f64"))
        om = c.narrow(omega_old)

        def direction(i: str, L: Lanes) -> list[str]:
            pv = f.sub(L.ld(f, p, i), f.mul(L.splat(f, om), L.ld(f, v, i), L.t), L.t)
            L.st(f, f.add(L.ld(f, c.r, i), f.mul(L.splat(f, beta), pv, L.t), L.t), p, i)
            return []
        c.sweep(direction)
        phat = c.precondition(p, phat0) if phat0 else p
        rv = c.spmv(phat, v, dots=[rhat])[0]
        alpha64 = safe_div(rho, rv)
        alpha = c.narrow(alpha64)

        def half(i: str, L: Lanes) -> list[str]:  # s = r - alpha v, kept in r
            L.st(f, f.sub(L.ld(f, c.r, i), f.mul(L.splat(f, alpha), L.ld(f, v, i), L.t), L.t), c.r, i)
            return []
        c.sweep(half)
        shat = c.precondition(c.r, shat0) if shat0 else c.r
        tt, ts = c.spmv(shat, t, dots=[t, c.r])
        omega64 = safe_div(ts, tt)
        omega = c.narrow(omega64)

        def update(i: str, L: Lanes) -> list[str]:
            a, o, T = L.splat(f, alpha), L.splat(f, omega), L.t
            step = f.add(f.mul(a, L.ld(f, phat, i), T), f.mul(o, L.ld(f, shat, i), T), T)
            L.st(f, f.add(L.ld(f, c.x, i), step, T), c.x, i)
            ri = f.sub(L.ld(f, c.r, i), f.mul(o, L.ld(f, t, i), T), T)
            L.st(f, ri, c.r, i)
            return [product(f, ri, ri, L), product(f, L.ld(f, rhat, i), ri, L)]
        rr2, rho2 = c.sweep(update, 2)
        good = f.andi(f.andi(nonzero(rho), nonzero(rv)), nonzero(omega64))
        w.yield_(f.add(it, f.c(1), "index"), rho, alpha64, omega64, rr2, good, rho2)
    bufs = [rhat, p, v, t] + ([phat0, shat0] if phat0 and shat0 else [])
    return w.results[0], bufs


def _gmres(c: _Ctx, it0: str) -> tuple[str, list[str]]:
    """One cycle of right-preconditioned GMRES(m) (modified Gram-Schmidt, Givens rotations)."""
    f, E, m = c.f, c.E, c.restart
    F = "memref<?xf64>"
    c0, c1 = f.c(0), f.c(1)
    zero, one = f.c(0.0, "f64"), f.c(1.0, "f64")
    V = f.alloc(vec(E), f.mul(c.n, f.c(m + 1), "index"))
    H = f.alloc(F, f.c((m + 1) * m))
    cs, sn, g, y = (f.alloc(F, f.c(m + 1)) for _ in range(4))
    z0 = c.vector() if not c.M.identity else None
    u = c.vector()
    beta = sqrt(f, c.dot(c.r, c.r))
    inv = c.narrow(f.div(one, beta, "f64"))

    def start(i: str, L: Lanes) -> list[str]:
        L.st(f, f.mul(L.ld(f, c.r, i), L.splat(f, inv), L.t), V, i)
        return []
    c.sweep(start)
    with f.loop(c0, f.c(m + 1)) as lp:
        f.store(zero, g, lp.iv, F)
    f.store(beta, g, c0, F)

    def h_at(i: str, j: str) -> str:
        return f.add(f.mul(i, f.c(m), "index"), j, "index")

    def view(k: str) -> str:  # offset of basis vector k in V
        return f.mul(k, c.n, "index")

    with f.while_([(c0, "index"), (it0, "index"), (beta, "f64")]) as w:
        j, it, res = w.before
        go = f.andi(f.andi(f.cmpi("ult", j, f.c(m)), f.cmpi("ult", it, c.maxiter)), f.cmpf("ogt", res, c.thresh))
        w.cond(go)
        j, it, res = w.after
        vj, vw = view(j), view(f.add(j, c1, "index"))
        def copy(i: str, L: Lanes) -> list[str]:
            L.st(f, L.ld(f, V, f.add(vj, i, "index")), u, i)
            return []
        c.sweep(copy)
        src = u if z0 is None else c.precondition(u, z0)
        # w = A src, written into V[j+1]
        c.spmv(src, V, offset=vw)
        with f.loop(c0, f.add(j, c1, "index")) as gs:
            vi = view(gs.iv)
            h = dot_offsets(f, c, V, vw, vi)
            f.store(h, H, h_at(gs.iv, j), F)
            hn = c.narrow(h)

            def orth(i: str, L: Lanes, vi: str = vi, hn: str = hn) -> list[str]:
                k = f.add(vw, i, "index")
                vk = f.mul(L.splat(f, hn), L.ld(f, V, f.add(vi, i, "index")), L.t)
                L.st(f, f.sub(L.ld(f, V, k), vk, L.t), V, k)
                return []
            c.sweep(orth)
        hnext = sqrt(f, dot_offsets(f, c, V, vw, vw))
        f.store(hnext, H, h_at(f.add(j, c1, "index"), j), F)
        scale = c.narrow(f.select(f.cmpf("one", hnext, zero), f.div(one, hnext, "f64"), zero, "f64"))

        def normalize(i: str, L: Lanes) -> list[str]:
            k = f.add(vw, i, "index")
            L.st(f, f.mul(L.ld(f, V, k), L.splat(f, scale), L.t), V, k)
            return []
        c.sweep(normalize)
        with f.loop(c0, j) as rot:  # previous rotations on column j
            i0, i1 = h_at(rot.iv, j), h_at(f.add(rot.iv, c1, "index"), j)
            a, b = f.load(H, i0, F), f.load(H, i1, F)
            ci, si = f.load(cs, rot.iv, F), f.load(sn, rot.iv, F)
            f.store(f.add(f.mul(ci, a, "f64"), f.mul(si, b, "f64"), "f64"), H, i0, F)
            f.store(f.sub(f.mul(ci, b, "f64"), f.mul(si, a, "f64"), "f64"), H, i1, F)
        jj, j1 = h_at(j, j), h_at(f.add(j, c1, "index"), j)
        a, b = f.load(H, jj, F), f.load(H, j1, F)
        d = sqrt(f, f.add(f.mul(a, a, "f64"), f.mul(b, b, "f64"), "f64"))
        dz = f.cmpf("oeq", d, zero)
        cj = f.select(dz, one, f.div(a, d, "f64"), "f64")
        sj = f.select(dz, zero, f.div(b, d, "f64"), "f64")
        f.store(cj, cs, j, F)
        f.store(sj, sn, j, F)
        f.store(d, H, jj, F)
        f.store(zero, H, j1, F)
        gj = f.load(g, j, F)
        gnext = f.sub(zero, f.mul(sj, gj, "f64"), "f64")
        f.store(f.mul(cj, gj, "f64"), g, j, F)
        f.store(gnext, g, f.add(j, c1, "index"), F)
        w.yield_(f.add(j, c1, "index"), f.add(it, c1, "index"), f.op(f"math.absf {gnext} : f64"))
    k, it_end = w.results[0], w.results[1]
    # back substitution H[:k,:k] y = g[:k]
    with f.loop(c0, k) as bl:
        i = f.sub(f.sub(k, c1, "index"), bl.iv, "index")
        with f.loop(f.add(i, c1, "index"), k, [(f.load(g, i, F), "f64")]) as sl:
            s = f.sub(sl.args[0], f.mul(f.load(H, h_at(i, sl.iv), F), f.load(y, sl.iv, F), "f64"), "f64")
            f.yield_(sl, s)
        f.store(f.div(sl.results[0], f.load(H, h_at(i, i), F), "f64"), y, i, F)

    def combine(i: str, L: Lanes) -> list[str]:
        with f.loop(c0, k, [(L.zero(f), L.t)]) as cl:
            yk = L.splat(f, c.narrow(f.load(y, cl.iv, F)))
            term = f.mul(yk, L.ld(f, V, f.add(view(cl.iv), i, "index")), L.t)
            f.yield_(cl, f.add(cl.args[0], term, L.t))
        L.st(f, cl.results[0], u, i)
        return []
    c.sweep(combine, unroll=1)
    corr = c.precondition(u, z0) if z0 else u

    def correct(i: str, L: Lanes) -> list[str]:
        L.st(f, f.add(L.ld(f, c.x, i), L.ld(f, corr, i), L.t), c.x, i)
        return []
    c.sweep(correct)
    bufs = [V, u] + ([z0] if z0 else [])
    for small in (H, cs, sn, g, y):
        f.dealloc(small, F)
    return it_end, bufs


def dot_offsets(f: FuncBuilder, c: _Ctx, V: str, oa: str, ob: str) -> str:
    """``dot(V[oa:oa+n], V[ob:ob+n])`` in f64."""
    def body(i: str, L: Lanes) -> list[str]:
        return [product(f, L.ld(f, V, f.add(oa, i, "index")), L.ld(f, V, f.add(ob, i, "index")), L)]
    return c.sweep(body, 1)[0]


_INNER: dict[str, Inner] = {"cg": _cg, "bicgstab": _bicgstab, "gmres": _gmres}


def krylov_function(spec: KrylovSpec) -> str:
    """The solver function of ``spec`` (see the module docstring for its signature)."""
    E = spec.elem
    idx = IndexBuf(spec.index_width)
    M = Preconditioner(spec.preconditioner, E, spec.index_width)
    A: Matrix
    if spec.layout == "dia":
        mat = [("off", Dia.OFF), ("val", vec(E))]
        A = Dia("%off", "%val", E)
    else:
        mat = [("pos", idx.memref), ("crd", idx.memref), ("val", vec(E))]
        A = Csr("%pos", "%crd", "%val", idx, E)
    args = [*mat, *M.args(), ("b", vec(E)), ("x", vec(E)), ("tol", "f64"), ("maxiter", "index")]
    f = FuncBuilder(spec.name, args, results=["index", "f64"])
    n = f.dim("%b", vec(E))
    team = team_buffers(f, spec.threads, A, n)
    bnorm = sqrt(f, dot(f, n, "%b", "%b", E, team))
    thresh = f.mul("%tol", bnorm, "f64")
    r = f.alloc(vec(E), n)
    c = _Ctx(f, A, M, n, "%b", "%x", r, thresh, f.mul(thresh, thresh, "f64"), "%maxiter", spec.restart, team)
    rn0 = sqrt(f, residual(f, A, n, "%b", "%x", r, team))
    with f.while_([(f.c(0), "index"), (rn0, "f64"), (f.c(0, "i1"), "i1")]) as w:
        it, rn, stall = w.before
        go = f.andi(f.andi(f.cmpi("ult", it, "%maxiter"), f.cmpf("ogt", rn, thresh)),
                    f.op(f"arith.xori {stall}, {f.c(1, 'i1')} : i1", "b"))
        w.cond(go)
        it, rn, stall = w.after
        it2, bufs = _INNER[spec.method](c, it)
        for buf in bufs:
            f.dealloc(buf, vec(E))
        rn2 = sqrt(f, residual(f, A, n, "%b", "%x", r, team))
        w.yield_(it2, rn2, f.cmpi("eq", it2, it))
    f.dealloc(r, vec(E))
    free_team(f, team)
    f.ret(w.results[0], f.div(w.results[1], bnorm, "f64"))
    return f.finish()


def krylov_module(spec: KrylovSpec) -> str:
    """A module holding the solver of ``spec``."""
    return "module {\n" + krylov_function(spec) + "\n}\n"
