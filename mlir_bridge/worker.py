"""The crash-isolated side of compilation: parse, run stages, write results to a folder.

Runs in a forked child or, where ``fork`` is unavailable, as ``python -m mlir_bridge.worker DIR``
(the job is pickled in ``DIR/job.pkl``). Outputs in the folder:
``llvm.mlirbc`` + ``signatures.json`` (mode "compile"; ``llvm.ll`` too when the job asks for the LLVM IR),
``stages.json`` (mode "stages"),
``error.json`` on a reported error, ``progress`` = the stage being run (to name a crash). Outputs are
written 0600 without following symlinks; ``job.pkl`` is unpickled only from a trusted folder and file
(``mlir_bridge.trust``).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from mlir_bridge import trust
from mlir_bridge.errors import CompileError
from mlir_bridge.signature import Signature
from mlir_bridge.stage import Stage


@dataclass(frozen=True)
class Job:
    text: str
    stages: tuple[Stage, ...]
    mode: str  # "compile" | "stages"
    env: tuple[tuple[str, str], ...] = ()  # set in the child before any stage (the target's ``compile_env``)
    llvm_ir: bool = False  # mode "compile": also write ``llvm.ll`` (the LLVM IR, translated in this process)


def _progress(outdir: Path, name: str) -> None:
    trust.write_private(outdir / "progress", name.encode())


def execute(job: Job, outdir: Path) -> None:
    """Run ``job``, writing its outputs into ``outdir`` (raises CompileError)."""
    from mlir_bridge import context

    os.environ.update(dict(job.env))  # a child process: tools MLIR runs (ptxas) are looked up on its PATH
    _progress(outdir, "verify")
    module = context.parse(job.text, context.new_context())
    context.mark_c_interface(module)
    snapshots = [("input", str(module))] if job.mode == "stages" else []
    sigs: dict[str, Signature] = {}
    sig_error: CompileError | None = None
    for stage in job.stages:
        _progress(outdir, stage.name)
        module = context.run_stage(module, stage)
        context.mark_c_interface(module)
        if job.mode == "stages":
            snapshots.append((stage.name, str(module)))
            continue
        try:
            now = context.read_signatures(module)
        except CompileError as err:
            sigs, sig_error = {}, err
        else:
            if now:
                sigs, sig_error = now, None
    if job.mode == "stages":
        trust.write_private(outdir / "stages.json", json.dumps(snapshots).encode())
        return
    if sig_error is not None:
        raise sig_error
    if not sigs:
        raise CompileError("the module has no public function to call", stage="signature")
    _progress(outdir, "write")
    bytecode = io.BytesIO()
    module.operation.write_bytecode(bytecode)
    trust.write_private(outdir / "llvm.mlirbc", bytecode.getvalue())
    trust.write_private(outdir / "signatures.json", json.dumps([s.to_json() for s in sigs.values()]).encode())
    if job.llvm_ir:  # saves the target an mlir-translate process (~50 ms of its ~60 a kernel is its start-up)
        _progress(outdir, "translate")
        from mlir.dialects.llvm import translate_module_to_llvmir

        try:
            text = translate_module_to_llvmir(module.operation)
        except Exception:  # noqa: BLE001 - no llvm.ll: the target runs mlir-translate, which reports it
            return
        trust.write_private(outdir / "llvm.ll", text.encode())


def run_and_report(job: Job, outdir: Path) -> int:
    """Run ``job``; turn any Python error into ``error.json``. Returns an exit status."""
    try:
        execute(job, outdir)
        return 0
    except CompileError as err:
        info = {"message": err.message, "stage": err.stage, "diagnostics": err.diagnostics}
    except BaseException as err:  # noqa: BLE001 - reported to the parent as a CompileError
        info = {"message": f"internal error: {type(err).__name__}: {err}", "stage": "internal",
                "diagnostics": traceback.format_exc()}
    trust.write_private(outdir / "error.json", json.dumps(info).encode())
    return 1


def main(argv: list[str]) -> int:
    outdir = Path(argv[1])
    trust.require_folder(outdir)
    job = pickle.loads(trust.read_file(outdir / "job.pkl"))
    return run_and_report(job, outdir)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
