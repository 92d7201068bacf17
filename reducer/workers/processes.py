"""The processes a candidate of the sandbox (`reducer.workers.sandbox`) runs in: a fresh interpreter,
or a warm fork server (`reducer.workers.forkserver`) that runs one candidate at a time."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from reducer.workers.forkserver import REQUEST_FILE
from reducer.workers.requests import ScriptFile, wire

HARNESS = "reducer.harness"


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class WorkerError(Exception):
    pass


class ColdProcess:
    """A candidate in a fresh interpreter: `python -m ENTRY SCRIPT` for a script (ENTRY:
    reducer.harness), `python -m reducer.workers.runner REQUEST.json` for another kind."""

    broken = False
    reused = alive = False

    def __init__(self, python: str, request, scratch: Path, env: dict):
        if isinstance(request, ScriptFile):
            command = [python, "-m", HARNESS, request.name]
        else:
            (scratch / REQUEST_FILE).write_text(json.dumps(wire(request)))
            command = [python, "-m", "reducer.workers.runner", REQUEST_FILE]
        with open(scratch / ".reducer-stdout", "wb") as out, open(scratch / ".reducer-stderr", "wb") as err:
            self.proc = subprocess.Popen(command, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=err, start_new_session=True)
        self.pid = self.proc.pid

    def poll(self, timeout: float) -> int | None:
        """The exit code (negative for a signal) once the process ended, else None after `timeout`."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def release(self) -> None:
        pass


class Worker:
    """A warm fork server (`reducer.workers.forkserver`) that runs one candidate at a time."""

    def __init__(self, python: str, env: dict, modules: tuple[str, ...], cwd: Path, start_timeout: float = 120.0):
        Path(cwd).mkdir(parents=True, exist_ok=True)
        try:
            self.proc = subprocess.Popen([python, "-m", "reducer.workers.forkserver", json.dumps(list(modules))],
                                         cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise WorkerError(str(exc)) from None
        self.buffer = b""
        if not self._read(start_timeout).get("ready"):
            self.close()
            raise WorkerError("fork server did not start")

    def _read(self, timeout: float | None) -> dict:
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                return {}
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerError("fork server exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def start(self, scratch: Path, request, env: dict, on_release, mode: str) -> "WarmProcess":
        """Start a candidate; `mode` is "runner", "child" or "fresh" (`reducer.workers.forkserver`)."""
        envelope = {"scratch": str(scratch), "request": wire(request), "env": env, "mode": mode}
        try:
            self.proc.stdin.write((json.dumps(envelope) + "\n").encode())
            self.proc.stdin.flush()
            reply = self._read(60.0)
        except (OSError, ValueError) as exc:
            raise WorkerError(str(exc)) from None
        if "pid" not in reply:
            raise WorkerError("fork server gave no pid")
        return WarmProcess(self, reply["pid"], on_release, reply.get("reused", False))

    def close(self) -> None:
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class WarmProcess:
    def __init__(self, worker: Worker, pid: int, on_release, reused: bool):
        self.worker, self.pid, self.on_release, self.reused = worker, pid, on_release, reused
        self.status: int | None = None
        self.broken = False
        self.alive = False  # the runner that ran it lives on: its process group must not be killed

    def poll(self, timeout: float) -> int | None:
        if self.status is None and not self.broken:
            try:
                reply = self.worker._read(timeout)
            except (WorkerError, ValueError):
                self.broken = True
                return 0
            if "status" in reply:
                self.status = os.waitstatus_to_exitcode(reply["status"])
                self.alive = reply.get("alive", False)
        return self.status

    def release(self) -> None:
        if self.broken or self.status is None:
            self.worker.close()
        else:
            self.on_release(self.worker)
