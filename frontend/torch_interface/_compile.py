"""``frontend.compile(module, *example_inputs)``: a whole torch model as one compiled MLIR module.

The model is exported with ``torch.export`` (every parameter, buffer and TorchUST weight lifted to an
input, dense stand-ins for sparse ones), sparse inputs get their torch layout back on the graph's
placeholders (a sparse weight only used transposed, as ``nn.Linear`` does, is given as its transpose
over the same buffers: CSR^T is CSC), torch-mlir imports and lowers the graph to linalg
(:mod:`lowering.torch_import`), and ``mlir_bridge`` compiles the text with the sparsifier pipeline
(cached by text like every kernel).  The whole graph is one module, so MLIR fuses the element-wise work
around the sparse products.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
from torch.export.graph_signature import InputKind
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from lowering.sparsifier.path import sparsifier_pipeline
from lowering.torch_import import decompositions, model_stages, program_to_linalg
from mlir_bridge import compile_module

from ._subclass import TorchUST

_SPARSE = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
_TRANSPOSES = ("aten.permute.default", "aten.t.default", "aten.transpose.int")


def _sparse_torch(x: Any, what: str) -> torch.Tensor | None:
    """The torch sparse tensor for a sparse input (TorchUST or torch sparse), None for dense ones."""
    if isinstance(x, TorchUST):
        t = x.to_torch()
        if t.layout not in _SPARSE:
            raise ValueError(f"{what}: a TorchUST in format {x.format_name} has no MLIR encoding torch-mlir "
                             "knows (COO, CSR, CSC, BSR, BSC); run it eagerly or convert it")
        return t.detach()
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


def _mark_sparse(program: Any, sparse: dict[int, torch.Tensor]) -> tuple[dict[int, torch.Tensor], set[int]]:
    """Give placeholders their sparse layout; returns the tensor each one receives and which of them
    are given transposed."""
    graph = program.graph
    user = {spec.arg.name for spec in program.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT}
    placeholders = [n for n in graph.nodes if n.op == "placeholder" and n.name in user]
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


def sparse_arguments(t: torch.Tensor) -> list[torch.Tensor]:
    """The buffers MLIR's sparse assembler expects for a torch sparse tensor, in order."""
    if t.layout == torch.sparse_coo:
        idx = t._indices()
        return [torch.tensor([0, idx.shape[1]], dtype=idx.dtype), *(r.contiguous() for r in idx),
                t._values().contiguous().reshape(-1)]
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values().contiguous().reshape(-1)]
    values = t.values()
    if t.layout == torch.sparse_bsc:  # torch-mlir's BSC encoding stores each block column-major
        values = values.transpose(-2, -1)
    return [t.ccol_indices(), t.row_indices(), values.contiguous().reshape(-1)]


@dataclass
class _Slot:
    """How to produce the arguments of one placeholder: fixed state tensors, or user input ``index``."""

    fixed: list[torch.Tensor] | None
    index: int = -1
    sparse: bool = False
    transposed: bool = False


class CompiledModel:
    """A model compiled as one MLIR module; call it like the model (same shapes as the examples).

    State (weights, buffers) is captured at compile time: in-place updates of dense parameters and of
    sparse values (the same memory) are seen, replaced tensors are not (compile again)."""

    def __init__(self, function: Any, slots: list[_Slot], text: str, n_inputs: int,
                 single: bool) -> None:
        self.function = function
        self.mlir = text
        self._slots = slots
        self._n_inputs = n_inputs
        self._single = single

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != self._n_inputs:
            raise TypeError(f"compiled model takes {self._n_inputs} inputs, got {len(inputs)}")
        args: list[Any] = []
        for slot in self._slots:
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
                args.append(_dense_standin(x).contiguous())
        out = self.function(*args)
        outs = out if isinstance(out, tuple) else (out,)
        res = tuple(torch.from_numpy(o) if not isinstance(o, torch.Tensor) else o for o in outs)
        return res[0] if self._single else res


def compile(module: Callable, *example_inputs: Any, pipeline: Any = None) -> CompiledModel:  # noqa: A001
    """Compile ``module`` (an ``nn.Module``) for inputs shaped like ``example_inputs`` into one MLIR module.

    Sparse weights (TorchUST in a torch-encodable format) and sparse inputs (torch COO/CSR/CSC/BSR/BSC or
    TorchUST) become ``#sparse_tensor.encoding`` arguments.  Raises ``ValueError`` for formats without an
    MLIR encoding and :class:`lowering.torch_import.TorchImportError` when torch-mlir cannot lower the
    model.  ``pipeline``: a ``lowering.pipelines.Pipeline`` (default: the one generated contractions use,
    8-wide vectors with reassociated reductions)."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"compile needs an nn.Module, got {type(module).__name__}")
    state = _state(module)
    names = list(state)
    values = [state[n] for n in names] + list(example_inputs)
    sparse: dict[int, torch.Tensor] = {}
    for i, v in enumerate(values):
        what = names[i] if i < len(names) else f"input {i - len(names)}"
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{what}: inputs must be torch tensors, got {type(v).__name__}")
        sp = _sparse_torch(v, what)
        if sp is not None:
            sparse[i] = sp
    dense_args = tuple(_dense_standin(v) for v in values)
    lifted = _Lifted(module, names)
    with torch.no_grad():
        program = torch.export.export(lifted, dense_args, strict=False)
        program = program.run_decompositions(decompositions())
    given, flipped = _mark_sparse(program, sparse)
    text = program_to_linalg(program)
    compiled = compile_module(text, model_stages(pipeline if pipeline is not None else sparsifier_pipeline()))
    fn = compiled.function("main")
    slots: list[_Slot] = []
    for i, v in enumerate(values):
        if i >= len(names):
            slots.append(_Slot(None, i - len(names), i in sparse, i in flipped))
        elif i in given:
            slots.append(_Slot(sparse_arguments(given[i])))
        else:
            slots.append(_Slot([v.detach().contiguous()]))
    expected = sum(len(s.fixed) if s.fixed is not None else
                   len(sparse_arguments(given[len(names) + s.index])) if s.sparse else 1 for s in slots)
    if len(fn.signature.args) != expected:
        raise ValueError(f"compiled signature {fn.signature} does not match the model's {expected} arguments")
    single = len(fn.signature.results) == 1
    return CompiledModel(fn, slots, text, len(example_inputs), single)
