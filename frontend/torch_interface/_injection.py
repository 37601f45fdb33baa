"""Putting TorchUST weights into existing models: ``prune_model`` and ``reformat_model``.

``reformat_model`` replaces a layer's ``weight`` parameter by a TorchUST attribute whose ``.values()`` is
registered as the parameter ``weight_values``: the model's code is unchanged (``F.linear(x, self.weight,
self.bias)`` dispatches to the compiled kernels), ``model.parameters()`` holds only stored values, and a
torch optimizer updates them in place (sparse fine-tuning keeps the pattern).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils import prune

from frontend.format import NamedFormats, TensorFormat
from frontend.storage._format_choice import optimize as optimize_stored

from ._subclass import TorchUST
from .sparsifiers import NM, BlockFraction, ScalarFraction, Sparsifier

FormatFunc = Callable[[torch.Tensor], "TorchUST | torch.Tensor | None"]


@dataclass(frozen=True)
class LayerReport:
    """What ``reformat_model`` did to one layer."""

    layer: str
    format: str  # "dense" when left unchanged
    sparsity: float
    bytes_before: int
    bytes_after: int


@dataclass(frozen=True)
class ReformatReport:
    """Per-layer reports and totals; ``str()`` gives a table."""

    layers: tuple[LayerReport, ...]

    @property
    def bytes_before(self) -> int:
        return sum(r.bytes_before for r in self.layers)

    @property
    def bytes_after(self) -> int:
        return sum(r.bytes_after for r in self.layers)

    @property
    def changed(self) -> tuple[LayerReport, ...]:
        return tuple(r for r in self.layers if r.format != "dense")

    def __str__(self) -> str:
        w = max([len(r.layer) for r in self.layers] + [5])
        lines = [f"{'layer':<{w}}  {'format':<10} {'sparsity':>8} {'bytes before':>13} {'bytes after':>12}"]
        for r in self.layers:
            lines.append(f"{r.layer:<{w}}  {r.format:<10} {r.sparsity:>8.1%} {r.bytes_before:>13,} "
                         f"{r.bytes_after:>12,}")
        ratio = self.bytes_after / self.bytes_before if self.bytes_before else 1.0
        lines.append(f"{'total':<{w}}  {'':<10} {'':>8} {self.bytes_before:>13,} {self.bytes_after:>12,}"
                     f"  ({ratio:.1%})")
        return "\n".join(lines)


def sparsity(w: torch.Tensor) -> float:
    """Fraction of zero entries."""
    n = w.numel()
    return 1.0 - int(torch.count_nonzero(w)) / n if n else 0.0


def choose_format(weight: torch.Tensor, *, threshold: float = 0.5,
                  candidates: Sequence[TensorFormat] | None = None) -> TorchUST | None:
    """The default ``reformat_model`` policy: None (stay dense) below ``threshold`` sparsity, else the
    candidate format (default CSR and DELTA(8)) with the fewest storage bytes; indices are 32-bit when
    the shape allows (fewer bytes to stream per product)."""
    w = weight.detach()
    if w.dim() != 2 or sparsity(w) < threshold:
        return None
    fmts = list(candidates) if candidates is not None else [NamedFormats.CSR, NamedFormats.DELTA(8)]
    best: TorchUST | None = None
    small = max(w.shape) < 2**31 - 1
    csr = TorchUST.from_torch(w.to_sparse_csr())
    for fmt in fmts:
        ust = csr.ust.convert(fmt, index_type=np.int32) if small else csr.ust.convert(fmt)
        tu = TorchUST.from_ust(ust)
        if best is None or tu.storage_bytes < best.storage_bytes:
            best = tu
    return best


def choose_format_for_speed(weight: torch.Tensor, *, threshold: float = 0.5, for_: str = "spmm") -> TorchUST | None:
    """``reformat_model(model, "auto")``'s policy: None (stay dense) below ``threshold`` sparsity, else the
    storage :func:`frontend.optimize` picks for repeated ``for_`` products (the same chooser as
    ``Matmul(optimize=True)``: estimated time, not only bytes; a layer's product with a batch is SpMM)."""
    w = weight.detach()
    if w.dim() != 2 or sparsity(w) < threshold:
        return None
    best, _ = optimize_stored(TorchUST.from_torch(w.to_sparse_csr()).ust, for_)
    return TorchUST.from_ust(best)


def _make_pruning_permanent(mod: nn.Module) -> None:
    for hook in list(mod._forward_pre_hooks.values()):
        if isinstance(hook, prune.BasePruningMethod):
            prune.remove(mod, hook._tensor_name)


def install_weight(mod: nn.Module, tu: TorchUST, name: str = "weight") -> TorchUST:
    """Replace parameter ``name`` of ``mod`` by ``tu``; its values become parameter ``{name}_values``."""
    old = getattr(mod, name)
    if tuple(tu.shape) != tuple(old.shape):
        raise ValueError(f"replacement for {name} has shape {tuple(tu.shape)}, expected {tuple(old.shape)}")
    param = nn.Parameter(tu.values().detach(), requires_grad=bool(old.requires_grad))
    tu = TorchUST.with_values(tu, param)
    if name in mod._parameters:
        del mod._parameters[name]
    mod.register_parameter(f"{name}_values", param)
    object.__setattr__(mod, name, tu)
    return tu


def reformat_model(model: nn.Module, func: FormatFunc | str | None = None, *,
                   modules: tuple[type[nn.Module], ...] = (nn.Linear,), threshold: float = 0.5) -> ReformatReport:
    """For every submodule of a type in ``modules``: make pruning permanent, call ``func(weight)`` (a
    TorchUST, a torch sparse tensor, or None to leave the layer) and install the result in place.

    ``func=None`` uses :func:`choose_format` (dense below ``threshold`` sparsity, else CSR or DELTA(8),
    whichever is smaller); ``func="auto"`` uses :func:`choose_format_for_speed` (the storage
    :func:`frontend.optimize` estimates fastest for the layer's products).  Returns a :class:`ReformatReport`."""
    policy: FormatFunc
    if func == "auto":
        def policy(w: torch.Tensor) -> TorchUST | None:
            return choose_format_for_speed(w, threshold=threshold)
    elif func is None:
        def policy(w: torch.Tensor) -> TorchUST | None:
            return choose_format(w, threshold=threshold)
    elif isinstance(func, str):
        raise ValueError(f"reformat_model: func must be a callable, None or 'auto', got {func!r}")
    else:
        policy = func
    reports: list[LayerReport] = []
    for name, mod in model.named_modules():
        if not isinstance(mod, modules) or isinstance(getattr(mod, "weight", None), TorchUST):
            continue
        _make_pruning_permanent(mod)
        weight = getattr(mod, "weight", None)
        if not isinstance(weight, torch.Tensor):
            continue
        before = weight.numel() * weight.element_size()
        sp = sparsity(weight.detach())
        new = policy(weight.detach())
        if new is None:
            reports.append(LayerReport(name, "dense", sp, before, before))
            continue
        if not isinstance(new, TorchUST):
            if not isinstance(new, torch.Tensor):
                raise TypeError(f"reformat func returned {type(new).__name__} for {name}; expected a TorchUST, "
                                "a torch tensor or None")
            new = TorchUST.from_torch(new)
        tu = install_weight(mod, new)
        reports.append(LayerReport(name, tu.format_name, sp, before, tu.storage_bytes))
    return ReformatReport(tuple(reports))


# ----- pruning --------------------------------------------------------------------------------------------
class SparsifierPruning(prune.BasePruningMethod):
    """A :class:`~.sparsifiers.Sparsifier` as an unstructured torch pruning method: on a module pruned
    before, torch hands it only the entries still unpruned (as ``l1_unstructured`` is)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, sparsifier: Sparsifier) -> None:
        self.sparsifier = sparsifier

    def compute_mask(self, t: torch.Tensor, default_mask: torch.Tensor) -> torch.Tensor:
        keep = self.sparsifier.checked_mask(t.detach())
        return default_mask * keep.to(default_mask.dtype)


def structured_sparsifier(structured: object, amount: float) -> Sparsifier:
    """The sparsifier of ``prune_model``'s ``structured`` argument (None: :class:`ScalarFraction`)."""
    if structured is None:
        return ScalarFraction(amount)
    if isinstance(structured, Sparsifier):
        return structured
    if isinstance(structured, str):
        s = structured.strip().lower()
        if ":" in s:
            n, m = (int(x) for x in s.split(":"))
            return NM(n, m)
        if s == "block":
            return BlockFraction(amount, (4, 4))
    if isinstance(structured, tuple) and len(structured) == 2:
        if structured[0] == "block" and isinstance(structured[1], tuple):
            return BlockFraction(amount, tuple(int(x) for x in structured[1]))  # type: ignore[arg-type]
        if all(isinstance(x, int) for x in structured):
            return NM(int(structured[0]), int(structured[1]))
    raise ValueError(f"structured must be None, 'n:m' (e.g. '2:4'), (n, m), 'block', ('block', (h, w)) or a "
                     f"Sparsifier; got {structured!r}")


def prune_model(model: nn.Module, amount: float = 0.5, structured: object = None, *,
                modules: tuple[type[nn.Module], ...] = (nn.Linear,), names: Iterable[str] | None = None) -> nn.Module:
    """Prune the weights of ``modules`` with torch's pruning (masks stay until ``reformat_model`` or
    ``prune.remove``), choosing entries with a sparsifier (:mod:`.sparsifiers`): ``structured=None``
    :class:`ScalarFraction` (``amount`` of the entries, as L1-unstructured; on a module pruned before, of
    the entries left), ``"2:4"`` / ``(n, m)`` :class:`NM` (``amount`` ignored), ``"block"`` /
    ``("block", (h, w))`` :class:`BlockFraction` (the ``amount`` of tiles with the smallest L1 norm), or
    any :class:`Sparsifier`.  ``names`` restricts to those submodule names.  Returns ``model``."""
    if not 0.0 <= float(amount) <= 1.0:
        raise ValueError(f"amount must be in [0, 1], got {amount!r}")
    sparsifier = structured_sparsifier(structured, float(amount))
    wanted = set(names) if names is not None else None
    for name, mod in model.named_modules():
        if not isinstance(mod, modules) or (wanted is not None and name not in wanted):
            continue
        weight = getattr(mod, "weight", None)
        if not isinstance(weight, nn.Parameter):
            continue
        if structured is None:
            SparsifierPruning.apply(mod, "weight", sparsifier)
        else:
            prune.custom_from_mask(mod, "weight", sparsifier.checked_mask(weight.detach()).to(weight.dtype))
    return model
