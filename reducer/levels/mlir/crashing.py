"""Which pass of Enzyme-JAX's pipeline a crash dies in.

A pipeline that kills the process (SIGSEGV, SIGABRT …) prints no diagnostic to say where it was.
`crashing_pass` runs prefixes of the pipeline on the module in the IR worker's forked child (a
crash costs that child only, and the worker forks another in milliseconds) and bisects for the
shortest prefix that dies by the same signal: its last pass is the one running when the process
died. `named` puts it into the crash signature (field `pass`) and its title; candidates are still
judged on the signal and the native frames where it died (`run.WithDiagnostic`), since finding
the pass costs several runs.
"""
from __future__ import annotations

import signal as signals

from oracles.outcome import Signature
from reducer.levels.mlir import labels, module as mm
from reducer.levels.mlir.ir_worker import Crashed


def dies_by(worker, module_text: str, pipeline: str) -> int | None:
    """The signal that kills the IR worker's child running `pipeline` on the module, or None."""
    try:
        worker.call({"do": "diagnose", "module": module_text, "pipeline": pipeline})
    except Crashed as exc:
        return exc.code if exc.code and exc.code > 0 else None
    except RuntimeError:
        return None
    return None


def crashing_pass(worker, module_text: str, pipeline: str) -> tuple[int | None, str | None]:
    """(the signal, the first top-level pass of `pipeline` whose prefix dies by it), or
    (None, None) when the pipeline does not kill the worker's child."""
    whole = dies_by(worker, module_text, pipeline)
    if whole is None:
        return None, None
    return whole, labels.failing_pass(pipeline, lambda prefix: dies_by(worker, module_text, prefix) == whole)


def named(rep, sig: Signature, program: str) -> Signature:
    """A crash signature with the pass it died in (see the module docstring); others as they are."""
    pipeline, module_text = mm.split(program)
    if sig.family != "crash" or sig.get("how") != "signal" or not pipeline or rep.worker is None:
        return sig
    code, name = crashing_pass(rep.worker, module_text, pipeline)
    if not name:
        return sig
    what = signals.Signals(code).name
    return Signature(sig.family, sig.fields + (("pass", name),), f"{what} in Enzyme-JAX pass `{name}`", sig.excerpt)

