"""Function signatures recorded at compile time (so calling needs no ``mlir``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes  # a pinned dependency: bfloat16 buffers are ml_dtypes arrays (torch bfloat16 viewed so)
import numpy as np

#: MLIR element type -> numpy dtype. ``index`` is 64-bit on the supported targets.
DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "index": np.dtype(np.int64),
    "complex<f32>": np.dtype(np.complex64), "complex<f64>": np.dtype(np.complex128),
    "bf16": np.dtype(ml_dtypes.bfloat16),
}
#: Element types allowed for scalar (by value) arguments and results.
SCALAR_TYPES = ("f32", "f64", "i8", "i16", "i32", "i64", "index")


@dataclass(frozen=True)
class ValueSpec:
    """A function argument or result: a memref (``shape`` entries -1 = dynamic) or a scalar."""

    kind: str  # "memref" | "scalar"
    elem: str  # MLIR element type, a key of DTYPES
    shape: tuple[int, ...] = ()

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.elem]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        if self.kind == "scalar":
            return self.elem
        dims = "x".join("?" if d < 0 else str(d) for d in self.shape)
        return f"memref<{dims + 'x' if dims else ''}{self.elem}>"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "elem": self.elem, "shape": list(self.shape)}

    @staticmethod
    def from_json(d: dict[str, Any]) -> ValueSpec:
        spec = ValueSpec(str(d["kind"]), str(d["elem"]), tuple(int(x) for x in d["shape"]))
        spec.check()
        return spec

    def check(self) -> None:
        """Raise ValueError if the bridge cannot pass this value across the C interface."""
        ok = self.elem in DTYPES if self.kind == "memref" else (
            self.kind == "scalar" and self.elem in SCALAR_TYPES and not self.shape)
        if not ok:
            raise ValueError(f"unsupported argument/result type {self}")


@dataclass(frozen=True)
class Signature:
    """Arguments and results of one public function, after the pipeline's signature changes."""

    name: str
    args: tuple[ValueSpec, ...]
    results: tuple[ValueSpec, ...]

    def __str__(self) -> str:
        a = ", ".join(map(str, self.args))
        r = ", ".join(map(str, self.results))
        return f"{self.name}({a}) -> ({r})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": [a.to_json() for a in self.args],
                "results": [r.to_json() for r in self.results]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Signature:
        return Signature(str(d["name"]), tuple(ValueSpec.from_json(a) for a in d["args"]),
                         tuple(ValueSpec.from_json(r) for r in d["results"]))
