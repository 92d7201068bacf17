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
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from oracles.outcome import RunResult
from reducer.compile_cache import ENV as COMPILE_CACHE_ENV
from reducer.workers.processes import Worker, WorkerError, ColdProcess, kill_group
from reducer.workers.requests import ScriptFile

REPO_ROOT = Path(__file__).resolve().parents[2]
HEAD_BYTES = 256 * 1024
TAIL_BYTES = 1024 * 1024


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


@dataclass
class _Pool:
    """What the sandboxes `Sandbox.replace` makes of one another share: the workers, the candidates
    running, the scratch folders to remove."""

    live: set = field(default_factory=set)
    idle: list = field(default_factory=list)
    closed: bool = False
    trash: queue.Queue | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Sandbox:
    """Runs candidate sources as `script_name` in fresh scratch folders under `root`.

    `data_files` are copied next to every candidate (files the script reads by a relative path);
    `platform` selects the JAX backend (`gpu`: the GPU as the default, the CPU beside it);
    `check_gradients` asks the harness to compare the gradients of Enzyme-JAX-wrapped functions
    against JAX's own AD; `extra_env` is set in each candidate's environment; `compile_cache`, a
    folder, is JAX's persistent compilation cache for the warm candidates (a jitted function a
    candidate leaves unchanged is not compiled again; a fresh interpreter, as a user runs the result,
    never reads it). Its settings do not change: `replace(**changes)` is a sandbox with other
    settings and the same workers, for the runs that need them.
    """

    root: Path
    script_name: str = "repro.py"
    data_files: tuple[Path, ...] = ()
    platform: str = "cpu"
    check_gradients: bool = False
    python: str = sys.executable
    extra_env: MappingProxyType = field(default_factory=dict)
    warm: bool = False
    warm_modules: tuple[str, ...] = ()
    reuse: bool = True
    compile_cache: Path | None = None
    pool: _Pool = field(default_factory=_Pool, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "data_files", tuple(self.data_files))
        object.__setattr__(self, "extra_env", MappingProxyType(dict(self.extra_env)))

    def replace(self, **changes) -> "Sandbox":
        """This sandbox with other settings (`data_files`, `extra_env` …), sharing its workers."""
        return replace(self, **changes)

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
                process = ColdProcess(self.python, request, scratch, env)
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
        with self.pool.lock:
            self.pool.live.add(process.pid)
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
            with self.pool.lock:
                self.pool.live.discard(process.pid)
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
        with self.pool.lock:
            worker = self.pool.idle.pop() if self.pool.idle else None
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
        with self.pool.lock:
            if worker.alive() and not self.pool.closed:
                self.pool.idle.append(worker)
                return
        worker.close()

    def _remove_later(self, scratch: Path) -> None:
        """Remove a candidate's scratch folder off the candidate's path (removing folders can take
        milliseconds, as long as an IR candidate's whole run); `close` waits for it."""
        with self.pool.lock:
            if self.pool.trash is None:
                self.pool.trash = queue.Queue()
                threading.Thread(target=self._empty_trash, args=(self.pool.trash,), daemon=True).start()
            self.pool.trash.put(scratch)

    @staticmethod
    def _empty_trash(trash: queue.Queue) -> None:
        while (path := trash.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)
            trash.task_done()
        trash.task_done()

    def close(self) -> None:
        """Stop every candidate and worker, and remove the candidates' scratch folders."""
        self.kill_all()
        with self.pool.lock:
            self.pool.closed = True
            idle, self.pool.idle = self.pool.idle, []
            trash, self.pool.trash = self.pool.trash, None
        for worker in idle:
            worker.close()
        if trash is not None:
            trash.put(None)
            trash.join()

    def kill_all(self) -> None:
        """Kill every candidate still running (on Ctrl-C)."""
        with self.pool.lock:
            pids = list(self.pool.live)
        for pid in pids:
            kill_group(pid)
