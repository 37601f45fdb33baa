"""The differential suite's operands and its dense NumPy reference (tests/test_differential.py).

An operand is a dense array ``d``, the pattern ``p`` of its stored entries and a Tensor holding them in a
format. The pattern follows the README's rule ("stored entries"): in a format that stores padding
(``frontend.format.stores_padding``) every stored zero is padding, so ``p == (d != 0)``; unpadded sparse
formats keep explicitly stored zeros (``p`` may hold zeros of ``d``); in a dense operand ``p`` is all true.
The reference computes every operation on ``d`` with ``p`` deciding which entries take part.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, reject, strategies as st

from frontend import NamedFormats as N, Tensor, TensorFormat
from frontend.format import stores_padding
from frontend.ops import maximum

#: Hypothesis settings per profile: "ci" (default; fixed seed, bounded), "long" (UST_MLIR_DIFF_PROFILE=long:
#: fresh seeds, many examples) or "triage" (the ci examples without shrinking: a quick list of failures).
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 16, "derandomize": True},
    "long": {"max_examples": 400, "derandomize": False},
    "triage": {"max_examples": 12, "derandomize": True, "phases": [Phase.explicit, Phase.reuse, Phase.generate]},
}
PROFILE = os.environ.get("UST_MLIR_DIFF_PROFILE", "ci")
#: UST_MLIR_DIFF_EXAMPLES=n overrides the profile's examples per test.
EXAMPLES = {"max_examples": int(os.environ["UST_MLIR_DIFF_EXAMPLES"])} if "UST_MLIR_DIFF_EXAMPLES" in os.environ else {}
SETTINGS: dict[str, Any] = dict(PROFILES[PROFILE], **EXAMPLES, deadline=None, database=None,
                                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                       HealthCheck.filter_too_much])

NAMED_2D: dict[str, TensorFormat] = {
    "CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "DCSR": N.DCSR, "DCSC": N.DCSC, "BSR2x2": N.BSR((2, 2)),
    "BSR2x3": N.BSR((2, 3)), "BSC2x2": N.BSC((2, 2)), "DIAI": N.DIAI, "DIAJ": N.DIAJ, "SkewDIAI": N.SkewDIAI,
    "SkewDIAJ": N.SkewDIAJ, "DELTA2": N.DELTA(2), "DELTA8": N.DELTA(8), "NM2:4": N.NM(2, 4),
}
#: Level types of generated 2-D DSL formats (outer, inner); invalid pairs are rejected by the parser.
OUTER = ["dense", "compressed", "compressed(nonunique)", "loose_compressed"]
INNER = ["compressed", "loose_compressed", "singleton", "dense", "compressed(nonunique)"]
#: Shapes kept few, since every new shape compiles new kernels: 1xN, Nx1, square, wide and tall.
SHAPES_2D = [(1, 5), (5, 1), (4, 6), (6, 6), (7, 3)]
DTYPES = [np.float32, np.float64, np.complex128]
DENSITIES = [0.0, 0.25, 0.6, 1.0]


@dataclass
class Operand:
    d: np.ndarray  # the values as a dense array
    p: np.ndarray  # bool: which elements are stored entries
    t: Any  # the Tensor (or a numpy array for dense operands)
    fmt: str  # the format's name (for failure messages)

    def __repr__(self) -> str:
        return f"Operand({self.fmt}, shape={self.d.shape}, dtype={self.d.dtype}, nnz={int(self.p.sum())})"


@st.composite
def generated_format(draw: Any) -> TensorFormat:
    """A 2-D DSL format: a dimension order and a pair of level types (permuted, loose, singleton mixes)."""
    x, y = draw(st.sampled_from([("i", "j"), ("j", "i")]))
    text = f"(i, j) -> ({x} : {draw(st.sampled_from(OUTER))}, {y} : {draw(st.sampled_from(INNER))})"
    try:
        return TensorFormat.parse(text)
    except ValueError:
        reject()
        raise


def format_2d() -> st.SearchStrategy[tuple[str, TensorFormat]]:
    named = st.sampled_from(sorted(NAMED_2D.items()))
    return st.one_of(named, generated_format().map(lambda f: (str(f), f)))


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _n_of_m(d: np.ndarray, n: int, m: int) -> np.ndarray:
    """``d`` with all but the ``n`` largest entries of every group of ``m`` columns zeroed."""
    out = d.copy()
    for g in range(0, d.shape[1], m):
        blk = np.abs(out[:, g:g + m])
        if blk.shape[1] > n:
            drop = np.argsort(-blk, axis=1, kind="stable")[:, n:]
            np.put_along_axis(out[:, g:g + m], drop, 0, axis=1)
    return out


@st.composite
def sparse_2d(draw: Any, shape: tuple[int, int], dtype: Any, fmt: tuple[str, TensorFormat] | None = None) -> Operand:
    """A stored 2-D operand in a named or generated format (all-dense generated ones included): random values
    at a drawn density, maybe an empty row and explicit zeros."""
    name, f = fmt if fmt is not None else draw(format_2d())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    density = draw(st.sampled_from(DENSITIES))
    stored = rng.random(shape) < density
    if draw(st.booleans()) and shape[0] > 1:
        stored[rng.integers(shape[0])] = False  # an empty row
    d = np.where(stored, values(rng, shape, dtype), 0).astype(dtype)
    if f == N.NM(2, 4):
        d = _n_of_m(d, 2, 4)
        stored &= d != 0
    try:
        return _build(draw, rng, d, stored, name, f)
    except ValueError as err:
        if not is_documented_refusal(err):
            raise
        reject()  # the format cannot hold this matrix (e.g. two entries under a singleton's unique parent)
        raise


def _build(draw: Any, rng: np.random.Generator, d: np.ndarray, stored: np.ndarray, name: str,
           f: TensorFormat) -> Operand:
    shape = d.shape
    explicit = draw(st.booleans()) and stored.any()
    if explicit:  # explicitly stored zeros (kept by unpadded formats, padding in padded ones)
        zero = stored & (rng.random(shape) < 0.3)
        d[zero] = 0
        rows, cols = np.nonzero(stored)
        csr = sp.csr_array((d[rows, cols], (rows, cols)), shape=shape)
        t = Tensor.from_package(csr).convert(f)
        p = stored.copy() if not stores_padding(f) else d != 0
    else:
        t = Tensor.from_dense(d, f)
        p = d != 0
    if f.is_dense:  # a dense operand (generated all-dense formats): every element is an entry
        p = np.ones(shape, dtype=bool)
    return Operand(d, p, t, name)


def dense_operand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, fortran: bool = False) -> Operand:
    d = values(rng, shape, dtype)
    t = np.asfortranarray(d) if fortran else d
    return Operand(d, np.ones(shape, dtype=bool), t, "dense-F" if fortran else "dense")


# ----- the reference -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SemiringRef:
    """A semiring as the library takes it (``arg``) and as NumPy ufuncs on arrays."""

    name: str
    arg: Any
    add: Callable[[np.ndarray, np.ndarray], np.ndarray]
    reduce: Callable[..., np.ndarray]
    mul: Callable[[np.ndarray, np.ndarray], np.ndarray]
    identity: float


def _or_and_mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x != 0) & (y != 0)).astype(np.result_type(x, y))


def _or(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ((x != 0) | (y != 0)).astype(np.result_type(x, y))


def _or_reduce(a: np.ndarray, axis: int) -> np.ndarray:
    return (a != 0).any(axis=axis).astype(a.dtype)


SEMIRINGS = [
    SemiringRef("plus-times", None, np.add, np.sum, np.multiply, 0.0),
    SemiringRef("min-plus", "min-plus", np.minimum, np.min, np.add, np.inf),
    SemiringRef("max-plus", "max-plus", np.maximum, np.max, np.add, -np.inf),
    SemiringRef("or-and", "or-and", _or, _or_reduce, _or_and_mul, 0.0),
    SemiringRef("max-times (traced)", (maximum, lambda x, y: x * y, float("-inf")), np.maximum, np.max,
                np.multiply, -np.inf),
]


def ref_matmul(a: Operand, b: Operand, sr: SemiringRef = SEMIRINGS[0],
               prolog: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(result, hit)`` of ``op(a) @ op(b)`` (2-D operands): ``result[i, j]`` folds ``mul(a[i, k], b[k, j])``
    over the ``k`` where both store an entry, starting at the identity; ``hit`` says where any did."""
    ad = a.d if prolog is None else np.where(a.p, prolog(a.d), 0)
    prod = sr.mul(ad[:, :, None], b.d[None, :, :])
    both = a.p[:, :, None] & b.p[None, :, :]
    ident = np.asarray(sr.identity).astype(prod.dtype) if np.isfinite(sr.identity) or prod.dtype.kind == "f" \
        else sr.identity
    out = sr.reduce(np.where(both, prod, ident), axis=1)
    return np.asarray(out), both.any(axis=1)


#: The elementwise operations with two operands (numpy's ufunc of the same name is the reference).
BINARY = ("add", "subtract", "multiply")


def ref_elementwise(op: str, a: Operand, b: Operand | None, axis: int | None) -> np.ndarray:
    """The dense result of ``frontend.<op>``: add/subtract/multiply on the values (a padding zero adds or
    multiplies like an absent one); sum/max/min along ``axis`` with implicit zeros taking part (scipy's
    semantics); softmax along ``axis`` over the stored entries ``a.p`` only (absent ones are minus infinity,
    an empty line stays empty, so padding never takes part)."""
    if op in BINARY:
        assert b is not None
        return np.asarray(getattr(np, op)(a.d, b.d))
    if op in ("sum", "max", "min"):
        return np.asarray(getattr(np, op)(a.d, axis=axis))
    assert op == "softmax" and axis is not None
    x = np.where(a.p, a.d, -np.inf)
    with np.errstate(invalid="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.where(a.p, np.exp(x - np.where(np.isfinite(m), m, 0)), 0)
        s = e.sum(axis=axis, keepdims=True)
        return np.where(a.p, e / np.where(s == 0, 1, s), 0).astype(a.d.dtype)


def tolerance(dtype: Any) -> dict[str, float]:
    return {"rtol": 2e-4, "atol": 2e-4} if np.dtype(dtype) in (np.float32, np.complex64) else {"rtol": 1e-9,
                                                                                                "atol": 1e-9}


def to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return x.to_dense()
    return np.asarray(x)


def transposed(x: Operand) -> Operand:
    """The operand as ``op(x)`` sees it with a transpose."""
    return Operand(x.d.T, x.p.T, x.t, x.fmt + "^T")


#: Documented refusals (README "Refused combinations"): (exception type, message fragment).
MEANINGLESS = [
    (TypeError, "not defined"),                 # min/max semirings on complex numbers: no order
    (ValueError, "more than n="),               # an n:m out_format for a result that is not n:m
    (ValueError, "stores one coordinate per parent"),  # a singleton under a unique level, several entries
]


def is_documented_refusal(err: BaseException) -> bool:
    return any(isinstance(err, kind) and frag in str(err) for kind, frag in MEANINGLESS)
