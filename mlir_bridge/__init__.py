"""mlir_bridge: the only package touching MLIR bindings and runtimes.

Compile MLIR module text through a staged pipeline for a target (crash-isolated), cache the
result in memory and on disk, and call its functions on numpy arrays / torch tensors::

    mod = compile_module(text, pipeline)          # CompileError on bad IR or a crashing pass
    y = mod.function("spmv")(pos, crd, val, x, y) # memref results come back as numpy arrays
    call = mod.function("spmv").bind(pos, crd, val, x, y); call()   # lowest overhead

Importing this package does not import ``mlir`` (a warm disk cache never does).
"""
from mlir_bridge.compile import CacheInfo, cache_info, cache_key, clear_cache, compile_module, lower_stages
from mlir_bridge.errors import CompileError
from mlir_bridge.module import BoundCall, CompiledModule, Function
from mlir_bridge.signature import Signature, ValueSpec
from mlir_bridge.stage import PipelineLike, Stage
from mlir_bridge.target import CPU, Target, get_target, register_target

__all__ = [
    "BoundCall", "CPU", "CacheInfo", "CompileError", "CompiledModule", "Function", "PipelineLike",
    "Signature", "Stage", "Target", "ValueSpec", "cache_info", "cache_key", "clear_cache",
    "compile_module", "get_target", "lower_stages", "register_target",
]
