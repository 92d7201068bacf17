"""Which pass of Enzyme-JAX's pipeline a crash dies in.

A pipeline that kills the process (SIGSEGV, SIGABRT …) prints no diagnostic to say where it was.
`CrashingPass` (a localiser, `reducer.faults`) runs prefixes of the pipeline on the module in the IR
worker's forked child (a crash costs that child only, and the worker forks another in milliseconds)
and bisects for the shortest prefix that dies by the same signal (`failure_names.FailingPass`): its last
pass is the one running when the process died. `named` puts it into the crash signature (field
`pass`) and its title; candidates are still judged on the signal and the native frames where it
died (`run.WithDiagnostic`), since finding the pass costs several runs.
"""
from __future__ import annotations

import signal as signals

from oracles import kinds
from oracles.outcome import Signature
from reducer.faults import Fault, signed
from reducer.levels.mlir import failure_names
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


class CrashingPass(failure_names.FailingPass):
    """The localiser of the pass a crash of the pipeline dies in, run in `worker`'s forked children."""

    def __init__(self, worker):
        super().__init__(lambda module_text, pipeline: dies_by(worker, module_text, pipeline))

    def applies(self, signature: Signature | None) -> bool:
        return signature is None or kinds.signal_crash(signature)

    def fault(self, name: str, whole) -> Fault:
        what = signals.Signals(whole).name
        return Fault(name, (("pass", name),), f"The shortest prefix of the pipeline that dies by {what} as the whole "
                                              f"does ends with `{name}`.", f"{what} in Enzyme-JAX pass `{name}`")


def named(rep, sig: Signature, program: str) -> Signature:
    """A crash signature with the pass it died in (see the module docstring); others as they are."""
    if rep.worker is None:
        return sig
    return signed(sig, CrashingPass(rep.worker).locate(program, None, sig))
