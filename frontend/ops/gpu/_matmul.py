"""``matmul`` / ``Matmul`` / ``einsum`` on NVIDIA GPUs.

Taken when an operand lives on a CUDA device (torch CUDA tensor, CuPy array, a Tensor over them) or
``device="cuda"`` is asked for (CPU operands are then copied to the device and the result back).
Three paths (``lowering.gpu.dispatch``): ``"cusparse"`` (vendor library through torch / CuPy) for
CSR/CSC/COO/BSR SpMV and SpMM, ``"sparsifier-gpu"`` (MLIR's sparsifier lowered to NVVM, kernels reading
the caller's device buffers zero-copy), ``"emitter-gpu"`` (registered GPU emitter, for range/delta
formats). Results are dense device arrays of the caller's package, or ``c`` updated in place.
Inspecting a plan (``.path``, ``.mlir``, ``.ptx``, ``print_mlir``) needs no GPU; running it does and
raises ``RuntimeError("no CUDA device ...")`` otherwise.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import dtype_name, mlir_type
from frontend.storage import _buffers as buffers, _layout as storage
from frontend.storage._convert import package_index_type, with_index_type
from frontend.storage._validate import recheck
from frontend.tensor._tensor import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import gpu_contraction, gpu_path, lower_gpu
from lowering.gpu.library import library_layout
from lowering.gpu.pipeline import DEFAULT_CHIPS

from .._kernel_cache import ArgumentLayout, row_major, spec_of
from .._operands import as_tensor, permuted, result_shape, validate_sparse
from .._options import DEFAULT_GPU_OPTIONS, GpuOptions, MatmulOptions
from .._plan import MatmulPlan
from .._semiring import get_semiring, trace_unary
from .._subscripts import parse_subscripts
from ._library import library_matmul, stream_context

__all__ = ["GpuMatmul", "gpu_matmul_plan", "to_device"]


# ----- operands ---------------------------------------------------------------------------------------------
def _to_device(x: Any, device: int, package: str) -> Any:
    """A CPU buffer copied to ``cuda:device`` as a ``package`` array (torch or cupy)."""
    return storage.to_device(np.ascontiguousarray(storage.to_host(x)), package, f"cuda:{device}")


def to_device(t: Tensor, device: int = 0, package: str = "torch") -> Tensor:
    """``t`` with every buffer copied to ``cuda:device`` as torch tensors or CuPy arrays (same format);
    used for CPU operands with ``device="cuda"``."""
    move = (lambda b: None if b is None else _to_device(b, device, package))  # noqa: E731
    return Tensor(t.tensor_format, t.shape, [move(p) for p in t._pos], [move(c) for c in t._crd],
                  move(t.val), index_type=t.index_type, package=package, device=f"cuda:{device}")


def _wide_indices(t: Tensor) -> Tensor:
    """``t`` with int32 (or wider) index buffers of one type: the GPU paths (cuSPARSE among them) take those;
    int8/int16 buffers and narrower coordinates than positions are widened (copies of the index buffers)."""
    wide = package_index_type(t) if t.is_sparse else None
    return t if wide is None else with_index_type(t, wide)


def _package_of(t: Tensor) -> str:
    return "cupy" if buffers.package_of(t.val) == "cupy" else "torch"


def _default_package() -> str:
    try:
        import torch  # noqa: F401

        return "torch"
    except ImportError:
        return "cupy"


#: Short names of GPU lowering stages for ``print_mlir(stage=...)``.
_GPU_STAGE_ALIASES = {"linalg": "input", "sparsified": "sparsify", "gpu": "gpu-kernels", "llvm": "to-llvm"}


# ----- the plan ---------------------------------------------------------------------------------------------
class GpuMatmul(MatmulPlan):
    """A GPU contraction: ``plan()`` (compile or fetch; needs no GPU), ``execute(stream=None)``.

    ``path`` says which path runs it; ``mlir`` is the generated-code module (linalg + encodings),
    ``ptx`` its PTX for ``chip``; ``stages()`` / ``print_mlir(stage)`` show every lowering stage
    (``"linalg"``, ``"sparsified"``, ``"gpu"`` = GPU module after kernel outlining, ``"llvm"``, ``"ptx"``).
    """

    stage_aliases = _GPU_STAGE_ALIASES

    def __init__(self, subscripts: Sequence[str], operands: Sequence[Any], out_subs: str, c: Any,
                 options: MatmulOptions, gpu: GpuOptions = DEFAULT_GPU_OPTIONS) -> None:
        if options.out_format is not None and not row_major(options.out_format):
            raise ValueError("GPU results are dense (the sparsifier parallelizes no sparse-output loop); "
                             "drop out_format or run on the CPU")
        self._objs = list(operands) + [c]
        self._subscripts = tuple(subscripts)
        self._options, self._gpu = options, gpu
        self.tensors = [_wide_indices(as_tensor(x, f"operand {k}")) for k, x in enumerate(operands)]
        if len(subscripts) != len(self.tensors):
            raise ValueError(f"{len(subscripts)} subscripts for {len(self.tensors)} operands")
        self._check_operands(out_subs)
        self._place(operands, options.device)
        if c is not None:
            _check_c(c, self.out_shape, self.dtype_name, self._host_package is None)
        self.c = c
        self.alpha, self.beta = options.alpha, options.beta
        self.stream = gpu.stream
        self.contraction = self._contraction(out_subs)
        self._arguments = ArgumentLayout.flat_values(self.contraction.inputs)
        self.package = _package_of(self.tensors[0]) if self._host_package is None else _default_package()
        self._path = gpu_path(self.contraction, gpu.path, self.package)
        self.chip = gpu.chip or _chip()
        self._fn: Any = None
        self._lowered: Any = None

    @classmethod
    def for_matmul(cls, a: Any, b: Any, c: Any, options: MatmulOptions,
                   gpu: GpuOptions = DEFAULT_GPU_OPTIONS) -> GpuMatmul:
        """``alpha * op(a) @ op(b) + beta * c`` (2-D ``a``, 1-D or 2-D ``b``)."""
        ta = _transposed(as_tensor(a, "a"), options.transpose_a)
        tb = _transposed(as_tensor(b, "b"), options.transpose_b)
        subs, out = matmul_subscripts(ta, tb)
        return cls(subs, [ta, tb], out, c, options, gpu)

    @classmethod
    def for_einsum(cls, subscripts: str, operands: Sequence[Any], options: MatmulOptions,
                   gpu: GpuOptions = DEFAULT_GPU_OPTIONS) -> GpuMatmul:
        """An einsum over ``operands`` (dense result)."""
        ins, out = parse_subscripts(subscripts, len(operands))
        return cls(ins, operands, out, None, options, gpu)

    # ----- construction steps ------------------------------------------------------------------------------------
    def _check_operands(self, out_subs: str) -> None:
        """One dtype, agreeing extents, one placement, valid sparse buffers: the dtype and result shape."""
        names = {dtype_name(t.dtype) for t in self.tensors}
        if len(names) != 1:
            raise TypeError(f"dtype mismatch between operands: {sorted(names)}; convert one of them first")
        self.dtype_name = names.pop()
        self.out_shape = result_shape(self._subscripts, self.tensors,
                                      [f"operand {k}" for k in range(len(self.tensors))], out_subs)
        _check_placement(self.tensors)
        validate_sparse(self.tensors)  # kernels read these buffers: checked once per buffer set

    def _place(self, operands: Sequence[Any], device: Any) -> None:
        """The CUDA device to run on, and the host package of CPU operands (None for device operands)."""
        tensors = self.tensors
        self._device = buffers.device_ordinal(device) if device is not None else next(
            (buffers.device_ordinal(t.device) for t in tensors if t.device.startswith("cuda")), 0)
        self._host_package = None if any(t.device.startswith("cuda") for t in tensors) else (
            "torch" if any(buffers.is_torch(x) for x in operands) else "numpy")

    def _contraction(self, out_subs: str) -> Contraction:
        """The kernel's contraction. alpha and beta are applied around the kernel (device array ops): kernels
        take no scalars, whose reads would run on the host; the kernel accumulates into the output (init="c")."""
        options = self._options
        elem = mlir_type(self.dtype_name)
        semiring = get_semiring(options.semiring)
        regions = None if semiring is None else semiring.lowered(elem)
        contraction = gpu_contraction(Contraction(
            self._subscripts, tuple(spec_of(t, elem) for t in self.tensors), out_subs,
            TensorSpec(None, self.out_shape, elem), semiring=regions, init="c",
            prolog=None if options.prolog is None else trace_unary(options.prolog, elem),
            epilog=None if options.epilog is None else trace_unary(options.epilog, elem)))
        if regions is not None and (self.alpha != 1 or (self.beta is not None and self.beta != 1)):
            raise ValueError("alpha/beta apply to plain arithmetic; leave alpha=1, beta=None with a semiring")
        return contraction

    # ----- compile ---------------------------------------------------------------------------------------------
    def lowered(self, chip: str | None = None, gpu_format: str = "fatbin") -> Any:
        """The generated-code lowering (text + GpuPipeline) for ``chip``."""
        path = self.path if self.path != "cusparse" else "sparsifier-gpu"
        return lower_gpu(self.contraction, chip or self.chip, path, gpu_format)

    def plan(self) -> GpuMatmul:
        """Compile the kernel (cached on disk, keyed by chip and CUDA versions); no GPU needed."""
        if self.path != "cusparse" and self._lowered is None:
            from mlir_bridge.gpu.target import build_gpu

            self._lowered = self.lowered()
            self._build = build_gpu(self._lowered.text, self._lowered.pipeline)
        return self

    # ----- run ---------------------------------------------------------------------------------------------------
    def execute_once(self) -> Any:
        return self.execute()

    def execute(self, stream: Any = None) -> Any:
        """Run on the GPU; the result is a device array of the operands' package (or ``c``, in place)."""
        from mlir_bridge.gpu.cuda_driver import require_cuda_device

        require_cuda_device(self._device)
        stream = stream if stream is not None else self.stream
        tensors, c = self.tensors, self.c
        if self.checked:
            for t in tensors:  # index buffers changed in place since validation: validated again
                recheck(t)
        package = self.package
        if self._host_package is not None:  # CPU operands with device="cuda": copy over
            tensors = [to_device(t, self._device, package) for t in tensors]
            c = None if c is None else _to_device(c, self._device, package)
        with stream_context(stream, package):  # every device op of this call is ordered on that stream
            if c is None or self._host_package is not None or buffers.is_contiguous(c):
                return self._run(tensors, c, package, stream)  # (a host c's device copy is C-ordered)
            scratch = c.contiguous() if package == "torch" else c.copy(order="C")  # c in any layout
            c[...] = self._run(tensors, scratch, package, stream)
            return c

    def _run(self, tensors: list[Tensor], c: Any, package: str, stream: Any) -> Any:
        """One call's device work on the current stream (``c``: contiguous or None)."""
        out = self._zeros(package) if c is None else c
        if c is not None and self.beta == 0:
            out[...] = 0  # beta = 0 ignores c's values (NaN included)
        elif c is not None and self.beta not in (None, 1):
            out *= self.beta
        if 0 in self.out_shape or any(0 in t.shape for t in tensors):
            return self._back(out)
        if self.path == "cusparse":
            layout = library_layout(tensors[0].tensor_format)
            assert layout is not None  # gpu_path chose cusparse for a layout the library takes
            r = library_matmul(tensors[0], layout, tensors[1].val, package,
                               alpha=self.alpha, c=None if c is None else out)
            return self._back(r)
        acc = out if self.alpha == 1 else self._zeros(package)
        self._function()(*self._arguments.flatten(tensors, [acc]), stream=stream)
        if acc is not out:
            out += acc * self.alpha
        return self._back(out)

    def _function(self) -> Any:
        if self._fn is None:
            from mlir_bridge.gpu.call import GpuFunction
            from mlir_bridge.gpu.target import load_gpu

            self.plan()
            self._fn = GpuFunction(load_gpu(self._build, self._device), self.contraction.name, self._device)
        return self._fn

    def _zeros(self, package: str) -> Any:
        if package == "torch":
            import torch

            return torch.zeros(self.out_shape, dtype=getattr(torch, self.dtype_name), device=f"cuda:{self._device}")
        import cupy

        with cupy.cuda.Device(self._device):
            return cupy.zeros(self.out_shape, dtype=self.dtype_name)

    def _back(self, out: Any) -> Any:
        """Device results for device operands; CPU results (numpy/torch) for CPU operands."""
        if self._host_package is None:
            return out
        host = out.cpu() if hasattr(out, "cpu") else out.get()
        if self._host_package == "numpy":
            host = host.numpy() if hasattr(host, "numpy") else host
        if self.c is not None:
            self.c[...] = host
            return self.c
        return host

    # ----- life cycle (as frontend.Matmul) ------------------------------------------------------------------------
    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> GpuMatmul:
        """New operands of the same formats, shapes and dtypes (the compiled kernel is kept)."""
        objs = [x if x is not None else old for x, old in zip((a, b, c), self._objs[:2] + [self.c])]
        for k, flag in enumerate((self._options.transpose_a, self._options.transpose_b)):
            if flag and (a, b)[k] is not None:
                objs[k] = _transposed(as_tensor(objs[k], "ab"[k]), flag)
        new = GpuMatmul(self._subscripts, objs[:2], self.contraction.output_subscripts, objs[2], self._options,
                        self._gpu)
        if new.contraction.key() != self.contraction.key() or new.path != self.path:
            raise ValueError("reset_operands needs operands of the same formats, shapes, dtypes and index types; "
                             "create a new plan for others")
        self.tensors, self.c, self._objs = new.tensors, new.c, objs[:2] + [objs[2]]
        self._host_package = new._host_package
        return self

    def release(self) -> None:
        """Drop the operands and the loaded kernel reference."""
        self.tensors, self.c, self._objs, self._fn = [], None, [None, None, None], None

    # ----- introspection ---------------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """``"cusparse"``, ``"sparsifier-gpu"`` or ``"emitter-gpu"``."""
        return self._path

    @property
    def mlir(self) -> str:
        """The generated-code module (for ``"cusparse"``: what ``"sparsifier-gpu"`` would compile)."""
        return self.lowered().text

    @property
    def ptx(self) -> str:
        """PTX of the generated kernels for this plan's chip."""
        return self.ptx_for(self.chip)

    def ptx_for(self, chip: str) -> str:
        from mlir_bridge.gpu.target import gpu_assembly

        low = self.lowered(chip, "isa")
        return gpu_assembly(low.text, low.pipeline)

    def stages(self) -> list[tuple[str, str]]:
        """``[(stage, text), ...]`` of the GPU lowering, then ``("ptx", PTX)``."""
        from mlir_bridge import lower_stages

        low = self.lowered(self.chip, "isa")
        return lower_stages(low.text, low.pipeline) + [("ptx", self.ptx)]


def _check_placement(tensors: Sequence[Tensor]) -> None:
    """All operands on the CPU, or all on one CUDA device in one package (ValueError/TypeError)."""
    places = {t.device for t in tensors}
    if len(places) > 1:
        raise ValueError(f"operands live on {sorted(places)}; put them all on one device (or all on the CPU "
                         "with device='cuda')")
    if places and next(iter(places)).startswith("cuda"):
        packages = {_package_of(t) for t in tensors}
        if len(packages) > 1:
            raise TypeError(f"operands mix {sorted(packages)} arrays; use one package (torch.from_dlpack / "
                            "cupy.from_dlpack share memory)")


def _check_c(c: Any, shape: tuple[int, ...], elem_name: str, on_device: bool) -> None:
    """``c`` (updated in place; any layout) is a dense array of the result's shape and dtype, where the
    operands are."""
    from mlir_bridge.gpu.call import package_of

    if on_device and package_of(c) is None:
        raise TypeError(f"c must be a torch CUDA tensor or a CuPy array like the operands, got {type(c).__name__}")
    if not on_device and package_of(c) is not None:
        raise ValueError("c lives on a CUDA device, the operands on the CPU")
    if tuple(int(n) for n in c.shape) != tuple(shape):
        raise ValueError(f"c has shape {tuple(c.shape)}, the result has shape {tuple(shape)}")
    if dtype_name(c.dtype) != elem_name:
        raise TypeError(f"dtype mismatch: c is {c.dtype}, the operands are {elem_name}")


def _chip() -> str:
    from lowering.gpu.pipeline import default_chips

    chips = default_chips()
    return chips[0] if chips else DEFAULT_CHIPS[0]


# ----- matmul on the GPU -----------------------------------------------------------------------------------
def _transposed(t: Tensor, transpose: bool) -> Tensor:
    """``t`` transposed as a free reinterpretation of its format (CSR^T is CSC over the same buffers)."""
    return permuted(t, (1, 0)) if transpose and t.ndim == 2 else t


def matmul_subscripts(a: Tensor, b: Tensor) -> tuple[tuple[str, str], str]:
    """Subscripts of ``a @ b`` for 2-D ``a`` and 1-D/2-D ``b`` (no batches on the GPU)."""
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ValueError(f"GPU matmul takes a 2-D a and a 1-D or 2-D b, got shapes {a.shape} and {b.shape}")
    if b.ndim == 1:
        return ("ik", "k"), "i"
    return ("ik", "kj"), "ij"


def gpu_matmul_plan(a: Any, b: Any, c: Any = None, *, path: str = "auto", chip: str | None = None,
                    stream: Any = None, **options: Any) -> GpuMatmul:
    """The GpuMatmul of ``alpha * op(a) @ op(b) + beta * c``: ``options`` as :class:`MatmulOptions` (those of
    ``frontend.matmul``), ``path``, ``chip`` and ``stream`` as :class:`GpuOptions`."""
    return GpuMatmul.for_matmul(a, b, c, MatmulOptions(**options), GpuOptions(path, chip, stream))
