"""IR-level passes: they shrink an MLIR module (with its pipeline line, see
`reducer.levels.mlir.module`), editing it through the MLIR Python bindings, one pass per file.

Same contract as every pass: `candidates(program)` lazily yields smaller programs, largest cuts
first, and never runs anything. One line per pass below.
"""
from __future__ import annotations

from reducer.levels.mlir.passes.canonicalize import Canonicalize
from reducer.levels.mlir.passes.drop_arguments import DropArguments
from reducer.levels.mlir.passes.drop_attributes import DropAttributes
from reducer.levels.mlir.passes.drop_results import DropResults
from reducer.levels.mlir.passes.drop_unused_functions import DropUnusedFunctions
from reducer.levels.mlir.passes.erase_ops import EraseOps
from reducer.levels.mlir.passes.inline_calls import InlineCalls
from reducer.levels.mlir.passes.isolate_culprit import IsolateCulprit
from reducer.levels.mlir.passes.operands_to_arguments import OperandsToArguments
from reducer.levels.mlir.passes.return_earlier_value import ReturnEarlierValue
from reducer.levels.mlir.passes.shrink_tensors import ShrinkTensors
from reducer.levels.mlir.passes.unwrap_regions import UnwrapRegions

#: IR passes, in the order a round runs them: big structural cuts first
MLIR_PASSES = [
    IsolateCulprit,
    DropUnusedFunctions,
    ReturnEarlierValue,
    EraseOps,
    OperandsToArguments,
    UnwrapRegions,
    InlineCalls,
    DropResults,
    DropArguments,
    Canonicalize,
    DropAttributes,
    ShrinkTensors,
]


class Guarded:
    """A pass that stops proposing, instead of ending the reduction, when it meets a module it
    cannot handle (an exception while building a candidate); `errors` keeps what happened."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.errors: list[str] = []

    def candidates(self, program: str):
        try:
            yield from self.inner.candidates(program)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")


def mlir_passes(culprit: tuple[str, str] | None = None) -> list:
    """The IR passes; `culprit` (operation name, custom-call target) is the operation the failure
    names, when it names one."""
    return [Guarded(cls(culprit) if cls is IsolateCulprit else cls()) for cls in MLIR_PASSES]
