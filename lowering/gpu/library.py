"""The vendor library path's facts: the layouts each package's sparse library takes (torch.sparse,
cupyx.scipy.sparse: cuSPARSE on CUDA), and which of them a format is.

``LIBRARY_LAYOUTS`` is the one table of them: ``lowering.gpu.dispatch`` chooses the ``"cusparse"`` path
from it, ``frontend.ops.gpu._library`` checks the layouts it wraps against it.
"""
from __future__ import annotations

from frontend.format import NamedFormats, TensorFormat, block_sizes

#: Layouts each package's sparse library takes.
LIBRARY_LAYOUTS = {"torch": ("CSR", "CSC", "COO", "BSR"), "cupy": ("CSR", "CSC", "COO")}
#: Layouts a package's library converts on every call (torch: CSC to CSR), so they are not worth its path.
CONVERTED_LAYOUTS = {"torch": ("CSC",)}
_NAMED = (("CSR", NamedFormats.CSR), ("CSC", NamedFormats.CSC), ("COO", NamedFormats.COO))


def library_layout(fmt: TensorFormat | None) -> str | None:
    """``"CSR"``, ``"CSC"``, ``"COO"`` or ``"BSR"`` when ``fmt`` is that layout (2-D, no batch or dense
    levels), else None."""
    if fmt is None or fmt.num_dimensions != 2 or fmt.is_dense:
        return None
    for name, named in _NAMED:
        if fmt == named:
            return name
    sizes = block_sizes(fmt)
    if 0 in sizes and 1 in sizes and fmt == NamedFormats.BSR((sizes[0], sizes[1])):
        return "BSR"
    return None


def direct_layouts(package: str) -> tuple[str, ...]:
    """The layouts ``package`` hands to cuSPARSE as they are (no conversion on each call)."""
    return tuple(lay for lay in LIBRARY_LAYOUTS.get(package, ()) if lay not in CONVERTED_LAYOUTS.get(package, ()))
