"""The IR worker: every parse, print, measure and edit of a user's module runs here, in a process of
its own, so that a crash of the MLIR bindings (a segfault in the parser or the printer, an abort
from nanobind) costs one candidate, never the reduction.

`python -m reducer.levels.mlir.ir_worker` imports the bindings, Enzyme-JAX and the passes once and
forks a child that answers JSON-line requests on standard input (see `handle`); when the child
dies, the parent answers `{"crashed": SIGNAL}` for the request it was serving and forks a fresh
child (milliseconds). The child keeps the last programs it parsed (`Items`, by the SHA-1 of their
text), so that a pass's points and each of its candidates cost one round trip and no parse of
the program they start from; a crash loses them, and a request naming one it does not hold is
answered `{"lost": true}` (the client sends the text again).

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
from collections import OrderedDict

from reducer.levels.mlir import pipeline as pl, xla_check, xla_dump
from reducer.passes import ReductionPass

#: a request that takes longer than this is a hung worker: it is killed and started again
REQUEST_TIMEOUT = 300.0
#: parsed programs a child keeps (the program a pass works on, and the last few it measured)
MAX_ITEMS = 8
#: crashes in a row after which a pass stops on a program
MAX_CRASHES = 3


class Crashed(Exception):
    """The worker's child died (or hung) serving a request; `code` is the signal that killed it
    (negative: its exit status), None when the whole worker died or hung."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


# -- the worker side ----------------------------------------------------------------------------------
class Items:
    """The programs this child parsed (`_ir.Item`), by the SHA-1 of their text, the latest last;
    and the passes it built, by name and culprit."""

    def __init__(self):
        self.parsed: OrderedDict[str, object] = OrderedDict()
        self.form, self.keep = None, frozenset()
        self.passes: dict[tuple, object] = {}

    def get(self, request: dict):
        """The item the request names (parsed from its `program` when not held), or None."""
        from reducer.levels.mlir import module as mm
        from reducer.levels.mlir.passes import _ir

        form, keep = request.get("form", "pretty"), frozenset(request.get("keep", ()))
        if (self.form, self.keep) != (form, keep):  # what an item holds depends on them
            self.parsed.clear()
            self.form, self.keep = form, keep
        key = request.get("key") or digest(request["program"])
        if key not in self.parsed:
            if "program" not in request:
                return None
            self.parsed[key] = _ir.Item(request["program"], form, keep)
            while len(self.parsed) > MAX_ITEMS:
                self.parsed.popitem(last=False)
        self.parsed.move_to_end(key)
        return self.parsed[key]

    def pass_for(self, request: dict):
        from reducer.levels.mlir.passes import local_pass

        culprit = tuple(request["culprit"]) if request.get("culprit") else None
        if (request["pass"], culprit) not in self.passes:
            self.passes[request["pass"], culprit] = local_pass(request["pass"], culprit)
        return self.passes[request["pass"], culprit]


def measure(items: Items, request: dict) -> dict:
    from reducer.levels.mlir import module as mm

    form = request.get("form", "pretty")
    if form == "text":
        return {"info": mm.info(request["program"], form)}
    item = items.get(request)
    return {"info": mm.info(item.program, form, module=item.module) if item.ok else None}


def points(items: Items, request: dict) -> dict:
    item = items.get(request)
    if item is None:
        return {"lost": True}
    if not item.ok:  # not a module the bindings read: no pass has anything to change
        return {"points": []}
    return {"points": items.pass_for(request).points(item)}


def apply(items: Items, request: dict) -> dict:
    """One candidate, with its measure (none when the verifier rejects it: it never runs)."""
    from reducer.levels.mlir import module as mm

    item = items.get(request)
    if item is None:
        return {"lost": True}
    candidate = items.pass_for(request).apply(item, request["point"])
    if not candidate:
        return {"candidate": None}
    return {"candidate": candidate, "info": mm.info(candidate, item.form, verified=item.form != "text")}


def handle(request: dict, items: Items) -> dict:
    """One request: `measure` (a program's key), `check` (why a module is not one), `normalize`, `ops`, `registered`
    (pass names Enzyme-JAX knows), `diagnose`, `default_pipeline`, `arguments`, a pass's `points`, and `apply`."""
    from reducer.levels.mlir import module as mm
    from reducer.levels.mlir.pipeline import registered_here
    from reducer.levels.mlir.text import pipeline_diagnostic

    form = request.get("form", "pretty")
    do = request["do"]
    answers = {
        "measure": lambda: measure(items, request),
        "points": lambda: points(items, request),
        "apply": lambda: apply(items, request),
        "check": lambda: {"error": (mm.enzyme_parse_error if request.get("parser") == "enzyme"
                                    else mm.parse_error)(request["module"])},
        "normalize": lambda: {"text": mm.normalize_here(request["program"], form)},
        "ops": lambda: {"ops": mm.ops_here(request["program"], form)},
        "registered": lambda: {"registered": [registered_here(name) for name in request["names"]]},
        "diagnose": lambda: {"diagnostic": pipeline_diagnostic(request["module"], request["pipeline"])},
        "default_pipeline": lambda: {"pipeline": mm.default_pipeline_here(request["module"])},
        "from_hlo": lambda: xla_dump.converted(request["text"]),
        "to_hlo": lambda: {"text": xla_dump.stablehlo_to_hlo(request["module"])},
        "arguments": lambda: {"arguments": xla_check.argument_names(request["module"])},
    }
    if do not in answers:
        raise ValueError(f"unknown request {do!r}")
    return answers[do]()


def serve_child(out) -> None:
    items = Items()
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line), items)
        except Exception as exc:
            reply = {"failed": f"{type(exc).__name__}: {exc}"[:500]}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


def warm_up() -> None:
    """Import, before any child is forked, what every child needs: the bindings with every dialect
    JAX registers, Enzyme-JAX's pass runner, the passes (a child then answers at once)."""
    import importlib
    import importlib.util

    from reducer.levels.mlir import module as mm

    mm.context()
    enzyme = ("enzyme_ad.jax.enzyme_call",) if importlib.util.find_spec("enzyme_ad") is not None else ()
    for name in ("reducer.levels.mlir.passes", "reducer.levels.mlir.text") + enzyme:
        importlib.import_module(name)


def digest(program: str) -> str:
    return hashlib.sha1(program.encode()).hexdigest()


def serve() -> None:
    """Import once, then answer requests in forked children; answer for a child that dies."""
    from reducer.workers.forkserver import die_with_parent, watch_parent

    warm_up()
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

    def start(self) -> None:
        """Start the worker now, when it is not running (its first request then waits less)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()

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
                raise Crashed(signal_name(reply["crashed"]), reply["crashed"])
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


if __name__ == "__main__":
    serve()
