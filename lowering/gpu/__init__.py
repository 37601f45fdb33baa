"""GPU lowering: which path (``dispatch``), the NVVM pipeline (``pipeline``), the emitter's GPU loops
(``emitter``, ``dia``)."""
