"""What every lowering path takes: an einsum-style contraction over operands of given formats.

``Contraction`` says ``out[output] (+)= alpha * prod_k in_k[subscripts_k]`` (or a semiring's
``add``/``mul``, :class:`SemiringOps`), with an optional prolog and epilog; each operand is a
:class:`TensorSpec` (format, static shape, element type, index widths). Pure data: which path lowers it
is :func:`lowering.dispatch.choose_path`'s answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frontend.format import TensorFormat, encoding_text

from .scalar_fn import ScalarFn

INIT_KINDS = ("zero", "c", "beta_c")
#: (subscripts, output subscripts) of SpMV and SpMM as the operations spell them: the products a vendor
#: library (cuSPARSE) and the GPU's DIA-I kernel compute.
SPMV_SPMM = frozenset({(("ik", "k"), "i"), (("ik", "kj"), "ij")})


@dataclass(frozen=True, eq=False)
class TensorSpec:
    """One operand or result: format (None = row-major dense), static shape, element type, widths."""

    fmt: TensorFormat | None
    shape: tuple[int, ...]
    elem: str
    pos_width: int = 64
    crd_width: int = 64

    @property
    def encoded(self) -> bool:
        """Whether the MLIR type carries a ``#sparse_tensor.encoding`` (non row-major storage)."""
        f = self.fmt
        return f is not None and not (f.is_dense and f.is_identity)

    @property
    def sparse(self) -> bool:
        return self.fmt is not None and not self.fmt.is_dense

    def type_text(self) -> str:
        dims = "".join(f"{int(s)}x" for s in self.shape)
        if not self.encoded:
            return f"tensor<{dims}{self.elem}>"
        return f"tensor<{dims}{self.elem}, {encoding_text(self.fmt, self.pos_width, self.crd_width)}>"

    def key(self) -> tuple:
        fk = self.fmt.structure_key() if self.fmt is not None and self.encoded else None
        return (fk, self.shape, self.elem, self.pos_width, self.crd_width)


@dataclass(frozen=True)
class SemiringOps:
    """A semiring traced for one element type: ``add`` (reduce) and ``mul`` (binary overlap) as scalar
    functions, with the additive identity as a Python number (``frontend``'s ``Semiring`` makes it)."""

    name: str
    add: ScalarFn
    mul: ScalarFn
    identity: Any


@dataclass(frozen=True, eq=False)
class Contraction:
    """``out[output] (+)= alpha * prod_k in_k[subscripts_k]`` (or a semiring), fully described."""

    subscripts: tuple[str, ...]
    inputs: tuple[TensorSpec, ...]
    output_subscripts: str
    output: TensorSpec
    semiring: SemiringOps | None = None
    alpha: bool = False
    init: str = "zero"
    prolog: ScalarFn | None = None
    epilog: ScalarFn | None = None
    name: str = "main"
    #: compile the row-range variant (``lowering.emitter.row_parallel``): output rows ``[begin, end)``
    #: into a caller-given output, for multi-threaded execution
    row_range: bool = False
    #: inner-loop width of the walk (``lowering.schedule``): 1 = scalar loops, n > 1 = n-lane vector loops
    #: (n partial sums for reductions over stored entries); None = the path's default
    lanes: int | None = None
    #: fixed-stride walk (``lowering.schedule``): ``K > 0`` walks all ``K`` slots of every parent of the walked
    #: operand's ``loose_compressed`` level under dense levels (ELLPACK: ``lo = parent * K``, no position
    #: loads, a trip count known at compile time; padding slots hold 0 at coordinate 0); 0 = bounded walk
    stride: int = 0
    #: gathered walk (``lowering.schedule``): a reduction over the walked operand's innermost ``compressed``
    #: level takes ``lanes`` entries at a time, the dense operand gathered by their coordinates into a vector
    #: accumulator (``vector.gather``), scalar remainder; False = partial sums (or the global ``rules.GATHER``)
    gather: bool = False

    def __post_init__(self) -> None:
        if len(self.subscripts) != len(self.inputs) or not self.inputs:
            raise ValueError("one subscript string per input, at least one input")
        if self.init not in INIT_KINDS:
            raise ValueError(f"init must be one of {INIT_KINDS}, got {self.init!r}")
        for s, t in zip(self.subscripts + (self.output_subscripts,), self.inputs + (self.output,)):
            if len(s) != len(t.shape):
                raise ValueError(f"subscripts {s!r} do not match rank {len(t.shape)}")
        if self.init != "zero" and self.output.sparse:
            raise ValueError("an initial value (c) needs a dense output")
        if self.semiring is not None and (self.alpha or self.init == "beta_c"):
            raise ValueError("alpha/beta scaling applies to the plus-times semiring only")
        if self.lanes is not None and (type(self.lanes) is not int or self.lanes < 1):
            raise ValueError(f"lanes must be None or an int >= 1, got {self.lanes!r}")
        if type(self.stride) is not int or self.stride < 0:
            raise ValueError(f"stride must be an int >= 0, got {self.stride!r}")

    def key(self) -> tuple:
        """Structural cache key (format structure keys, never names)."""
        sr = None if self.semiring is None else (self.semiring.add, self.semiring.mul, repr(self.semiring.identity))
        return ("contraction", self.subscripts, tuple(t.key() for t in self.inputs), self.output_subscripts,
                self.output.key(), sr, self.alpha, self.init, self.prolog, self.epilog, self.name,
                self.row_range, self.lanes, self.stride, self.gather)

    @property
    def loop_letters(self) -> str:
        letters = list(self.output_subscripts)
        for s in self.subscripts:
            for ch in s:
                if ch not in letters:
                    letters.append(ch)
        return "".join(letters)

    @property
    def has_reduction(self) -> bool:
        return len(self.loop_letters) > len(self.output_subscripts)

    @property
    def is_spmv_or_spmm(self) -> bool:
        """Whether the subscripts are those of SpMV/SpMM (:data:`SPMV_SPMM`)."""
        return (self.subscripts, self.output_subscripts) in SPMV_SPMM
