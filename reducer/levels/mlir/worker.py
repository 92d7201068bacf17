"""What a worker runs for an IR-level candidate, and the same on a file from the command line.

The IR level's candidates are `IrModule` requests (a kind registered with `reducer.workers.requests`,
defined here): they run in the warm
workers every level shares (`reducer.workers.sandbox`), where `run_module` runs Enzyme-JAX's pass
pipeline on the module, or XLA compiling and running it, in the worker's own interpreter (tens of
milliseconds);
what MLIR prints on file descriptor 2 goes to the candidate's output like a script's, and a crash
ends only the worker's runner.

`python -m reducer.levels.mlir.worker FILE.mlir [--xla|--gradient]` runs once on a file: the
pipeline on its first line (Enzyme-JAX's dump format), XLA compiling and running it with `--xla`, or the
pipeline's gradient against finite differences with `--gradient`.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import ClassVar

from reducer.levels.mlir.run_module import ENZYME, GRADIENT, NATIVE_FRAMES, PIPELINE_KINDS, XLA, XLA_KINDS, execute
from reducer.workers import requests


@requests.kind
@dataclass(frozen=True)
class IrModule:
    """An MLIR module in text form; `pipeline` is the Enzyme-JAX pass pipeline run on it when
    `compiler` is "enzyme", and XLA compiles and runs it when `compiler` is "xla" (or compares its
    results with a reference, "xla-results"), with the options of `xla` (JSON: `run.execute`)."""

    kind: ClassVar[str] = "mlir"
    module: str
    pipeline: str | None = None
    compiler: str = "enzyme"
    xla: str = ""

    def run(self) -> int:
        return requests.status_of(lambda: run_module(self))


_HANDLER: list[dict] = []


def run_module(request) -> None:
    """Run an `IrModule` request; raises what Enzyme-JAX or XLA raise on the module. A module XLA runs
    gets the runner script's handler that prints the native frames of a crash (they tell one XLA
    crash from another)."""
    if request.compiler in XLA_KINDS and not _HANDLER:
        _HANDLER.append({"__name__": "reducer_native_frames"})  # kept: the handler must outlive this call
        exec(compile(NATIVE_FRAMES, "<reducer native frames>", "exec"), _HANDLER[0])
    execute(request.compiler, request.module, request.pipeline, json.loads(request.xla) if request.xla else None)


def run_file(path: str, kind: str) -> int:
    from reducer.levels.mlir import module as mm

    with open(path, encoding="utf-8") as fh:
        pipeline, module_text = mm.split(fh.read())
    if kind in PIPELINE_KINDS and not pipeline:
        print(f"{path}: no pipeline on the first line (// PIPELINE); use --xla to compile it with XLA",
              file=sys.stderr)
        return 2
    execute(kind, module_text, pipeline)
    print("ran without error")
    return 0


def main(argv: list[str]) -> int:
    files = [a for a in argv if not a.startswith("--")]
    if len(files) != 1:
        print("usage: python -m reducer.levels.mlir.worker FILE.mlir [--xla|--gradient]", file=sys.stderr)
        return 2
    return run_file(files[0], XLA if "--xla" in argv else GRADIENT if "--gradient" in argv else ENZYME)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
