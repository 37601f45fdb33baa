"""What an applied :class:`~._schedule.Schedule` keeps per tensor: formats, masks, the cubic ramp.

* :func:`resolve_format`: a format given as a name, DSL text or a ``TensorFormat``.
* :func:`as_format`: a dense activation as a TorchUST whose values stay differentiable.
* :func:`cubic_progress`: Zhu & Gupta's ramp ``1 - (1 - t/N)^3``.
* :class:`ParamState`: a scheduled parameter (dense or TorchUST), its mask of kept entries and the hooks
  that keep pruned entries at zero.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn

from frontend.format import NamedFormats, TensorFormat

from ._subclass import TorchUST
from .sparsifiers import Sparsifier


def resolve_format(spec: Any) -> TensorFormat:
    """A ``TensorFormat`` from a format, a name (``"CSR"``, ``"BSR((4, 4))"``) or DSL text."""
    if isinstance(spec, TensorFormat):
        return spec
    if isinstance(spec, str):
        return TensorFormat.parse(spec) if "->" in spec else NamedFormats.lookup(spec)
    raise TypeError(f"a format is a name, DSL text or a TensorFormat, got {type(spec).__name__}")


def cubic_progress(t: int, steps: int) -> float:
    """The fraction of the target sparsity after ``t`` of ``steps`` steps (Zhu & Gupta, 2017; torch's
    ``CubicSL`` with an initial sparsity of 0): ``1 - (1 - t/steps)^3``, 1 from ``t >= steps``."""
    if steps <= 0:
        return 1.0
    return 1.0 - (1.0 - min(max(t, 0), steps) / steps) ** 3


def stored(x: torch.Tensor, fmt: TensorFormat) -> TorchUST:
    """A detached dense ``x`` in ``fmt`` (zeros dropped), with 32-bit indices when the shape allows."""
    tu = TorchUST.from_torch(x.detach(), fmt)
    if x.numel() and max(x.shape) < 2**31 - 1:
        tu = TorchUST.from_ust(tu.ust.convert(fmt, index_type=np.int32))
    return tu


def as_format(x: torch.Tensor, fmt: TensorFormat) -> TorchUST:
    """``x`` (dense, zeros dropped) as a TorchUST in ``fmt`` whose ``.values()`` gather from ``x``: the
    gradient of the values flows back into ``x`` at the stored entries."""
    pattern = stored(x, fmt)
    if pattern.ust.nse == 0:
        return pattern
    return TorchUST.with_values(pattern, pattern.gather_stored(x.reshape(-1)))


def zero_optimizer_state(optimizer: torch.optim.Optimizer, param: torch.Tensor, keep: torch.Tensor) -> None:
    """Zero ``optimizer``'s per-entry buffers of ``param`` (momentum, Adam's moments) at dropped entries
    (``keep``: the mask of live entries, 0/1 in ``param``'s dtype)."""
    state = optimizer.state.get(param, {})
    with torch.no_grad():
        for buf in state.values():
            if isinstance(buf, torch.Tensor) and buf.shape == param.shape:
                buf.mul_(keep if buf.dtype == keep.dtype else keep.to(buf.dtype))


class ParamState:
    """One scheduled parameter after ``apply``: ``values`` is the tensor optimizers update (the dense
    parameter, or ``.values()`` of the installed TorchUST) and ``keep`` its mask of live entries (None:
    all live).  A gradient hook zeroes the gradient of dropped entries and applies the gradient's
    sparsifier; :meth:`enforce` zeroes the dropped values (after an optimizer step)."""

    def __init__(self, module: nn.Module, leaf: str) -> None:
        self.module, self.leaf = module, leaf
        self.keep: torch.Tensor | None = None
        self.keep_values: torch.Tensor | None = None  # keep as 0/1 in the values' dtype
        self.grad_sparsifier: Sparsifier | None = None
        self.grad_format: TensorFormat | None = None
        self.last_grad: torch.Tensor | TorchUST | None = None

    @property
    def target(self) -> torch.Tensor:
        """The parameter as the model sees it (a dense Parameter or a TorchUST)."""
        return getattr(self.module, self.leaf)

    @property
    def values(self) -> torch.Tensor:
        t = self.target
        return t.values() if isinstance(t, TorchUST) else t

    def mask_of(self, sparsifier: Sparsifier) -> torch.Tensor:
        """``sparsifier``'s mask over :attr:`values` (stored entries for a TorchUST)."""
        t = self.target
        if isinstance(t, TorchUST):
            return sparsifier.stored_mask(t)
        return sparsifier.checked_mask(t.detach())

    def set_keep(self, keep: torch.Tensor | None) -> None:
        """A new mask (combined with the old one: entries once dropped stay dropped) and zero the values."""
        if keep is not None and self.keep is not None:
            keep = keep & self.keep
        self.keep = keep
        self.keep_values = None if keep is None else keep.to(self.values.dtype)
        self.enforce()

    def enforce(self) -> None:
        if self.keep_values is not None:
            with torch.no_grad():
                self.values.mul_(self.keep_values)

    def dense(self) -> torch.Tensor:
        t = self.target
        return t.dense() if isinstance(t, TorchUST) else t.detach()

    def grad_hook(self, g: torch.Tensor) -> torch.Tensor:
        """Zero the gradient of dropped entries, sparsify it and keep it in the gradient's format."""
        if self.keep_values is not None:
            g = g * self.keep_values
        t = self.target
        if self.grad_sparsifier is not None:
            if isinstance(t, TorchUST):
                g = g * self.grad_sparsifier.stored_mask(TorchUST.with_values(t, g.detach())).to(g.dtype)
            else:
                g = self.grad_sparsifier(g)
        if self.grad_format is not None:
            gt = TorchUST.with_values(t, g.detach().clone()) if isinstance(t, TorchUST) else g.detach()
            self.last_grad = stored(gt.dense() if isinstance(gt, TorchUST) else gt, self.grad_format)
        else:
            self.last_grad = g.detach()
        return g
