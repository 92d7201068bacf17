"""Source-level passes: they shrink a Python script through its AST, one pass per file.

Contract (`reducer.engine`; after Hypothesis' "designing shrink passes" and llvm-reduce):
`points(script)` lists what the pass can change in a `Script` (the text and its tree, parsed once
by the engine, which no pass changes, and where the program failed when a run of it told), in a fixed,
deterministic order, largest cuts first (a
`Chunks(where, n)` entry lets the driver lay out chunks of n items); `apply(script, point)` makes
the candidate for one point from a fresh parse. A pass keeps no state between calls and has no
fixpoint loop of its own; the engine decides what is tried, kept and repeated, and where to resume.
To add a pass: one module with a `reducer.levels.source.ast_tools.SourcePass` subclass that has `name`, `points` and
`apply`, and one line below.
"""
from __future__ import annotations

from reducer.levels.source.passes.bare_conversion import BareConversion
from reducer.levels.source.passes.call_failing_function import CallFailingFunction
from reducer.levels.source.passes.collapse_comprehensions import CollapseComprehensions
from reducer.levels.source.passes.config_defaults import ConfigDefaults
from reducer.levels.source.passes.cut_after_failure import CutAfterFailure
from reducer.levels.source.passes.def_to_lambda import DefToLambda
from reducer.levels.source.passes.drop_assert_messages import DropAssertMessages
from reducer.levels.source.passes.delete_statements import DeleteStatements
from reducer.levels.source.passes.drop_arguments import DropArguments
from reducer.levels.source.passes.drop_decorators import DropDecorators
from reducer.levels.source.passes.drop_elements import DropElements
from reducer.levels.source.passes.eta_reduce import EtaReduce
from reducer.levels.source.passes.hoist_statements import HoistStatements
from reducer.levels.source.passes.hoist_subexpressions import HoistSubexpressions
from reducer.levels.source.passes.inline_calls import InlineCalls
from reducer.levels.source.passes.inline_imports import InlineImports
from reducer.levels.source.passes.inline_methods import InlineMethods
from reducer.levels.source.passes.inline_variables import InlineVariables
from reducer.levels.source.passes.original_calls import OriginalCalls
from reducer.levels.source.passes.peel_transformations import PeelTransformations
from reducer.levels.source.passes.positional_arguments import PositionalArguments
from reducer.levels.source.passes.remove_unused import RemoveUnused
from reducer.levels.source.passes.reroute_values import RerouteValues
from reducer.levels.source.passes.replace_with_constants import ReplaceWithConstants
from reducer.levels.source.passes.scalarize_arrays import ScalarizeArrays
from reducer.levels.source.passes.simplify_literals import SimplifyLiterals
from reducer.levels.source.passes.unwrap_blocks import UnwrapBlocks

#: source-level passes, in the order a round runs them: big structural cuts first
SOURCE_PASSES = [
    CallFailingFunction,
    CutAfterFailure,
    RemoveUnused,
    OriginalCalls,
    UnwrapBlocks,
    ScalarizeArrays,
    DeleteStatements,
    InlineCalls,
    InlineMethods,
    ConfigDefaults,
    InlineVariables,
    BareConversion,
    HoistSubexpressions,
    CollapseComprehensions,
    ReplaceWithConstants,
    DropDecorators,
    DropAssertMessages,
    PeelTransformations,
    HoistStatements,
    DefToLambda,
    EtaReduce,
    DropArguments,
    DropElements,
    RerouteValues,
    InlineImports,
    SimplifyLiterals,
    PositionalArguments,
]


def source_passes() -> list:
    return [cls() for cls in SOURCE_PASSES]
