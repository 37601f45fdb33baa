"""Compilation targets: how LLVM-dialect MLIR becomes a loadable shared object.

A target's build runs in child processes only (``mlir-translate``, ``llc``, ``cc``), so a
crash in code generation is an error, never a dead interpreter. Other targets plug in by
registering another ``Target``, as the CUDA one does (:mod:`mlir_bridge.gpu`, linking
``libmlir_cuda_runtime.so``): the compile, cache and call paths do not change.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from mlir_bridge import toolchain, trust
from mlir_bridge.errors import CompileError


@dataclass(frozen=True)
class Target:
    """Where compiled code runs.

    ``device`` is where buffers passed to kernels must live (``"cpu"``); ``cpu``/``triple``
    go to ``opt`` and ``llc`` (``"native"``/``""`` = this host; ``llc`` always gets a triple, this host's
    ``toolchain.host_triple()`` when ``triple`` is empty, so that it calls the C library's memset/memcpy);
    ``link_libs`` are MLIR runtime libraries linked with ``--as-needed`` (found with an rpath, no
    environment needed);
    ``extra_libs`` are other shared libraries linked by path (e.g. an OpenMP runtime), their
    folders added to the rpath so a fresh process finds them when it loads a cached module.
    ``translate_in_child``: see the field.
    """

    name: str = "cpu"
    device: str = "cpu"
    triple: str = ""
    cpu: str = "native"
    opt_level: int = 3
    ir_opt: bool = True
    link_libs: tuple[str, ...] = ("mlir_c_runner_utils",)
    extra_libs: tuple[str, ...] = ()
    #: The crash-isolated compile child translates the module to LLVM IR itself (``llvm.ll`` beside the
    #: bytecode; no ``mlir-translate`` process). Off for targets whose modules need translations the Python
    #: bindings may not register (the CUDA target's GPU binaries).
    translate_in_child: bool = True

    def fingerprint(self) -> str:
        """Stable text for cache keys (includes the host CPU when compiling for ``native``)."""
        host = toolchain.host_fingerprint() if self.cpu == "native" or not self.triple else ""
        extra = f"{','.join(self.extra_libs)}|" if self.extra_libs else ""
        return f"{self.name}|{self.device}|{self.triple}|llc={self.effective_triple()}|{self.cpu}|O{self.opt_level}|" \
               f"opt={self.ir_opt}|" \
               f"{','.join(self.link_libs)}|{extra}{host}"

    def effective_triple(self) -> str:
        """The triple given to ``llc``: ``triple``, or this host's (``toolchain.host_triple``). ``opt`` gets
        ``triple`` only: with the host's, its x86 cost model turns 4 partial sums of a CSR row into
        ``vgatherdpd`` (0.76x the time on Poisson, but 1.6x on 40-entry rows in cache: docs/performance.md),
        so the IR-level optimizations stay target-independent and those decisions stay the emitter's."""
        return self.triple or toolchain.host_triple()

    def compile_env(self) -> dict[str, str]:
        """Environment variables the crash-isolated compile child needs (the CUDA target: the PATH that leads
        MLIR to ``ptxas``/``fatbinary``); none on the CPU."""
        return {}

    def build(self, llvm_module: Path, out: Path) -> None:
        """Translate an LLVM-dialect module (text or bytecode) into the shared object ``out``."""
        self.link([self.compile_object(llvm_module, out)], out)

    def compile_object(self, llvm_module: Path, out: Path) -> Path:
        """The object file (next to ``out``) of an LLVM-dialect module: translate, opt, llc."""
        ll, obj = out.with_suffix(".ll"), out.with_suffix(".o")
        translated = Path(llvm_module).with_name("llvm.ll")  # written by the compile child (translate_in_child)
        if self.translate_in_child and translated.is_file():
            trust.require_file(translated)
            ll = translated
        else:
            _run("translate", [toolchain.tool("mlir-translate"), "--mlir-to-llvmir", llvm_module, "-o", ll])
        triple = self.effective_triple()
        if self.ir_opt:  # LLVM IR optimizations (inlining, LICM, GVN, vectorizers): llc alone runs none
            opt_ll = out.with_suffix(".opt.bc")
            cmd = [toolchain.tool("opt"), f"-O{min(self.opt_level, 3)}", ll, "-o", opt_ll]
            if self.cpu:
                cmd.insert(2, f"-mcpu={self.cpu}")
            if self.triple:
                cmd.insert(2, f"-mtriple={self.triple}")
            _run("opt", cmd)
            ll = opt_ll
        llc = [toolchain.tool("llc"), f"-O{self.opt_level}", "-relocation-model=pic", "-filetype=obj"]
        if self.cpu:
            llc.append(f"-mcpu={self.cpu}")
        if triple:
            llc.append(f"-mtriple={triple}")
        _run("llc", llc + [ll, "-o", obj])
        return obj

    def link(self, objects: list[Path], out: Path, system_libs: tuple[str, ...] = ("m",)) -> None:
        """Link ``objects`` into the shared object ``out`` with ``link_libs``, ``extra_libs`` (rpaths) and
        ``system_libs``."""
        lib = toolchain.runtime_lib_dir()
        extra_dirs = dict.fromkeys(str(Path(p).parent) for p in self.extra_libs)
        _run("link", ["cc", "-shared", "-o", out, *objects, f"-L{lib}", f"-Wl,-rpath,{lib}", "-Wl,--as-needed"]
             + [f"-Wl,-rpath,{d}" for d in extra_dirs] + [f"-l{name}" for name in self.link_libs]
             + list(self.extra_libs) + [f"-l{name}" for name in system_libs])


def _run(stage: str, cmd: list) -> None:
    try:
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CompileError(f"{stage} could not run", stage=stage, diagnostics=str(err)) from None
    if proc.returncode != 0:
        why = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
        raise CompileError(f"{stage} failed ({why})", stage=stage,
                           diagnostics=(proc.stderr or proc.stdout)[-8000:])


CPU = Target()
_TARGETS: dict[str, Target] = {"cpu": CPU}


def register_target(target: Target) -> None:
    """Make ``target`` available by name to ``compile_module(..., target=name)``."""
    _TARGETS[target.name] = target


def get_target(target: str | Target) -> Target:
    """The Target named ``target`` (a Target is returned as is)."""
    if isinstance(target, Target):
        return target
    try:
        return _TARGETS[target]
    except KeyError:
        raise ValueError(f"unknown target {target!r}; known: {sorted(_TARGETS)}") from None
