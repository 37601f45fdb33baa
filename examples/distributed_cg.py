"""Distributed CG on Dask: a 2-D Poisson matrix in row blocks on two local worker processes.

The same code runs on a real cluster: start a scheduler and workers (``dask scheduler``, ``dask worker
tcp://host:8786``), set ``UST_MLIR_SCHEDULER=tcp://host:8786`` (or create a ``distributed.Client``), and
skip ``start_local``. See docs/distributed.md.
"""
import numpy as np
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N, distributed as fd


def poisson2d(k: int) -> sp.csr_array:
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(sp.eye_array(k), t) + sp.kron(t, sp.eye_array(k)))


def main() -> None:
    client = fd.start_local(n_workers=2)               # embedded LocalCluster, one thread per worker
    try:
        a = poisson2d(30)
        d = fd.from_package(a, partitions=2)           # row blocks balanced by stored entries
        print(d)
        b = np.ones(a.shape[0])
        x = F.solve(d, b, method="cg", preconditioner="jacobi", tol=1e-10)
        print("CG:", d.solve_info)
        print("relative residual vs scipy:", np.linalg.norm(a @ x - b) / np.linalg.norm(b))
        y = F.matmul(d.convert(N.DELTA(8)), x)         # SpMV on DELTA(8) partitions
        print("SpMV matches scipy:", np.allclose(y, a @ x))
    finally:
        client.close()


if __name__ == "__main__":
    main()
