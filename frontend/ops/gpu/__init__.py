"""The GPU backend of the operations: routing (``_route``), the GPU plan (``_matmul``) and the vendor
library path (``_library``)."""
