"""IR-level passes: they shrink an MLIR module (with its pipeline line, see
`reducer.mlir_module`), editing it through the MLIR Python bindings, one pass per file.

Same contract as every pass: `candidates(program)` lazily yields smaller programs, largest cuts
first, and never runs anything. One line per pass below.
"""
from __future__ import annotations

from reducer.passes.mlir.canonicalize import Canonicalize
from reducer.passes.mlir.drop_arguments import DropArguments
from reducer.passes.mlir.drop_attributes import DropAttributes
from reducer.passes.mlir.drop_results import DropResults
from reducer.passes.mlir.drop_unused_functions import DropUnusedFunctions
from reducer.passes.mlir.erase_ops import EraseOps
from reducer.passes.mlir.inline_calls import InlineCalls
from reducer.passes.mlir.isolate_culprit import IsolateCulprit
from reducer.passes.mlir.operands_to_arguments import OperandsToArguments
from reducer.passes.mlir.return_earlier_value import ReturnEarlierValue
from reducer.passes.mlir.shrink_tensors import ShrinkTensors
from reducer.passes.mlir.unwrap_regions import UnwrapRegions

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
