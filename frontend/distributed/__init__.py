"""Partitioned tensors and operations on Dask (``dask.distributed``): ``from_package``, ``from_file`` and
``from_partitions`` give a :class:`DistributedTensor` (row blocks balanced by stored entries, each a UST
``Tensor`` on a worker) that ``frontend.matmul``, ``frontend.einsum`` and ``frontend.solve`` take; solves run
their loop on the workers (:func:`solve` takes the loop, checkpoint and progress options) and
``DistributedTensor.plan_matmul`` keeps repeated products' kernels on the workers (and, with
``plan.scatter``, their operands: :class:`ResidentArray`). Connecting:
:func:`get_client` (the current client, ``UST_MLIR_SCHEDULER``, or :func:`start_local`). Workers run the
ordinary frontend API; nothing here imports MLIR. See docs/distributed.md."""
from ._client import SCHEDULER_ENV, connect, get_client, start_local
from ._planned import DistributedMatmulPlan
from ._run import DistributedError, WorkerLost
from ._solve import solve
from ._tensor import DistributedTensor, from_file, from_package, from_partitions
from ._vector import ResidentArray

__all__ = ["SCHEDULER_ENV", "DistributedError", "DistributedMatmulPlan", "DistributedTensor", "ResidentArray",
           "WorkerLost", "connect", "from_file", "from_package", "from_partitions", "get_client", "solve",
           "start_local"]
