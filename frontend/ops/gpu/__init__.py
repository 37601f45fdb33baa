"""The GPU backend of the operations: routing (``_route``), the GPU plan (``_matmul``: a
:class:`frontend.ops._plan.MatmulPlan`) and the vendor library path (``_library``)."""
