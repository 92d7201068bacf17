"""Traced-program passes: they shrink a jaxpr spec (`reducer.levels.jaxpr.program`), one pass per file.

Same contract as every pass (`reducer.engine`): `points(spec)` lists what the pass can change in
the parsed spec (a `reducer.levels.jaxpr.model.Spec` the engine parses once and no pass changes),
largest cuts first; `apply(spec, point)` edits a copy and returns the candidate's text (JSON is
written only there). Passes never run anything.
To add a pass: one module with a `_edit.JaxprPass` subclass, and one line below.
"""
from __future__ import annotations

from reducer.levels.jaxpr.passes.bypass_equations import BypassEquations
from reducer.levels.jaxpr.passes.drop_equations import DropEquations
from reducer.levels.jaxpr.passes.drop_inputs import DropInputs
from reducer.levels.jaxpr.passes.drop_operands import DropOperands
from reducer.levels.jaxpr.passes.drop_outputs import DropOutputs
from reducer.levels.jaxpr.passes.drop_transforms import DropTransforms
from reducer.levels.jaxpr.passes.merge_inputs import MergeInputs
from reducer.levels.jaxpr.passes.inline_calls import InlineCalls as InlineJaxprCalls
from reducer.levels.jaxpr.passes.isolate_equation import IsolateEquation
from reducer.levels.jaxpr.passes.narrow_dtypes import NarrowDtypes
from reducer.levels.jaxpr.passes.promote_to_inputs import PromoteToInputs
from reducer.levels.jaxpr.passes.reshape_bypass import ReshapeBypass
from reducer.levels.jaxpr.passes.retarget_grads import RetargetGrads
from reducer.levels.jaxpr.passes.shrink_dims import ShrinkDims
from reducer.levels.jaxpr.passes.one_point import OnePoint
from reducer.levels.jaxpr.passes.unmask_loops import UnmaskLoops
from reducer.levels.jaxpr.passes.unwrap_control_flow import UnwrapControlFlow

JAXPR_PASSES = [
    IsolateEquation,
    DropOutputs,
    PromoteToInputs,
    DropEquations,
    InlineJaxprCalls,
    UnwrapControlFlow,
    UnmaskLoops,
    BypassEquations,
    ReshapeBypass,
    DropInputs,
    MergeInputs,
    RetargetGrads,
    DropOperands,
    DropTransforms,
    ShrinkDims,
    OnePoint,
    NarrowDtypes,
]


def jaxpr_passes(recorded: dict | None = None) -> list:
    """The passes, in order; `recorded`: the values the captured call's variables had (a cut keeps them)."""
    return [cls(recorded) for cls in JAXPR_PASSES]
