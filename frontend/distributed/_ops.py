"""``frontend.matmul`` and ``frontend.einsum`` with a :class:`DistributedTensor` first operand.

Each partition gets only the rows of the other operand its columns touch (``Part.cols``) and runs the
ordinary ``frontend.matmul``/``einsum`` on its worker: dense results are row blocks concatenated on the
client (NumPy in, NumPy out; a Dask array in gives a Dask array), sparse results stay distributed.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from frontend.format import TensorFormat
from frontend.tensor._tensor import Tensor

from . import _worker
from ._run import is_distributed, send, submit


def _is_dask_array(x: Any) -> bool:
    return type(x).__module__.startswith("dask.array") and hasattr(x, "__dask_graph__")


def _is_sparse(x: Any) -> bool:
    if is_distributed(x) or sp.issparse(x):
        return True
    if isinstance(x, Tensor):
        return not x.tensor_format.is_dense
    return bool(getattr(x, "is_sparse", False)) or str(getattr(x, "layout", "")).startswith("torch.sparse")


def matmul(a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None, transpose_a: bool = False,
           transpose_b: bool = False, semiring: Any = None, out_format: TensorFormat | None = None,
           prolog: Any = None, epilog: Any = None, target: str = "cpu", pipeline: Any = None, device: Any = None,
           threads: Any = None, out: Any = None) -> Any:
    """``alpha * a @ op(b) + beta * c`` with ``a`` distributed by rows (see :func:`frontend.matmul`)."""
    if not is_distributed(a):
        raise TypeError("a DistributedTensor is partitioned by rows: it must be matmul's first operand "
                        f"(got {type(a).__name__} @ {type(b).__name__})")
    if transpose_a:
        raise ValueError("transpose_a is not available for a DistributedTensor (row partitions); partition the "
                         "transposed matrix instead")
    if target != "cpu" or device is not None or pipeline is not None:
        raise ValueError("a DistributedTensor runs the CPU kernels of its workers (no target/device/pipeline)")
    kwargs = {"alpha": alpha, "beta": beta, "semiring": semiring, "prolog": prolog, "epilog": epilog}
    if threads is not None:
        kwargs["threads"] = threads
    if _is_sparse(b):
        if c is not None or out is not None:
            raise ValueError("c and out= apply to dense results; a sparse product is a new DistributedTensor")
        if any(v is not None for v in (beta, semiring, prolog, epilog)) or alpha != 1:
            raise ValueError("a distributed sparse x sparse product takes no alpha/beta/semiring/prolog/epilog")
        return _spgemm(a, b, transpose_b, out_format)
    if out_format is not None:
        raise ValueError("out_format applies to sparse results; this product is dense")
    if _is_dask_array(b):
        if c is not None or out is not None:
            raise TypeError("c and out= take NumPy arrays; with a Dask array operand the result is a Dask array")
        return _dense_dask(a, b.T if transpose_b and b.ndim == 2 else b, kwargs)
    wrap = isinstance(b, Tensor)
    dense = b.to_dense() if wrap else np.asarray(b)
    if transpose_b and dense.ndim == 2:
        dense = dense.T
    result = _dense(a, dense, c, out, kwargs)
    return Tensor.from_dense(result) if wrap and c is None and out is None else result


def _check_rows(a: Any, b: Any) -> None:
    if b.ndim not in (1, 2):
        raise ValueError(f"matmul with a DistributedTensor takes a vector or a matrix, got {b.ndim} dimensions")
    if b.shape[0] != a.shape[1]:
        raise ValueError(f"matmul shape mismatch: the DistributedTensor is {a.shape[0]}x{a.shape[1]}, the "
                         f"operand has {b.shape[0]} rows")


def _dense(a: Any, b: np.ndarray, c: Any, out: Any, kwargs: dict[str, Any]) -> np.ndarray:
    _check_rows(a, b)
    shape = (a.shape[0], *b.shape[1:])
    if c is not None:
        c = _checked_array(c, shape, "c")
        kwargs = dict(kwargs, beta=1 if kwargs["beta"] is None else kwargs["beta"])
    if out is not None:
        out = _checked_array(out, shape, "out")
    bounds, places = a.bounds, a.workers()

    def task(p: int, part: Any) -> Any:
        block = None if c is None else send(a.client, np.array(c[bounds[p]:bounds[p + 1]]), places[p])
        rows = send(a.client, np.ascontiguousarray(b[a.cols[p]]), places[p])
        return submit(a.client, _worker.local_matmul, part, rows, block, kwargs)
    blocks = a.map(task)
    target = c if c is not None else out
    if target is None:
        return np.concatenate(blocks) if blocks else np.zeros(shape)
    for p, blk in enumerate(blocks):
        target[bounds[p]:bounds[p + 1]] = blk
    return target


def _checked_array(x: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array for a DistributedTensor product, got {type(x).__name__}")
    if x.shape != shape:
        raise ValueError(f"{name} has shape {x.shape}, the product's is {shape}")
    if not x.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return x


def _dense_dask(a: Any, b: Any, kwargs: dict[str, Any]) -> Any:
    """The product with a Dask array: per partition the needed rows are computed on the cluster and fed to the
    local product; the result is a Dask array of the row blocks (lazy: nothing is gathered)."""
    import dask.array as da
    from dask import delayed
    _check_rows(a, b)
    dtype = np.result_type(a.dtype, b.dtype)
    blocks = []
    for p in range(a.partitions):
        rows_b = a.client.compute(b[a.cols[p]])
        fut = submit(a.client, _worker.local_matmul, a.block(p), rows_b, None, kwargs)
        rows = a.bounds[p + 1] - a.bounds[p]
        blocks.append(da.from_delayed(delayed(fut), shape=(rows, *b.shape[1:]), dtype=dtype))
    return da.concatenate(blocks)


def _spgemm(a: Any, b: Any, transpose_b: bool, out_format: TensorFormat | None) -> Any:
    """``a @ b`` with a sparse ``b``: every partition times the rows of ``b`` its columns touch; the product
    keeps ``a``'s row blocks and stays distributed (``to_package`` gathers it)."""
    csr = b.to_scipy() if is_distributed(b) else _worker.as_csr(b)
    if transpose_b:
        csr = sp.csr_array(csr.T)
    if csr.shape[0] != a.shape[1]:
        raise ValueError(f"matmul shape mismatch: the DistributedTensor is {a.shape[0]}x{a.shape[1]}, the "
                         f"operand is {csr.shape[0]}x{csr.shape[1]}")
    if out_format is not None and not isinstance(out_format, TensorFormat):
        raise TypeError(f"out_format must be a TensorFormat, got {type(out_format).__name__}")
    rows = [sp.csr_array(csr[a.cols[p]]) for p in range(a.partitions)]
    kind, _ = a._source
    fmt = out_format or (None if a.tensor_format.is_dense else _CSR())
    return a.derived(lambda p, part, key: submit(a.client, _worker.local_spgemm, part, rows[p], out_format, key=key),
                     source=(kind, fmt), ncols=csr.shape[1])


def _CSR() -> TensorFormat:
    from frontend.format import NamedFormats
    return NamedFormats.CSR


# ----- einsum ---------------------------------------------------------------------------------------------------
def einsum(subscripts: str, *operands: Any, out_format: TensorFormat | None = None, semiring: Any = None,
           prolog: Any = None, epilog: Any = None, target: str = "cpu", pipeline: Any = None,
           device: Any = None) -> Any:
    """``frontend.einsum`` with the DistributedTensor as the first operand and dense others (NumPy): each
    partition gets the others' slices along its rows (the first letter) and touched columns (the second).
    An output led by the row letter is concatenated (dense) or stays distributed (sparse, e.g. SDDMM
    ``"ij,ik,kj->ij"``); an output without it is the sum of the partitions' results."""
    if not operands or not is_distributed(operands[0]):
        raise TypeError("einsum takes a DistributedTensor as its first operand")
    if target != "cpu" or device is not None or pipeline is not None:
        raise ValueError("a DistributedTensor runs the CPU kernels of its workers (no target/device/pipeline)")
    a, others = operands[0], [np.asarray(o) for o in operands[1:]]
    if any(is_distributed(o) for o in operands[1:]):
        raise TypeError("einsum takes one DistributedTensor (the first operand)")
    if "->" not in subscripts:
        raise ValueError(f"einsum with a DistributedTensor needs an explicit output ('...->...'): {subscripts!r}")
    inputs, output = subscripts.replace(" ", "").split("->")
    subs = inputs.split(",")
    if len(subs) != len(operands) or len(subs[0]) != 2:
        raise ValueError(f"einsum subscripts {subscripts!r} do not fit {len(operands)} operands (the first a matrix)")
    i, j = subs[0][0], subs[0][1]
    if i in output and output[0] != i:
        raise ValueError(f"the output {output!r} must start with the row letter {i!r} or drop it (row partitions)")
    reduce_rows = i not in output
    if reduce_rows and (semiring is not None or epilog is not None):
        raise ValueError("an output without the row letter sums the partitions: no semiring or epilog")
    sizes = {i: a.shape[0], j: a.shape[1]}
    for s, o in zip(subs[1:], others):
        if len(s) != o.ndim:
            raise ValueError(f"operand {s!r} has {o.ndim} dimensions")
        for letter, n in zip(s, o.shape):
            if sizes.setdefault(letter, n) != n:
                raise ValueError(f"einsum shape mismatch for {letter!r}: {sizes[letter]} and {n}")
    kwargs = {"out_format": out_format, "semiring": semiring, "prolog": prolog, "epilog": epilog}

    def slices(p: int) -> list[np.ndarray]:
        out = []
        for s, o in zip(subs[1:], others):
            for axis, letter in enumerate(s):
                if letter == i:
                    o = np.take(o, np.arange(a.bounds[p], a.bounds[p + 1]), axis=axis)
                elif letter == j:
                    o = np.take(o, a.cols[p], axis=axis)
            out.append(np.ascontiguousarray(o))
        return out
    pieces = [slices(p) for p in range(a.partitions)]
    sparse = not a.tensor_format.is_dense and output == subs[0] if out_format is None else not out_format.is_dense
    if not reduce_rows:
        if sparse:
            if output != subs[0]:
                raise ValueError(f"a sparse einsum result must keep the partition's indices {subs[0]!r}")
            return a.derived(lambda p, part, key: submit(a.client, _worker.local_einsum, part, subscripts,
                                                         pieces[p], kwargs, key=key))
    blocks = a.map(lambda p, part: submit(a.client, _worker.local_einsum, part, subscripts, pieces[p], kwargs))
    if not reduce_rows:
        return np.concatenate(blocks)
    return _sum_partials(a, blocks, output, j, sizes)


def _sum_partials(a: Any, blocks: list[np.ndarray], output: str, j: str,
                  sizes: dict[str, int]) -> np.ndarray:
    """Sum of the partitions' results; an axis over the column letter is scattered at each one's columns."""
    total = np.zeros(tuple(sizes[c] for c in output), dtype=np.result_type(*blocks))
    if j not in output:
        return total + sum(blocks)
    axis = output.index(j)
    acc = np.moveaxis(total, axis, 0)
    for p, blk in enumerate(blocks):
        acc[a.cols[p]] += np.moveaxis(blk, axis, 0)
    return total
