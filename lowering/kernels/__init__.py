"""Hand-written kernels: the registry dispatch consults first (``registry``) and the built-in ones
(``spgemm``, registered by :mod:`lowering.builtins`)."""
from .registry import KernelEntry, match_kernel, op_name, register_kernel, registered_kernels, unregister_kernel

__all__ = ["KernelEntry", "match_kernel", "op_name", "register_kernel", "registered_kernels", "unregister_kernel"]
