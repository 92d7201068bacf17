"""Reduction passes, grouped by level. A pass only proposes candidates; it never runs anything.

Contract (after Hypothesis' "designing shrink passes"): `candidates(program)` yields variants of
`program` lazily, in a fixed, deterministic order, largest cuts first; it keeps no state between
calls and has no fixpoint loop of its own; the engine decides what is tried, kept and repeated.
To add a pass: one module with a class that has `name` and `candidates`, and one line below.
"""
from __future__ import annotations

from reducer.passes.source.config_defaults import ConfigDefaults
from reducer.passes.source.def_to_lambda import DefToLambda
from reducer.passes.source.delete_statements import DeleteStatements
from reducer.passes.source.drop_arguments import DropArguments
from reducer.passes.source.drop_decorators import DropDecorators
from reducer.passes.source.drop_elements import DropElements
from reducer.passes.source.eta_reduce import EtaReduce
from reducer.passes.source.hoist_subexpressions import HoistSubexpressions
from reducer.passes.source.inline_calls import InlineCalls
from reducer.passes.source.inline_imports import InlineImports
from reducer.passes.source.inline_variables import InlineVariables
from reducer.passes.source.peel_transformations import PeelTransformations
from reducer.passes.source.remove_unused import RemoveUnused
from reducer.passes.source.reroute_values import RerouteValues
from reducer.passes.source.replace_with_constants import ReplaceWithConstants
from reducer.passes.source.scalarize_arrays import ScalarizeArrays
from reducer.passes.source.simplify_literals import SimplifyLiterals
from reducer.passes.source.unwrap_blocks import UnwrapBlocks

#: source-level passes, in the order a round runs them: big structural cuts first
SOURCE_PASSES = [
    RemoveUnused,
    UnwrapBlocks,
    ScalarizeArrays,
    DeleteStatements,
    InlineCalls,
    ConfigDefaults,
    InlineVariables,
    HoistSubexpressions,
    ReplaceWithConstants,
    DropDecorators,
    PeelTransformations,
    DefToLambda,
    EtaReduce,
    DropArguments,
    DropElements,
    RerouteValues,
    InlineImports,
    SimplifyLiterals,
]

# -- traced-program (jaxpr) passes, in the order a round runs them --------------------------------
from reducer.passes.jaxpr.bypass_equations import BypassEquations  # noqa: E402
from reducer.passes.jaxpr.drop_equations import DropEquations  # noqa: E402
from reducer.passes.jaxpr.drop_inputs import DropInputs  # noqa: E402
from reducer.passes.jaxpr.drop_operands import DropOperands  # noqa: E402
from reducer.passes.jaxpr.drop_outputs import DropOutputs  # noqa: E402
from reducer.passes.jaxpr.drop_transforms import DropTransforms  # noqa: E402
from reducer.passes.jaxpr.merge_inputs import MergeInputs  # noqa: E402
from reducer.passes.jaxpr.inline_calls import InlineCalls as InlineJaxprCalls  # noqa: E402
from reducer.passes.jaxpr.narrow_dtypes import NarrowDtypes  # noqa: E402
from reducer.passes.jaxpr.promote_to_inputs import PromoteToInputs  # noqa: E402
from reducer.passes.jaxpr.retarget_grads import RetargetGrads  # noqa: E402
from reducer.passes.jaxpr.shrink_dims import ShrinkDims  # noqa: E402
from reducer.passes.jaxpr.unmask_loops import UnmaskLoops  # noqa: E402
from reducer.passes.jaxpr.unwrap_control_flow import UnwrapControlFlow  # noqa: E402

JAXPR_PASSES = [
    DropOutputs,
    PromoteToInputs,
    DropEquations,
    InlineJaxprCalls,
    UnwrapControlFlow,
    UnmaskLoops,
    BypassEquations,
    DropInputs,
    MergeInputs,
    RetargetGrads,
    DropOperands,
    DropTransforms,
    ShrinkDims,
    NarrowDtypes,
]


def jaxpr_passes() -> list:
    return [cls() for cls in JAXPR_PASSES]


def source_passes() -> list:
    return [cls() for cls in SOURCE_PASSES]
