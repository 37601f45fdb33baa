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

from typing import Any, Callable, Sequence

from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import gpu_contraction, gpu_path, library_layout, lower_gpu
from lowering.gpu.pipeline import DEFAULT_CHIPS
from frontend.format import dtype_name, mlir_type

from frontend.storage import _buffers as B
from frontend.storage import _layout as storage
from frontend.ops.gpu._route import on_cuda, wants_gpu
from frontend.ops._operands import as_tensor, permuted, result_shape, validate_sparse
from frontend.ops._kernel_cache import row_major, spec_of
from frontend.tensor._tensor import Tensor

__all__ = ["GpuMatmul", "gpu_einsum", "gpu_matmul", "gpu_matmul_plan", "on_cuda", "to_device", "wants_gpu"]


# ----- operands ---------------------------------------------------------------------------------------------
def _to_device(x: Any, device: int, package: str) -> Any:
    """A CPU buffer copied to ``cuda:device`` as a ``package`` array (torch or cupy)."""
    return storage.to_device(storage.to_host(x), package, f"cuda:{device}")


def to_device(t: Tensor, device: int = 0, package: str = "torch") -> Tensor:
    """``t`` with every buffer copied to ``cuda:device`` as torch tensors or CuPy arrays (same format);
    used for CPU operands with ``device="cuda"``."""
    move = (lambda b: None if b is None else _to_device(b, device, package))  # noqa: E731
    return Tensor(t.tensor_format, t.shape, [move(p) for p in t._pos], [move(c) for c in t._crd],
                  move(t.val), index_type=t.index_type, package=package, device=f"cuda:{device}")


def _package_of(t: Tensor) -> str:
    return "cupy" if B.package_of(t.val) == "cupy" else "torch"


def _default_package() -> str:
    try:
        import torch  # noqa: F401

        return "torch"
    except ImportError:
        return "cupy"


#: Short names of GPU lowering stages for ``print_mlir(stage=...)``.
_GPU_STAGE_ALIASES = {"linalg": "input", "sparsified": "sparsify", "gpu": "gpu-kernels", "llvm": "to-llvm"}


# ----- the plan ---------------------------------------------------------------------------------------------
class GpuMatmul:
    """A GPU contraction: ``plan()`` (compile or fetch; needs no GPU), ``execute(stream=None)``.

    ``path`` says which path runs it; ``mlir`` is the generated-code module (linalg + encodings),
    ``ptx`` its PTX for ``chip``; ``stages()`` / ``print_mlir(stage)`` show every lowering stage
    (``"linalg"``, ``"sparsified"``, ``"gpu"`` = GPU module after kernel outlining, ``"llvm"``, ``"ptx"``).
    """

    def __init__(self, subscripts: tuple[str, ...], operands: Sequence[Any], out_subs: str, *, c: Any = None,
                 alpha: Any = 1, beta: Any = None, semiring: Any = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, out_format: Any = None, device: Any = None,
                 path: str = "auto", chip: str | None = None, stream: Any = None) -> None:
        if out_format is not None and not row_major(out_format):
            raise ValueError("GPU results are dense (the sparsifier parallelizes no sparse-output loop); "
                             "drop out_format or run on the CPU")
        self._objs = list(operands) + [c]
        self._subscripts = tuple(subscripts)
        self._transposes = (False, False)  # set by gpu_matmul_plan: applied to operands of reset_operands
        self._options = dict(alpha=alpha, beta=beta, semiring=semiring, prolog=prolog, epilog=epilog,
                             out_format=out_format, device=device, path=path, chip=chip, stream=stream)
        tensors = [as_tensor(x, f"operand {k}") for k, x in enumerate(operands)]
        if len(subscripts) != len(tensors):
            raise ValueError(f"{len(subscripts)} subscripts for {len(tensors)} operands")
        names = {dtype_name(t.dtype) for t in tensors}
        if len(names) != 1:
            raise TypeError(f"dtype mismatch between operands: {sorted(names)}; convert one of them first")
        self.dtype_name = names.pop()
        elem = mlir_type(self.dtype_name)
        self.out_shape = result_shape(subscripts, tensors, [f"operand {k}" for k in range(len(tensors))],
                                      out_subs)
        _check_placement(tensors)
        validate_sparse(tensors)  # kernels read these buffers: checked once per buffer set
        self._device = B.device_ordinal(device) if device is not None else next(
            (B.device_ordinal(t.device) for t in tensors if t.device.startswith("cuda")), 0)
        self._host_package = None if any(t.device.startswith("cuda") for t in tensors) else (
            "torch" if any(B.is_torch(x) for x in operands) else "numpy")
        if c is not None:
            _check_c(c, self.out_shape, self.dtype_name, self._host_package is None)
        self.tensors = tensors
        self.c = c
        self.alpha, self.beta = alpha, beta
        self.stream = stream
        sem = None
        if semiring is not None:
            from frontend.ops._semiring import get_semiring

            sem = get_semiring(semiring).lowered(elem)
        from frontend.ops._semiring import trace_unary

        # alpha and beta are applied around the kernel (device array ops): kernels take no scalars, whose
        # reads would run on the host; the kernel accumulates into the output buffer (init="c").
        self.contraction = gpu_contraction(Contraction(
            tuple(subscripts), tuple(spec_of(t, elem) for t in tensors), out_subs, TensorSpec(None, self.out_shape, elem),
            semiring=sem, init="c", prolog=None if prolog is None else trace_unary(prolog, elem),
            epilog=None if epilog is None else trace_unary(epilog, elem)))
        if sem is not None and (alpha != 1 or (beta is not None and beta != 1)):
            raise ValueError("alpha/beta apply to plain arithmetic; leave alpha=1, beta=None with a semiring")
        self.package = _package_of(tensors[0]) if self._host_package is None else _default_package()
        self.path = gpu_path(self.contraction, path, self.package)
        self.chip = chip or _chip()
        self._fn: Any = None
        self._lowered: Any = None

    # ----- compile ---------------------------------------------------------------------------------------------
    def lowered(self, chip: str | None = None, gpu_format: str = "fatbin") -> Any:
        """The generated-code lowering (text + GpuPipeline) for ``chip``."""
        path = self.path if self.path != "cusparse" else "sparsifier-gpu"
        return lower_gpu(self.contraction, chip or self.chip, path, gpu_format)

    def plan(self) -> "GpuMatmul":
        """Compile the kernel (cached on disk, keyed by chip and CUDA versions); no GPU needed."""
        if self.path != "cusparse" and self._lowered is None:
            from mlir_bridge.gpu.target import build_gpu

            self._lowered = self.lowered()
            self._build = build_gpu(self._lowered.text, self._lowered.pipeline)
        return self

    # ----- run ---------------------------------------------------------------------------------------------------
    def execute(self, stream: Any = None) -> Any:
        """Run on the GPU; the result is a device array of the operands' package (or ``c``, in place)."""
        from mlir_bridge.gpu.cuda_driver import require_cuda_device

        require_cuda_device(self._device)
        stream = stream if stream is not None else self.stream
        tensors, c = self.tensors, self.c
        package = self.package
        if self._host_package is not None:  # CPU operands with device="cuda": copy over
            tensors = [to_device(t, self._device, package) for t in tensors]
            c = None if c is None else _to_device(c, self._device, package)
        from frontend.ops.gpu._library import stream_context

        with stream_context(stream, package):  # every device op of this call is ordered on that stream
            out = self._zeros(package) if c is None else c
            if c is not None and self.beta == 0:
                out[...] = 0  # beta = 0 ignores c's values (NaN included)
            elif c is not None and self.beta not in (None, 1):
                out *= self.beta
            if 0 in self.out_shape or any(0 in t.shape for t in tensors):
                return self._back(out)
            if self.path == "cusparse":
                from frontend.ops.gpu._library import library_matmul

                r = library_matmul(tensors[0], library_layout(tensors[0].tensor_format), tensors[1].val, package,
                                   alpha=self.alpha, c=None if c is None else out)
                return self._back(r)
            acc = out if self.alpha == 1 else self._zeros(package)
            self._function()(*_flatten(tensors, [acc]), stream=stream)
            if acc is not out:
                out += acc * self.alpha
            return self._back(out)

    def _function(self) -> Any:
        if self._fn is None:
            from mlir_bridge.gpu.target import load_gpu
            from mlir_bridge.gpu.call import GpuFunction

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
    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> "GpuMatmul":
        """New operands of the same formats, shapes and dtypes (the compiled kernel is kept)."""
        objs = [x if x is not None else old for x, old in zip((a, b, c), self._objs[:2] + [self.c])]
        for k, flag in enumerate(self._transposes):
            if flag and (a, b)[k] is not None:
                t = as_tensor(objs[k], "ab"[k])
                objs[k] = permuted(t, (1, 0)) if t.ndim == 2 else t
        new = GpuMatmul(self._subscripts, objs[:2], self.contraction.output_subscripts, c=objs[2],
                        **self._options)
        if new.contraction.key() != self.contraction.key() or new.path != self.path:
            raise ValueError("reset_operands needs operands of the same formats, shapes, dtypes and index types; "
                             "create a new plan for others")
        self.tensors, self.c, self._objs = new.tensors, new.c, objs[:2] + [objs[2]]
        self._host_package = new._host_package
        return self

    def release(self) -> None:
        """Drop the operands and the loaded kernel reference."""
        self.tensors, self.c, self._objs, self._fn = [], None, [None, None, None], None

    def __enter__(self) -> "GpuMatmul":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # ----- introspection ---------------------------------------------------------------------------------------
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

    def print_mlir(self, stage: str | None = None, file: Any = None) -> None:
        """Print every stage, or one (``linalg``, ``sparsified``, ``gpu``, ``llvm``, ``ptx`` or a stage name)."""
        from frontend.ops._api import _print_stages

        _print_stages(self.stages(), stage, file, _GPU_STAGE_ALIASES)


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
    """``c`` (updated in place) is a dense contiguous array of the result's shape and dtype, where the
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
    if not B.is_contiguous(c):
        raise ValueError("c must be contiguous (it is updated in place)")


def _flatten(tensors: Sequence[Tensor], extra: Sequence[Any]) -> list[Any]:
    """Kernel arguments: each encoded operand's pos/crd/values in level order, dense values, then extra."""
    from frontend.ops._kernel_cache import buffer_parts

    args: list[Any] = []
    for t in tensors:
        fmt = t.tensor_format
        if row_major(fmt):
            args.append(t.val)
            continue
        for kind, k in buffer_parts(fmt):
            args.append(t.pos(k) if kind == "pos" else t.crd(k) if kind == "crd" else t.val.reshape(-1))
    return args + list(extra)


def _chip() -> str:
    from lowering.gpu.pipeline import default_chips

    chips = default_chips()
    return chips[0] if chips else DEFAULT_CHIPS[0]


# ----- entry points used by frontend.ops ---------------------------------------------------------------------
def matmul_subscripts(a: Tensor, b: Tensor, transpose_a: bool, transpose_b: bool) -> tuple[tuple[str, str], str]:
    """Subscripts of ``a @ b`` for 2-D ``a`` and 1-D/2-D ``b`` (no batches on the GPU); transposes are
    applied before, as free reinterpretations of the formats (CSR^T is CSC over the same buffers)."""
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ValueError(f"GPU matmul takes a 2-D a and a 1-D or 2-D b, got shapes {a.shape} and {b.shape}")
    if b.ndim == 1:
        return ("ik", "k"), "i"
    return ("ik", "kj"), "ij"


def gpu_matmul_plan(a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None, transpose_a: bool = False,
                    transpose_b: bool = False, semiring: Any = None, out_format: Any = None,
                    prolog: Callable | None = None, epilog: Callable | None = None, device: Any = None,
                    path: str = "auto", chip: str | None = None, stream: Any = None, **_: Any) -> GpuMatmul:
    """The GpuMatmul of ``alpha * op(a) @ op(b) + beta * c``."""
    ta, tb = as_tensor(a, "a"), as_tensor(b, "b")
    if transpose_a and ta.ndim == 2:
        ta = permuted(ta, (1, 0))
    if transpose_b and tb.ndim == 2:
        tb = permuted(tb, (1, 0))
    subs, out = matmul_subscripts(ta, tb, transpose_a, transpose_b)
    plan = GpuMatmul(subs, [ta, tb], out, c=c, alpha=alpha, beta=beta, semiring=semiring, prolog=prolog,
                     epilog=epilog, out_format=out_format, device=device, path=path, chip=chip, stream=stream)
    plan._transposes = (transpose_a, transpose_b)
    return plan


def gpu_matmul(a: Any, b: Any, c: Any = None, **options: Any) -> Any:
    """``frontend.matmul`` on the GPU (see :func:`gpu_matmul_plan` for the options)."""
    return gpu_matmul_plan(a, b, c, **options).execute()


def gpu_einsum(subscripts: str, *operands: Any, out_format: Any = None, semiring: Any = None,
               prolog: Callable | None = None, epilog: Callable | None = None, device: Any = None,
               path: str = "auto", chip: str | None = None, stream: Any = None, **_: Any) -> Any:
    """``frontend.einsum`` on the GPU (dense result)."""
    from frontend.ops._api import parse_subscripts

    ins, out = parse_subscripts(subscripts, len(operands))
    plan = GpuMatmul(ins, operands, out, semiring=semiring, prolog=prolog, epilog=epilog, out_format=out_format,
                     device=device, path=path, chip=chip, stream=stream)
    return plan.execute()
