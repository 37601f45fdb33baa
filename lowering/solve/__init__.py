"""Solver kernels as MLIR text: substitution, Krylov iterations, preconditioners (no frontend import)."""
from .krylov import METHODS, KrylovSpec, krylov_function, krylov_module
from .pipeline import compile_solver, openmp_available, openmp_target
from .precond import KINDS as PRECONDITIONERS, Preconditioner, ilu0_function
from .triangular import TriangularSpec, triangular_function, triangular_module

__all__ = ["KrylovSpec", "METHODS", "PRECONDITIONERS", "Preconditioner", "TriangularSpec", "compile_solver",
           "ilu0_function", "krylov_function", "krylov_module", "openmp_available", "openmp_target",
           "triangular_function", "triangular_module"]
