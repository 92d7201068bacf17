"""How the IR level shrinks one module (`reducer.levels.mlir.ir_level.IrLevel`).

`shrink_module` drives the engine over the pipeline passes and the module passes, alternating until
neither shrinks, with the judging, keep-aside, stop, stall, pass order and jobs of the
`LevelContext`, keeping the best module so far through `on_accept` (and, on --resume, starting from
the one kept, `resumed`); a failure of XLA alone then has XLA's culprit pass searched. After a
script, `after_script` enters from the module Enzyme-JAX ran for it (`reducer.levels.mlir.script_module`),
whose failure it establishes, and whose result it checks with the job's final check. The result's
files are `repro.mlir`, `pipeline.txt` (or `repro.hlo` for XLA) and the Python runner; its `report`
holds what a script's report says of the module.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

from oracles.base import Signature
from reducer.engine import Engine, Problem
from reducer.established import EstablishedFailure, Options
from reducer.levels.base import LevelContext, LevelResult
from reducer.levels.mlir import (script_module, inputs, failure_names, module as mm, module_report,
                                 pipeline as pl)
from reducer.levels.mlir.module_runs import ModuleFailure, ModuleRuns
from reducer.levels.mlir.passes import mlir_passes
from reducer.levels.mlir.pipeline_passes import pipeline_passes
from reducer.levels.mlir.run_module import XLA_KINDS

#: the IR level's budget in seconds at most after a script, and the least worth starting it with
IR_BUDGET, IR_MIN = 120.0, 10.0
#: how the report says where candidates ran
ISOLATION = {"worker": ", in process in a warm worker", "here": ", in process",
             "subprocess": ", each in a fresh subprocess"}


def sizes(runs: ModuleRuns, program: str) -> tuple[int, int]:
    """The module's operations and its pipeline's passes."""
    pipeline = mm.split(program)[0]
    return runs.rep.size(program), pl.PipelineText().size(pipeline) if pipeline else 0


def shrink_module(runs: ModuleRuns, program: str, established: EstablishedFailure, ctx: LevelContext,
                  until: float | None) -> LevelResult:
    """Pipeline passes, then module passes, again and again until neither shrinks (or `until`)."""
    start, keep = time.monotonic(), ctx.on_accept or (lambda best, counts: None)
    counts0 = sizes(runs, program)
    problem = Problem(runs.rep, runs.make_test(established, ctx.judge, ctx.keep_aside, ctx.stop),
                      on_event=ctx.on_event, on_accept=lambda best: keep(best, problem.stats), level="IR")
    keep(program, problem.stats)
    best, stalled = alternate(runs, established.module, program, problem, failure_names.culprit_of(
        established.signature), ctx, until)
    seconds, stats = time.monotonic() - start, problem.stats
    if ctx.stop.is_set():
        keep(best, stats)
    pipeline = mm.split(best)[0]
    ctx.log(f"reduced to {runs.rep.size(best)} operations ({', '.join(runs.rep.ops(best))})"
            + (f", pipeline of {pl.PipelineText().size(pipeline)} passes: {pipeline}" if pipeline else "")
            + f"; {stats.tested} tested in {seconds:.1f} s ({stats.tested / seconds if seconds else 0:.1f} "
            f"per second), {stats.accepted} accepted, {stats.cache_hits} cache hits")
    for name, counts in stats.per_pass.items():
        ctx.log(f"  pass {name}: {counts['tested']} tested, {counts['accepted']} accepted")
    if stalled:
        ctx.log(f"stopped early: no smaller candidate in {ctx.stall:g} s (--stall)")
    how = established.module
    if not ctx.stop.is_set():
        how = dataclasses.replace(how, xla_pass=runs.culprit_pass(best, established))
    summary = summarise(runs, how, best, counts0, seconds, stats.tested, stats.accepted, stats.cache_hits)
    return result_of(runs, how, best, established.signature, summary, stalled)


def alternate(runs: ModuleRuns, how: ModuleFailure, program: str, problem: Problem, culprit, ctx: LevelContext,
              until):
    """(the smallest program, whether the last engine stalled): the pipeline goes first in each
    round: it has few candidates, and each pass it loses makes every later run faster."""
    pipe_rep, stalled = pl.PipelineText(), False

    def engine(problem_: Problem, passes) -> Engine:
        return Engine(problem_, passes, jobs=ctx.jobs if how.isolation != "here" else 1, stop=ctx.stop,
                      deadline=until, stall=ctx.stall, reorder=ctx.reorder)

    while not ctx.stop.is_set() and not (until and time.monotonic() > until):
        before = program
        pipeline, module_text = mm.split(program)
        if pipeline:
            part = problem.part(pipe_rep, lambda candidate, m=module_text: mm.join(candidate, m), "pipeline")
            program = mm.join(engine(part, pipeline_passes()).reduce(pipeline), module_text)
        passes = mlir_passes(culprit, rep=runs.rep, log=ctx.log)
        shrinking = engine(problem, passes)
        program = shrinking.reduce(program)
        stalled = shrinking.stalled
        for p in passes:
            if p.errors:
                ctx.log(f"pass {p.name} stopped early {len(p.errors)} time(s): {p.errors[0][:200]}")
        pipeline = mm.split(program)[0]
        ctx.log(f"round: {runs.rep.size(program)} operations, {pipe_rep.size(pipeline) if pipeline else 0} "
                f"passes, {problem.stats.tested} tested")
        if program == before or stalled:
            break
    return program, stalled


def summarise(runs: ModuleRuns, how: ModuleFailure, best: str, counts0: tuple[int, int], seconds: float,
              tested: int, accepted: int, cache_hits: int, verified: str = "",
              interrupted: bool = False) -> module_report.ModuleSummary:
    """What the runner's header and the report say of the reduction of `runs`' module, run as `how`
    says, to `best`."""
    ops1, passes1 = sizes(runs, best)
    return module_report.ModuleSummary(
        source_name=how.source_name, kind=how.kind, original_ops=counts0[0], final_ops=ops1,
        original_passes=counts0[1], final_passes=passes1, seconds=seconds, tested=tested, accepted=accepted,
        cache_hits=cache_hits, verified=verified, interrupted=interrupted,
        isolation=ISOLATION.get(how.isolation, ""), xla=dict(how.xla) if how.kind in XLA_KINDS else None,
        xla_pass=how.xla_pass, from_jax="jax.result_info" in how.text)


def with_xla_pass(sig: Signature, found: dict | None) -> Signature:
    """The signature naming XLA's culprit pass, once the search found it."""
    if found and found.get("pass") and not sig.get("xla-pass"):
        return Signature(sig.family, sig.fields + (("xla-pass", found["pass"]),),
                         f"{sig.title} (XLA pass `{found['pass']}`)", sig.excerpt)
    return sig


def module_files(runs: ModuleRuns, how: ModuleFailure, best: str, sig: Signature, summary, info: dict,
                 hlo_text: str | None = None) -> dict:
    """`repro.mlir`, `pipeline.txt` (or `repro.hlo`, made once: `hlo_text`) and the runner."""
    pipeline, module_text = mm.split(best)
    if hlo_text is None and how.kind in XLA_KINDS:
        hlo_text = inputs.as_hlo(runs.rep.worker, module_text, runs.log)
    runner_text = module_report.runner(module_text, pipeline, sig, info, summary, runs.runner_name)
    return {"repro.mlir": best, **({"pipeline.txt": pipeline + "\n"} if pipeline else {}),
            **({"repro.hlo": hlo_text} if hlo_text else {}), runs.runner_name: runner_text}


def result_of(runs: ModuleRuns, how: ModuleFailure, best: str, sig: Signature, summary, stalled: bool) -> LevelResult:
    sig = with_xla_pass(sig, how.xla_pass)
    pipeline, module_text = mm.split(best)
    report = {"mlir": module_text, "pipeline": pipeline, "mlir_runner": runs.runner_name,
              "opt_line": pl.opt_command(pipeline) if pipeline else "", "mlir_failure": sig.title or ""}
    return LevelResult(best, summary.tested, summary.accepted, files=module_files(runs, how, best, sig, summary, {}),
                       levels=("IR",), report=report, stalled=stalled, cache_hits=summary.cache_hits,
                       seconds=summary.seconds, culprit=how.xla_pass)


# -- after a script ----------------------------------------------------------------------------------
def after_script(script: str, ctx: LevelContext) -> LevelResult | None:
    """The module Enzyme-JAX's pipeline ran for the (reduced) script, its failure established and
    reduced within IR_BUDGET, then checked with the job's final check; None (and a log line) when
    there is no module, no time, or the level fails: the script's result stands without it."""
    budget = min(IR_BUDGET, ctx.deadline - time.monotonic()) if ctx.deadline is not None else IR_BUDGET
    if budget < IR_MIN:
        ctx.log(f"IR level: not run (less than {IR_MIN:.0f} s of --max-time left)")
        return None
    end = time.monotonic() + budget
    log = lambda line: ctx.log(f"IR level: {line}")  # noqa: E731
    runs = None
    try:
        limits = dataclasses.replace(ctx.limits, timeout=ctx.bounded(ctx.limits.timeout))
        text = ctx.resumed or script_module.dumped_module(ctx.sandbox, script, limits)
        if text is None:
            log("the reduced script left no Enzyme MLIR module to reduce")
            return None
        runs = ModuleRuns(text, "the Enzyme MLIR dump of repro.py", Options(platform=ctx.platform),
                          Path(tempfile.mkdtemp(prefix="ir-", dir=ctx.scratch)), log,
                          bounded=lambda t: max(1.0, min(ctx.bounded(t), end - time.monotonic())),
                          runner_name="repro_mlir.py")
        ctx.adopt(runs.sandbox)
        return reduce_entered(runs, dataclasses.replace(ctx, log=log, deadline=end), end)
    except Exception as exc:  # the script's result must never be lost to the IR level
        log(f"not reduced ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    finally:
        if runs is not None:
            runs.close()


def reduce_entered(runs: ModuleRuns, ctx: LevelContext, end: float,
                   established: EstablishedFailure | None = None) -> LevelResult:
    """Establish the failure of the module the IR level entered (unless it is `established`), shrink
    it, check the result."""
    established = established or runs.establish(ctx.judge)
    how = established.module
    ops, passes = sizes(runs, how.original)
    ctx.log(f"reducing {how.source_name} ({ops} operations" + (f", pipeline of {passes} passes" if passes else "")
            + ")" + (" from the module the interrupted run kept" if ctx.resumed else ""))
    ctx.log(runs.described(established))
    checks = 2 * (1.5 * max(established.seconds, 1.0) + 5.0) + 2.0  # two fresh runs of the result, as the job's would
    result = shrink_module(runs, how.original, established, ctx, end - min(0.3 * (end - time.monotonic()), checks))
    if ctx.verify is not None and not ctx.stop.is_set():
        fresh = lambda p: runs.run_candidate(p, how, fresh=True)  # noqa: E731
        verdict = ctx.verify(result.program, established, how.original, fresh)
        ctx.log(f"verified: {verdict.text}")
    return result
