"""The Krylov iterations of a distributed solve, written once as *steps* that a machine runs.

Each method is a generator that yields steps and is sent back their summed dot products: a step is
``(ops, halo, export)`` (:func:`step`: a list of vector operations run on every partition, see
:func:`frontend.distributed._worker.apply_ops`; ``halo``: the terms of the SpMV operand's entries other
partitions hold, formed from what the previous step exported; ``export``: the vectors whose entries other
partitions need for the next step). The machine also offers ``exported(name, scaled)`` and ``iteration(it,
residual_norm)`` (a point where ``x`` is the iterate after ``it`` iterations: residual history and
checkpoints). :func:`run` drives the steps with the client's :class:`frontend.distributed._solve.Machine`;
the workers' loop (:mod:`frontend.distributed._rank`) drives the same generator on each worker's event loop,
awaiting each step's exchange. Every worker runs the same generator on the same summed scalars, so all
take the same decisions.

CG runs in the Chronopoulos-Gear form (one SpMV and one reduction of three dot products an iteration),
pipelined CG in the Ghysels-Vanroose form (the same single reduction, posted before the SpMV so that it
overlaps it), BiCGSTAB right-preconditioned (3 steps an iteration), GMRES(m) with classical Gram-Schmidt
applied twice (3 steps an iteration).
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Generator
from typing import Any, Protocol, TypeVar

import numpy as np

Terms = list[tuple[Any, str, bool]]  # (coefficient, vector name, Jacobi-scaled)
Export = list[tuple[str, bool]]  # (vector name, Jacobi-scaled)
Step = tuple[list[tuple], "Terms | None", "Export | None"]  # (ops, halo, export)
T = TypeVar("T")
Steps = Generator[Step, np.ndarray, T]  # yields steps, is sent their summed dot products, returns T
METHODS = ("auto", "cg", "pipelined_cg", "bicgstab", "gmres")


def step(ops: list[tuple], halo: Terms | None = None, export: Export | None = None) -> Step:
    """One step: ``ops`` on every partition, the SpMV's ``halo`` terms, what it ``export``s."""
    return ops, halo, export


class StepMachine(Protocol):
    """What the iterations ask of the partitions besides running steps (see the module docstring)."""

    def exported(self, name: str, scaled: bool = False) -> bool: ...

    def iteration(self, it: int, residual_norm: float) -> None: ...


class Machine(StepMachine, Protocol):
    """A machine that runs a step and returns its summed dot products (:func:`run`)."""

    def step(self, ops: list[tuple], halo: Terms | None = None, export: Export | None = None) -> np.ndarray: ...


class Ticks:
    """When the iterations passed: ``per_iteration`` seconds between the first and the last iteration seen
    (the loop's own pace, without the solve's start and end)."""

    def __init__(self) -> None:
        self.first: tuple[int, float] | None = None
        self.last: tuple[int, float] | None = None

    def tick(self, it: int) -> None:
        now = (it, time.perf_counter())
        self.first = self.first or now
        self.last = now

    @property
    def per_iteration(self) -> float | None:
        if self.first is None or self.last is None or self.last[0] <= self.first[0]:
            return None
        return (self.last[1] - self.first[1]) / (self.last[0] - self.first[0])


def _real(v: complex, dtype: np.dtype) -> Any:
    return v if np.issubdtype(dtype, np.complexfloating) else v.real


def residual_step(m: StepMachine, export: list[tuple[str, bool]] | None = None) -> Steps[float]:
    """||b - A x||^2 with r set to b - A x (first exporting x's halo entries if the last step did not)."""
    if not m.exported("x"):
        yield step([], export=[("x", False)])
    return float((yield step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                              ("dot", "r", "r")], halo=[(1, "x", False)], export=export))[0].real)


def _cg_scalars(gamma: Any, delta: Any, gamma_old: Any, alpha_old: Any) -> tuple[Any, Any]:
    """``(alpha, beta)`` of Chronopoulos-Gear CG from this iteration's ``gamma = r.u``, ``delta = u.w`` and the
    previous ``gamma`` and ``alpha`` (None on the first iteration); pipelined CG shares the recurrence."""
    beta = 0.0 if gamma_old is None else gamma / gamma_old
    alpha = gamma / delta if alpha_old is None else gamma / (delta - beta * gamma / alpha_old)
    return alpha, beta


def cg(m: StepMachine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, first: int = 0) -> Steps[int]:
    """Preconditioned conjugate gradients in the Chronopoulos-Gear form: one step (one SpMV, one reduction of
    three dot products) an iteration; the iterations it took (counted from ``first``)."""
    rzw = [("r", True), ("w", True), ("z", True)]
    rr = _real((yield step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                            ("precond", "u", "r"), ("zero", "z"), ("zero", "p"), ("dot", "r", "r")],
                           halo=[(1, "x", False)], export=[("r", True)]))[0], dtype)
    gamma, delta = (_real(v, dtype) for v in (yield step([("spmv", "w", "u"), ("dot", "r", "u"), ("dot", "u", "w")],
                                                         halo=[(1, "r", True)], export=rzw)))
    alpha_old: Any = None
    gamma_old: Any = None
    for it in itertools.count(first):
        m.iteration(it, float(np.sqrt(abs(rr))))
        if np.sqrt(abs(rr)) <= tol * bnorm or it >= maxiter:
            return it
        alpha, beta = _cg_scalars(gamma, delta, gamma_old, alpha_old)
        gamma_old, alpha_old = gamma, alpha
        gamma, delta, rr = (_real(v, dtype) for v in (yield step(
            [("lincomb", "z", [(1, "w", False), (beta, "z", False)]),
             ("lincomb", "p", [(1, "u", False), (beta, "p", False)]),
             ("lincomb", "x", [(1, "x", False), (alpha, "p", False)]),
             ("lincomb", "r", [(1, "r", False), (-alpha, "z", False)]), ("precond", "u", "r"),
             ("spmv", "w", "u"), ("dot", "r", "u"), ("dot", "u", "w"), ("dot", "r", "r")],
            halo=[(1, "r", True), (-alpha, "w", True), (-alpha * beta, "z", True)], export=rzw)))
    raise AssertionError("unreachable")


def pipelined_cg(m: StepMachine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, first: int = 0) -> Steps[int]:
    """Ghysels-Vanroose pipelined CG: one step an iteration whose single reduction (``r.u``, ``w.u``,
    ``r.r``) is posted before the preconditioner and the SpMV, so a machine may overlap them. Its recurrences
    drift from the true residual more than CG's, so when the recursive residual meets ``tol`` the true one is
    computed and, if it does not, the iteration restarts from the current iterate (residual replacement)."""
    rzw = [("w", True), ("n", True), ("z", True)]
    it = first
    while True:
        yield step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]), ("precond", "u", "r"),
                    ("zero", "z"), ("zero", "zq"), ("zero", "s"), ("zero", "p")], halo=[(1, "x", False)],
                   export=[("r", True)])
        yield step([("spmv", "w", "u")], halo=[(1, "r", True)], export=[("w", True)])
        dots_then_spmv = [("dot", "r", "u"), ("dot", "w", "u"), ("dot", "r", "r"), ("precond", "mw", "w"),
                          ("spmv", "n", "mw")]
        gamma, delta, rr = (_real(v, dtype) for v in (yield step(dots_then_spmv, halo=[(1, "w", True)], export=rzw)))
        alpha_old: Any = None
        gamma_old: Any = None
        while True:
            m.iteration(it, float(np.sqrt(abs(rr))))
            if np.sqrt(abs(rr)) <= tol * bnorm or it >= maxiter:
                break
            alpha, beta = _cg_scalars(gamma, delta, gamma_old, alpha_old)
            gamma_old, alpha_old = gamma, alpha
            gamma, delta, rr = (_real(v, dtype) for v in (yield step(
                [("lincomb", "z", [(1, "n", False), (beta, "z", False)]),
                 ("lincomb", "zq", [(1, "mw", False), (beta, "zq", False)]),
                 ("lincomb", "s", [(1, "w", False), (beta, "s", False)]),
                 ("lincomb", "p", [(1, "u", False), (beta, "p", False)]),
                 ("lincomb", "x", [(1, "x", False), (alpha, "p", False)]),
                 ("lincomb", "r", [(1, "r", False), (-alpha, "s", False)]),
                 ("lincomb", "u", [(1, "u", False), (-alpha, "zq", False)]),
                 ("lincomb", "w", [(1, "w", False), (-alpha, "z", False)]), *dots_then_spmv],
                halo=[(1, "w", True), (-alpha, "n", True), (-alpha * beta, "z", True)], export=rzw)))
            it += 1
        if it >= maxiter or np.sqrt((yield from residual_step(m))) <= tol * bnorm:
            return it


def bicgstab(m: StepMachine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, first: int = 0) -> Steps[int]:
    """Right-preconditioned BiCGSTAB; the iterations it took (counted from ``first``)."""
    def scalars(values: np.ndarray) -> list[Any]:
        return [_real(v, dtype) for v in values]
    rpv = [("r", True), ("p", True), ("v", True)]
    rho, rr = scalars((yield step([("spmv", "q", "x"), ("lincomb", "r", [(1, "b", False), (-1, "q", False)]),
                                   ("lincomb", "rhat", [(1, "r", False)]), ("zero", "p"), ("zero", "v"),
                                   ("dot", "rhat", "r"), ("dot", "r", "r")], halo=[(1, "x", False)], export=rpv)))
    rho_old = alpha = omega = 1.0
    for it in itertools.count(first):
        m.iteration(it, float(np.sqrt(abs(rr))))
        if np.sqrt(abs(rr)) <= tol * bnorm or it >= maxiter or rho == 0 or omega == 0:
            return it
        beta = (rho / rho_old) * (alpha / omega)
        rv = scalars((yield step([("lincomb", "p", [(1, "r", False), (beta, "p", False), (-beta * omega, "v", False)]),
                                  ("precond", "ph", "p"), ("spmv", "v", "ph"), ("dot", "rhat", "v")],
                                 halo=[(1, "r", True), (beta, "p", True), (-beta * omega, "v", True)],
                                 export=[("r", True), ("v", True)])))[0]
        if rv == 0:
            return it
        alpha = rho / rv
        ts, tt, ss = scalars((yield step([("lincomb", "s", [(1, "r", False), (-alpha, "v", False)]),
                                          ("precond", "sh", "s"), ("spmv", "t", "sh"), ("dot", "t", "s"),
                                          ("dot", "t", "t"), ("dot", "s", "s")],
                                         halo=[(1, "r", True), (-alpha, "v", True)])))
        if np.sqrt(abs(ss)) <= tol * bnorm or tt == 0:
            yield step([("lincomb", "x", [(1, "x", False), (alpha, "ph", False)])])
            return it + 1
        omega, rho_old = ts / tt, rho
        rho, rr = scalars((yield step([("lincomb", "x", [(1, "x", False), (alpha, "ph", False), (omega, "sh", False)]),
                                       ("lincomb", "r", [(1, "s", False), (-omega, "t", False)]), ("dot", "rhat", "r"),
                                       ("dot", "r", "r")], export=rpv)))
    raise AssertionError("unreachable")


def gmres(m: StepMachine, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, restart: int,
          first: int = 0) -> Steps[int]:
    """Restarted, right-preconditioned GMRES with classical Gram-Schmidt applied twice; the iterations."""
    its = first
    while True:
        beta = np.sqrt((yield from residual_step(m, export=[("r", True)])))
        m.iteration(its, float(beta))
        if beta <= tol * bnorm or its >= maxiter:
            return its
        h = np.zeros((restart + 1, restart), dtype=complex)
        w_dots = (yield step([("lincomb", "v0", [(1 / beta, "r", False)]), ("precond", "t", "v0"), ("spmv", "w", "t"),
                              ("dots", "w", ["v0"])], halo=[(1 / beta, "r", True)]))
        k = 0
        for j in range(restart):
            basis = [f"v{i}" for i in range(j + 1)]
            h1 = w_dots
            h2 = (yield step([("lincomb", "w", [(1, "w", False)] + [(_real(-h1[i], dtype), basis[i], False)
                                                                  for i in range(j + 1)]), ("dots", "w", basis)]))
            ww = (yield step([("lincomb", "w", [(1, "w", False)] + [(_real(-h2[i], dtype), basis[i], False)
                                                                  for i in range(j + 1)]), ("dot", "w", "w")],
                             export=[("w", True)]))[0]
            h[:j + 1, j] = h1 + h2
            h[j + 1, j] = hn = np.sqrt(abs(ww))
            its, k = its + 1, j + 1
            e1 = np.zeros(j + 2, dtype=complex)
            e1[0] = beta
            y, *_ = np.linalg.lstsq(h[:j + 2, :j + 1], e1, rcond=None)
            estimate = np.linalg.norm(e1 - h[:j + 2, :j + 1] @ y)
            if estimate <= tol * bnorm * 0.5 or its >= maxiter or hn <= 1e-14 * beta or j == restart - 1:
                break
            w_dots = (yield step([("lincomb", f"v{j + 1}", [(1 / hn, "w", False)]), ("precond", "t", f"v{j + 1}"),
                                  ("spmv", "w", "t"), ("dots", "w", [*basis, f"v{j + 1}"])],
                                 halo=[(1 / hn, "w", True)]))
        yield step([("lincomb", "u", [(_real(y[i], dtype), f"v{i}", False) for i in range(k)]), ("precond", "u", "u"),
                    ("lincomb", "x", [(1, "x", False), (1, "u", False)])], export=[("x", False)])


def iterations(m: StepMachine, method: str, bnorm: float, tol: float, maxiter: int, dtype: np.dtype,
               restart: int, first: int = 0) -> Steps[tuple[int, float]]:
    """``method``'s steps from iteration ``first`` up to ``maxiter``; (the last iteration, the true residual
    ||b - A x||)."""
    if method == "cg":
        its = yield from cg(m, bnorm, tol, maxiter, dtype, first)
    elif method == "pipelined_cg":
        its = yield from pipelined_cg(m, bnorm, tol, maxiter, dtype, first)
    elif method == "bicgstab":
        its = yield from bicgstab(m, bnorm, tol, maxiter, dtype, first)
    else:
        its = yield from gmres(m, bnorm, tol, maxiter, dtype, max(1, int(restart)), first)
    return its, float(np.sqrt((yield from residual_step(m))))


def run(m: Machine, method: str, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, restart: int,
        first: int = 0) -> tuple[int, float]:
    """:func:`iterations` run by a machine whose ``step`` returns the summed dot products (the client's)."""
    steps = iterations(m, method, bnorm, tol, maxiter, dtype, restart, first)
    try:
        request = next(steps)
        while True:
            request = steps.send(m.step(*request))
    except StopIteration as done:
        return done.value
