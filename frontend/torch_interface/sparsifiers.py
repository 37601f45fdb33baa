"""Sparsifiers (STen's table): objects that decide which entries of a tensor to keep.

Each sparsifier is a callable:

* on a dense torch tensor it returns a tensor of the same shape with the dropped entries zero
  (differentiable: the gradient flows to the kept entries);
* on a :class:`~frontend.torch_interface.TorchUST` it returns a TorchUST in the same format without the
  dropped stored entries.  The decision is made on the logical (dense) tensor, so the same matrix gives
  the same answer in every format.

``prune_(tu)`` instead zeroes the dropped stored values in place (the stored pattern stays: what gradual
pruning uses so that optimizers keep updating the same parameter).

Subclass :class:`Sparsifier` and implement :meth:`Sparsifier.mask` to add one; :meth:`Sparsifier.at`
(the sparsifier at a fraction of its target, used by gradual pruning) scales ``level`` by default.
"""
from __future__ import annotations

import abc
import copy
import math
from typing import Any, TypeVar

import torch

from ._wrapper import TensorWrapper

SparsifierT = TypeVar("SparsifierT", bound="Sparsifier")


def _fraction(name: str, f: Any) -> float:
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= float(f) <= 1.0:
        raise ValueError(f"{name} must be a fraction in [0, 1], got {f!r}")
    return float(f)


def _count(f: float, n: int) -> int:
    """How many of ``n`` entries a fraction ``f`` drops (rounded as ``torch.nn.utils.prune`` rounds)."""
    return int(round(f * n))


class Sparsifier(abc.ABC):
    """Base class: :meth:`mask` says which entries to keep; calling applies it (see the module docstring)."""

    #: the attribute holding the sparsifier's level (scaled by :meth:`at`), None when it has none
    level_attribute: str | None = None

    @abc.abstractmethod
    def mask(self, w: torch.Tensor) -> torch.Tensor:
        """A bool tensor of ``w``'s shape, True for the entries to keep (``w`` is dense and detached)."""

    # ----- applying ----------------------------------------------------------------------------------
    def __call__(self, x: Any) -> Any:
        if isinstance(x, TensorWrapper):
            return self.drop(x)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{type(self).__name__} takes a torch tensor or a TorchUST, got {type(x).__name__}")
        keep = self.checked_mask(x.detach())
        return torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))

    def checked_mask(self, w: torch.Tensor) -> torch.Tensor:
        """:meth:`mask` of a dense tensor, checked to be a bool tensor of its shape."""
        keep = self.mask(w)
        if not isinstance(keep, torch.Tensor) or tuple(keep.shape) != tuple(w.shape):
            raise ValueError(f"{type(self).__name__}.mask returned {getattr(keep, 'shape', type(keep).__name__)}"
                             f" for a tensor of shape {tuple(w.shape)}; expected a mask of that shape")
        return keep.to(torch.bool)

    def stored_mask(self, tu: TensorWrapper) -> torch.Tensor:
        """For each stored value of ``tu`` (storage order), whether it is kept."""
        return tu.gather_stored(self.checked_mask(tu.dense().detach()).reshape(-1))

    def drop(self, tu: TensorWrapper) -> TensorWrapper:
        """``tu`` without the dropped stored entries, in the same format (``requires_grad`` kept)."""
        kept = self.stored_mask(tu).reshape(-1)
        flat = tu.storage_positions().to(kept.device)[kept]
        vals = tu.values().detach().reshape(-1)[kept]
        shape = tuple(tu.shape)
        idx = torch.stack(torch.unravel_index(flat, shape)) if shape else flat.reshape(0, -1)
        coo = torch.sparse_coo_tensor(idx, vals, shape, check_invariants=False).coalesce()  # in range by construction
        src = coo.to_sparse_csr() if len(shape) == 2 else coo
        out = type(tu).from_torch(src, tu.tensor_format)
        if tu.values().requires_grad:
            out.values().requires_grad_(True)
        return out

    def prune_(self, tu: TensorWrapper) -> TensorWrapper:
        """Zero the dropped stored values of ``tu`` in place (its stored pattern stays); returns ``tu``."""
        kept = self.stored_mask(tu)
        with torch.no_grad():
            tu.values().mul_(kept.to(tu.values().dtype))
        return tu

    # ----- gradual pruning -----------------------------------------------------------------------------
    @property
    def level(self) -> float | None:
        """The sparsifier's level (a fraction or threshold), None when it has no scalar level."""
        return None if self.level_attribute is None else float(getattr(self, self.level_attribute))

    def at(self: SparsifierT, progress: float) -> SparsifierT:
        """This sparsifier at ``progress`` (0..1) of its target: a copy with ``level * progress``."""
        progress = _fraction("progress", progress)
        if self.level_attribute is None:
            raise ValueError(f"{type(self).__name__} has no level to ramp; gradual pruning needs a sparsifier "
                             "with a fraction or threshold (ScalarFraction, RandomFraction, BlockFraction, "
                             "ScalarThreshold) or a subclass setting level_attribute")
        out = copy.copy(self)
        setattr(out, self.level_attribute, float(getattr(self, self.level_attribute)) * progress)
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


class KeepAll(Sparsifier):
    """Keep every entry (the identity; a TorchUST keeps all its stored entries)."""

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(w, dtype=torch.bool)

    def at(self, progress: float) -> KeepAll:
        _fraction("progress", progress)
        return self


class ScalarThreshold(Sparsifier):
    """Keep the entries with ``|w| > threshold``."""

    level_attribute = "threshold"

    def __init__(self, threshold: float) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
            raise ValueError(f"threshold must be a non-negative number, got {threshold!r}")
        self.threshold = float(threshold)

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        return w.abs() > self.threshold


class ScalarFraction(Sparsifier):
    """Drop the ``fraction`` of entries with the smallest magnitude (``round(fraction * numel)`` of them,
    chosen as ``torch.nn.utils.prune.l1_unstructured`` chooses)."""

    level_attribute = "fraction"

    def __init__(self, fraction: float) -> None:
        self.fraction = _fraction("fraction", fraction)

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        keep = torch.ones(w.shape, dtype=torch.bool, device=w.device)
        k = _count(self.fraction, w.numel())
        if k:
            drop = torch.topk(w.abs().reshape(-1), k=k, largest=False).indices
            keep.view(-1)[drop] = False
        return keep


class RandomFraction(Sparsifier):
    """Drop ``round(fraction * numel)`` entries chosen uniformly at random (``seed``: the same choice on
    every call for a given shape; None: torch's global generator)."""

    level_attribute = "fraction"

    def __init__(self, fraction: float, seed: int | None = None) -> None:
        self.fraction = _fraction("fraction", fraction)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"seed must be an int or None, got {seed!r}")
        self.seed = seed

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        keep = torch.ones(w.shape, dtype=torch.bool, device=w.device)
        k = _count(self.fraction, w.numel())
        if k:
            gen = torch.Generator().manual_seed(self.seed) if self.seed is not None else None
            drop = torch.randperm(w.numel(), generator=gen)[:k].to(w.device)
            keep.view(-1)[drop] = False
        return keep


def _block_shape(block: Any) -> tuple[int, int]:
    if (not isinstance(block, tuple) or len(block) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise ValueError(f"block must be a pair of positive ints, got {block!r}")
    return int(block[0]), int(block[1])


class BlockFraction(Sparsifier):
    """Drop the ``fraction`` of ``block``-shaped tiles of a 2-D tensor with the smallest L1 norm
    (``round(fraction * tiles)`` of them); the block must tile the tensor."""

    level_attribute = "fraction"

    def __init__(self, fraction: float, block: tuple[int, int] = (4, 4)) -> None:
        self.fraction = _fraction("fraction", fraction)
        self.block = _block_shape(block)

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        if w.dim() != 2:
            raise ValueError(f"block pruning needs a 2-D weight, got {w.dim()}-D")
        bh, bw = self.block
        r, c = w.shape
        if r % bh or c % bw:
            raise ValueError(f"block {self.block} does not tile a weight of shape {tuple(w.shape)}")
        norms = w.abs().reshape(r // bh, bh, c // bw, bw).sum(dim=(1, 3))
        k = _count(self.fraction, norms.numel())
        keep = torch.ones(norms.shape, dtype=torch.bool, device=w.device)
        if k:
            keep.view(-1)[norms.reshape(-1).argsort()[:k]] = False
        return keep.repeat_interleave(bh, 0).repeat_interleave(bw, 1)


class NM(Sparsifier):
    """Keep the ``n`` largest magnitudes in every group of ``m`` consecutive entries along the last
    dimension (for tensors of more than 2 dimensions: along the flattened trailing dimensions of each
    row, as an N-D weight is seen by a linear layer).  The size of that dimension must be a multiple of m."""

    def __init__(self, n: int, m: int) -> None:
        if (isinstance(n, bool) or isinstance(m, bool) or not isinstance(n, int) or not isinstance(m, int)
                or m < 1 or not 0 <= n <= m):
            raise ValueError(f"NM needs ints 0 <= n <= m, m >= 1; got n={n!r}, m={m!r}")
        self.n, self.m = n, m

    @property
    def level(self) -> float:
        return 1.0 - self.n / self.m

    def mask(self, w: torch.Tensor) -> torch.Tensor:
        n, m = self.n, self.m
        rows = w.shape[0] if w.dim() >= 2 else 1
        cols = math.prod(w.shape[1:]) if w.dim() >= 2 else w.numel()
        if w.dim() == 0 or cols % m:
            raise ValueError(f"{n}:{m} pruning needs the input size ({cols if w.dim() else 0}) to be a "
                             f"multiple of {m}")
        g = w.abs().reshape(rows, cols // m, m)
        keep = torch.zeros(g.shape, dtype=torch.bool, device=w.device)
        if n:
            keep.scatter_(-1, g.topk(n, dim=-1).indices, True)
        return keep.reshape(w.shape)


__all__ = ["BlockFraction", "KeepAll", "NM", "RandomFraction", "ScalarFraction", "ScalarThreshold", "Sparsifier"]
