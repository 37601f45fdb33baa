"""``solve`` / ``Solve``: sparse linear systems ``a @ x = b`` for ``a`` in any format, compiled through MLIR.

Methods (``method=``): ``"triangular"`` (forward/backward substitution), ``"cg"``, ``"bicgstab"``,
``"gmres"`` (restarted, ``restart=30``), or ``"auto"``: triangular ``a`` -> substitution; symmetric with
a positive diagonal -> CG; otherwise BiCGSTAB. Each iterative method is one compiled function that
runs the whole iteration (see :mod:`lowering.solve.krylov`). Preconditioners: ``None``, ``"jacobi"``,
``"ilu0"``, ``"ic0"`` (IC(0) for symmetric ``a``, computed as ILU(0), whose factors are then L D L^T);
factorizations happen once, in ``plan()``. ``threads``: the iterative kernels' SpMV, dot products and
vector updates run on that many OpenMP threads (``None``: every core above a size threshold, see
:mod:`frontend.solvers._threads`; ``1``: single-threaded code); substitution and ILU(0) stay sequential.
``layout``: the storage the iterative kernel walks, ``"csr"``, ``"dia"`` (diagonals, no column indices), or
``"auto"``: DIA for large matrices whose diagonals would move at most 0.8x CSR's bytes (see
:mod:`frontend.solvers._layout`), CSR otherwise.

``Solve(a, ...).plan()`` analyses ``a``, converts it to the walked format and compiles the kernel; each
``execute(b)`` then only calls it. ``info`` reports the method, the walked format, iterations and the final
relative residual ``||b - a x|| / ||b||`` (``None`` for substitution). Not converging raises
:class:`ConvergenceError` (or warns with :class:`ConvergenceWarning` when ``on_failure="warn"``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend.format import index_width, mlir_type
from frontend.ops._operands import delegate, result_package, to_caller_package
from frontend.solvers._layout import check_layout, choose_layout, dia_operands
from frontend.solvers._operands import (
    CsrOperands,
    Structure,
    analyze,
    as_matrix,
    csr_operands,
    triangular_operands,
    working_dtype,
)
from frontend.solvers._threads import check_threads, solver_threads
from frontend.storage._buffers import is_torch
from frontend.storage._validate import index_snapshot, recheck, same_indices, validate_now
from frontend.tensor._tensor import Tensor
from lowering.solve import (
    KrylovSpec,
    TriangularSpec,
    compile_solver,
    ilu0_function,
    krylov_module,
    openmp_available,
    triangular_module,
)

METHODS = ("auto", "triangular", "cg", "bicgstab", "gmres")
PRECONDITIONERS = (None, "jacobi", "ilu0", "ic0")
_MAX_RHS_BLOCK = 8  # right-hand sides per substitution call (one vector register row)


class ConvergenceError(RuntimeError):
    """An iterative solve stopped above its tolerance (or produced NaN/Inf)."""


class ConvergenceWarning(RuntimeWarning):
    """Like ConvergenceError, for ``on_failure="warn"``."""


@dataclass(frozen=True)
class SolveInfo:
    """What a Solve did: method, walked format, preconditioner, why, and the last execute's outcome.

    ``threads``: the team size of the iterative kernel (1 for substitution).
    """

    method: str
    format: str
    preconditioner: str | None
    reason: str
    iterations: int = 0
    residual: float | None = None
    converged: bool = True
    threads: int = 1


def _dense(b: Any, what: str) -> np.ndarray:
    """``b`` as a NumPy array (Tensors densified, torch viewed, scipy sparse densified)."""
    if isinstance(b, Tensor):
        return b.to_dense()
    if hasattr(b, "toarray"):
        return b.toarray()
    if is_torch(b):
        if b.device.type != "cpu":
            raise ValueError(f"{what} is on {b.device}; solve runs on the CPU")
        b = b.detach().resolve_conj().numpy()
    arr = np.asarray(b)
    if arr.dtype == object or arr.dtype.kind not in "fiub":
        raise TypeError(f"{what} must be a real numeric array, got dtype {arr.dtype}")
    return arr


class Solve:
    """A planned solver for one matrix; ``execute(b)`` solves for any number of right-hand sides."""

    _dt: np.dtype  # working dtype and its MLIR element type, set by plan()
    _elem: str

    def __init__(self, a: Any, *, method: str = "auto", tol: float = 1e-8, maxiter: int | None = None,
                 preconditioner: str | None = None, lower: bool | None = None, upper: bool | None = None,
                 unit_diagonal: bool = False, on_failure: str = "raise", restart: int = 30,
                 dtype: Any = None, threads: int | None = None, layout: str = "auto") -> None:
        """See the module docstring; ``dtype`` forces the working precision (float32/float64)."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if preconditioner not in PRECONDITIONERS:
            raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {preconditioner!r}")
        if on_failure not in ("raise", "warn"):
            raise ValueError(f"on_failure must be 'raise' or 'warn', got {on_failure!r}")
        if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        if maxiter is not None and (not isinstance(maxiter, (int, np.integer)) or maxiter < 1):
            raise ValueError(f"maxiter must be a positive int, got {maxiter!r}")
        if not isinstance(restart, (int, np.integer)) or restart < 1:
            raise ValueError(f"restart must be a positive int, got {restart!r}")
        if lower and upper:
            raise ValueError("lower=True and upper=True contradict each other")
        if (lower or upper or unit_diagonal) and method not in ("auto", "triangular"):
            raise ValueError(f"lower/upper/unit_diagonal describe triangular solves, not method={method!r}")
        self.threads = check_threads(threads)
        self.layout = check_layout(layout)
        self._a = a
        self._matrix = as_matrix(a)
        self.method, self.tol, self.maxiter = method, float(tol), maxiter
        self.preconditioner, self.lower, self.upper = preconditioner, lower, upper
        self.unit_diagonal, self.on_failure, self.restart = bool(unit_diagonal), on_failure, int(restart)
        self._dtype = None if dtype is None else working_dtype(dtype, dtype)
        self._planned = False
        self._indices: tuple[np.ndarray, ...] | None = None
        self._structure: Structure | None = None
        self._info: SolveInfo | None = None
        self._kernels: dict[int, Any] = {}
        self._prepared: dict[int, Any] = {}  # 1 -> (triangular operands, their prepared one-vector call)

    @property
    def shape(self) -> tuple[int, int]:
        return self._matrix.shape  # type: ignore[return-value]

    @property
    def info(self) -> SolveInfo:
        """Method, walked format, preconditioner, reason; iterations/residual of the last execute."""
        if self._info is None:
            self.plan()
        assert self._info is not None
        return self._info

    # ----- planning ------------------------------------------------------------------------------------
    def plan(self, dtype: Any = None) -> Solve:
        """Analyse ``a``, pick the method, convert, factorize and compile (once per value dtype)."""
        dt = working_dtype(self._matrix.dtype, dtype if dtype is not None else (self._dtype or self._matrix.dtype))
        if self._planned and dt == self._dt:
            return self
        self._dt, self._elem = dt, mlir_type(dt)
        t, n = self._matrix, self.shape[0]
        tri = self._triangle()
        if tri is not None:
            lower, reason = tri
            if self.preconditioner is not None:
                raise ValueError("substitution takes no preconditioner")
            self._tri = triangular_operands(t, lower, self.unit_diagonal, dt)
            self._lower_tri = lower
            self._info = SolveInfo("triangular", self._tri.walked, None, reason)
        else:
            method, reason = self._iterative_method()
            self._method = method
            c = self._csr = csr_operands(t, dt)
            self._pc_args, pc_kind = self._factorize(c)
            threads = solver_threads(self.threads, n, c.val.size, openmp_available())
            layout, why = choose_layout(self.layout, c, self.preconditioner)
            if layout == "dia":
                d = dia_operands(c)
                self._mat_args: tuple[np.ndarray, ...] = (d.off, d.val)
            else:
                self._mat_args = (c.pos, c.crd, c.val)
            self._spec = KrylovSpec(method, self._elem, index_width(c.pos.dtype), pc_kind,
                                    min(self.restart, max(n, 1)), threads, layout)
            mod = compile_solver(krylov_module(self._spec), threads)
            self._fn = mod.function(self._spec.name)
            self._info = SolveInfo(method, layout.upper(), self.preconditioner, f"{reason}; walks {why}",
                                   threads=threads)
        self._planned = True
        self._kernels, self._prepared = {}, {}
        self._indices = index_snapshot(t)  # unwatched index buffers as planned: compared before each solve
        return self

    def _triangle(self) -> tuple[bool, str] | None:
        """(lower?, reason) when substitution applies, None for iterative methods."""
        if self.lower or self.upper:
            return bool(self.lower), "lower=True" if self.lower else "upper=True"
        if self.method not in ("auto", "triangular"):
            return None
        s = self._struct()
        if s.lower or s.upper:
            return s.lower, f"{'lower' if s.lower else 'upper'} triangular matrix"
        if self.method == "triangular":
            raise ValueError("method='triangular' needs a triangular matrix (or pass lower=True/upper=True "
                             "to use one triangle)")
        if self.unit_diagonal:
            raise ValueError("unit_diagonal=True needs a triangular matrix (or lower=True/upper=True)")
        return None

    def _iterative_method(self) -> tuple[str, str]:
        """(method, reason) for a non-triangular solve."""
        if self.preconditioner == "ic0" and not self._struct().symmetric:
            raise ValueError("preconditioner='ic0' needs a symmetric matrix; use 'ilu0'")
        if self.method != "auto":
            return self.method, f"method={self.method!r}"
        s = self._struct()
        if s.symmetric and s.positive_diagonal:
            return "cg", "symmetric with a positive diagonal"
        return "bicgstab", "not symmetric" if not s.symmetric else "symmetric, diagonal not positive"

    def _struct(self) -> Structure:
        """The structure analysis of ``a`` (computed once)."""
        if self._structure is None:
            self._structure = analyze(self._matrix)
        return self._structure

    def _factorize(self, csr: CsrOperands) -> tuple[tuple[np.ndarray, ...], str]:
        pc = self.preconditioner
        missing = np.flatnonzero((csr.dptr < 0) | (csr.diag == 0))
        if pc is None:
            return (), "none"
        if missing.size:
            raise ValueError(f"preconditioner {pc!r} needs a nonzero diagonal; row {int(missing[0])} has none")
        if pc == "jacobi":
            return (np.ascontiguousarray(1 / csr.diag),), "jacobi"
        idx = index_width(csr.pos.dtype)
        name = f"ilu0_{self._elem}_i{idx}"
        ilu = compile_solver("module {\n" + ilu0_function(self._elem, idx) + "\n}\n").function(name)
        lu = csr.val.copy()
        ilu(csr.pos, csr.crd, lu, csr.dptr)
        udiag = np.ascontiguousarray(lu[csr.dptr])
        bad = np.flatnonzero((udiag == 0) | ~np.isfinite(udiag))
        if bad.size:
            raise ValueError(f"{pc.upper()} factorization broke down: zero or non-finite pivot at row {int(bad[0])}")
        if pc == "ic0" and np.any(udiag < 0):
            row = int(np.flatnonzero(udiag < 0)[0])
            raise ValueError(f"IC(0) factorization broke down: negative pivot at row {row} (the matrix is not "
                             "positive definite enough for IC(0); try 'ilu0' or 'jacobi')")
        return (lu, csr.dptr, np.ascontiguousarray(1 / udiag)), "ilu0"

    # ----- solving -------------------------------------------------------------------------------------
    def execute(self, b: Any, x0: Any = None) -> Any:
        """Solve for ``b`` (length n, or n x k for k right-hand sides); returns x in the inputs' package."""
        package = result_package((self._a, b))
        arr = _dense(b, "b")
        n = self.shape[0]
        if arr.ndim not in (1, 2) or arr.shape[0] != n:
            raise ValueError(f"b must have shape ({n},) or ({n}, k) to match a {self.shape} matrix, got {arr.shape}")
        if arr.size and not np.isfinite(arr).all():
            raise ValueError("b has NaN or Inf entries")
        if self._planned and self._matrix.is_sparse:  # index buffers changed in place: validate, plan again
            guard = self._matrix._guard
            recheck(self._matrix)
            if self._matrix._guard is not guard or not same_indices(self._matrix, self._indices):
                self._planned = False  # NumPy index buffers written in place: validated and planned again
                validate_now(self._matrix)  # ValueError naming the level when now wrong
        self.plan(working_dtype(self._matrix.dtype, arr.dtype))
        dt = self._dt
        if n == 0:
            return to_caller_package(np.zeros(arr.shape, dtype=dt), package)
        cols = np.ascontiguousarray(arr.reshape(n, -1), dtype=dt)
        guess = None
        if x0 is not None:
            if self._info is not None and self._info.method == "triangular":
                raise ValueError("x0 is for iterative methods; substitution takes none")
            g = _dense(x0, "x0")
            if g.shape != arr.shape:
                raise ValueError(f"x0 must have the shape of b {arr.shape}, got {g.shape}")
            if g.size and not np.isfinite(g).all():
                raise ValueError("x0 has NaN or Inf entries")
            guess = np.ascontiguousarray(g.reshape(n, -1), dtype=dt)
        if self._info is not None and self._info.method == "triangular":
            x = self._substitute(cols)
        else:
            x = self._iterate(cols, guess)
        return to_caller_package(x.reshape(arr.shape), package)

    def _tri_kernel(self, nrhs: int) -> Any:
        fn = self._kernels.get(nrhs)
        if fn is None:
            t = self._tri
            spec = TriangularSpec(t.layout, self._lower_tri, self.unit_diagonal, self._elem, index_width(t.p.dtype),
                                  nrhs, t.block)
            fn = self._kernels[nrhs] = compile_solver(triangular_module(spec)).function(spec.name)
        return fn

    def _substitute_one(self, b: np.ndarray, x: np.ndarray) -> None:
        """One right-hand side ``b`` into ``x`` (contiguous vectors) through the call prepared for this plan's
        operands (:meth:`mlir_bridge.module.Function.bind`, descriptors packed once): a repeat call swaps two
        data pointers instead of packing six descriptors (about 4 us). Thread-safe: a call takes the prepared
        call out while it runs."""
        t = self._tri
        entry = self._prepared.pop(1, None)
        if entry is not None and entry[0] is t:
            bound = entry[1]
            bound.rebind_same(4, b)
            bound.rebind_same(5, x)
        else:
            bound = self._tri_kernel(1).bind(t.p, t.q, t.val, t.diag, b, x)
        bound()
        self._prepared[1] = (t, bound)

    def _substitute(self, cols: np.ndarray) -> np.ndarray:
        t, (n, k) = self._tri, cols.shape
        out = np.empty_like(cols)
        if k == 1:  # (n, 1) contiguous: both are vectors viewed without copies
            self._substitute_one(cols.reshape(n), out.reshape(n))
        for start in range(0, k if k > 1 else 0, _MAX_RHS_BLOCK):
            stop = min(k, start + _MAX_RHS_BLOCK)
            w = stop - start
            bb = np.ascontiguousarray(cols[:, start:stop]).reshape(n) if w == 1 else \
                np.ascontiguousarray(cols[:, start:stop])
            xx = np.empty_like(bb)
            self._tri_kernel(w)(t.p, t.q, t.val, t.diag, bb, xx)
            out[:, start:stop] = xx.reshape(n, w)
        ok = bool(np.isfinite(out).all())
        info = self._info
        if info is None or info.iterations != 0 or info.residual is not None or info.converged is not ok:
            self._info = _replace(info, iterations=0, residual=None, converged=ok)
        if not ok:
            self._fail("substitution overflowed (NaN/Inf in x): the matrix is too ill-conditioned for this "
                       "precision")
        return out

    def _iterate(self, cols: np.ndarray, guess: np.ndarray | None) -> np.ndarray:
        n, k = cols.shape
        maxiter = self.maxiter if self.maxiter is not None else 10 * n
        out = np.zeros_like(cols) if guess is None else guess.copy()
        its, worst = 0, 0.0
        for j in range(k):
            bj = np.ascontiguousarray(cols[:, j])
            if not bj.any():
                out[:, j] = 0
                continue
            xj = np.ascontiguousarray(out[:, j])
            it, res = self._fn(*self._mat_args, *self._pc_args, bj, xj, self.tol, maxiter)
            out[:, j] = xj
            its, worst = max(its, int(it)), (res if not np.isfinite(res) or res > worst else worst)
        ok = bool(np.isfinite(worst) and worst <= self.tol * (1 + 1e-6) and np.isfinite(out).all())
        self._info = _replace(self._info, iterations=its, residual=float(worst), converged=ok)
        if not ok:
            hint = " (float32 rarely reaches tol below ~1e-6; pass a larger tol)" if self._elem == "f32" \
                and self.tol < 1e-6 else ""
            self._fail(f"{self._method} did not converge: relative residual {worst:.3g} > tol "
                                   f"{self.tol:g} after {its} iterations{hint}")
        return out

    def _fail(self, message: str) -> None:
        if self.on_failure == "raise":
            raise ConvergenceError(message)
        warnings.warn(message, ConvergenceWarning, stacklevel=3)


def _replace(info: SolveInfo | None, **changes: Any) -> SolveInfo:
    from dataclasses import replace

    assert info is not None
    return replace(info, **changes)


def solve(a: Any, b: Any, *, method: str = "auto", tol: float = 1e-8, maxiter: int | None = None,
          x0: Any = None, preconditioner: str | None = None, lower: bool | None = None,
          upper: bool | None = None, unit_diagonal: bool = False, on_failure: str = "raise",
          restart: int = 30, threads: int | None = None, layout: str = "auto") -> Any:
    """Solve ``a @ x = b`` (see the module docstring); returns x in the inputs' package. A distributed ``a``
    (``frontend.distributed``) solves on its workers (CG, BiCGSTAB, GMRES; Jacobi)."""
    if delegate((a,)) is not None:
        return a.__ust_function__("solve", (a, b), dict(
            method=method, tol=tol, maxiter=maxiter, x0=x0, preconditioner=preconditioner, restart=restart,
            on_failure=on_failure, lower=lower, upper=upper, unit_diagonal=unit_diagonal, threads=threads))
    s = Solve(a, method=method, tol=tol, maxiter=maxiter, preconditioner=preconditioner, lower=lower,
              upper=upper, unit_diagonal=unit_diagonal, on_failure=on_failure, restart=restart, threads=threads,
              layout=layout)
    return s.execute(b, x0=x0)
