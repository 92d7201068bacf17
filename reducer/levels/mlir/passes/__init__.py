"""IR-level passes: they shrink an MLIR module (with its pipeline line, see
`reducer.levels.mlir.module`), editing it through the MLIR Python bindings, one pass per file.

Each pass reads the program parsed once (`ir_tools.Item`), reports its change points (`points(item)`:
JSON values, largest cuts first) and makes the candidate for one point (`apply(item, point)`: the
program text, or None), as `reducer.engine` asks; it never runs anything. Each is a
`reducer.passes.ReductionPass`. They run in the IR worker (`reducer.levels.mlir.ir_worker`), which
keeps the parsed item and answers each candidate in one round trip, or here, each `Guarded` (a pass
that the bindings fail on stops on that module, and says so). One line per pass below.
"""
from __future__ import annotations

from reducer.levels.mlir.passes.canonicalize import Canonicalize
from reducer.levels.mlir.passes.drop_arguments import DropArguments
from reducer.levels.mlir.passes.drop_attributes import DropAttributes
from reducer.levels.mlir.passes.drop_lines import DropLines
from reducer.levels.mlir.passes.drop_results import DropResults
from reducer.levels.mlir.passes.drop_unused_functions import DropUnusedFunctions
from reducer.levels.mlir.passes.erase_ops import EraseOps
from reducer.levels.mlir.passes.inline_calls import InlineCalls
from reducer.levels.mlir.passes.isolate_culprit import IsolateCulprit
from reducer.levels.mlir.passes.operands_to_arguments import OperandsToArguments
from reducer.levels.mlir.passes.return_earlier_value import ReturnEarlierValue
from reducer.levels.mlir.passes.shrink_tensors import ShrinkTensors
from reducer.levels.mlir.passes.unwrap_regions import UnwrapRegions
from reducer.passes import Guarded

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


#: passes for a module read as text (`form` "text"): the bindings cannot hold it as it fails
TEXT_PASSES = [DropLines]


def local_pass(name: str, culprit: tuple[str, str] | None = None):
    """The pass of this name, built here (in the IR worker)."""
    for cls in MLIR_PASSES + TEXT_PASSES:
        if cls.name == name:
            return cls(tuple(culprit) if culprit else None) if cls is IsolateCulprit else cls()
    raise ValueError(f"no IR pass named {name!r}")


def mlir_passes(culprit: tuple[str, str] | None = None, rep=None, log=None) -> list:
    """The IR passes; `culprit` (operation name, custom-call target) is the operation the failure
    names, when it names one. With `rep` (a `MlirModule` with a worker) the passes make their
    candidates in the IR worker, in `rep`'s form; otherwise here."""
    classes = TEXT_PASSES if rep is not None and rep.form == "text" else MLIR_PASSES
    if rep is not None and rep.worker is not None:
        from reducer.levels.mlir.ir_worker import RemotePass

        return [RemotePass(cls.name, rep.worker, rep, culprit, log) for cls in classes]
    return [Guarded(local_pass(cls.name, culprit), log) for cls in classes]
