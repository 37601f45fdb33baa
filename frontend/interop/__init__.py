"""Zero-copy interop: one adapter per package (NumPy/CuPy strided arrays, SciPy/cupyx sparse, torch
strided and sparse), the layouts those packages store (``_layouts``) and one view cache."""
from ._package import PACKAGES, from_package, to_package

__all__ = ["PACKAGES", "from_package", "to_package"]
