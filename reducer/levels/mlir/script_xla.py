"""After a script whose failure is XLA's (a `jit` result that differs, a crash while compiling or
running a compiled function, an XLA error status: `oracles.oracles.xla_owns`): the IR level on
the module XLA compiled for the reduced script.

The script runs once more with XLA's own dump (`--xla_dump_to`); its modules are tried largest
first (the user's jitted function, before the small ones op-by-op evaluation compiles) until one
fails on its own as a module does (`ModuleRuns`, from XLA: compiled and run, its results held to
XLA's unoptimised compilation). That one is reduced like a `.mlir` input, its culprit pass looked
for, and its files go beside the script's reproducer: `repro.mlir`, `repro.hlo` for XLA's own
tools, and `repro_xla.py`, the short reproducer of the module (`module_repro`), once a fresh run
confirms it.
"""
from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

import oracles
from reducer.errors import ReducerError
from reducer.established import EstablishedFailure, Options
from reducer.levels.base import LevelContext, LevelResult
from reducer.levels.mlir import inputs, module as mm, module_repro, xla_dump
from reducer.levels.mlir.module_runs import ModuleRuns

#: the most modules of the dump tried, largest first
TRIED = 4
RUNNER = "repro_xla.py"


def applies(established: EstablishedFailure) -> bool:
    return oracles.xla_owns(established.signature, established.oracle)


CAPTURE = '''
def _reducer_capture_arguments(folder):
    """(added by reducer) Save the arguments of each compiled call JAX makes, as `.npz` files."""
    import os
    import numpy as np
    from jax._src.interpreters import pxla

    call = pxla.ExecuteReplicated.__call__
    count = [0]

    def saving(self, *args):
        if count[0] < 64:
            try:
                kept = [np.asarray(a) for i, a in enumerate(args) if i in self.kept_var_idx]
                np.savez(os.path.join(folder, f"call_{count[0]:03d}.npz"), *kept)
            except Exception:
                pass
            count[0] += 1
        return call(self, *args)

    pxla.ExecuteReplicated.__call__ = saving


_reducer_capture_arguments(%r)
'''


def dumped_modules(ctx: LevelContext, script: str, limits) -> list[tuple[str, str, str | None]]:
    """The modules XLA compiled for `script` (StableHLO, named after their dump files), largest
    first, each with the arguments a call ran it with (an `.npz` of the script's run), or None."""
    from reducer.prologue import with_prologue, xla_flags as flags

    folder = Path(tempfile.mkdtemp(prefix="xla-dump-", dir=ctx.scratch))
    calls = folder / "calls"
    calls.mkdir()
    ctx.sandbox.run(flags(with_prologue(script, CAPTURE % str(calls)), f"--xla_dump_to={folder}"), limits, fresh=True)
    if not xla_dump.looks_like_dump(folder):
        return []
    modules = sorted(inputs.read(folder).modules, key=lambda m: -len(m[1]))[:TRIED]
    return [(name, text, called_with(text, sorted(calls.glob("call_*.npz")))) for name, text in modules]


def called_with(module_text: str, calls: list[Path]) -> str | None:
    """The last saved call whose arguments have the module's argument types, or None."""
    import numpy as np

    from reducer.levels.mlir import ir_worker

    wanted = ir_worker.shared().call({"do": "arguments", "module": module_text}).get("arguments")
    for path in reversed(calls):
        try:
            with np.load(path) as saved:
                got = [[list(saved[k].shape), saved[k].dtype.name] for k in saved.files]
        except (OSError, ValueError):
            continue
        if got == wanted:
            return str(path)
    return None


def after_script(script: str, ctx: LevelContext, budget: float) -> LevelResult | None:
    """The reduced module XLA compiled for `script`, within `budget` seconds; None (and a log line)
    when no module fails alone: the script's result stands without it."""
    end = time.monotonic() + budget
    log = lambda line: ctx.log(f"XLA module: {line}")  # noqa: E731
    limits = dataclasses.replace(ctx.limits, timeout=ctx.bounded(ctx.limits.timeout))
    try:
        modules = dumped_modules(ctx, script, limits)
    except Exception as exc:  # the script's result must never be lost to the module's
        log(f"XLA's dump of the reduced script could not be read ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    if not modules:
        log("the reduced script left no module in XLA's dump")
        return None
    for name, text, called in modules:
        if time.monotonic() > end - 5.0:
            log("out of its share of --max-time before a module of the dump failed alone")
            return None
        result = reduce_one(ctx, name, text, called, end, log)
        if result is not None:
            return result
    log(f"no module of the {len(modules)} largest in XLA's dump fails alone")
    return None


def reduce_one(ctx: LevelContext, name: str, text: str, called: str | None, end: float, log) -> LevelResult | None:
    """One module of the dump, run on the arguments it was `called` with: reduced when it fails alone."""
    from reducer.levels.mlir.module_shrink import reduce_entered, with_xla_pass

    called_as = Path(name).name.split(".before_optimizations")[0]
    runs = ModuleRuns(text, f"the module XLA compiled for repro.py ({called_as})", Options(platform=ctx.platform),
                      Path(tempfile.mkdtemp(prefix="xla-", dir=ctx.scratch)), log,
                      bounded=lambda t: max(1.0, min(ctx.bounded(t), end - time.monotonic())),
                      runner_name=RUNNER, from_xla=True, xla={"inputs": called} if called else None)
    try:
        ctx.adopt(runs.sandbox)
        try:
            established = runs.establish(ctx.judge)
        except ReducerError as exc:
            log(str(exc)[:300])
            return None
        result = reduce_entered(runs, dataclasses.replace(ctx, log=log, deadline=end), end, established)
        how = dataclasses.replace(established.module, xla_pass=result.culprit or established.module.xla_pass)
        return with_short_reproducer(runs, how, result, with_xla_pass(established.signature, how.xla_pass), log)
    except Exception as exc:  # the script's result must never be lost to the module's
        log(f"not reduced ({type(exc).__name__}: {str(exc)[:200]})")
        return None
    finally:
        runs.close()


def with_short_reproducer(runs: ModuleRuns, how, result: LevelResult, sig, log) -> LevelResult:
    """`result` with the module's short reproducer in place of the tool's runner, once confirmed,
    and its report naming XLA as the tool that fails."""
    module_text = mm.split(result.program)[1]
    header = "\n".join(line for line in result.files.get(RUNNER, "").splitlines()[:6] if line.startswith("# "))
    short, said, _ = module_repro.for_runs(runs, how, module_text, sig, header)
    log(f"reproducer: {said}")
    files = {**result.files, **({RUNNER: short} if short else {})}
    if short and (runs.scratch / module_repro.INPUTS).is_file():
        files[module_repro.INPUTS] = (runs.scratch / module_repro.INPUTS).read_bytes()
    return dataclasses.replace(result, files=files, report={**result.report, "mlir_tool": "XLA"})
