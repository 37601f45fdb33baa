"""Linear systems: ``solve`` and ``Solve`` (triangular substitution, CG, BiCGSTAB, GMRES)."""
from ._solve import ConvergenceError, ConvergenceWarning, Solve, SolveInfo, solve

__all__ = ["ConvergenceError", "ConvergenceWarning", "Solve", "SolveInfo", "solve"]
