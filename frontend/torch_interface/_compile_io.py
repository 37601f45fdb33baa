"""Arguments and results of a compiled model: torch sparse tensors <-> the buffers of MLIR's sparse assembler.

Sparse inputs go in as their index and value buffers (no copies beyond COO's index rows); sparse results
come back as the buffers the module returns (``sparse-assembler{direct-out=true}``) and are wrapped into a
torch sparse tensor of eager's layout (COO, CSR, CSC, BSR, BSC, with batch and dense dimensions) over
those same buffers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

SPARSE = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)


def sparse_arguments(t: torch.Tensor) -> list[torch.Tensor]:
    """The buffers MLIR's sparse assembler expects for a torch sparse tensor, in order."""
    if t.layout == torch.sparse_coo:
        idx = t._indices()
        return [torch.tensor([0, idx.shape[1]], dtype=idx.dtype), *(r.contiguous() for r in idx),
                t._values().contiguous().reshape(-1)]
    batch = tuple(t.shape[:t.dim() - t.dense_dim() - 2])  # batch levels keep their extents
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values().contiguous().reshape((*batch, -1))]
    values = t.values()
    if t.layout == torch.sparse_bsc:  # torch-mlir's BSC encoding stores each block column-major
        values = values.transpose(-2, -1)
    return [t.ccol_indices(), t.row_indices(), values.contiguous().reshape((*batch, -1))]


def _torch(a: Any) -> torch.Tensor:
    return a if isinstance(a, torch.Tensor) else torch.from_numpy(a)


@dataclass(frozen=True)
class OutputSpec:
    """The layout eager torch gives one model output, and how many module results make it up."""

    layout: Any
    shape: tuple[int, ...]
    sparse_dim: int = 0
    dense_dim: int = 0
    batch_dim: int = 0
    blocksize: tuple[int, ...] = ()

    @classmethod
    def of(cls, val: Any) -> OutputSpec:
        """The spec of a node's ``meta["val"]`` (a fake tensor); dense for anything else."""
        if not isinstance(val, torch.Tensor) or val.layout not in SPARSE:
            return cls(torch.strided, tuple(getattr(val, "shape", ())))
        shape = tuple(int(s) for s in val.shape)
        dense = int(val.dense_dim())
        if val.layout == torch.sparse_coo:
            return cls(val.layout, shape, int(val.sparse_dim()), dense)
        batch = len(shape) - dense - 2
        block: tuple[int, ...] = ()
        if val.layout in (torch.sparse_bsr, torch.sparse_bsc):
            block = tuple(int(s) for s in val.values().shape[batch + 1:batch + 3])
        return cls(val.layout, shape, 2, dense, batch, block)

    @property
    def count(self) -> int:
        """Number of module results: 1 dense; COO: positions, one coordinate buffer per sparse dimension,
        values; compressed layouts: positions, coordinates, values."""
        if self.layout == torch.strided:
            return 1
        if self.layout == torch.sparse_coo:
            return self.sparse_dim + 2
        return 3

    def build(self, results: list[Any]) -> torch.Tensor:
        """The torch tensor over ``results`` (this output's module results, in order)."""
        bufs = [_torch(r) for r in results]
        if self.layout == torch.strided:
            return bufs[0]
        dense_shape = self.shape[len(self.shape) - self.dense_dim:]
        if self.layout == torch.sparse_coo:
            nnz = int(bufs[0][-1]) if bufs[0].numel() else 0
            idx = torch.stack([b[:nnz] for b in bufs[1:-1]]) if self.sparse_dim else \
                torch.zeros((0, 1), dtype=torch.int64)
            vals = bufs[-1].reshape(-1)[:nnz * _prod(dense_shape)].reshape((nnz, *dense_shape))
            return torch.sparse_coo_tensor(idx, vals, self.shape, is_coalesced=True)
        pos, crd, val = bufs
        batch = self.shape[:self.batch_dim]
        pos = pos.reshape((*batch, -1))
        if batch:
            nnz = int(crd.numel() // max(1, _prod(batch)))
        else:  # the buffers may be longer than what is stored
            nnz = int(pos[-1]) if pos.numel() else 0
            crd, val = crd[:nnz], val[:nnz * _prod(self.blocksize) * _prod(dense_shape)]
        crd = crd.reshape((*batch, nnz))
        block = self.blocksize
        if self.layout == torch.sparse_bsc:  # blocks come back column-major (torch-mlir's BSC)
            val = val.reshape((*batch, nnz, block[1], block[0], *dense_shape)).transpose(-2 - len(dense_shape),
                                                                                       -1 - len(dense_shape))
        else:
            val = val.reshape((*batch, nnz, *block, *dense_shape))
        make = {torch.sparse_csr: torch.sparse_csr_tensor, torch.sparse_csc: torch.sparse_csc_tensor,
                torch.sparse_bsr: torch.sparse_bsr_tensor, torch.sparse_bsc: torch.sparse_bsc_tensor}[self.layout]
        return make(pos, crd, val, self.shape, check_invariants=False)


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def output_specs(program: Any) -> list[OutputSpec]:
    """One spec per output of an exported program's graph."""
    out = next(n for n in program.graph.nodes if n.op == "output")
    args = out.args[0]
    items = args if isinstance(args, (tuple, list)) else (args,)
    return [OutputSpec.of(getattr(a, "meta", {}).get("val")) for a in items]


def rebuild_outputs(specs: list[OutputSpec], results: list[Any]) -> list[torch.Tensor]:
    """Group the module's flat results by output and wrap each as eager's layout."""
    need = sum(s.count for s in specs)
    if need != len(results):
        raise ValueError(f"the compiled model returned {len(results)} buffers, its outputs need {need}")
    outs, k = [], 0
    for s in specs:
        outs.append(s.build(results[k:k + s.count]))
        k += s.count
    return outs
