"""Running an MLIR candidate: Enzyme-JAX's pass pipeline on a module, or XLA compiling and running
it (`xla_check`; with the phase it is in, and against a reference compilation for wrong results).

Three ways, one result type (`oracles.outcome.RunResult`, so the existing oracles classify it):
- `run_here`: in this process (`enzyme_ad.jax.enzyme_call.run_pass_pipeline`, or `xla_check`),
  tens of milliseconds; the diagnostics MLIR prints on file descriptor 2 are
  captured, and the Python exception is kept as the traceback a script would print.
- an `IrModule` request (`reducer.workers.requests`) run through the sandbox: the same, in the warm
  workers every level shares, with their timeout, cancellation and crash isolation.
- a runner script (`runner_source`) run through the sandbox: the reproducer itself, used for
  crashes (whose signal and native frames are those a user will see) and to verify the result
  in a fresh interpreter.
"""
from __future__ import annotations

import re
import threading
import time
import traceback

from oracles import kinds
from oracles.base import Oracle, Signature, is_hang, normalize_message
from oracles.outcome import RunResult
from reducer.levels.mlir import failure_names
from reducer.levels.mlir.text import captured_stderr

ENZYME = "enzyme"
#: XLA compiles the module for the platform and runs it on fixed inputs (`xla_check.run`)
XLA = "xla"
#: XLA's compiled results against a reference compilation of the same module (`xla_check.compare`)
XLA_RESULTS = "xla-results"
#: the kinds that run the module with XLA alone (no Enzyme-JAX pass)
XLA_KINDS = (XLA, XLA_RESULTS)
#: the pipeline's gradient, run and checked against finite differences (`gradient_check`)
GRADIENT = "gradient"
#: the kinds that run an Enzyme-JAX pass pipeline
PIPELINE_KINDS = (ENZYME, GRADIENT)
_here_lock = threading.Lock()


def execute(kind: str, module_text: str, pipeline: str | None, xla: dict | None = None) -> None:
    """Run the candidate; `xla` holds XLA's `options` for the compilation and, for the results
    kind, the `reference` options to compare with."""
    xla = xla or {}
    if kind == ENZYME:
        from enzyme_ad.jax import enzyme_call

        enzyme_call.run_pass_pipeline([], module_text, pipeline or "")
    elif kind == GRADIENT:
        from reducer.levels.mlir import gradient_check

        gradient_check.check(module_text, pipeline or "")
    elif kind == XLA_RESULTS:
        from reducer.levels.mlir import xla_check

        xla_check.compare(module_text, xla.get("reference"), xla.get("options"),
                          xla_check.given_inputs(module_text, xla.get("inputs")))
    else:
        from reducer.levels.mlir import xla_check

        xla_check.run(module_text, xla.get("options"), xla_check.given_inputs(module_text, xla.get("inputs")))


def run_here(kind: str, module_text: str, pipeline: str | None, xla: dict | None = None) -> RunResult:
    """Run the candidate in this process; an exception becomes exit status 1 and its traceback."""
    with _here_lock:
        start = time.monotonic()
        tb = ""
        with captured_stderr() as err:
            try:
                execute(kind, module_text, pipeline, xla)
                code = 0
            except Exception:
                code, tb = 1, traceback.format_exc()
        seconds = time.monotonic() - start
    return RunResult(returncode=code, stdout="", stderr=err["text"] + tb, seconds=seconds)


def python_literal(text: str) -> str:
    """`text` as a Python string literal that reads well for a module."""
    if "'''" not in text and not text.endswith("\\"):
        return "r'''\n" + text.rstrip("\n") + "\n'''"
    return repr(text)


NATIVE_FRAMES = r'''
def _report_native_frames():
    """On a fatal signal, print the native frames (object+offset) where it happened, innermost
    first, then the Python traceback, and die of the same signal (added by reducer to tell one
    crash site from another)."""
    import ctypes, os, signal, sys

    libc = ctypes.CDLL(None)

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p), ("sname", ctypes.c_char_p),
                    ("saddr", ctypes.c_void_p)]

    libc.backtrace.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
    libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]

    def on_fault(signum):
        try:
            report(signum)
        finally:  # never return into the faulting instruction
            libc.signal(signum, 0)
            os.kill(os.getpid(), signum)

    def report(signum):
        frames = (ctypes.c_void_p * 64)()
        names = []
        for address in frames[:libc.backtrace(frames, 64)]:
            info = DlInfo()
            if address and libc.dladdr(address, ctypes.byref(info)) and info.fname:
                names.append(f"{os.path.basename(info.fname.decode())}+{address - (info.fbase or 0):#x}")
        handler = max((i for i, n in enumerate(names[:24]) if n.startswith(("libffi", "_ctypes"))), default=-1)
        what = {signal.SIGSEGV: "Segmentation fault", signal.SIGBUS: "Bus error", signal.SIGABRT: "Aborted",
                signal.SIGILL: "Illegal instruction", signal.SIGFPE: "Floating-point exception"}.get(signum, "")
        lines = [f"Fatal Python error: {what}", "", "Current thread (most recent call first):"]
        frame = sys._getframe(0).f_back.f_back  # outside this handler (None on a thread of XLA's own)
        while frame is not None:
            lines.append(f'  File "{frame.f_code.co_filename}", line {frame.f_lineno} in {frame.f_code.co_name}')
            frame = frame.f_back
        lines += [f"native frame: {n}" for n in names[handler + 2:handler + 10]]
        os.write(2, ("\n".join(lines) + "\n").encode())

    _report_native_frames.handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(on_fault)
    for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
        libc.signal(s, ctypes.cast(_report_native_frames.handler, ctypes.c_void_p))


try:
    _report_native_frames()
except Exception:
    pass
'''
NATIVE_FRAME = re.compile(r"^native frame: (?P<frame>\S+)$", re.M)


def runner_source(kind: str, module_text: str, pipeline: str | None, header: str = "",
                  native_frames: bool = False, xla: dict | None = None) -> str:
    """A standalone Python script that runs the candidate as `run_here` does; `native_frames` adds
    a handler that prints where a crash happened in native code."""
    if kind == ENZYME:
        body = ("from enzyme_ad.jax import enzyme_call\n\n"
                f"PIPELINE = {pipeline!r}\n"
                f"MODULE = {python_literal(module_text)}\n\n"
                "# Raises ValueError with MLIR's diagnostics when the pipeline fails.\n"
                "enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)\n"
                'print("the pipeline ran without error")\n')
    elif kind == GRADIENT:
        body = (gradient_check_source() + "\n\n"
                f"PIPELINE = {pipeline!r}\n"
                f"MODULE = {python_literal(module_text)}\n\n"
                "# Raises GradientDisagrees when the pipeline's gradient disagrees with finite differences.\n"
                "check(MODULE, PIPELINE)\n"
                'print("the gradient agrees with finite differences")\n')
    elif kind == XLA_RESULTS:
        body = (xla_check_source() + "\n\n"
                f"MODULE = {python_literal(module_text)}\n"
                f"OPTIONS = {(xla or {}).get('options') or {}!r}\n"
                f"REFERENCE = {(xla or {}).get('reference') or None!r}  # None: XLA with its optimisations off\n"
                f"INPUTS = {(xla or {}).get('inputs')!r}  # arguments a program ran it with (.npz), or None\n\n"
                "# Raises ResultsDiffer when XLA's results with OPTIONS differ from those with REFERENCE.\n"
                "compare(MODULE, REFERENCE, OPTIONS, given_inputs(MODULE, INPUTS))\n"
                'print("the results agree")\n')
    else:
        body = (xla_check_source() + "\n\n"
                f"MODULE = {python_literal(module_text)}\n"
                f"OPTIONS = {(xla or {}).get('options') or {}!r}\n"
                f"INPUTS = {(xla or {}).get('inputs')!r}  # arguments a program ran it with (.npz), or None\n\n"
                "# XLA compiles the module for this machine's default platform and runs it on fixed inputs;\n"
                "# it raises (or the process dies) when XLA fails.\n"
                "outputs = run(MODULE, OPTIONS, given_inputs(MODULE, INPUTS))\n"
                'print("XLA compiled and ran the module:", ", ".join(f"{o.dtype}{list(o.shape)}" for o in outputs))\n')
    if native_frames:
        body = NATIVE_FRAMES.lstrip("\n") + "\n" + body
    return (header.rstrip("\n") + "\n" if header else "") + body


def xla_check_source() -> str:
    """`xla_check`'s own code, which an XLA reproducer carries (it imports nothing of reducer)."""
    from reducer.levels.mlir import xla_check

    with open(xla_check.__file__, encoding="utf-8") as fh:
        return fh.read().replace("from __future__ import annotations\n", "").rstrip("\n")


def gradient_check_source() -> str:
    """`gradient_check`'s own code, which a numeric reproducer carries (it imports nothing of reducer)."""
    from reducer.levels.mlir import gradient_check

    with open(gradient_check.__file__, encoding="utf-8") as fh:
        return fh.read().replace("from __future__ import annotations\n", "").rstrip("\n")


DIAGNOSTIC = re.compile(r"(?:^|:\s)error:\s*(?P<msg>.+)$", re.M)


def first_diagnostic(text: str) -> str | None:
    """The first MLIR error diagnostic in a run's output, normalised."""
    m = DIAGNOSTIC.search(text)
    return normalize_message(m.group("msg")) if m else None


def native_frames(text: str, n: int = 2) -> str | None:
    """The innermost native frames of a crash, as the runner's handler printed them."""
    found = [m.group("frame") for m in NATIVE_FRAME.finditer(text)]
    return " < ".join(found[:n]) if found else None


PHASES = re.compile(r"^reducer-xla: phase=(?P<phase>\w+)$", re.M)
#: what XLA was doing, by phase, for titles
DOING = {"compile": "while XLA compiles the module", "execute": "while the compiled module runs"}


def xla_phase(text: str) -> str | None:
    """The phase XLA was in when the run ended (`xla_check.phase`): "compile" or "execute"."""
    found = [m.group("phase") for m in PHASES.finditer(text)]
    return found[-1] if found else None


def with_phase(sig: Signature, output: str) -> Signature:
    """A crash of a run of XLA, with the phase it died in (field `phase`, and the title)."""
    phase = xla_phase(output)
    if not phase or sig.get("phase"):
        return sig
    return Signature(sig.family, sig.fields + (("phase", phase),), f"{sig.title} {DOING.get(phase, '')}".strip(),
                     sig.excerpt)


class WithDiagnostic(Oracle):
    """A failure family whose signature also keeps what tells IR-level failures apart.

    Every failing Enzyme pipeline raises the same `INTERNAL: Failed to parse pipeline`, and every
    crash inside it dies in the same Python line: the first MLIR error diagnostic, or the innermost
    native frames of the crash, say which failure it is, so a candidate that fails in another way
    is not kept.
    """

    def __init__(self, base: Oracle):
        self.base = base
        self.name = base.name

    def classify(self, run: RunResult) -> Signature | None:
        sig = self.base.classify(run)
        if not kinds.crash(sig):
            return sig
        sig = with_phase(sig, run.output)
        if sig.get("how") == "signal":
            frames = native_frames(run.output)
            if not frames:
                return sig
            shown = "\n".join(f"native frame: {m.group('frame')}" for m in NATIVE_FRAME.finditer(run.output))
            # the runner's one Python line says nothing of where it died: the native frames do
            name = sig.get("detail").split(" in ")[0]
            fields = tuple((k, name if k == "detail" else v) for k, v in sig.fields) + (("native", frames),)
            doing = DOING.get(sig.get("phase"), "")
            return Signature(sig.family, fields, f"{name} on {sig.get('platform')} at {frames.split(' < ')[0]}"
                             + (f" {doing}" if doing else ""),
                             (sig.excerpt + "\n" + shown).strip())
        diag = first_diagnostic(run.output)
        if not diag:
            return sig
        return failure_names.relabel(sig, run.output, diag)  # parse, pipeline-parse or pass-failure

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        seen = self.classify(run)
        if seen is None or (run.timed_out and not is_hang(seen)):  # a run counts only when it ended
            return False, None
        if any(wanted.get(k) or seen.get(k) for k in ("diagnostic", "native", "phase")):
            return failure_names.same_kind(failure_names.without_pass(wanted), seen), seen
        return self.base.judge(failure_names.as_seen(failure_names.without_pass(wanted), seen), run)
