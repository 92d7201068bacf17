"""Warm workers: a server that imports jax (and the script's own imports) once, then forks children
that run candidates, so that no candidate pays for the interpreter start and `import jax`.

Every level's candidates come this way. Protocol, one JSON object per line: the client writes
`{"scratch", "env", "request", "reuse"}` to the server's stdin (`request`: a typed request of
`reducer.workers.requests`: a script, an IR module, a traced program) and gets `{"pid": PID}` at
once, then `{"status": WAITSTATUS, "alive": BOOL}` when the candidate ends. The child that runs it
leads a session of its own (so the client can kill its whole process group), moves into its scratch
folder, points stdin, stdout and stderr at /dev/null and its output files, and runs the request (a
script under `reducer.harness`, as `python -m reducer.harness SCRIPT` would). The XLA backend is
never initialised in the server, so every child starts clean; a crash kills only the child.

`"mode"` says where the candidate runs: "runner", the server's long-lived runner
(`reducer.workers.runner`), forked on first use, which runs candidates one after another in its
initialised interpreter (`"alive": true` in the answer means the runner lives on: the client must
not kill its group); "child", a one-shot child forked for the candidate alone; "fresh", a new
interpreter, as a user would run it.

Nothing outlives the client: when its parent goes away (checked every half second) the server kills
the process group of every candidate still running, with whatever it started, and exits; every
forked child also asks the kernel for SIGKILL when the server dies.
"""
from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

from reducer.workers import imports, runner

PR_SET_PDEATHSIG = 1
REQUEST_FILE = ".reducer-request.json"
#: the candidates running now, each the leader of its own process group
LIVE: set[int] = set()


def warm_up(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException:  # a module that fails to import is simply not preloaded
            pass


def die_with_parent(parent: int) -> None:
    """Ask the kernel to kill this process when its parent ends (Linux), and check that it has
    not ended already."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def watch_parent() -> None:
    """Once the client is gone, kill the process group of every candidate still running (with what
    it started) and exit."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        for pid in list(LIVE):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _detach(server: int) -> None:
    """The start of every child: die with the server, and lead a session of its own."""
    die_with_parent(server)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def child(request: dict, server: int) -> None:
    """Runs in a one-shot forked child; never returns."""
    code = 1
    try:
        _detach(server)
        code = runner.run_one(request)
        try:
            import atexit

            atexit._run_exitfuncs()
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)


class Runner:
    """The server's handle on its long-lived runner child (`reducer.workers.runner`)."""

    def __init__(self, request: dict, server: int, reply):
        from_server, to_runner = os.pipe()
        from_runner, to_server = os.pipe()
        self.key = runner.reuse_key(request)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                reply.close()
                os.close(to_runner)
                os.close(from_runner)
                _detach(server)
                runner.serve(os.fdopen(from_server, "r"), os.fdopen(to_server, "w"), request)
            finally:
                os._exit(1)  # serve ends the process itself; this only if it raised
        LIVE.add(self.pid)
        os.close(from_server)
        os.close(to_server)
        self.requests = os.fdopen(to_runner, "w")
        self.replies = os.fdopen(from_runner, "r")

    def send(self, request: dict) -> bool:
        try:
            self.requests.write(json.dumps(request) + "\n")
            self.requests.flush()
            return True
        except OSError:
            return False

    def wait(self) -> tuple[int, bool]:
        """(wait status, still usable) once the runner answered or died."""
        line = self.replies.readline()
        if line:
            answer = json.loads(line)
            if answer["retire"]:
                self.close()
            return (answer["code"] & 0xFF) << 8, not answer["retire"]
        status = _reap(self.pid)
        self.close(reaped=True)
        return status, False

    def close(self, reaped: bool = False) -> None:
        for fh in (self.requests, self.replies):
            try:
                fh.close()
            except OSError:
                pass
        if not reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _reap(self.pid)


def fresh(envelope: dict) -> subprocess.Popen:
    """Start the candidate in a new interpreter (`python -m reducer.harness SCRIPT`, or the runner's
    one-shot entry for another kind of request), in a session of its own."""
    scratch = envelope["scratch"]
    request = envelope["request"]
    if request["kind"] == "script":
        command = [sys.executable, "-m", "reducer.harness", request["name"]]
    else:
        with open(os.path.join(scratch, REQUEST_FILE), "w", encoding="utf-8") as fh:
            json.dump(request, fh)
        command = [sys.executable, "-m", "reducer.workers.runner", REQUEST_FILE]
    with open(os.path.join(scratch, ".reducer-stdout"), "wb") as out, \
            open(os.path.join(scratch, ".reducer-stderr"), "wb") as err:
        return subprocess.Popen(command, cwd=scratch, env=envelope["env"], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)


def _reap(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    LIVE.discard(pid)
    return status


def serve(modules: list[str]) -> None:
    """Answer the client's requests (one at a time, `mode`: "runner", "child" or "fresh") until its
    standard input ends."""
    watch_parent()
    imports.record()
    warm_up(modules)
    # what the server imported is never garbage for a candidate: moved out of the collector's sight,
    # the harness's collection after each program (reducer.harness.settle) sees only the program's
    # own objects (about 0.2 ms instead of over 100 ms with jax loaded)
    gc.collect()
    gc.freeze()
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    reply.write(json.dumps({"ready": True}) + "\n")
    live: Runner | None = None
    for line in sys.stdin:
        envelope = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        server = os.getpid()
        if envelope["mode"] == "runner":
            if live is not None and live.key != runner.reuse_key(envelope):
                live.close()
                live = None
            if live is None or not live.send(envelope):
                if live is not None:
                    live.close()
                live = Runner(envelope, server, reply)
            reply.write(json.dumps({"pid": live.pid, "reused": True}) + "\n")
            status, usable = live.wait()
            if not usable:
                live = None
            reply.write(json.dumps({"status": status, "alive": usable}) + "\n")
            continue
        if envelope["mode"] == "fresh":
            proc = fresh(envelope)
            LIVE.add(proc.pid)
            reply.write(json.dumps({"pid": proc.pid}) + "\n")
            code = proc.wait()
            LIVE.discard(proc.pid)
            reply.write(json.dumps({"status": -code if code < 0 else code << 8}) + "\n")
            continue
        pid = os.fork()
        if pid == 0:
            reply.close()
            child(envelope, server)
        LIVE.add(pid)
        reply.write(json.dumps({"pid": pid}) + "\n")
        reply.write(json.dumps({"status": _reap(pid)}) + "\n")


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]) if len(sys.argv) > 1 else [])
