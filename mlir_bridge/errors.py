"""Exceptions raised by the bridge."""
from __future__ import annotations


class CompileError(RuntimeError):
    """MLIR text could not be verified, lowered or turned into native code.

    ``stage`` names the pipeline stage that failed (``"verify"``, a stage name,
    ``"translate"``, ``"llc"``, ``"link"``), ``diagnostics`` holds MLIR's or the
    tool's messages (for a crash: what the process printed before dying).
    """

    def __init__(self, message: str, *, stage: str = "", diagnostics: str = "") -> None:
        full = message if not diagnostics else f"{message}\n{diagnostics.rstrip()}"
        super().__init__(full)
        self.message = message
        self.stage = stage
        self.diagnostics = diagnostics
