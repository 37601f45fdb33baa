"""Solver kernels as MLIR text: substitution, Krylov iterations, preconditioners (no frontend import)."""
from .pipeline import compile_solver
from .triangular import TriangularSpec, triangular_function, triangular_module

__all__ = ["TriangularSpec", "compile_solver", "triangular_function", "triangular_module"]
