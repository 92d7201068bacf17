"""Running an MLIR candidate: Enzyme-JAX's pass pipeline or XLA's compiler on a module.

Three ways, one result type (`reducer.workers.sandbox.RunResult`, so the existing oracles classify it):
- `run_here`: in this process (`enzyme_ad.jax.enzyme_call.run_pass_pipeline`, or XLA's
  `compile_and_load`), tens of milliseconds; the diagnostics MLIR prints on file descriptor 2 are
  captured, and the Python exception is kept as the traceback a script would print.
- `Server`: the same, in a warm worker process (`python -m reducer.levels.mlir.worker --serve`) that
  serves one candidate after another; a crash kills only the worker's forked child, and the next
  one is forked at once.
- a runner script (`runner_source`) run through the sandbox: the reproducer itself, used for
  crashes (a fresh forked child per candidate, whose signal and faulthandler frames are those a
  user will see) and to verify the result in a fresh interpreter.
"""
from __future__ import annotations

import json
import os
import queue
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

from oracles.base import Oracle, Signature, normalize_message
from reducer.workers.sandbox import REPO_ROOT, RunResult, kill_group

ENZYME = "enzyme"
XLA = "xla"
_here_lock = threading.Lock()


@contextmanager
def captured_stderr():
    """Collect what is written to file descriptor 2 (MLIR prints its diagnostics there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    box = {"text": ""}
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def compile_with_xla(module_text: str):
    """Compile a StableHLO module with XLA for the default backend (raises on an XLA error)."""
    import jax.extend.backend
    from jax._src.lib import xla_client

    backend = jax.extend.backend.get_backend()
    return backend.compile_and_load(module_text, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),
                                    compile_options=xla_client.CompileOptions())


def execute(kind: str, module_text: str, pipeline: str | None) -> None:
    if kind == ENZYME:
        from enzyme_ad.jax import enzyme_call

        enzyme_call.run_pass_pipeline([], module_text, pipeline or "")
    else:
        compile_with_xla(module_text)


def run_here(kind: str, module_text: str, pipeline: str | None) -> RunResult:
    """Run the candidate in this process; an exception becomes exit status 1 and its traceback."""
    with _here_lock:
        start = time.monotonic()
        tb = ""
        with captured_stderr() as err:
            try:
                execute(kind, module_text, pipeline)
                code = 0
            except Exception:
                code, tb = 1, traceback.format_exc()
        seconds = time.monotonic() - start
    return RunResult(returncode=code, stdout="", stderr=err["text"] + tb, seconds=seconds)


class Server:
    """A warm worker that runs candidates in its own process, one at a time."""

    worker = "reducer.levels.mlir.worker"  # the module run as `python -m WORKER --serve`

    def __init__(self, python: str = sys.executable, env: dict | None = None, platform: str = "cpu"):
        self.python = python
        self.env = dict(env or os.environ)
        self.env["JAX_PLATFORMS"] = "cuda" if platform == "gpu" else "cpu"
        self.env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + ([self.env["PYTHONPATH"]]
                                                                     if self.env.get("PYTHONPATH") else []))
        self.env["PYTHONFAULTHANDLER"] = "1"
        self.proc: subprocess.Popen | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="reducer-mlir-worker-"))
        self.buffer = b""
        self.starts = 0

    def _start(self) -> None:
        self.log = open(self.scratch / "stderr", "wb")
        self.proc = subprocess.Popen([self.python, "-m", self.worker, "--serve"], cwd=self.scratch,
                                     env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True)
        self.buffer = b""
        self.starts += 1

    def _read_line(self, deadline: float) -> bytes | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(wait, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def run(self, kind: str, module_text: str, pipeline: str | None, timeout: float = 120.0) -> RunResult:
        """Run one candidate; a candidate that outlives `timeout` stops the worker (started again
        for the next one)."""
        warming = 0.0
        if self.proc is None or self.proc.poll() is not None:
            self._start()
            warming = 60.0  # the first request also imports jax and Enzyme-JAX
        request = json.dumps({"kind": kind, "module": module_text, "pipeline": pipeline}) + "\n"
        start = time.monotonic()
        capture = self.scratch / "capture"
        try:
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
            line = self._read_line(start + timeout + warming)
        except (BrokenPipeError, OSError):
            line = b""
        seconds = time.monotonic() - start
        if line:
            reply = json.loads(line)
            return RunResult(returncode=reply["returncode"], stdout="", stderr=reply["stderr"],
                             seconds=reply["seconds"] if reply["seconds"] is not None else seconds)
        timed_out = line is None
        self.close()
        code = None if timed_out else self.proc.returncode
        text = capture.read_text(errors="replace") if capture.exists() else ""
        return RunResult(returncode=code, stdout="", stderr=text, seconds=seconds, timed_out=timed_out)

    def close(self) -> None:
        if self.proc is not None:
            kill_group(self.proc.pid)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            try:
                self.log.close()
            except Exception:
                pass


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
        frame = sys._getframe(1)
        while frame is not None:
            lines.append(f'  File "{frame.f_code.co_filename}", line {frame.f_lineno} in {frame.f_code.co_name}')
            frame = frame.f_back
        lines += [f"native frame: {n}" for n in names[handler + 2:handler + 10]]
        os.write(2, ("\n".join(lines) + "\n").encode())
        libc.signal(signum, 0)
        os.kill(os.getpid(), signum)

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
                  native_frames: bool = False) -> str:
    """A standalone Python script that runs the candidate as `run_here` does; `native_frames` adds
    a handler that prints where a crash happened in native code."""
    if kind == ENZYME:
        body = ("from enzyme_ad.jax import enzyme_call\n\n"
                f"PIPELINE = {pipeline!r}\n"
                f"MODULE = {python_literal(module_text)}\n\n"
                "# Raises ValueError with MLIR's diagnostics when the pipeline fails.\n"
                "enzyme_call.run_pass_pipeline([], MODULE, PIPELINE)\n"
                'print("the pipeline ran without error")\n')
    else:
        body = ("import jax.extend.backend\n"
                "from jax._src.lib import xla_client\n\n"
                f"MODULE = {python_literal(module_text)}\n\n"
                "backend = jax.extend.backend.get_backend()\n"
                "# Raises JaxRuntimeError when XLA cannot compile the module.\n"
                "backend.compile_and_load(MODULE, executable_devices=xla_client.DeviceList(tuple(backend.devices()[:1])),\n"
                "                         compile_options=xla_client.CompileOptions())\n"
                'print("XLA compiled the module")\n')
    if native_frames:
        body = NATIVE_FRAMES.lstrip("\n") + "\n" + body
    return (header.rstrip("\n") + "\n" if header else "") + body


DIAGNOSTIC = re.compile(r"(?:^|:\s)error:\s*(?P<msg>.+)$", re.M)


def first_diagnostic(text: str) -> str | None:
    """The first MLIR error diagnostic in a run's output, normalised."""
    m = DIAGNOSTIC.search(text)
    return normalize_message(m.group("msg")) if m else None


def native_frames(text: str, n: int = 2) -> str | None:
    """The innermost native frames of a crash, as the runner's handler printed them."""
    found = [m.group("frame") for m in NATIVE_FRAME.finditer(text)]
    return " < ".join(found[:n]) if found else None


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
        if sig is None or sig.family != "crash":
            return sig
        if sig.get("how") == "signal":
            frames = native_frames(run.output)
            if not frames:
                return sig
            shown = "\n".join(f"native frame: {m.group('frame')}" for m in NATIVE_FRAME.finditer(run.output))
            return Signature(sig.family, sig.fields + (("native", frames),), sig.title,
                             (sig.excerpt + "\n" + shown).strip())
        diag = first_diagnostic(run.output)
        if not diag:
            return sig
        return Signature(sig.family, sig.fields + (("diagnostic", diag),), sig.title, sig.excerpt)

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        seen = self.classify(run)
        if seen is None:
            return False, None
        if any(wanted.get(k) or seen.get(k) for k in ("diagnostic", "native")):
            return seen == wanted, seen
        return self.base.judge(wanted, run)


class ServerPool:
    """Warm workers, one per job, each lent to one candidate at a time: `run(*args)` calls the
    worker's `method` (`run` of `Server`, `run_spec` of the jaxpr worker's server)."""

    def __init__(self, servers: list, method: str = "run"):
        self.all, self.method = list(servers), method
        self.free: queue.Queue = queue.Queue()
        for s in self.all:
            self.free.put(s)

    def run(self, *args) -> RunResult:
        server = self.free.get()
        try:
            return getattr(server, self.method)(*args)
        finally:
            self.free.put(server)

    def close(self) -> None:
        for s in self.all:
            s.close()
            shutil.rmtree(s.scratch, ignore_errors=True)
