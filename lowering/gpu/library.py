"""The vendor library path's facts: the layouts each package's sparse library takes (torch.sparse,
cupyx.scipy.sparse: cuSPARSE on CUDA; square-block ``BlockedELL`` through cuSPARSE's blocked-ELL SpMM, called
directly by :mod:`mlir_bridge.gpu.cusparse` for either package), and which of them a format is.

``LIBRARY_LAYOUTS`` is the one table of them: ``lowering.gpu.dispatch`` chooses the ``"cusparse"`` path
from it, ``frontend.ops.gpu._library`` checks the layouts it wraps against it.
"""
from __future__ import annotations

from frontend.format import NamedFormats, TensorFormat, block_sizes

#: Layouts each package's sparse library takes.
LIBRARY_LAYOUTS = {"torch": ("CSR", "CSC", "COO", "BSR", "BlockedELL"), "cupy": ("CSR", "CSC", "COO", "BlockedELL")}
#: Layouts a package's library converts on every call (torch: CSC to CSR), so they are not worth its path.
CONVERTED_LAYOUTS = {"torch": ("CSC",)}
_NAMED = (("CSR", NamedFormats.CSR), ("CSC", NamedFormats.CSC), ("COO", NamedFormats.COO))


def library_layout(fmt: TensorFormat | None) -> str | None:
    """``"CSR"``, ``"CSC"``, ``"COO"``, ``"BSR"`` or ``"BlockedELL"`` (square blocks) when ``fmt`` is that
    layout (2-D, no batch or dense levels), else None."""
    if fmt is None or fmt.num_dimensions != 2 or fmt.is_dense:
        return None
    for name, named in _NAMED:
        if fmt == named:
            return name
    sizes = block_sizes(fmt)
    if 0 not in sizes or 1 not in sizes:
        return None
    if fmt == NamedFormats.BSR((sizes[0], sizes[1])):
        return "BSR"
    if sizes[0] == sizes[1] and fmt == NamedFormats.BlockedELL((sizes[0], sizes[1])):
        return "BlockedELL"
    return None


def library_fits(fmt: TensorFormat | None, shape: tuple[int, ...]) -> bool:
    """Whether the library takes a tensor of ``fmt`` and ``shape`` as it is: cuSPARSE's Blocked-ELL needs
    both extents divisible by the block size (no partial blocks)."""
    layout = library_layout(fmt)
    if layout != "BlockedELL" or fmt is None:
        return layout is not None
    block = block_sizes(fmt)[0]
    return all(int(n) % block == 0 for n in shape)


def direct_layouts(package: str) -> tuple[str, ...]:
    """The layouts ``package`` hands to cuSPARSE as they are (no conversion on each call)."""
    return tuple(lay for lay in LIBRARY_LAYOUTS.get(package, ()) if lay not in CONVERTED_LAYOUTS.get(package, ()))
