"""Pass pipelines per target, split into stages with named hook points.

The CPU pipeline is MLIR's ``sparsifier`` (LLVM 22, as printed by
``mlir-opt --sparsifier --dump-pass-pipeline``) preceded by ``sparse-assembler{direct-out=true}``
and cut into stages::

    prepare   sparse-assembler, linalg-generalize-named-ops, linalg-fuse-elementwise-ops
      [before_sparsification]
    sparsify  sparsification-and-bufferization{...}
      [after_bufferization]     <- the i1 workaround (widen-i1) is registered here (lowering.builtins)
    lower     storage specifiers, loops, vector/math/complex lowering (to LLVM-ready IR)
      [before_llvm]
    to-llvm   convert-to-llvm, reconcile-unrealized-casts

User stages registered at a hook point with ``register_pass`` run there, in registration
order, and are part of every Pipeline's ``describe()`` (hence of compile cache keys).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir_bridge import Stage

HOOK_POINTS = ("before_sparsification", "after_bufferization", "before_llvm")
PARALLELIZATION_STRATEGIES = ("none", "dense-outer-loop", "any-storage-outer-loop",
                              "dense-any-loop", "any-storage-any-loop")

_registry: dict[str, dict[str, Stage]] = {hook: {} for hook in HOOK_POINTS}


def register_pass(hook_point: str, stage: str | Callable[[str], str] | Stage, *, name: str | None = None) -> Stage:
    """Run ``stage`` (a ``builtin.module(...)`` string, a text callback or a Stage) at ``hook_point``.

    ``name`` defaults to the Stage's name; it must be unique at that hook point.
    Returns the registered Stage.
    """
    if hook_point not in _registry:
        raise ValueError(f"unknown hook point {hook_point!r}; known: {HOOK_POINTS}")
    if name is None:
        if not isinstance(stage, Stage):
            raise ValueError("register_pass needs a name= unless given a Stage")
        name = stage.name
    st = Stage.of(name, stage)
    if st.name != name:
        st = Stage(name, st.passes, st.text_fn, st.module_fn, st.version)
    if name in _registry[hook_point]:
        raise ValueError(f"a pass named {name!r} is already registered at {hook_point!r}")
    _registry[hook_point][name] = st
    _bump()
    return st


def unregister_pass(hook_point: str, name: str) -> Stage:
    """Remove the stage ``name`` from ``hook_point`` and return it (KeyError if absent)."""
    if hook_point not in _registry:
        raise ValueError(f"unknown hook point {hook_point!r}; known: {HOOK_POINTS}")
    try:
        st = _registry[hook_point].pop(name)
        _bump()
        return st
    except KeyError:
        raise KeyError(f"no pass named {name!r} at {hook_point!r}; have {list(_registry[hook_point])}") from None


_generation = 0


def _bump() -> None:
    global _generation
    _generation += 1


def generation() -> int:
    """Changes whenever a pass is registered or unregistered (cheap cache-key part)."""
    return _generation


def registered_passes(hook_point: str) -> tuple[Stage, ...]:
    """The stages registered at ``hook_point``, in order."""
    return tuple(_registry[hook_point].values())


def _on_off(flag: bool) -> str:
    return "true" if flag else "false"


@dataclass(frozen=True)
class Pipeline:
    """The sparsifier for a target, with its options (hashable; ``describe()`` is the cache key).

    ``vl``: vector length (0 = no vectorization); ``enable_index_optimizations``: 32-bit
    vector indices; ``parallelization_strategy``: see PARALLELIZATION_STRATEGIES (loops
    stay sequential on CPU). A GPU variant adds its own target and options (triple, chip,
    format) and a stage builder (``register_stages``).
    """

    target: str = "cpu"
    vl: int = 0
    reassociate_fp_reductions: bool = False
    enable_index_optimizations: bool = False
    enable_x86vector: bool = False
    parallelization_strategy: str = "none"

    def __post_init__(self) -> None:
        if self.target not in _BUILDERS:
            raise ValueError(f"no pipeline for target {self.target!r}; known: {sorted(_BUILDERS)}")
        if not isinstance(self.vl, int) or self.vl < 0:
            raise ValueError(f"vl must be an int >= 0, got {self.vl!r}")
        if self.parallelization_strategy not in PARALLELIZATION_STRATEGIES:
            raise ValueError(f"parallelization_strategy must be one of {PARALLELIZATION_STRATEGIES}")

    def stages(self) -> tuple[Stage, ...]:
        """Built-in stages with the currently registered hook stages inserted."""
        return _BUILDERS[self.target](self)

    def describe(self) -> str:
        """Stable text identifying every pass and option (used in compile cache keys)."""
        return f"Pipeline[{self.target}]:" + "|".join(s.describe() for s in self.stages())

    def pass_pipeline(self) -> str:
        """The built-in passes only, as one string (for mlir-opt; hooks not included)."""
        inner = [s.passes[len("builtin.module("):-1] for s in self.stages() if s.passes is not None
                 and s.name in ("prepare", "sparsify", "lower", "to-llvm")]
        return "builtin.module(" + ",".join(inner) + ")"


def _cpu_stages(p: Pipeline) -> tuple[Stage, ...]:
    idx32 = _on_off(p.enable_index_optimizations)
    sparsify = (f"sparsification-and-bufferization{{enable-gpu-libgen=false enable-simd-index32={idx32} "
                f"enable-vla-vectorization=false parallelization-strategy={p.parallelization_strategy} "
                f"sparse-emit-strategy=functional vl={p.vl}}}")
    vec2llvm = (f"convert-vector-to-llvm{{enable-x86vector={_on_off(p.enable_x86vector)} "
                f"force-32bit-vector-indices={idx32} "
                f"reassociate-fp-reductions={_on_off(p.reassociate_fp_reductions)}}}")
    lower = ",".join([
        "sparse-storage-specifier-to-llvm", "func.func(canonicalize)",
        "func.func(convert-linalg-to-loops)", "func.func(convert-vector-to-scf)",
        "func.func(expand-realloc)", "func.func(convert-scf-to-cf)", "expand-strided-metadata",
        "lower-affine", vec2llvm, "func.func(convert-complex-to-standard)",
        "func.func(arith-expand)", "func.func(convert-math-to-llvm)", "convert-math-to-libm",
        "convert-complex-to-libm", vec2llvm])
    return (
        Stage("prepare", passes="builtin.module(sparse-assembler{direct-out=true},"
                                "func.func(linalg-generalize-named-ops),func.func(linalg-fuse-elementwise-ops))"),
        *registered_passes("before_sparsification"),
        Stage("sparsify", passes=f"builtin.module({sparsify})"),
        *registered_passes("after_bufferization"),
        Stage("lower", passes=f"builtin.module({lower})"),
        *registered_passes("before_llvm"),
        Stage("to-llvm", passes="builtin.module(convert-to-llvm,reconcile-unrealized-casts)"),
    )


_BUILDERS: dict[str, Callable[[Pipeline], tuple[Stage, ...]]] = {"cpu": _cpu_stages}


def register_stages(target: str, builder: Callable[[Pipeline], tuple[Stage, ...]]) -> None:
    """Make ``builder(pipeline) -> stages`` the stages of ``Pipeline(target=target)`` (the GPU's:
    :mod:`lowering.builtins`)."""
    _BUILDERS[target] = builder


def _widen_i1(module) -> None:  # noqa: ANN001 - an mlir.ir.Module, imported lazily
    from mlir_bridge.transforms import widen_i1_allocs

    widen_i1_allocs(module)


#: The i1 workaround (MemRefToLLVM asserts on memref.store of i1; SpGEMM's workspace has one), registered
#: at ``after_bufferization`` by :mod:`lowering.builtins`.
WIDEN_I1 = Stage("widen-i1", module_fn=_widen_i1)
