"""``frontend.solve`` on a :class:`DistributedTensor`: CG, pipelined CG, BiCGSTAB and restarted GMRES with the
vectors kept on the workers next to their partitions.

By default the loop runs on the workers (:mod:`frontend.distributed._resident`, ``loop="workers"``): the
client starts the solve, sees its progress and gets the result. With ``loop="client"`` the client drives
the iteration as *steps* (:func:`frontend.distributed._worker.solve_step`): every partition
runs one task with a short list of vector operations and its compiled local SpMV, and returns its share of
the dot products; the sums are the only global steps. A partition receives only the vector entries its
columns touch (the halo, planned once per tensor: :func:`frontend.distributed._plan.halo_plan`): each step
exports those entries of the vectors the next SpMV's operand is made of, and the client combines them with
the next step's coefficients and sends them along. CG (Chronopoulos-Gear) takes 1 step an iteration, BiCGSTAB
3, GMRES 3 (classical Gram-Schmidt, twice); the iterations themselves are :mod:`frontend.distributed._krylov`,
shared by both loops. A worker lost mid-solve restarts the solve after the lost partitions are rebuilt (the
worker-side loop from its last checkpointed iterate).
"""
from __future__ import annotations

import itertools
import uuid
from typing import Any

import numpy as np

from . import _krylov, _resident, _worker
from ._client import LOG
from ._krylov import METHODS, Terms, Ticks
from ._resident import Progress
from ._run import WorkerLost, is_distributed, submit, wait_all

PRECONDITIONERS = (None, "jacobi")
LOOPS = ("workers", "client")
CHECKPOINT = 50  # iterations between checkpoints of a worker-side solve


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
        self.history: list[tuple[int, float]] = []
        self.ticks = Ticks()
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

    def iteration(self, it: int, residual_norm: float) -> None:
        """The residual history (the client sees every iteration)."""
        self.history.append((it, residual_norm))
        self.ticks.tick(it)

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


def solve(a: Any, b: Any, *, method: str = "auto", tol: float = 1e-8, maxiter: int | None = None, x0: Any = None,
          preconditioner: str | None = None, restart: int = 30, on_failure: str = "raise", retries: int = 2,
          loop: str = "workers", checkpoint: int = CHECKPOINT, progress: Progress | None = None,
          **single_process: Any) -> Any:
    """``a @ x = b`` for a distributed square ``a`` and a dense ``b`` (NumPy vector or matrix of right-hand
    sides, or a Dask array): ``method`` ``"cg"``, ``"pipelined_cg"``, ``"bicgstab"``, ``"gmres"`` (``"auto"``:
    BiCGSTAB), ``preconditioner`` None or ``"jacobi"``. ``loop="workers"`` (default) runs the iteration on the
    workers, checkpointing the iterate every ``checkpoint`` iterations (0: never) and calling
    ``progress(iteration, residual_norm)`` on the client as the workers report; ``loop="client"`` drives it
    from the client step by step. ``a.solve_info`` reports method, iterations, residual, steps, the halo bytes
    exchanged, the residual history and, for the worker loop, the restarts after a lost worker."""
    if not is_distributed(a):
        raise TypeError("solve with a DistributedTensor takes it as the system matrix")
    extra = {k: v for k, v in single_process.items() if v not in (None, False)}
    if extra:
        raise ValueError(f"a distributed solve does not take {', '.join(sorted(extra))} (triangular solves and "
                         "threads are single-process options)")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} for a DistributedTensor, got {method!r}")
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"a distributed solve takes preconditioner None or 'jacobi', got {preconditioner!r}")
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    if on_failure not in ("raise", "warn"):
        raise ValueError(f"on_failure must be 'raise' or 'warn', got {on_failure!r}")
    if loop not in LOOPS:
        raise ValueError(f"loop must be 'workers' (the iteration on the workers) or 'client', got {loop!r}")
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, (int, np.integer)) or checkpoint < 0:
        raise ValueError(f"checkpoint must be a number of iterations >= 0 (0: no checkpoints), got {checkpoint!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable (iteration, residual_norm), got {type(progress).__name__}")
    a.halo()  # square check
    lazy = type(b).__module__.startswith("dask.array")
    rhs = np.asarray(b.compute() if lazy else b)
    if rhs.ndim not in (1, 2) or rhs.shape[0] != a.shape[0]:
        raise ValueError(f"b has shape {rhs.shape}; the system is {a.shape[0]}x{a.shape[1]}")
    dtype = np.result_type(a.dtype, rhs.dtype, np.float64 if a.dtype.kind in "iub" else a.dtype)
    guess = np.zeros(rhs.shape, dtype=dtype) if x0 is None else np.asarray(x0, dtype=dtype)
    if guess.shape != rhs.shape:
        raise ValueError(f"x0 has shape {guess.shape}, b {rhs.shape}")
    options: dict[str, Any] = {"method": "bicgstab" if method == "auto" else method, "tol": tol, "maxiter": maxiter,
               "preconditioner": preconditioner, "restart": max(1, int(restart)), "on_failure": on_failure,
               "retries": retries, "loop": loop, "checkpoint": int(checkpoint), "progress": progress}
    if rhs.ndim == 2:
        x = np.stack([_solve_one(a, rhs[:, k].astype(dtype), guess[:, k], **options)
                      for k in range(rhs.shape[1])], axis=1)
    else:
        x = _solve_one(a, rhs.astype(dtype), guess, **options)
    if lazy:
        import dask.array as da
        return da.from_array(x, chunks=(tuple(np.diff(a.bounds)), *x.shape[1:]))
    return x


def _solve_one(a: Any, b: np.ndarray, x0: np.ndarray, *, method: str, tol: float, maxiter: int | None,
               preconditioner: str | None, restart: int, on_failure: str, retries: int, loop: str,
               checkpoint: int, progress: Progress | None) -> np.ndarray:
    limit = maxiter if maxiter is not None else 10 * a.shape[0]
    bnorm = float(np.linalg.norm(b))
    if bnorm == 0:
        a.solve_info = {"method": method, "iterations": 0, "residual": 0.0, "steps": 0, "halo_bytes": 0,
                        "loop": loop, "history": []}
        return np.zeros_like(b)
    if loop == "workers":
        x, a.solve_info = _resident.solve(a, b, x0, method, tol, limit, preconditioner == "jacobi", restart,
                                          checkpoint, progress, retries)
    else:
        x, a.solve_info = _client_loop(a, b, x0, method, tol, limit, preconditioner == "jacobi", restart, retries)
    residual, its = a.solve_info["residual"], a.solve_info["iterations"]
    if not (np.isfinite(residual) and residual <= tol * (1 + 1e-6)):
        _fail(f"distributed {method} did not converge: relative residual {residual:.3g} > tol {tol:g} after "
              f"{its} iterations", on_failure)
    return x


def _client_loop(a: Any, b: np.ndarray, x0: np.ndarray, method: str, tol: float, limit: int, jacobi: bool,
                 restart: int, retries: int) -> tuple[np.ndarray, dict[str, Any]]:
    """The iteration driven from the client, one step (a task per partition) at a time."""
    bnorm = float(np.linalg.norm(b))
    for attempt in itertools.count():
        m = Machine(a, b, x0, jacobi)
        try:
            its, residual = _krylov.run(m, method, bnorm, tol, limit, b.dtype, restart)
            x = m.vector("x")
        except WorkerLost as exc:
            if attempt >= retries:
                raise
            LOG.warning("%s during the %s solve; rebuilding and solving again", exc, method)
            a.heal()
            continue
        finally:
            m.close()
        return x, {"method": method, "iterations": its, "residual": residual / bnorm, "steps": m.steps,
                   "halo_bytes": m.bytes_exchanged, "loop": "client", "history": m.history,
                   "seconds_per_iteration": m.ticks.per_iteration}
    raise AssertionError("unreachable")


def _fail(message: str, on_failure: str) -> None:
    from frontend.solvers._solve import ConvergenceError, ConvergenceWarning
    if on_failure == "warn":
        import warnings
        warnings.warn(message, ConvergenceWarning, stacklevel=4)
        return
    raise ConvergenceError(message)
