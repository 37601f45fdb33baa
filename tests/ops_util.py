"""Helpers for the ops tests: random operands with empty rows, dense views of results."""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from frontend import Tensor


def rand(shape: tuple[int, ...], density: float = 0.4, dtype: Any = np.float64, seed: int = 0,
         empty_row: bool = True) -> np.ndarray:
    """A random array with about ``density`` nonzeros (positive real parts) and, for matrices, row 1 empty."""
    rng = np.random.default_rng(seed)
    a = rng.random(shape) + 0.5
    if np.dtype(dtype).kind == "c":
        a = a + 1j * (rng.random(shape) - 0.5)
    elif np.dtype(dtype).kind == "i":
        a = np.floor(a * 4) + 1
    a[rng.random(shape) > density] = 0
    if empty_row and len(shape) >= 2 and shape[-2] > 1:
        a[..., 1, :] = 0
    return a.astype(dtype)


def dense(x: Any) -> np.ndarray:
    """Dense numpy contents of a Tensor, scipy matrix, torch tensor or array."""
    if isinstance(x, Tensor):
        return x.to_dense()
    if hasattr(x, "toarray"):
        return x.toarray()
    if hasattr(x, "to_dense") and hasattr(x, "layout"):
        return x.to_dense().numpy()
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x)


def tensor(a: np.ndarray, fmt: Any, index_type: Any = np.int32) -> Tensor:
    return Tensor.from_dense(a, fmt, index_type=index_type)


def close(x: Any, ref: np.ndarray, dtype: Any = np.float64) -> bool:
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    got = dense(x)
    return got.shape == ref.shape and np.allclose(got, ref, rtol=tol, atol=tol)


#: A registered-kernel MLIR template (``lowering.register_kernel``) for ``matvec`` that writes 7 into every
#: output element: a result that shows the registered kernel ran.
SEVENS_TEMPLATE = """
func.func @$name(%pos: memref<?x$pos_t>, %crd: memref<?x$crd_t>, %val: memref<?x$elem>,
                 %x: memref<${in0_1}x$elem>) -> memref<${out_0}x$elem> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant $out_0 : index
  %seven = arith.constant 7.0 : $elem
  %y = memref.alloc() : memref<${out_0}x$elem>
  scf.for %i = %c0 to %m step %c1 {
    memref.store %seven, %y[%i] : memref<${out_0}x$elem>
  }
  return %y : memref<${out_0}x$elem>
}
"""


def kill_worker(client: Any, addr: str) -> None:
    """Ends the Dask worker at ``addr`` (``os._exit`` in it) and waits up to 30 s until the scheduler sees it gone."""
    import os
    import time

    try:
        client.run(os._exit, 1, workers=[addr])
    except Exception:  # noqa: BLE001 - the worker dies before it answers
        pass
    deadline = time.monotonic() + 30
    while addr in client.nthreads() and time.monotonic() < deadline:
        time.sleep(0.05)


def restore_workers(client: Any, n: int, timeout: float = 120.0) -> None:
    """Waits until ``n`` workers are back after :func:`kill_worker`. A worker's nanny restarts it; on a loaded
    machine the restart can outlast Dask's ``lost-worker-timeout`` (15 s), after which the cluster closes that
    nanny, so the cluster is asked to scale back to ``n`` (which starts the missing worker) while waiting."""
    import time

    deadline = time.monotonic() + timeout
    while len(client.nthreads()) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(client.nthreads())} of {n} Dask workers after {timeout:.0f} s")
        cluster = getattr(client, "cluster", None)
        if cluster is not None:
            cluster.scale(n)
        time.sleep(0.5)


def small_int_operand(n: int, cols: int, dtype: Any) -> Any:
    """A dense vector (``cols == 0``) or ``n x cols`` matrix of small integers in ``dtype`` (exact products)."""
    import numpy as np

    rng = np.random.default_rng(n + cols)
    return rng.integers(-3, 4, (n,) if cols == 0 else (n, cols)).astype(dtype)


def assert_threads_match_one_thread(t: Any, x: Any, reference: Any, path: str = "emitter-rows") -> None:
    """``matmul(t, x)`` on 2 and 5 threads gives the bits of one thread (on ``path``), and that is ``reference``."""
    import numpy as np

    import frontend as F

    one = np.asarray(F.matmul(t, x, threads=1))
    for threads in (2, 5):
        mm = F.Matmul(t, x, threads=threads)
        assert mm.info.threads == threads and mm.info.path == path
        np.testing.assert_array_equal(mm.execute(), one)
    np.testing.assert_allclose(one, reference, rtol=1e-12, atol=1e-12)


def poisson2d(k: int) -> sp.csr_array:
    """The 5-point 2-D Laplacian on a ``k x k`` grid (``k^2`` rows), float64 CSR."""
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(sp.eye_array(k), t) + sp.kron(t, sp.eye_array(k)))
