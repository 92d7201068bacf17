"""Warm workers: a server that imports jax (and the script's own imports) once, then forks a child
per candidate, so that each candidate skips the interpreter start and `import jax`.

Protocol, one JSON object per line: the client writes a request
`{"scratch", "script", "env", "limits"}` to the server's stdin; the server forks, answers
`{"pid": PID}` at once, then `{"status": WAITSTATUS}` when the child ends. The child starts a
session of its own (so the client can kill its whole process group), moves into its scratch folder,
points stdin, stdout and stderr at /dev/null and its output files, applies the limits and runs the
script under `reducer.harness` as `python -m reducer.harness SCRIPT` would. The XLA backend is never
initialised in the server, so every child starts clean; a crash kills only the child.

Nothing outlives the client: the server exits when its parent goes away (checked every half
second), and every child asks the kernel for SIGKILL when the server dies, so that a candidate
stuck in an endless loop cannot keep running after a reduction was killed.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import signal
import sys
import threading
import time
import traceback

PR_SET_PDEATHSIG = 1


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
    """Exit the server (and so, through their death signal, its children) once the client is gone."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def child(request: dict, server: int) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        die_with_parent(server)
        os.setsid()
        scratch = request["scratch"]
        os.chdir(scratch)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(os.path.join(scratch, ".reducer-stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(os.path.join(scratch, ".reducer-stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile

        tempfile.tempdir = None
        from reducer import harness

        try:
            harness.main([request["script"]])
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
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


def serve(modules: list[str]) -> None:
    watch_parent()
    warm_up(modules)
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    reply.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            reply.close()
            child(request, server)
        reply.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"status": status}) + "\n")


if __name__ == "__main__":
    serve(json.loads(sys.argv[1]) if len(sys.argv) > 1 else [])
