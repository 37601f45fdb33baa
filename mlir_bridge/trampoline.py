"""Two-argument trampolines for hot ctypes calls: ``ust_callN(fn, args)`` loads ``N`` 64-bit words from ``args``
and calls ``fn`` with them.

A ctypes call costs about 0.08 us per argument it converts: a 7-argument C-interface call (descriptor pointers
and row bounds) takes about 0.55 us before the kernel runs, a 2-argument one about 0.15 us. Where every argument
is a pointer or a 64-bit integer, the platform's C convention passes them exactly as 64-bit integers (x86-64
System V, AArch64), so one trampoline per argument count serves every kernel. The trampolines are one small
module compiled like any other (cached on disk), the first time :func:`packed` is asked for one.
"""
from __future__ import annotations

import ctypes
import platform
import threading
from typing import Any

MAX_ARGS = 16
_INTEGER_TYPES = (ctypes.c_void_p, ctypes.c_int64)
_lock = threading.Lock()
_state: dict[str, Any] = {}  # "lib": the loaded trampolines (None once building them failed)


def _source() -> str:
    """MLIR of ``@ust_call1 .. @ust_callMAX_ARGS`` plus a public no-op (a module needs one to be built)."""
    out = ["module {", "  func.func @ust_trampolines() attributes {llvm.emit_c_interface} { return }"]
    for n in range(1, MAX_ARGS + 1):
        out.append(f"  llvm.func @ust_call{n}(%fn: !llvm.ptr, %args: !llvm.ptr) {{")
        for k in range(n):
            out.append(f"    %p{k} = llvm.getelementptr %args[{k}] : (!llvm.ptr) -> !llvm.ptr, i64")
            out.append(f"    %a{k} = llvm.load %p{k} : !llvm.ptr -> i64")
        words = ", ".join(f"%a{k}" for k in range(n))
        out.append(f"    llvm.call %fn({words}) : !llvm.ptr, ({', '.join(['i64'] * n)}) -> ()")
        out.append("    llvm.return")
        out.append("  }")
    out.append("}")
    return "\n".join(out) + "\n"


def _library() -> Any:
    """The loaded trampolines, built on first use; None where they cannot be used or built."""
    if "lib" in _state:
        return _state["lib"]
    with _lock:
        if "lib" not in _state:
            lib = None
            if platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64", "aarch64", "arm64"):
                try:
                    from mlir_bridge.compile import compile_module
                    from mlir_bridge.stage import Stage

                    mod = compile_module(_source(), [
                        Stage("input", "builtin.module(canonicalize)"),
                        Stage("llvm", "builtin.module(convert-func-to-llvm,reconcile-unrealized-casts)")])
                    lib = ctypes.CDLL(str(mod.path), mode=ctypes.RTLD_LOCAL)
                except Exception:  # noqa: BLE001 - no trampolines: callers keep the plain ctypes call
                    lib = None
            _state["lib"] = lib
    return _state["lib"]


def packed(cfn: Any, cargs: tuple[Any, ...]) -> tuple[Any, tuple[int, int], Any] | None:
    """``(trampoline, (fn address, args address), args array)`` calling ``cfn(*cargs)`` through a trampoline,
    or None (an argument not a pointer or 64-bit integer, too many arguments, a return value, no trampolines).
    The caller keeps the args array (and what its words point at) alive while it uses the trampoline."""
    argtypes = getattr(cfn, "argtypes", None)
    if (not argtypes or len(argtypes) != len(cargs) or len(cargs) > MAX_ARGS or cfn.restype is not None
            or any(t not in _INTEGER_TYPES for t in argtypes)):
        return None
    lib = _library()
    if lib is None:
        return None
    address = ctypes.cast(cfn, ctypes.c_void_p).value
    if not address:
        return None
    words = (ctypes.c_int64 * len(cargs))(*(int(a) for a in cargs))
    tramp = getattr(lib, f"ust_call{len(cargs)}")
    tramp.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    tramp.restype = None
    return tramp, (address, ctypes.addressof(words)), words
