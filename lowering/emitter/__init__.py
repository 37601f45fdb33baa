"""ust-mlir's own code generator: loops that walk a stored operand level by level.

For formats MLIR's sparsifier cannot encode (range and delta levels, diagonal maps) and, for
cross-checking, any other format. ``emit_contraction`` builds the module; ``operand_buffers`` gives a
tensor's arguments; ``register_level_rule`` extends the walker (docs/extending.md).
"""
from .builder import Builder, Value
from .kernel import emit_contraction, row_parallel, walked_index
from .operand import WalkedOperand, delta_gap_type, operand_buffers
from .rules import DELTA_START, DELTA_STEP, generation, register_level_rule, rule_for
from .walker import VECTOR_LANES, walk

__all__ = ["Builder", "DELTA_START", "DELTA_STEP", "VECTOR_LANES", "Value", "WalkedOperand",
           "delta_gap_type", "emit_contraction", "operand_buffers", "row_parallel", "register_level_rule", "rule_for",
           "generation", "walk", "walked_index"]
