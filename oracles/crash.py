"""Crash: the process dies by a signal, XLA returns an error status, CUDA fails, JAX breaks inside.

Signature: the platform, how it died (`signal`, `xla-status`, `cuda`, `internal-error`, `hang`) and
a normalised detail: the signal name and where the crashing thread was (`oracles.base.crashing_frame`:
faulthandler's "Current thread", never reducer's own frames, `<native thread>` for a thread without
Python frames; the harness makes CPU dispatch synchronous, so a computation that dies does so while
the thread that launched it waits in it), the
XLA status code and its message with numbers and shapes taken out, the CUDA error name, or the
exception type and the innermost jax / jaxlib / enzyme_ad frame of its traceback. A death by a
signal also names, when the reduction found it (`reducer.levels.jaxpr.crash_site`), the operation
whose compilation or derivative kills the process (`op`), so that two crashes in one frame of JAX's
stay two bugs. Hangs count only
when asked for (`Crash(hangs=True)`), since any candidate can loop forever.
"""
from __future__ import annotations

import re
import signal as signals

from oracles.base import (Oracle, Signature, crashing_frame, excerpt, final_exception, innermost_library_frame,
                          normalize_message)
from oracles.library_check import library_check
from oracles.outcome import RunResult, program_outcome
from oracles.owners import of_package

FATAL_SIGNALS = {signals.SIGSEGV, signals.SIGABRT, signals.SIGBUS, signals.SIGILL, signals.SIGFPE}
XLA_STATUS = re.compile(
    r"(?:XlaRuntimeError|JaxRuntimeError|RuntimeError|ValueError)?:?\s*(?P<code>INTERNAL|RESOURCE_EXHAUSTED|UNKNOWN|"
    r"FAILED_PRECONDITION|UNIMPLEMENTED|ABORTED|DATA_LOSS|UNAVAILABLE|OUT_OF_RANGE|INVALID_ARGUMENT|"
    r"DEADLINE_EXCEEDED|NOT_FOUND|PERMISSION_DENIED|CANCELLED):\s*(?P<msg>.*)$", re.M)
CUDA_ERROR = re.compile(r"\b(?P<err>CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+|CUDNN_STATUS_[A-Z_]+|CUBLAS_STATUS_[A-Z_]+"
                        r"|CUSOLVER_STATUS_[A-Z_]+|ptxas (?:fatal|error)|NCCL error)")
#: exception types that signal a bug inside the library, not a message written for the user
INTERNAL = {"AssertionError", "AttributeError", "IndexError", "KeyError", "NameError", "UnboundLocalError",
            "RecursionError", "ZeroDivisionError", "SystemError", "StopIteration", "UnicodeError", "OverflowError"}
#: the harness-report key under which the reduction names the operation a crash happens in
#: (`reducer.levels.jaxpr.crash_site`): the signature's `op`
OPERATION = "crash_operation"
RAISED = re.compile(r"^(?:[\w.]+\.)?(?:XlaRuntimeError|JaxRuntimeError)\b", re.M)


def doing(frame: str) -> str:
    """Where a crash happened, as a title says it: what JAX was doing in that frame, else the frame."""
    if frame.endswith("pxla.py:__call__"):
        return "while a compiled (`jit`) function runs"
    if "compil" in frame.rsplit(":", 1)[-1] or frame.endswith("compiler.py"):
        return "while XLA compiles a `jit` function"
    return f"in `{frame}`"


class Crash(Oracle):
    name = "crash"

    def __init__(self, platform: str = "cpu", hangs: bool = False):
        self.platform = platform
        self.hangs = hangs

    def owner(self, sig: Signature) -> str:
        """XLA's, for an error status, a CUDA error, or a death while JAX compiles or runs (a frame of
        jax or jaxlib, or native code alone); Enzyme-JAX's for a death in its frames; the program's for
        one in a frame of its own (a `ctypes` call); the library's whose frame raised, for an internal
        error; JAX's for a hang."""
        how, detail = sig.get("how"), sig.get("detail") or ""
        frame = detail.split(" in ", 1)[1] if " in " in detail else ""
        if how == "internal-error":
            return of_package(frame)
        if how == "hang":
            return "jax"
        if how != "signal" or not frame or frame.startswith(("jax/", "jaxlib/", "<native")):
            return "xla"
        return "enzyme-jax" if frame.startswith("enzyme_ad/") else "program"

    def _sig(self, how: str, detail: str, title: str, text_excerpt: str, op: str = "") -> Signature:
        fields = (("platform", self.platform), ("how", how), ("detail", detail)) + ((("op", op),) if op else ())
        return Signature(self.name, fields, title, text_excerpt)

    def same(self, wanted: Signature, seen: Signature) -> bool:
        """Equal signatures; one recorded without an operation at fault (none was found, or it was
        recorded before crashes named one) matches the same crash in any operation."""
        if wanted.get("op"):
            return (wanted.family, wanted.fields) == (seen.family, seen.fields)
        return without_operation(wanted) == without_operation(seen)

    def classify(self, run: RunResult) -> Signature | None:
        run = program_outcome(run)
        text = run.output
        if run.timed_out:
            if not self.hangs:
                return None
            return self._sig("hang", "timeout", f"Hang on {self.platform}", "\n".join(text.splitlines()[-8:]))
        if run.signal in FATAL_SIGNALS:
            name = signals.Signals(run.signal).name
            frame = crashing_frame(text)
            op = run.harness.get(OPERATION, "")
            title = f"{name} on {self.platform} {doing(frame)}" + (f" (operation `{op}`)" if op else "")
            return self._sig("signal", f"{name} in {frame}", title, excerpt(text, "Fatal Python error", 1, 6), op)
        if run.returncode in (0, None):
            return None
        cuda = CUDA_ERROR.search(text)
        if cuda:
            err = cuda.group("err")
            return self._sig("cuda", err, f"CUDA error `{err}` on {self.platform}", excerpt(text, err, 2, 3))
        if library_check(text):  # the program's check, raised through a host callback under `jit`
            return None
        ended = final_exception(text)
        for m in XLA_STATUS.finditer(text):
            if RAISED.search(text) or (ended and ended[1].startswith(m.group("code"))):
                msg = normalize_message(m.group("msg"))
                return self._sig("xla-status", f"{m.group('code')}: {msg}",
                                 f"XLA error `{m.group('code')}` on {self.platform}", excerpt(text, m.group(0), 2, 3))
        if ended and ended[0] in INTERNAL:
            frame = innermost_library_frame(text)
            if frame:
                kind, msg = ended
                return self._sig("internal-error", f"{kind} in {frame}",
                                 f"JAX internal error: `{kind}` in `{frame}`", excerpt(text, f"{kind}:", 4, 2))
        return None


def without_operation(sig: Signature) -> tuple:
    """What two crashes must share to be one, the operation at fault aside."""
    return sig.family, tuple((k, v) for k, v in sig.fields if k != "op")
