"""The IR level (`reducer.levels.base.Level`): a module and its pipeline shrunk to the smallest that
still fail in the same way.

A module's job (`reducer.levels.mlir.module_job.MlirReduction`) establishes the failure before its
chain and hands `IrLevel` the module's runs (`reducer.levels.mlir.module_runs.ModuleRuns`); after
a script, `IrLevel` enters from the script instead: the module Enzyme-JAX ran for it
(`reducer.levels.mlir.script_module`), or the module XLA compiled for it when the failure is XLA's
(`reducer.levels.mlir.script_xla`). Either way `reducer.levels.mlir.module_shrink` shrinks it.
"""
from __future__ import annotations

import time

from reducer.established import EstablishedFailure
from reducer.levels.base import LevelContext, LevelResult
from reducer.levels.mlir import script_module, script_xla
from reducer.levels.mlir.module_runs import ModuleRuns
from reducer.levels.mlir.module_shrink import IR_BUDGET, IR_MIN, after_script, shrink_module

class IrLevel:
    """The IR level: on the module whose failure its job established (`runs`), or, after a script
    (`runs` None), on the module Enzyme-JAX's pipeline ran for it; a failure there is only logged:
    the script's result must never be lost to it."""

    name, suffix = "IR", ".mlir"

    def __init__(self, runs: ModuleRuns | None = None):
        self.runs = runs

    def applies(self, established: EstablishedFailure, program: str) -> bool:
        return self.runs is not None or script_module.applies(established.signature, program) \
            or script_xla.applies(established)

    def why_not(self, established: EstablishedFailure, program: str) -> str | None:
        return None if self.applies(established, program) else ""

    def reduce(self, program: str, established: EstablishedFailure, ctx: LevelContext) -> LevelResult | None:
        if self.runs is None and script_module.applies(established.signature, program):
            return after_script(program, ctx)
        if self.runs is None:  # XLA's failure: half of what is left, the rest for the script's culprit pass
            left = ctx.deadline - time.monotonic() if ctx.deadline is not None else 2 * IR_BUDGET
            if left / 2 < IR_MIN:
                ctx.log(f"XLA module: not run (less than {2 * IR_MIN:.0f} s of --max-time left)")
                return None
            return script_xla.after_script(program, ctx, min(IR_BUDGET, left / 2))
        until = ctx.until() if callable(ctx.until) else ctx.until
        return shrink_module(self.runs, ctx.resumed or program, established, ctx, until)
