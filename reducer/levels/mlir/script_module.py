"""After a script reduction: which module the IR level enters from the reduced script (its
`reducer.levels.mlir.ir_level.IrLevel` follows a script whose failure `applies`), reduced there
for the same folder (`repro.mlir`, `pipeline.txt`, the runner `repro_mlir.py`).

Which module: when the pipeline fails with an error, Enzyme-JAX itself dumps the module it was
given (`Enzyme MLIR dumped to …`). A crash inside the pipeline leaves no such dump, and a wrong
gradient none either (the pipeline succeeds), so the script runs once more with
`enzyme_call.run_pass_pipeline` wrapped (`CAPTURE`) to write every module and pipeline it is given
before running them: the last one written is the one a crash died in; for a wrong gradient, the
last one that differentiates in reverse mode.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from oracles import kinds
from oracles.outcome import Signature
from reducer.levels.mlir.wrong_gradient import differentiates
from reducer.workers.sandbox import Limits, Sandbox

DUMPED = re.compile(r"Enzyme MLIR dumped to (?P<path>\S+\.mlir)")
WRITTEN = re.compile(r"^reducer: Enzyme-JAX pipeline input written to (?P<path>\S+\.mlir)$", re.M)
CAPTURE = '''
def _reducer_capture_pipeline_inputs():
    """(added by reducer) Write each module Enzyme-JAX's pass pipeline is given, before it runs."""
    import os, tempfile
    try:
        from enzyme_ad.jax import enzyme_call
    except ImportError:
        return
    run = enzyme_call.run_pass_pipeline

    def run_pass_pipeline(functions, source, pipeline):
        fd, path = tempfile.mkstemp(suffix=".mlir", prefix="pipeline-input-")
        with os.fdopen(fd, "w") as fh:
            fh.write("// " + pipeline + "\\n" + str(source))
        os.write(2, f"reducer: Enzyme-JAX pipeline input written to {path}\\n".encode())
        return run(functions, source, pipeline)

    enzyme_call.run_pass_pipeline = run_pass_pipeline


_reducer_capture_pipeline_inputs()
'''


def applies(sig: Signature, source: str) -> bool:
    """Whether the IR level follows a script reduction that ended with this failure: a missing
    adjoint in Enzyme-JAX, a wrong Enzyme-JAX gradient, or a crash of a script that uses Enzyme-JAX."""
    if kinds.adjoint_missing(sig):
        return kinds.enzyme_adjoint(sig)
    if kinds.activity_mismatch(sig):
        return kinds.numeric_gradient(sig)
    return kinds.signal_crash(sig) and "enzyme_ad" in source


def with_capture(source: str) -> str:
    """`source` with `CAPTURE` after its `from __future__` imports (which must come first)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return CAPTURE.lstrip("\n") + "\n" + source
    after = 0
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            after = node.end_lineno
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # a docstring
            break
    lines = source.splitlines(keepends=True)
    return "".join(lines[:after]) + CAPTURE + "\n" + "".join(lines[after:])


def chosen(output: str, crashed: bool) -> Path | None:
    """The module to reduce, from one run's output (see the module docstring)."""
    m = DUMPED.search(output)
    if m:
        return Path(m.group("path"))
    written = [Path(m.group("path")) for m in WRITTEN.finditer(output)]
    if crashed:
        return written[-1] if written else None
    for path in reversed(written):
        try:
            if differentiates(path.read_text(encoding="utf-8").split("\n", 1)[0]):
                return path
        except OSError:
            continue
    return None


def dumped_module(sandbox: Sandbox, source: str, limits: Limits) -> str | None:
    """Run a script once and return the module whose pipeline run fails (see the docstring)."""
    run = sandbox.run(with_capture(source), limits, fresh=True, keep=True)
    path = chosen(run.output, run.signal is not None)
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
    finally:
        scratch = path.parent.parent
        if Path(sandbox.root).resolve() in scratch.resolve().parents:
            shutil.rmtree(scratch, ignore_errors=True)
