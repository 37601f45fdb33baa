"""The pieces of ``benchmarks/suite.py``: matrix families, peers, operations, timing and the report."""
