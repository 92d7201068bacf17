"""The IR worker: every parse, print, measure and edit of a user's module runs here, in a process of
its own, so that a crash of the MLIR bindings (a segfault in the parser or the printer, an abort
from nanobind) costs one candidate, never the reduction.

`python -m reducer.levels.mlir.ir_worker` imports the bindings once and forks a child that answers
JSON-line requests on standard input (see `handle`); when the child dies, the parent answers
`{"crashed": SIGNAL}` for the request it was serving and forks a fresh child (milliseconds). The
child keeps the candidate streams of the IR passes (sessions); a crash loses them, and `generation`
on the client side says so.

The client (`IrWorker`, one per reducing process through `shared()`) sends one request at a time;
`RemotePass` is an IR pass seen from the reducing process: its candidates are built in the worker
and arrive with their measure. A candidate whose building kills the child is skipped (printing
nothing while the stream is replayed up to it); a second crash while replaying ends the pass for
that program, as any other error of a pass does.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time

from reducer.levels.mlir import pipeline as pl

#: a request that takes longer than this is a hung worker: it is killed and started again
REQUEST_TIMEOUT = 300.0
#: candidate streams a child keeps open; the oldest is dropped (its pass opens it again if asked)
MAX_SESSIONS = 16


class Crashed(Exception):
    """The worker's child died (or hung) serving a request."""


# -- the worker side ----------------------------------------------------------------------------------
class Sessions:
    """The open candidate streams of the IR passes in this child, by id."""

    def __init__(self):
        self.open: dict[int, tuple] = {}
        self.next_id = 0

    def start(self, request: dict) -> int:
        from reducer.levels.mlir import module as mm
        from reducer.levels.mlir.passes import local_pass

        p = local_pass(request["pass"], request.get("culprit"))
        stream = iter(p.candidates(request["program"]))
        skip = int(request.get("skip", 0))
        mm.settings.skipping = True
        try:
            for _ in range(skip):
                if next(stream, None) is None:
                    break
        finally:
            mm.settings.skipping = False
        self.next_id += 1
        self.open[self.next_id] = (stream, p, skip)
        while len(self.open) > MAX_SESSIONS:  # streams the engine left behind
            self.open.pop(next(iter(self.open)))
        return self.next_id

    def advance(self, session: int) -> dict:
        """The next item of a stream: a candidate with its measure, or none (one the verifier
        rejected, never run); one item per request, so that a crash names the item it was on."""
        from reducer.levels.mlir import module as mm

        if session not in self.open:
            return {"lost": True}
        stream, p, index = self.open[session]
        try:
            cand = next(stream, None)
        except Exception as exc:  # a pass that cannot handle this module stops proposing
            self.open.pop(session, None)
            return {"done": True, "error": f"{type(exc).__name__}: {exc}"[:300]}
        if cand is None:
            self.open.pop(session, None)
            return {"done": True}
        self.open[session] = (stream, p, index + 1)
        if not cand:
            return {"candidate": None, "index": index}
        return {"candidate": cand, "index": index, "info": mm.info(cand, verified=mm.settings.form != "text")}


def handle(request: dict, sessions: Sessions) -> dict:
    """One request: `measure` (the key of a program), `check` (why a module is not one),
    `normalize`, `ops`, `default_pipeline`, `open` / `next` / `close` of a pass's candidates."""
    from reducer.levels.mlir import module as mm

    mm.settings.form = request.get("form", mm.settings.form)
    mm.settings.keep = set(request.get("keep", mm.settings.keep))
    do = request["do"]
    if do == "measure":
        return {"info": mm.info(request["program"])}
    if do == "check":
        check = mm.enzyme_parse_error if request.get("parser") == "enzyme" else mm.parse_error
        return {"error": check(request["module"])}
    if do == "normalize":
        return {"text": mm.normalize_here(request["program"])}
    if do == "ops":
        return {"ops": mm.ops_here(request["program"])}
    if do == "registered":
        from reducer.levels.mlir.pipeline import registered_here

        return {"registered": registered_here(request["name"])}
    if do == "diagnose":
        from reducer.levels.mlir.text import pipeline_diagnostic

        return {"diagnostic": pipeline_diagnostic(request["module"], request["pipeline"])}
    if do == "default_pipeline":
        return {"pipeline": mm.default_pipeline_here(request["module"])}
    if do == "open":
        return {"session": sessions.start(request)}
    if do == "next":
        return sessions.advance(request["session"])
    if do == "close":
        sessions.open.pop(request["session"], None)
        return {}
    raise ValueError(f"unknown request {do!r}")


def serve_child(out) -> None:
    sessions = Sessions()
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line), sessions)
        except Exception as exc:
            reply = {"failed": f"{type(exc).__name__}: {exc}"[:500]}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


def serve() -> None:
    """Import once, then answer requests in forked children; answer for a child that dies."""
    from reducer.levels.mlir import module as mm
    from reducer.workers.forkserver import die_with_parent, watch_parent

    mm.context()  # warm: the bindings and every dialect JAX registers
    watch_parent()
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the bindings print never mixes with the replies
    server = os.getpid()
    while True:
        out.flush()
        pid = os.fork()
        if pid == 0:
            die_with_parent(server)
            try:
                serve_child(out)
            except BaseException:
                os._exit(3)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return
        code = os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)
        out.write(json.dumps({"crashed": code}).encode() + b"\n")


# -- the client side ----------------------------------------------------------------------------------
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

    def _start(self) -> None:
        self.proc = subprocess.Popen([self.python, "-m", "reducer.levels.mlir.ir_worker"], stdin=subprocess.PIPE,
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
                raise Crashed(signal_name(reply["crashed"]))
            if "failed" in reply:
                raise RuntimeError(reply["failed"])
            return reply

    def close(self) -> None:
        with self.lock:
            if self.proc is None:
                return
            from reducer.workers.sandbox import kill_group

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


def _probe(name: str) -> bool:
    try:
        return shared().call({"do": "registered", "name": name})["registered"]
    except (Crashed, RuntimeError):  # a pass that kills the lookup exists
        return True


class RemotePass:
    """An IR pass whose candidates are built in the worker (see the module docstring)."""

    def __init__(self, name: str, worker: IrWorker, rep, culprit=None, log=None):
        self.name = name
        self.worker, self.rep, self.culprit = worker, rep, culprit
        self.errors: list[str] = []
        self.log = log or (lambda line: None)

    def _stopped(self, what: str) -> None:
        """The pass stops on this program; each different reason is logged once."""
        if what not in self.errors:
            self.log(f"pass {self.name} stopped on this module: {what}")
        self.errors.append(what)

    def _request(self, **kw) -> dict:
        return self.worker.call({**kw, **self.rep.settings()})

    def candidates(self, program: str):
        index, session, generation, replays = 0, None, None, 0
        while True:
            try:
                if session is None or generation != self.worker.generation:
                    session = self._request(do="open", program=program, skip=index, **{"pass": self.name},
                                            culprit=self.culprit)["session"]
                    generation = self.worker.generation
                reply = self._request(do="next", session=session)
            except Crashed as exc:
                session = None
                if replays:  # it crashes before reaching the candidate after the one that crashed
                    self._stopped(f"{exc} twice in a row at candidate {index}")
                    return
                replays, index = replays + 1, index + 1
                continue
            except RuntimeError as exc:  # the pass raised while replaying: it cannot handle this module
                self._stopped(str(exc))
                return
            if reply.get("lost"):
                session = None
                continue
            replays = 0
            if reply.get("done"):
                if reply.get("error"):
                    self._stopped(reply["error"])
                return
            index = reply["index"] + 1
            if reply["candidate"] is not None:
                self.rep.remember(reply["candidate"], reply["info"])
                yield reply["candidate"]


if __name__ == "__main__":
    serve()
