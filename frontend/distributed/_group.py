"""All of one worker's blocks of a solve as one set of vectors: each vector is one array over the worker's
rows (its blocks' rows in partition order), so a step's vector operations and dot products are one NumPy
operation for the worker however many blocks it holds; only the SpMV runs per block (each block's own planned
kernel, writing its rows of the result in place). A block's SpMV operand takes the entries of blocks on the
same worker straight from the worker's vector, and those of blocks on other workers from the halo they sent:
per other worker one array of entries (the pairs of blocks in a fixed order both sides derive from the halo
plan), exported and combined once for all of the worker's blocks."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._krylov import Export, Terms
from ._plan import Halo
from ._worker import Part, solve_state

Index = np.ndarray | slice  # positions in an array: a slice when they are one increasing range (copied, not gathered)


def _indices(pieces: list[np.ndarray]) -> Index:
    """The index arrays ``pieces`` one after the other (empty when there are none), as a slice when they are
    one increasing range."""
    idx = np.concatenate([np.zeros(0, dtype=np.intp), *pieces]).astype(np.intp)
    if len(idx) and int(idx[-1]) - int(idx[0]) + 1 == len(idx) and np.all(np.diff(idx) == 1):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


@dataclass
class Block:
    """One partition in a worker's vectors: its rows ``rows`` of them, and where its SpMV operand's entries
    come from (``near``: the worker's vector, ``far``: the combined halo; ``*_src`` indices there, ``*_pos``
    positions in the operand)."""

    part: Part
    rows: slice
    near_src: Index
    near_pos: Index
    far_src: Index
    far_pos: Index
    operand: np.ndarray | None = None  # the SpMV's input, read in place by its planned kernel
    plan: Any = None
    outs: dict[str, np.ndarray] = field(default_factory=dict)  # its rows of each SpMV result buffer


class GroupState:
    """The vectors (``vec``) of partitions ``ranks`` held by worker ``places[ranks[0]]``, their Jacobi scaling
    (``dinv``), and the exchange with the other workers: ``send[w]`` are the rows (of the worker's vectors)
    worker ``w``'s blocks need, ``width[w]`` how many entries ``w`` sends back."""

    def __init__(self, ranks: list[int], parts: list[Part], halos: list[Halo], places: list[str],
                 bs: list[np.ndarray], x0s: list[np.ndarray], jacobi: bool) -> None:
        states = [solve_state(part, halo, b, x0, jacobi) for part, halo, b, x0 in zip(parts, halos, bs, x0s)]
        self.ranks = list(ranks)
        self.me = places[self.ranks[0]]
        self.peers = sorted(set(places) - {self.me})
        starts = np.cumsum([0] + [part.rows for part in parts])
        self.rows = {p: slice(int(starts[k]), int(starts[k + 1])) for k, p in enumerate(self.ranks)}
        self.vec: dict[str, np.ndarray] = {"b": np.concatenate([s.vec["b"] for s in states]),
                                           "x": np.concatenate([s.vec["x"] for s in states])}
        self.outs: dict[str, np.ndarray] = {}  # the SpMV's result buffer per destination vector
        self.dinv = None if not jacobi else np.concatenate([s.dinv for s in states if s.dinv is not None])
        halo = dict(zip(self.ranks, halos))
        # the pairs (sender, receiver) of blocks on different workers, sorted: the order of a message's entries
        sent = {w: sorted((q, p) for q in self.ranks for p in halo[q].send if places[p] == w) for w in self.peers}
        got = {w: sorted((q, p) for p in self.ranks for q, _ in halo[p].recv if places[q] == w) for w in self.peers}
        self.send = {w: _indices([self.rows[q].start + halo[q].send[p] for q, p in sent[w]]) for w in self.peers}
        self.dinv_send = {w: None if self.dinv is None else self.dinv[idx] for w, idx in self.send.items()}
        far_at: dict[tuple[int, int], int] = {}  # (sender, receiver) -> where its entries start in the halo
        width = 0
        self.width: dict[str, int] = {}
        for w in self.peers:
            start = width
            for q, p in got[w]:
                far_at[q, p] = width
                width += len(dict(halo[p].recv)[q])
            self.width[w] = width - start
        self.blocks = [self._block(p, parts[k], halo, places, far_at) for k, p in enumerate(self.ranks)]
        for blk in self.blocks:  # planned here, before the iteration runs on the worker's event loop
            self._plan(blk, self.vec["b"].dtype)

    def _block(self, p: int, part: Part, halo: dict[int, Halo], places: list[str],
               far_at: dict[tuple[int, int], int]) -> Block:
        h = halo[p]
        near_src, near_pos = [self.rows[p].start + h.own_src], [h.own_pos]
        far_src, far_pos = [], []
        for q, pos in h.recv:
            if places[q] == self.me:
                near_src.append(self.rows[q].start + halo[q].send[p])
                near_pos.append(pos)
            else:
                far_src.append(far_at[q, p] + np.arange(len(pos)))
                far_pos.append(pos)
        return Block(part, self.rows[p], _indices(near_src), _indices(near_pos), _indices(far_src),
                     _indices(far_pos))

    def spmv(self, dst: str, own: np.ndarray, far: np.ndarray | None) -> np.ndarray:
        """Every block's rows times the vector whose entries on this worker are ``own`` and on the others
        ``far`` (the combined halo; None: the entries last received), written into the buffer kept for the
        vector ``dst`` (which the product replaces)."""
        dtype = np.result_type(self.blocks[0].part.tensor.dtype, own.dtype)
        out = self.outs.get(dst)
        if out is None or out.dtype != dtype or out.shape != own.shape:
            out = self.outs[dst] = np.empty(own.shape, dtype=dtype)
            for blk in self.blocks:
                blk.outs[dst] = out[blk.rows]
        for blk in self.blocks:
            if blk.operand is None or blk.operand.dtype != own.dtype or blk.operand.shape[1:] != own.shape[1:]:
                self._plan(blk, own.dtype, own.shape[1:])
            operand = blk.operand
            assert operand is not None
            operand[blk.near_pos] = own[blk.near_src]
            if far is not None and (isinstance(blk.far_pos, slice) or len(blk.far_pos)):
                operand[blk.far_pos] = far[blk.far_src]
            blk.plan.execute(out=blk.outs[dst])
        return out

    @staticmethod
    def _plan(blk: Block, dtype: np.dtype, columns: tuple[int, ...] = ()) -> None:
        """The block's SpMV (SpMM with ``columns``: the operand's trailing shape) planned (and compiled, if not
        cached) for operands of ``dtype``."""
        from frontend.ops._api import Matmul

        from ._worker import _threads
        blk.operand = np.zeros((len(blk.part.cols), *columns), dtype=dtype)
        blk.plan = Matmul(blk.part.tensor, blk.operand, threads=_threads()).plan()

    def exports(self, export: Export) -> dict[str, np.ndarray]:
        """Per other worker, the vectors ``export`` names (``(name, Jacobi-scaled)``) at the rows its blocks
        need, stacked (from which its next halo is combined)."""
        if not export:
            return {}
        out = {}
        for w, idx in self.send.items():
            rows = []
            for name, scaled in export:
                v = self.vec[name][idx]
                scale = self.dinv_send[w]
                rows.append(scale * v if scaled and scale is not None else v)
            out[w] = np.stack(rows) if rows else np.zeros((0, 0))
        return out

    def halo(self, terms: Terms | None, names: Export, received: dict[str, np.ndarray]) -> np.ndarray | None:
        """The SpMV operand's entries on other workers: ``terms`` (``(coef, name, scaled)``) combined from what
        each sent (``received[w]``, stacked in the order ``names``), in the peers' order."""
        if terms is None or not names:
            return None
        stacked = [received[w] for w in self.peers if self.width[w]]
        if not stacked:
            return None
        got = stacked[0] if len(stacked) == 1 else np.concatenate(stacked, axis=1)
        out = None
        for coef, name, scaled in terms:
            v = coef * got[names.index((name, scaled))]
            out = v if out is None else out + v
        return out

    def blocks_of(self, name: str) -> dict[int, np.ndarray]:
        """The vector ``name`` per partition (copies)."""
        return {p: self.vec[name][rows].copy() for p, rows in self.rows.items()}
