"""``frontend.compile(module, *example_inputs)``: a whole torch model as one compiled MLIR module.

The model is exported with ``torch.export`` (every parameter, buffer and TorchUST weight lifted to an
input; sparse model inputs exported as themselves, so every node carries eager's layout; dense stand-ins
for sparse weights), sparse weights get their torch layout back on the graph's placeholders (a sparse
weight only used transposed, as ``nn.Linear`` does, runs as ``(W @ x^T)^T``), torch-mlir imports and
lowers the graph to linalg (:mod:`lowering.torch_import`), weights in formats torch has no layout for
(DELTA, DIA, N:M, user formats) have their products replaced by calls to our emitter's kernels in the
same module (:mod:`lowering.model_kernels`), and ``mlir_bridge`` compiles the text with the sparsifier
pipeline (cached by text like every kernel).  Sparse results come back as torch sparse tensors of eager's
layout (:mod:`._compile_io`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
from torch.export.graph_signature import InputKind
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from frontend.format import index_width, mlir_type
from frontend.ops._stats import stored_rows
from lowering.model_kernels import KernelWeight, call_weight_kernels, uses_openmp
from lowering.solve import openmp_available, openmp_target
from lowering.sparsifier.path import sparsifier_pipeline
from lowering.torch_import import decompositions, model_stages, program_to_linalg
from mlir_bridge import CPU, compile_module

from ._compile_io import SPARSE as _SPARSE, OutputSpec, output_specs, rebuild_outputs, sparse_arguments
from ._storage import as_torch
from ._subclass import TorchUST

_TRANSPOSES = ("aten.permute.default", "aten.t.default", "aten.transpose.int")


def torch_layout(x: TorchUST) -> torch.Tensor | None:
    """The torch sparse tensor over a TorchUST's buffers when torch-mlir can encode its format, else None
    (its products then run on our kernels)."""
    try:
        t = x.ust.to_package("torch")
    except TypeError:
        return None
    if not isinstance(t, torch.Tensor) or t.layout not in _SPARSE:
        return None
    if t.layout in (torch.sparse_bsr, torch.sparse_bsc):
        bh, bw = t.values().shape[-2:]
        if bh != bw:  # torch-mlir encodes only square blocks
            return None
    return t.detach()


def _sparse_torch(x: Any, what: str) -> torch.Tensor | None:
    """The torch sparse tensor for a sparse input (TorchUST or torch sparse), None for dense ones."""
    if isinstance(x, TorchUST):
        t = torch_layout(x)
        if t is None:
            raise ValueError(f"{what}: a TorchUST in format {x.format_name} has no MLIR encoding torch-mlir "
                             "knows (COO, CSR, CSC, square-block BSR/BSC); only weights (model state) in "
                             "other formats run on our kernels: make it a weight, or convert it")
        return t
    if isinstance(x, torch.Tensor) and x.layout in _SPARSE:
        return x.coalesce() if x.layout == torch.sparse_coo else x
    return None


def _check_encodable(t: torch.Tensor, what: str) -> None:
    if t.layout in (torch.sparse_bsr, torch.sparse_bsc):
        bh, bw = t.values().shape[-2:]
        if bh != bw:
            raise ValueError(f"{what}: torch-mlir encodes only square blocks ({bh}x{bw} given); use a square "
                             "block or CSR")


def _dense_standin(x: torch.Tensor) -> torch.Tensor:
    if isinstance(x, TorchUST):
        return x.dense()
    return x.to_dense() if x.layout in _SPARSE else x.detach()


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters, buffers and TorchUST attributes by dotted name."""
    state: dict[str, torch.Tensor] = {}
    for mname, mod in module.named_modules():
        prefix = f"{mname}." if mname else ""
        for k, v in vars(mod).items():
            if isinstance(v, TorchUST):
                state[prefix + k] = v
        for k, v in list(mod._parameters.items()) + list(mod._buffers.items()):
            if v is not None:
                state[prefix + k] = v
    return state


class _Lifted(nn.Module):
    """``forward(*state, *inputs)`` = ``module(*inputs)`` with the state given as inputs."""

    inner: nn.Module

    def __init__(self, module: nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        object.__setattr__(self, "inner", module)  # not a submodule: its state must not be lifted
        self.names = list(names)

    def forward(self, *flat: torch.Tensor) -> Any:
        k = len(self.names)
        return torch.func.functional_call(self.inner, dict(zip(self.names, flat[:k])), tuple(flat[k:]),
                                          strict=False, tie_weights=False)


def _transposed_sparse(t: torch.Tensor) -> torch.Tensor:
    out = t.t()
    return out.coalesce() if out.layout == torch.sparse_coo else out


def _placeholders(program: Any) -> list[Any]:
    user = {spec.arg.name for spec in program.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT}
    return [n for n in program.graph.nodes if n.op == "placeholder" and n.name in user]


def _route_kernel_weights(program: Any, routed: Sequence[int]) -> None:
    """Weights our kernels compute: ``x @ W^T`` becomes ``(W @ x^T)^T`` so ``W`` is a product's left
    operand (the only use :func:`lowering.model_kernels.call_weight_kernels` accepts)."""
    graph = program.graph
    placeholders = _placeholders(program)
    for i in routed:
        node = placeholders[i]
        users = list(node.users)
        if users and all(str(u.target) in _TRANSPOSES and _swaps_2d(u) and _right_operand_of_mm(u)
                         for u in users):
            for u in users:
                _swap_mm_operands(graph, u, node)
    graph.lint()


def _mark_sparse(program: Any, sparse: dict[int, torch.Tensor]) -> tuple[dict[int, torch.Tensor], set[int]]:
    """Give placeholders their sparse layout; returns the tensor each one receives and which of them
    are given transposed."""
    graph = program.graph
    placeholders = _placeholders(program)
    given: dict[int, torch.Tensor] = {}
    flipped: set[int] = set()
    for i, t in sparse.items():
        node = placeholders[i]
        users = list(node.users)
        transposes = bool(users) and t.dim() == 2 and all(
            str(u.target) in _TRANSPOSES and _swaps_2d(u) for u in users)
        if transposes and all(_right_operand_of_mm(u) for u in users):
            for u in users:  # x @ W^T  ->  (W @ x^T)^T: W stays in its own layout
                _swap_mm_operands(graph, u, node)
        elif transposes:
            t = _transposed_sparse(t)
            flipped.add(i)
            for u in users:
                u.replace_all_uses_with(node)
                graph.erase_node(u)
        _check_encodable(t, node.name)
        node.meta["val"] = t
        node.meta["tensor_meta"] = _extract_tensor_metadata(torch.empty(t.shape, dtype=t.dtype))
        given[i] = t
    graph.lint()
    return given, flipped


def _right_operand_of_mm(transpose: Any) -> bool:
    """Every user of ``transpose`` is ``aten.mm(x, transpose)``."""
    return all(str(u.target) == "aten.mm.default" and u.args[1] is transpose and u.args[0] is not transpose
               for u in transpose.users)


def _with_meta(node: Any, shape: Sequence[int], like: Any) -> Any:
    val = torch.empty(tuple(shape), dtype=like.meta["val"].dtype)
    node.meta["val"] = val
    node.meta["tensor_meta"] = _extract_tensor_metadata(val)
    return node


def _swap_mm_operands(graph: Any, transpose: Any, weight: Any) -> None:
    """Rewrite each ``mm(x, W^T)`` into ``permute(mm(W, permute(x)))`` and drop the transpose."""
    aten = torch.ops.aten
    for mm in list(transpose.users):
        x = mm.args[0]
        m, k = x.meta["val"].shape
        n = weight.meta["val"].shape[0]
        with graph.inserting_before(mm):
            xt = _with_meta(graph.call_function(aten.permute.default, (x, [1, 0])), (k, m), mm)
            prod = _with_meta(graph.call_function(aten.mm.default, (weight, xt)), (n, m), mm)
            out = _with_meta(graph.call_function(aten.permute.default, (prod, [1, 0])), (m, n), mm)
        mm.replace_all_uses_with(out)
        graph.erase_node(mm)
    graph.erase_node(transpose)


def _swaps_2d(node: Any) -> bool:
    target = str(node.target)
    if target == "aten.permute.default":
        return list(node.args[1]) == [1, 0]
    if target == "aten.transpose.int":
        return sorted(d % 2 for d in node.args[1:3]) == [0, 1]
    return True


_SIGNED = {torch.uint8: torch.int8, torch.uint16: torch.int16, torch.uint32: torch.int32,
           torch.uint64: torch.int64}


def _weight_buffers(w: TorchUST, buffers: Sequence[tuple[str, int]]) -> list[torch.Tensor]:
    """A kernel weight's buffers in the order ``call_weight_kernels`` put them in ``@main`` (the values are
    the parameter's own memory: in-place updates are seen)."""
    ust = w.ust
    out: list[torch.Tensor] = []
    for kind, level in buffers:
        if kind == "val":
            out.append(w.values().detach().reshape(-1))
        else:
            b = as_torch(ust.pos(level) if kind == "pos" else ust.crd(level)).reshape(-1)
            out.append(b.view(_SIGNED.get(b.dtype, b.dtype)))  # MLIR integers are signless: same bits
    return out


def _kernel_weight(w: TorchUST, arg: int, what: str) -> KernelWeight:
    if w.dim() != 2:
        raise ValueError(f"{what}: a {w.dim()}-D weight in format {w.format_name} has no torch layout and our "
                         "model kernels take 2-D weights only")
    width = 64 if w.ust.index_type is None else index_width(w.ust.index_type)
    crd_width = width if w.ust.index_type is None else index_width(w.ust.crd_type)
    rows = stored_rows(w.ust)
    threads = torch.get_num_threads() if openmp_available() else 1
    return KernelWeight(arg, w.tensor_format, (int(w.shape[0]), int(w.shape[1])), mlir_type(w.dtype),
                        width, crd_width, what, rows.stats, threads, rows.bounds)


@dataclass
class _Slot:
    """How to produce the arguments of one placeholder: fixed state tensors, or user input ``index``."""

    fixed: list[torch.Tensor] | None
    index: int = -1
    sparse: bool = False
    transposed: bool = False


@dataclass
class _Variant:
    """The model compiled for one set of input shapes."""

    function: Any
    slots: list[_Slot]
    text: str
    outputs: list[OutputSpec]
    out_spec: Any


def _shape_key(inputs: Sequence[Any]) -> tuple:
    return tuple((tuple(x.shape), x.dtype, x.layout if not isinstance(x, TorchUST) else x.format_name)
                 if isinstance(x, torch.Tensor) else type(x) for x in inputs)


class CompiledModel:
    """A model compiled as one MLIR module; call it like the model.

    Inputs of other shapes than the examples' compile the model again, once per shape (static shapes:
    MLIR sees every extent); ``variants`` counts them.  State (weights, buffers) is captured at compile
    time: in-place updates of dense parameters and of sparse values (the same memory) are seen, replaced
    tensors are not (compile again).  Outputs have eager's layout: torch sparse tensors where eager gives
    sparse ones, over the module's result buffers.  The compiled model is forward-only (inference): its
    outputs do not require grad, so ``backward()`` through them raises torch's error; train the eager
    model (TorchUST weights have gradients there) and compile it for inference."""

    def __init__(self, module: nn.Module, pipeline: Any, example_inputs: Sequence[Any]) -> None:
        self._module = module
        self._pipeline = pipeline
        self._n_inputs = len(example_inputs)
        self._dtypes = [getattr(x, "dtype", None) for x in example_inputs]
        first = _build(module, example_inputs, pipeline)
        self._variants: dict[tuple, _Variant] = {_shape_key(example_inputs): first}
        self._first = first

    @property
    def function(self) -> Any:
        """The compiled ``main`` of the examples' shapes (a ``mlir_bridge`` function)."""
        return self._first.function

    @property
    def variants(self) -> int:
        """How many input shapes the model has been compiled for."""
        return len(self._variants)

    def mlir(self, inputs: Sequence[Any] | None = None) -> str:
        """The module's MLIR text as compiled (linalg with our kernels; for the examples' shapes, or for
        ``inputs``' shapes once called with them)."""
        if inputs is None:
            return self._first.text
        v = self._variants.get(_shape_key(inputs))
        if v is None:
            raise ValueError("the model was not compiled for these input shapes (call it with them first)")
        return v.text

    def print_mlir(self) -> None:
        """Print :meth:`mlir`."""
        print(self.mlir())

    def _build_for(self, inputs: Sequence[Any]) -> _Variant:
        """The variant for new input shapes; a floating dtype other than the examples' is refused when the model
        has floating parameters (eager torch refuses mixed dtypes too), naming the dtype it was compiled for."""
        if any(p.is_floating_point() for p in self._module.parameters()):
            for k, (x, dtype) in enumerate(zip(inputs, self._dtypes)):
                got = getattr(x, "dtype", None)
                if dtype is not None and getattr(dtype, "is_floating_point", False) and got != dtype:
                    raise TypeError(f"compiled model: input {k} is {got}, the model was compiled for {dtype} "
                                    f"(from its example inputs); call it with x.to({dtype}), or compile the "
                                    f"model again for {got} (e.g. frontend.compile(model.to({got}), ...))")
        return _build(self._module, inputs, self._pipeline)

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != self._n_inputs:
            raise TypeError(f"compiled model takes {self._n_inputs} inputs, got {len(inputs)}")
        key = _shape_key(inputs)
        variant = self._variants.get(key)
        if variant is None:
            variant = self._variants[key] = self._build_for(inputs)
        args: list[Any] = []
        for slot in variant.slots:
            if slot.fixed is not None:
                args += slot.fixed
                continue
            x = inputs[slot.index]
            if slot.sparse:
                sp = _sparse_torch(x, f"input {slot.index}")
                if sp is None:
                    raise TypeError(f"input {slot.index} was sparse in the example; got a dense tensor")
                args += sparse_arguments(_transposed_sparse(sp) if slot.transposed else sp)
            else:
                if isinstance(x, torch.Tensor) and x.layout in _SPARSE:
                    raise TypeError(f"input {slot.index} was dense in the example; got a {x.layout} tensor")
                args.append(_dense_standin(x).contiguous())
        out = variant.function(*args)
        results = list(out) if isinstance(out, tuple) else [out]
        outs = rebuild_outputs(variant.outputs, results)
        if variant.out_spec is not None:
            return torch.utils._pytree.tree_unflatten(outs, variant.out_spec)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _export(lifted: nn.Module, args: Sequence[torch.Tensor], decompose: bool = True) -> Any:
    with torch.no_grad():
        program = torch.export.export(lifted, tuple(args), strict=False)
        return program.run_decompositions(decompositions()) if decompose else program


def _import(lifted: nn.Module, dense_args: list[torch.Tensor], sparse: dict[int, torch.Tensor],
            kernels: Sequence[int], n_state: int) -> tuple[Any, str, dict[int, torch.Tensor], set[int]]:
    """Export and import the model: first with the sparse model inputs as themselves (torch then gives
    every node eager's layout: sparse results, ``to_sparse``), and if torch or torch-mlir cannot, with dense
    stand-ins re-marked sparse on the placeholders.  Returns the program, its linalg text, the sparse
    tensor each marked placeholder receives and which of them are given transposed."""
    native = [sparse.get(i, a) if i >= n_state else a for i, a in enumerate(dense_args)]
    # torch's decompositions fail on some sparse ops (x * 2.0 on CSR): then natively without them
    attempts = [(True, True), (True, False), (False, True)] if any(i >= n_state for i in sparse) else [(False, True)]
    for natively, decompose in attempts:
        try:
            program = _export(lifted, native if natively else dense_args, decompose)
            marks = {i: t for i, t in sparse.items() if i < n_state or not natively}
            given, flipped = _mark_sparse(program, marks)
            _route_kernel_weights(program, kernels)
            return program, program_to_linalg(program), given, flipped
        except Exception:  # noqa: BLE001 - the native attempt may fail anywhere: retry with stand-ins
            if not natively:
                raise
    raise AssertionError("unreachable")


def _build(module: nn.Module, example_inputs: Sequence[Any], pipeline: Any) -> _Variant:
    state = _state(module)
    names = list(state)
    values = [state[n] for n in names] + list(example_inputs)
    sparse: dict[int, torch.Tensor] = {}
    kernels: dict[int, KernelWeight] = {}
    for i, v in enumerate(values):
        what = names[i] if i < len(names) else f"input {i - len(names)}"
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{what}: inputs must be torch tensors, got {type(v).__name__}")
        if i < len(names) and isinstance(v, TorchUST) and torch_layout(v) is None:
            kernels[i] = _kernel_weight(v, i, what)
            continue
        sp = _sparse_torch(v, what)
        if sp is not None:
            sparse[i] = sp
    dense_args = [_dense_standin(v) for v in values]
    program, text, given, flipped = _import(_Lifted(module, names), dense_args, sparse, list(kernels), len(names))
    outputs = output_specs(program)
    out_spec = getattr(getattr(program, "call_spec", None), "out_spec", None)
    text, kernel_buffers = call_weight_kernels(text, list(kernels.values()))
    compiled = compile_module(text, model_stages(pipeline if pipeline is not None else sparsifier_pipeline()),
                              target=openmp_target() if uses_openmp(text) else CPU)
    fn = compiled.function("main")
    slots: list[_Slot] = []
    expected = 0
    for i, v in enumerate(values):
        if i >= len(names):
            slots.append(_Slot(None, i - len(names), i in sparse, i in flipped))
            expected += len(sparse_arguments(sparse[i])) if i in sparse else 1
            continue
        if i in kernels:
            slots.append(_Slot(_weight_buffers(v, kernel_buffers[i]) if i in kernel_buffers
                               else [_dense_standin(v)]))  # unused by the model
        elif i in given:
            slots.append(_Slot(sparse_arguments(given[i])))
        else:
            slots.append(_Slot([v.detach().contiguous()]))
        expected += len(slots[-1].fixed or ())
    if len(fn.signature.args) != expected:
        raise ValueError(f"compiled signature {fn.signature} does not match the model's {expected} arguments")
    return _Variant(fn, slots, text, outputs, out_spec)


def compile(module: Callable, *example_inputs: Any, pipeline: Any = None) -> CompiledModel:  # noqa: A001
    """Compile ``module`` (an ``nn.Module``) for inputs shaped like ``example_inputs`` into one MLIR module.

    Sparse weights become ``#sparse_tensor.encoding`` arguments (TorchUST in a torch layout) or calls of our
    emitter's kernels for their format (DELTA, DIA, N:M, user formats: their products), sparse inputs
    (torch COO/CSR/CSC/BSR/BSC or TorchUST in those layouts) encoded arguments.  Sparse results come back
    as torch sparse tensors of eager's layout.  Raises ``ValueError`` for sparse inputs without an MLIR
    encoding and :class:`lowering.torch_import.TorchImportError` when torch-mlir cannot lower the model.
    ``pipeline``: a ``lowering.pipelines.Pipeline`` (default: the one generated contractions use, 8-wide
    vectors with reassociated reductions)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"compile needs an nn.Module, got {type(module).__name__}")
    return CompiledModel(module, pipeline, example_inputs)
