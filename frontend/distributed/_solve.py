"""``frontend.solve`` on a :class:`DistributedTensor`: CG, BiCGSTAB and restarted GMRES with the vectors kept
on the workers next to their partitions.

The client drives the iteration as *steps* (:func:`frontend.distributed._worker.solve_step`): every partition
runs one task with a short list of vector operations and its compiled local SpMV, and returns its share of
the dot products; the sums are the only global steps. A partition receives only the vector entries its
columns touch (the halo, planned once per tensor: :func:`frontend.distributed._plan.halo_plan`): each step
exports those entries of the vectors the next SpMV's operand is made of, and the client combines them with
the next step's coefficients and sends them along. CG (Chronopoulos-Gear) takes 1 step an iteration, BiCGSTAB
3, GMRES 3 (classical Gram-Schmidt, twice). A worker lost mid-solve restarts the solve after the lost
partitions are rebuilt.
"""
from __future__ import annotations

import itertools
import uuid
from typing import Any

import numpy as np

from . import _worker
from ._client import LOG
from ._run import WorkerLost, is_distributed, submit, wait_all

METHODS = ("auto", "cg", "bicgstab", "gmres")
PRECONDITIONERS = (None, "jacobi")
Terms = list[tuple[Any, str, bool]]  # (coefficient, vector name, Jacobi-scaled)


class Machine:
    """The client's handle on one solve's worker-resident vectors: :meth:`step` runs operations on every
    partition (one task each) and returns the summed dot products. Halo entries travel with the steps: a
    step *exports* the entries of named vectors other partitions touch, and the next step's halo is formed
    on the client from them (a linear combination with that step's coefficients) and sent along."""

    def __init__(self, a: Any, b: np.ndarray, x0: np.ndarray, jacobi: bool) -> None:
        self.a, self.client = a, a.client
        self.halo = a.halo()
        self.key = f"ust-solve-{uuid.uuid4().hex}"
        a.heal()  # every partition in memory (lost ones rebuilt) before the vectors are placed next to them
        self.places = a.workers()
        if None in self.places:
            raise WorkerLost(f"partition {self.places.index(None)} has no worker", self.places.index(None), None)
        self.steps = 0
        self.bytes_exchanged = 0  # halo entries' bytes: exported to the client plus sent to the partitions
        bounds = a.bounds
        # what each partition last exported to each other one: (sender, receiver) -> {(name, scaled): values}
        self.exports: dict[tuple[int, int], dict[tuple[str, bool], np.ndarray]] = {
            (q, p): {("x", False): x0[bounds[q] + idx]} for q in range(a.partitions)
            for p, idx in self.halo[q].send.items()}
        self.pairs = list(self.exports)
        futures = [self._at(p, _worker.solve_setup, a.block(p), self._key(p), self.halo[p], b[bounds[p]:bounds[p + 1]],
                            x0[bounds[p]:bounds[p + 1]], jacobi) for p in range(a.partitions)]
        self._wait(futures)

    def _key(self, p: int) -> str:
        """Partition p's state on its worker (two partitions may share a worker)."""
        return f"{self.key}-{p}"

    def _at(self, p: int, fn: Any, *args: Any) -> Any:
        return submit(self.client, fn, *args, worker=self.places[p], strict=True)

    def _wait(self, futures: list[Any]) -> list[Any]:
        return wait_all(self.client, futures, list(enumerate(self.places)), self.a.timeout)

    def exported(self, name: str, scaled: bool = False) -> bool:
        """Whether the last step exported ``name`` (so a halo may use it)."""
        return all((name, scaled) in self.exports.get(pair, {}) for pair in self.pairs)

    def step(self, ops: list[tuple], halo: Terms | None = None, export: list[tuple[str, bool]] | None = None
             ) -> np.ndarray:
        """Run ``ops`` on every partition and return the dot products summed over partitions. ``halo``: the
        terms ``(coef, name, scaled)`` of the vector the step's SpMV multiplies, formed from the last step's
        exports; ``export``: what this step exports for the next one."""
        n = self.a.partitions
        received: list[list[np.ndarray]] = [[] for _ in range(n)]
        if halo is not None:
            for p in range(n):
                for q, _ in self.halo[p].recv:
                    got = self.exports[(q, p)]
                    values = sum(coef * got[(name, scaled)] for coef, name, scaled in halo)
                    received[p].append(values)
                    self.bytes_exchanged += values.nbytes
        futures = [self._at(p, _worker.solve_step, self._key(p), ops, received[p], export or [])
                   for p in range(n)]
        self.steps += 1
        results = self._wait(futures)
        self.exports = {}
        for q, (_, out) in enumerate(results):
            for p, stacked in out.items():
                self.exports[(q, p)] = {key: stacked[k] for k, key in enumerate(export or [])}
                self.bytes_exchanged += stacked.nbytes
        return np.sum(np.array([r[0] for r in results], dtype=complex).reshape(n, -1), axis=0)

    def vector(self, name: str) -> np.ndarray:
        """The vector ``name`` gathered on the client."""
        return np.concatenate(self._wait([self._at(p, _worker.solve_vector, self._key(p), name)
                                          for p in range(self.a.partitions)]))

    def close(self) -> None:
        """Drop the vectors on the workers (without waiting)."""
        for p in range(self.a.partitions):
            try:
                submit(self.client, _worker.solve_forget, self._key(p), worker=self.places[p])
            except Exception:  # noqa: BLE001 - best effort: a closed client or a dead worker holds nothing
                pass


def _real(v: complex, dtype: np.dtype) -> Any:
    return v if np.issubdtype(dtype, np.complexfloating) else v.real


def _residual_step(m: Machine, export: list[tuple[str, bool]] | None = None) -> float:
    """||b - A x||^2 with r set to b - A x (first exporting x's halo entries if the last step did not)."""
    if not m.exported("x"):
        m.step([], export=[("x", False)])
    return float(m.step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                         ("dot", "r", "r")], halo=[(1, "x", False)], export=export)[0].real)


def cg(m: Machine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype) -> int:
    """Preconditioned conjugate gradients in the Chronopoulos-Gear form: one step (one SpMV, one reduction of
    three dot products) an iteration; the iterations it took."""
    rzw = [("r", True), ("w", True), ("z", True)]
    rr = _real(m.step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                       ("precond", "u", "r"), ("zero", "z"), ("zero", "p"), ("dot", "r", "r")],
                      halo=[(1, "x", False)], export=[("r", True)])[0], dtype)
    gamma, delta = (_real(v, dtype) for v in m.step([("spmv", "w", "u"), ("dot", "r", "u"), ("dot", "u", "w")],
                                                    halo=[(1, "r", True)], export=rzw))
    alpha_old: Any = None
    gamma_old: Any = None
    for it in itertools.count():
        if np.sqrt(abs(rr)) <= tol * bnorm or it >= maxiter:
            return it
        beta = 0.0 if gamma_old is None else gamma / gamma_old
        alpha = gamma / delta if alpha_old is None else gamma / (delta - beta * gamma / alpha_old)
        gamma_old, alpha_old = gamma, alpha
        gamma, delta, rr = (_real(v, dtype) for v in m.step(
            [("lincomb", "z", [(1, "w", False), (beta, "z", False)]),
             ("lincomb", "p", [(1, "u", False), (beta, "p", False)]),
             ("lincomb", "x", [(1, "x", False), (alpha, "p", False)]),
             ("lincomb", "r", [(1, "r", False), (-alpha, "z", False)]), ("precond", "u", "r"),
             ("spmv", "w", "u"), ("dot", "r", "u"), ("dot", "u", "w"), ("dot", "r", "r")],
            halo=[(1, "r", True), (-alpha, "w", True), (-alpha * beta, "z", True)], export=rzw))
    raise AssertionError("unreachable")


def bicgstab(m: Machine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype) -> int:
    """Right-preconditioned BiCGSTAB; the iterations it took."""
    def scalars(values: np.ndarray) -> list[Any]:
        return [_real(v, dtype) for v in values]
    rpv = [("r", True), ("p", True), ("v", True)]
    rho, rr = scalars(m.step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                              ("lincomb", "rhat", [(1, "r", False)]), ("zero", "p"), ("zero", "v"),
                              ("dot", "rhat", "r"), ("dot", "r", "r")], halo=[(1, "x", False)], export=rpv))
    rho_old = alpha = omega = 1.0
    for it in itertools.count():
        if np.sqrt(abs(rr)) <= tol * bnorm or it >= maxiter or rho == 0 or omega == 0:
            return it
        beta = (rho / rho_old) * (alpha / omega)
        rv = scalars(m.step([("lincomb", "p", [(1, "r", False), (beta, "p", False), (-beta * omega, "v", False)]),
                             ("precond", "ph", "p"), ("spmv", "v", "ph"), ("dot", "rhat", "v")],
                            halo=[(1, "r", True), (beta, "p", True), (-beta * omega, "v", True)],
                            export=[("r", True), ("v", True)]))[0]
        if rv == 0:
            return it
        alpha = rho / rv
        ts, tt, ss = scalars(m.step([("lincomb", "s", [(1, "r", False), (-alpha, "v", False)]),
                                     ("precond", "sh", "s"), ("spmv", "t", "sh"), ("dot", "t", "s"),
                                     ("dot", "t", "t"), ("dot", "s", "s")], halo=[(1, "r", True), (-alpha, "v", True)]))
        if np.sqrt(abs(ss)) <= tol * bnorm or tt == 0:
            m.step([("lincomb", "x", [(1, "x", False), (alpha, "ph", False)])])
            return it + 1
        omega, rho_old = ts / tt, rho
        rho, rr = scalars(m.step([("lincomb", "x", [(1, "x", False), (alpha, "ph", False), (omega, "sh", False)]),
                                  ("lincomb", "r", [(1, "s", False), (-omega, "t", False)]), ("dot", "rhat", "r"),
                                  ("dot", "r", "r")], export=rpv))
    raise AssertionError("unreachable")


def gmres(m: Machine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, restart: int) -> int:
    """Restarted, right-preconditioned GMRES with classical Gram-Schmidt applied twice; the iterations."""
    its = 0
    while True:
        beta = np.sqrt(_residual_step(m, export=[("r", True)]))
        if beta <= tol * bnorm or its >= maxiter:
            return its
        h = np.zeros((restart + 1, restart), dtype=complex)
        w_dots = m.step([("lincomb", "v0", [(1 / beta, "r", False)]), ("precond", "t", "v0"), ("spmv", "w", "t"),
                         ("dots", "w", ["v0"])], halo=[(1 / beta, "r", True)])
        k = 0
        for j in range(restart):
            basis = [f"v{i}" for i in range(j + 1)]
            h1 = w_dots
            h2 = m.step([("lincomb", "w", [(1, "w", False)] + [(_real(-h1[i], dtype), basis[i], False)
                                                             for i in range(j + 1)]), ("dots", "w", basis)])
            ww = m.step([("lincomb", "w", [(1, "w", False)] + [(_real(-h2[i], dtype), basis[i], False)
                                                             for i in range(j + 1)]), ("dot", "w", "w")],
                        export=[("w", True)])[0]
            h[:j + 1, j] = h1 + h2
            h[j + 1, j] = hn = np.sqrt(abs(ww))
            its, k = its + 1, j + 1
            e1 = np.zeros(j + 2, dtype=complex)
            e1[0] = beta
            y, *_ = np.linalg.lstsq(h[:j + 2, :j + 1], e1, rcond=None)
            estimate = np.linalg.norm(e1 - h[:j + 2, :j + 1] @ y)
            if estimate <= tol * bnorm * 0.5 or its >= maxiter or hn <= 1e-14 * beta or j == restart - 1:
                break
            w_dots = m.step([("lincomb", f"v{j + 1}", [(1 / hn, "w", False)]), ("precond", "t", f"v{j + 1}"),
                             ("spmv", "w", "t"), ("dots", "w", [*basis, f"v{j + 1}"])], halo=[(1 / hn, "w", True)])
        m.step([("lincomb", "u", [(_real(y[i], dtype), f"v{i}", False) for i in range(k)]), ("precond", "u", "u"),
                ("lincomb", "x", [(1, "x", False), (1, "u", False)])], export=[("x", False)])


def solve(a: Any, b: Any, *, method: str = "auto", tol: float = 1e-8, maxiter: int | None = None, x0: Any = None,
          preconditioner: str | None = None, restart: int = 30, on_failure: str = "raise", retries: int = 2,
          **single_process: Any) -> Any:
    """``a @ x = b`` for a distributed square ``a`` and a dense ``b`` (NumPy vector or matrix of right-hand
    sides, or a Dask array): ``method`` ``"cg"``, ``"bicgstab"``, ``"gmres"`` (``"auto"``: BiCGSTAB),
    ``preconditioner`` None or ``"jacobi"``. ``a.solve_info`` reports method, iterations, residual, steps
    and the halo bytes exchanged."""
    if not is_distributed(a):
        raise TypeError("solve with a DistributedTensor takes it as the system matrix")
    extra = {k: v for k, v in single_process.items() if v not in (None, False)}
    if extra:
        raise ValueError(f"a distributed solve does not take {', '.join(sorted(extra))} (triangular solves and "
                         "threads are single-process options)")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} for a Any, got {method!r}")
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"a distributed solve takes preconditioner None or 'jacobi', got {preconditioner!r}")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    if on_failure not in ("raise", "warn"):
        raise ValueError(f"on_failure must be 'raise' or 'warn', got {on_failure!r}")
    a.halo()  # square check
    lazy = type(b).__module__.startswith("dask.array")
    rhs = np.asarray(b.compute() if lazy else b)
    if rhs.ndim not in (1, 2) or rhs.shape[0] != a.shape[0]:
        raise ValueError(f"b has shape {rhs.shape}; the system is {a.shape[0]}x{a.shape[1]}")
    dtype = np.result_type(a.dtype, rhs.dtype, np.float64 if a.dtype.kind in "iub" else a.dtype)
    guess = np.zeros(rhs.shape, dtype=dtype) if x0 is None else np.asarray(x0, dtype=dtype)
    if guess.shape != rhs.shape:
        raise ValueError(f"x0 has shape {guess.shape}, b {rhs.shape}")
    if rhs.ndim == 2:
        x = np.stack([_solve_one(a, rhs[:, k].astype(dtype), guess[:, k], method, tol, maxiter, preconditioner,
                                 restart, on_failure, retries) for k in range(rhs.shape[1])], axis=1)
    else:
        x = _solve_one(a, rhs.astype(dtype), guess, method, tol, maxiter, preconditioner, restart, on_failure,
                       retries)
    if lazy:
        import dask.array as da
        return da.from_array(x, chunks=(tuple(np.diff(a.bounds)), *x.shape[1:]))
    return x


def _solve_one(a: Any, b: np.ndarray, x0: np.ndarray, method: str, tol: float, maxiter: int | None,
               preconditioner: str | None, restart: int, on_failure: str, retries: int) -> np.ndarray:
    name = "bicgstab" if method == "auto" else method
    limit = maxiter if maxiter is not None else 10 * a.shape[0]
    bnorm = float(np.linalg.norm(b))
    if bnorm == 0:
        a.solve_info = {"method": name, "iterations": 0, "residual": 0.0, "steps": 0, "halo_bytes": 0}
        return np.zeros_like(b)
    for attempt in itertools.count():
        m = Machine(a, b, x0, preconditioner == "jacobi")
        try:
            if name == "cg":
                its = cg(m, bnorm, tol, limit, b.dtype)
            elif name == "bicgstab":
                its = bicgstab(m, bnorm, tol, limit, b.dtype)
            else:
                its = gmres(m, bnorm, tol, limit, b.dtype, max(1, int(restart)))
            residual = np.sqrt(_residual_step(m)) / bnorm
            x = m.vector("x")
        except WorkerLost as exc:
            if attempt >= retries:
                raise
            LOG.warning("%s during the %s solve; rebuilding and solving again", exc, name)
            a.heal()
            continue
        finally:
            m.close()
        a.solve_info = {"method": name, "iterations": its, "residual": float(residual), "steps": m.steps,
                        "halo_bytes": m.bytes_exchanged}
        if not (np.isfinite(residual) and residual <= tol * (1 + 1e-6)):
            _fail(f"distributed {name} did not converge: relative residual {residual:.3g} > tol {tol:g} after "
                  f"{its} iterations", on_failure)
        return x
    raise AssertionError("unreachable")


def _fail(message: str, on_failure: str) -> None:
    from frontend.solvers._solve import ConvergenceError, ConvergenceWarning
    if on_failure == "warn":
        import warnings
        warnings.warn(message, ConvergenceWarning, stacklevel=4)
        return
    raise ConvergenceError(message)
