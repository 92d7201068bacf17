"""Run one candidate of any level in a private scratch folder, in its own process group, under limits.

A candidate is a mutated copy of the user's program (a script, or a request of another level:
`reducer.workers.requests`): it may loop, allocate without bound, print without end, fork, crash,
or write files. It therefore runs with its working directory, HOME and TMPDIR in a scratch folder
of its own, with a wall-clock limit, an address-space and output-size limit (applied by
`reducer.harness` inside the child), and every process of its group is killed when it ends, is
cancelled, or `kill_all` is called (Ctrl-C). Every candidate goes through a fork server
(`reducer.workers.forkserver`): into its long-lived runner, a child forked for it alone, or a fresh
interpreter. The result is a `RunResult`, which oracles turn into failure signatures.
"""
from __future__ import annotations

import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from oracles.outcome import RunResult
from reducer.compile_cache import ENV as COMPILE_CACHE_ENV
from reducer.workers.forkserver import REQUEST_FILE
from reducer.workers.requests import ScriptFile, wire

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAD_BYTES = 256 * 1024
TAIL_BYTES = 1024 * 1024
HARNESS = "reducer.harness"


@dataclass(frozen=True)
class Limits:
    """Per-candidate limits; `memory_mb=None` leaves the address space unlimited."""

    timeout: float = 120.0
    memory_mb: int | None = None
    output_mb: int = 64


def _read_capped(path: Path) -> tuple[str, bool]:
    size = path.stat().st_size if path.exists() else 0
    if size == 0:
        return "", False
    with open(path, "rb") as fh:
        if size <= HEAD_BYTES + TAIL_BYTES:
            return fh.read().decode("utf-8", "replace"), False
        head = fh.read(HEAD_BYTES)
        fh.seek(size - TAIL_BYTES)
        tail = fh.read()
    cut = f"\n[... {size - HEAD_BYTES - TAIL_BYTES} bytes of output left out ...]\n"
    return head.decode("utf-8", "replace") + cut + tail.decode("utf-8", "replace"), True


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class WorkerError(Exception):
    pass


class _ColdProcess:
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

    def start(self, scratch: Path, request, env: dict, on_release, mode: str) -> "_WarmProcess":
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
        return _WarmProcess(self, reply["pid"], on_release, reply.get("reused", False))

    def close(self) -> None:
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


class _WarmProcess:
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


@dataclass
class Sandbox:
    """Runs candidate sources as `script_name` in fresh scratch folders under `root`.

    `data_files` are copied next to every candidate (files the script reads by a relative path);
    `platform` selects the JAX backend (`gpu`: the GPU as the default, the CPU beside it);
    `check_gradients` asks the harness to compare the gradients of Enzyme-JAX-wrapped functions
    against JAX's own AD; `compile_cache`, a folder, is JAX's persistent compilation cache for the
    warm candidates (a jitted function a candidate leaves unchanged is not compiled again; a fresh
    interpreter, as a user runs the result, never reads it).
    """

    root: Path
    script_name: str = "repro.py"
    data_files: tuple[Path, ...] = ()
    platform: str = "cpu"
    check_gradients: bool = False
    python: str = sys.executable
    extra_env: dict = field(default_factory=dict)
    warm: bool = False
    warm_modules: tuple[str, ...] = ()
    reuse: bool = True
    compile_cache: Path | None = None
    _live: set = field(default_factory=set, init=False, repr=False)
    _idle: list = field(default_factory=list, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)
    _trash: queue.Queue | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def environment(self, scratch: Path, limits: Limits) -> dict:
        env = dict(os.environ)
        for name in ("PYTHONSTARTUP", "PYTHONINSPECT", "COVERAGE_PROCESS_START"):
            env.pop(name, None)
        env.update(
            HOME=str(scratch),
            TMPDIR=str(scratch / "tmp"),
            PYTHONPATH=os.pathsep.join([str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONFAULTHANDLER="1",
            JAX_TRACEBACK_FILTERING="off",
            # gpu: the CPU too, for the result watch's cross-check; JAX_PLATFORM_NAME keeps the GPU the
            # default backend (JAX otherwise falls back to the CPU silently): without one, the first
            # use of the default backend raises `Unknown backend cuda`, which `job.no_backend` reads
            JAX_PLATFORMS="cuda,cpu" if self.platform == "gpu" else "cpu",
            JAX_PLATFORM_NAME="cuda" if self.platform == "gpu" else "",
            REDUCER_LIMITS=json.dumps({"memory_mb": limits.memory_mb, "output_mb": limits.output_mb}),
            REDUCER_HARNESS_OUT=str(scratch / ".reducer-harness.json"),
        )
        if self.check_gradients:
            env["REDUCER_CHECK_GRADIENTS"] = "1"
        else:
            env.pop("REDUCER_CHECK_GRADIENTS", None)
        env.update(self.extra_env)
        return env

    def prepare(self, source: str | None) -> Path:
        """A new scratch folder; with a script's `source`, the data files and the script in it."""
        self.root.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="cand-", dir=self.root))
        (scratch / "tmp").mkdir()
        if source is None:
            return scratch
        for data in self.data_files:
            target = scratch / data.name
            if data.is_dir():
                shutil.copytree(data, target, symlinks=False, dirs_exist_ok=True)
            else:
                shutil.copy2(data, target)
        (scratch / self.script_name).write_text(source)
        return scratch

    def run(self, candidate, limits: Limits = Limits(), cancel: threading.Event | None = None,
            keep: bool = False, fresh: bool = False, isolated: bool = False) -> RunResult:
        """Run one candidate: a script's source, or a request of another level
        (`reducer.workers.requests`); `cancel` set from another thread kills it early. With warm
        workers it runs in the long-lived runner (`reuse`) unless `isolated` asks for a child of its
        own, or `fresh` for a new interpreter; requests of other levels always do so (`warm` only
        preloads the workers)."""
        if fresh or (isinstance(candidate, str) and not self.warm):
            mode = "fresh"  # `warm` is about scripts: other requests run in a runner unless `fresh`
        else:
            mode = "runner" if self.reuse and not isolated else "child"
        return self._run(candidate, limits, cancel, keep, mode)

    def _run(self, candidate, limits: Limits, cancel: threading.Event | None, keep: bool,
             mode: str) -> RunResult:
        script = isinstance(candidate, str)
        scratch = self.prepare(candidate if script else getattr(candidate, "source", None))
        request = ScriptFile(self.script_name) if script else candidate
        env = self.environment(scratch, limits)
        if mode == "fresh":
            env["REDUCER_EXPLAIN"] = "1"  # the watches may take their costlier explanations here
        elif self.compile_cache is not None:
            env[COMPILE_CACHE_ENV] = str(self.compile_cache)
        try:
            process = self._launch(scratch, request, env, mode) if mode != "cold" else None
            start = time.monotonic()
            if process is None:
                process = _ColdProcess(self.python, request, scratch, env)
            status, timed_out, cancelled = self._wait(process, limits.timeout, cancel, start)
            seconds = time.monotonic() - start
            if process.broken:  # the worker died under us: run this one in a fresh interpreter
                return self._run(candidate, limits, cancel, keep, "cold")
            return self._result(scratch, status, seconds, timed_out, cancelled, process.reused)
        finally:
            if not keep:
                self._remove_later(scratch)

    def _wait(self, process, timeout: float, cancel: threading.Event | None, start: float):
        """(status, timed out, cancelled) once `process` ended, was cancelled or ran out of time;
        its process group is killed unless it is a runner that lives on."""
        with self._lock:
            self._live.add(process.pid)
        timed_out = cancelled = False
        try:
            deadline = start + timeout
            while True:
                status = process.poll(0.05)
                if status is not None:
                    break
                if cancel is not None and cancel.is_set():
                    cancelled = True
                elif time.monotonic() > deadline:
                    timed_out = True
                else:
                    continue
                kill_group(process.pid)
                status = process.poll(30.0)
                break
        finally:
            if not process.alive:
                kill_group(process.pid)
            with self._lock:
                self._live.discard(process.pid)
            process.release()
        return status, timed_out, cancelled

    def _result(self, scratch: Path, code: int | None, seconds: float, timed_out: bool,
                cancelled: bool, reused: bool = False) -> RunResult:
        stdout, t1 = _read_capped(scratch / ".reducer-stdout")
        stderr, t2 = _read_capped(scratch / ".reducer-stderr")
        harness = {}
        harness_path = scratch / ".reducer-harness.json"
        if harness_path.exists():
            try:
                harness = json.loads(harness_path.read_text())
            except (ValueError, OSError):
                harness = {}
        if timed_out or cancelled:
            code = None
        return RunResult(returncode=code, stdout=stdout, stderr=stderr, seconds=seconds, timed_out=timed_out,
                         cancelled=cancelled, truncated=t1 or t2, harness=harness, reused=reused)

    # -- workers ----------------------------------------------------------------------------
    def _launch(self, scratch: Path, request, env: dict, mode: str):
        """Start the candidate through an idle worker, or a new one (with the warm modules when the
        sandbox is warm); None when no worker could be started."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            modules = self.warm_modules if self.warm else ()
            try:
                worker = Worker(self.python, self.environment(self.root, Limits()), modules, self.root)
            except WorkerError:
                return None
        try:
            return worker.start(scratch, request, env, self._return_worker, mode)
        except WorkerError:
            worker.close()
            return None

    def _return_worker(self, worker: "Worker") -> None:
        with self._lock:
            if worker.alive() and not self._closed:
                self._idle.append(worker)
                return
        worker.close()

    def _remove_later(self, scratch: Path) -> None:
        """Remove a candidate's scratch folder off the candidate's path (removing folders can take
        milliseconds, as long as an IR candidate's whole run); `close` waits for it."""
        with self._lock:
            if self._trash is None:
                self._trash = queue.Queue()
                threading.Thread(target=self._empty_trash, args=(self._trash,), daemon=True).start()
            self._trash.put(scratch)

    @staticmethod
    def _empty_trash(trash: queue.Queue) -> None:
        while (path := trash.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)
            trash.task_done()
        trash.task_done()

    def close(self) -> None:
        """Stop every candidate and worker, and remove the candidates' scratch folders."""
        self.kill_all()
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            trash, self._trash = self._trash, None
        for worker in idle:
            worker.close()
        if trash is not None:
            trash.put(None)
            trash.join()

    def kill_all(self) -> None:
        """Kill every candidate still running (on Ctrl-C)."""
        with self._lock:
            pids = list(self._live)
        for pid in pids:
            kill_group(pid)
