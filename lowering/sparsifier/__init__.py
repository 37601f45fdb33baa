"""Lowering through MLIR's sparsifier: the ``linalg.generic`` module of a contraction (``generic``) and
the ``"sparsifier"`` path that compiles it (``path``)."""
from .generic import build_module
from .path import CPU_SPARSIFIER_OPTIONS, lower_sparsifier, sparsifier_pipeline

__all__ = ["CPU_SPARSIFIER_OPTIONS", "build_module", "lower_sparsifier", "sparsifier_pipeline"]
