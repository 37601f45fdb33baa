"""The plan protocol :class:`frontend.ops.Matmul` delegates to, shared by the CPU backend
(:mod:`frontend.ops._cpu`) and the GPU backend (:mod:`frontend.ops.gpu._matmul`)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

#: Short names of the CPU lowering stages for ``print_mlir(stage=...)``.
STAGE_ALIASES = {"linalg": "input", "sparsified": "sparsify", "llvm": "to-llvm"}


def print_stages(stages: list[tuple[str, str]], stage: str | None, file: Any,
                 aliases: dict[str, str] = STAGE_ALIASES) -> None:
    """Print every stage, or the one ``stage`` names (a stage name or one of ``aliases``)."""
    want = aliases.get(stage, stage) if stage is not None else None
    names = [n for n, _ in stages]
    if want is not None and want not in names:
        raise ValueError(f"unknown stage {stage!r}; have {', '.join(aliases)} or one of {names}")
    for name, text in stages:
        if want is None or name == want:
            label = {v: k for k, v in aliases.items()}.get(name, name)
            print(f"// ----- {label} ({name}) -----", file=file)
            print(text, file=file)


@dataclass(frozen=True)
class MatmulInfo:
    """What a plan runs and why (``Matmul.info``): the lowering ``path``, the kernel's inner-loop vector
    ``lanes`` (1 = scalar loops, None = the path's default), the ``threads`` (row chunks) a call runs,
    how rows are ``split`` (``"nnz"``: chunks balanced by stored entries, or ``"rows"``) and the schedule's
    ``reason`` line."""

    path: str
    lanes: int | None
    threads: int
    split: str
    reason: str


class MatmulPlan(ABC):
    """One operation on one backend: ``plan()`` (compile or fetch), ``execute()`` many times,
    ``execute_once()`` for a one-shot call; ``path``, ``mlir``, ``stages()`` and ``print_mlir()`` inspect it."""

    stage_aliases: ClassVar[dict[str, str]] = STAGE_ALIASES
    #: whether execute() checks that the operands' index buffers are unchanged (``Matmul(checked=...)``)
    checked: bool = True

    @abstractmethod
    def plan(self) -> MatmulPlan:
        """Build and compile the kernel (or fetch it from a cache) and prepare the call."""

    @abstractmethod
    def execute(self) -> Any:
        """Run on the current operands (plans first if needed)."""

    @abstractmethod
    def execute_once(self) -> Any:
        """Run once, as ``frontend.matmul`` / ``einsum`` do (no prepared call is kept on this object)."""

    @abstractmethod
    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> MatmulPlan:
        """New operands with the same formats, shapes and dtypes (the kernel is kept)."""

    @abstractmethod
    def release(self) -> None:
        """Drop the operands and the kernel references."""

    @property
    @abstractmethod
    def path(self) -> str:
        """The lowering path that runs this operation."""

    @property
    def info(self) -> MatmulInfo:
        """What runs and why (backends without a CPU schedule: the path on one thread)."""
        return MatmulInfo(self.path, None, 1, "rows", "no CPU schedule on this backend")

    @property
    @abstractmethod
    def mlir(self) -> str:
        """The module text before lowering."""

    @abstractmethod
    def stages(self) -> list[tuple[str, str]]:
        """``[(stage, module text), ...]``: the input module, then after each pipeline stage."""

    def print_mlir(self, stage: str | None = None, file: Any = None) -> None:
        """Print the module at each stage (or the one ``stage`` names: a stage name or an alias)."""
        print_stages(self.stages(), stage, file, self.stage_aliases)

    def __enter__(self) -> MatmulPlan:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
