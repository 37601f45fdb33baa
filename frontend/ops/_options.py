"""The keyword options of ``matmul`` / ``Matmul`` / ``einsum`` as one object, and the GPU-only ones."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from frontend.format import TensorFormat, as_format


def pipeline_key(pipeline: Any) -> Any:
    """A hashable description of a custom pipeline (a Pipeline, pass-pipeline string or Stage list)."""
    if pipeline is None or isinstance(pipeline, str):
        return pipeline
    if hasattr(pipeline, "describe"):
        return pipeline.describe()
    return tuple(s.describe() for s in pipeline)


@dataclass(frozen=True, init=False)
class MatmulOptions:
    """``alpha * op(a) @ op(b) + beta * c`` and how it runs; the defaults are those of :func:`frontend.matmul`
    (``einsum`` uses ``semiring``, ``out_format``, ``prolog``, ``epilog``, ``target``, ``pipeline``, ``device``)."""

    alpha: Any
    beta: Any
    transpose_a: bool
    transpose_b: bool
    semiring: Any
    out_format: TensorFormat | None
    prolog: Callable | None
    epilog: Callable | None
    target: str
    pipeline: Any
    device: Any
    threads: int | str | None

    def __init__(self, alpha: Any = 1, beta: Any = None, transpose_a: bool = False, transpose_b: bool = False,
                 semiring: Any = None, out_format: TensorFormat | str | None = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, target: str = "cpu", pipeline: Any = None, device: Any = None,
                 threads: int | str | None = None) -> None:
        # one dict update instead of a frozen __setattr__ per field: this runs on every matmul call
        if out_format is not None and not isinstance(out_format, TensorFormat):
            out_format = as_format(out_format, "out_format")  # a name or DSL text
        self.__dict__.update(alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                             semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, target=target,
                             pipeline=pipeline, device=device, threads=threads)

    def key(self) -> tuple:
        """The structural part (cache keys): which scalings apply (not alpha's and beta's values), the
        transposes, functions, formats, target, pipeline and threads."""
        beta = self.beta
        return (self.alpha == 1, beta is None or beta == 1, beta == 0, self.transpose_a, self.transpose_b,
                self.semiring, self.out_format, self.prolog, self.epilog, self.target, pipeline_key(self.pipeline),
                self.threads)


@dataclass(frozen=True)
class GpuOptions:
    """GPU-only choices: the lowering ``path`` (``"auto"``, ``"cusparse"``, ``"sparsifier-gpu"``,
    ``"emitter-gpu"``), the ``chip`` to compile for (None: this machine's) and the CUDA ``stream`` runs use."""

    path: str = "auto"
    chip: str | None = None
    stream: Any = None

    def is_default(self) -> bool:
        return self.path == "auto" and self.chip is None and self.stream is None


DEFAULT_GPU_OPTIONS = GpuOptions()
