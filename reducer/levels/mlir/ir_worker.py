"""The IR worker, seen from the reducing process: every parse, print, measure and edit of a user's
module runs in a process of its own (`reducer.levels.mlir.ir_server`), so that a crash of the MLIR
bindings (a segfault in the parser or the printer, an abort from nanobind) costs one candidate,
never the reduction.

The client (`IrWorker`, one per reducing process through `shared()`) sends one request at a time;
`RemotePass` is an IR pass seen from the reducing process: its points and candidates are made in
the worker, a candidate arriving with its measure. A candidate whose making kills the child is
skipped; a pass that kills it on several candidates in a row stops on that program.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import subprocess
import sys
import threading
import time

from reducer.levels.mlir import pipeline as pl
from reducer.passes import ReductionPass

#: a request that takes longer than this is a hung worker: it is killed and started again
REQUEST_TIMEOUT = 300.0
#: crashes in a row after which a pass stops on a program
MAX_CRASHES = 3


class Crashed(Exception):
    """The worker's child died (or hung) serving a request; `code` is the signal that killed it
    (negative: its exit status), None when the whole worker died or hung."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


def digest(program: str) -> str:
    return hashlib.sha1(program.encode()).hexdigest()


class IrWorker:
    """The reducing process's handle on a worker: `call(request)` returns its reply or raises
    `Crashed`; `generation` grows each time the child is replaced (its sessions are gone)."""

    def __init__(self, python: str = sys.executable):
        from reducer.workers.sandbox import REPO_ROOT

        self.python = python
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + ([self.env["PYTHONPATH"]]
                                                                     if self.env.get("PYTHONPATH") else []))
        self.env.setdefault("JAX_PLATFORMS", "cpu")
        self.proc: subprocess.Popen | None = None
        self.lock = threading.RLock()
        self.generation = 0
        self.crashes = 0
        self.buffer = b""

    def start(self) -> None:
        """Start the worker now, when it is not running (its first request then waits less)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen([self.python, "-m", "reducer.levels.mlir.ir_server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env,
                                     start_new_session=True)
        self.buffer = b""
        self.generation += 1

    def _read_line(self, deadline: float) -> bytes | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(wait, 0.5))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b""
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def call(self, request: dict, timeout: float = REQUEST_TIMEOUT) -> dict:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
                timeout += 60.0  # the first request waits for the imports
            try:
                self.proc.stdin.write(json.dumps(request).encode() + b"\n")
                self.proc.stdin.flush()
                line = self._read_line(time.monotonic() + timeout)
            except (BrokenPipeError, OSError):
                line = b""
            if not line:  # hung, or the whole worker died: start afresh next time
                self.close()
                self.crashes += 1
                raise Crashed("the IR worker " + ("hung" if line is None else "died"))
            reply = json.loads(line)
            if "crashed" in reply:
                self.generation += 1
                self.crashes += 1
                raise Crashed(signal_name(reply["crashed"]), reply["crashed"])
            if "failed" in reply:
                raise RuntimeError(reply["failed"])
            return reply

    def close(self) -> None:
        with self.lock:
            if self.proc is None:
                return
            from reducer.workers.processes import kill_group

            kill_group(self.proc.pid)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            self.proc = None


def signal_name(code: int) -> str:
    import signal

    if code > 0:
        try:
            return f"the MLIR bindings crashed ({signal.Signals(code).name})"
        except ValueError:
            return f"the MLIR bindings crashed (signal {code})"
    return f"the MLIR bindings exited with status {-code}"


_shared: IrWorker | None = None
_shared_lock = threading.Lock()


def shared() -> IrWorker:
    """This process's IR worker, started on first use and stopped at exit; from then on, pass
    names are looked up there too (`pipeline.probe`)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = IrWorker()
            atexit.register(_shared.close)
            pl.probe = _probe
        return _shared


def _probe(names: list[str]) -> list[bool]:
    try:
        return shared().call({"do": "registered", "names": list(names)})["registered"]
    except (Crashed, RuntimeError):  # a pass whose lookup kills the worker exists
        return [True] * len(names)


class RemoteItem:
    """A program as the reducing process holds it for the IR passes: its text and the SHA-1 by
    which the worker keeps it parsed."""

    def __init__(self, program: str):
        self.program = program
        self.key = digest(program)


def as_point(value):
    """A change point back from JSON: lists become tuples again."""
    return tuple(as_point(v) for v in value) if isinstance(value, list) else value


class RemotePass(ReductionPass):
    """An IR pass whose points and candidates are made in the worker (see the module docstring);
    why it stops on a program is reported through `ReductionPass.stopped`."""

    def __init__(self, name: str, worker: IrWorker, rep, culprit=None, log=None):
        self.name = name
        self.worker, self.rep, self.culprit = worker, rep, culprit
        self.errors: list[str] = []
        if log is not None:
            self.log = log
        self.crashes: dict[str, int] = {}  # crashes in a row, by program

    def parse(self, program: str) -> RemoteItem:
        return RemoteItem(program)

    def _ask(self, item: RemoteItem, **request) -> dict:
        """The worker's answer about `item`, sending its text again when the worker lost it."""
        request = {**request, "key": item.key, "pass": self.name, "culprit": self.culprit, **self.rep.settings()}
        reply = self.worker.call(request)
        if reply.get("lost"):
            reply = self.worker.call({**request, "program": item.program})
        return reply

    def points(self, item: RemoteItem) -> list:
        try:  # with the text: it is often a candidate just accepted, which the worker did not parse
            return [as_point(p) for p in self._ask(item, do="points", program=item.program)["points"]]
        except (Crashed, RuntimeError) as exc:  # it cannot read this module
            self.stopped(str(exc))
            return []

    def apply(self, item: RemoteItem, point) -> str | None:
        if self.crashes.get(item.key, 0) >= MAX_CRASHES:
            return None
        try:
            reply = self._ask(item, do="apply", point=point)
        except Crashed as exc:
            self.crashes[item.key] = self.crashes.get(item.key, 0) + 1
            if self.crashes[item.key] == MAX_CRASHES:
                self.stopped(f"{exc} on {MAX_CRASHES} candidates in a row")
            return None
        except RuntimeError as exc:  # the bindings refused this edit: the point gives no candidate
            self.stopped(str(exc))
            return None
        self.crashes.pop(item.key, None)
        if reply["candidate"] is not None:
            self.rep.remember(reply["candidate"], reply["info"])
        return reply["candidate"]
