"""The IR worker's own side (`python -m reducer.levels.mlir.ir_server`, started by
`reducer.levels.mlir.ir_worker.IrWorker`): it imports the bindings, Enzyme-JAX and the passes once
and forks a child that answers JSON-line requests on standard input (see `handle`); when the child
dies, the parent answers `{"crashed": SIGNAL}` for the request it was serving and forks a fresh
child (milliseconds). The child keeps the last programs it parsed (`Items`, by the SHA-1 of their
text), so that a pass's points and each of its candidates cost one round trip and no parse of the
program they start from; a crash loses them, and a request naming one it does not hold is answered
`{"lost": true}` (the client sends the text again).
"""
from __future__ import annotations

import json
import os
import sys
from collections import OrderedDict

from reducer.levels.mlir import ir_tools, module as mm, xla_check, xla_dump
from reducer.levels.mlir.ir_worker import digest

#: parsed programs a child keeps (the program a pass works on, and the last few it measured)
MAX_ITEMS = 8


class Items:
    """The programs this child parsed (`ir_tools.Item`), by the SHA-1 of their text, the latest last;
    and the passes it built, by name and culprit."""

    def __init__(self):
        self.parsed: OrderedDict[str, object] = OrderedDict()
        self.form, self.keep = None, frozenset()
        self.passes: dict[tuple, object] = {}

    def get(self, request: dict):
        """The item the request names (parsed from its `program` when not held), or None."""
        form, keep = request.get("form", "pretty"), frozenset(request.get("keep", ()))
        if (self.form, self.keep) != (form, keep):  # what an item holds depends on them
            self.parsed.clear()
            self.form, self.keep = form, keep
        key = request.get("key") or digest(request["program"])
        if key not in self.parsed:
            if "program" not in request:
                return None
            self.parsed[key] = ir_tools.Item(request["program"], form, keep)
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
        "default_pipeline": lambda: {"pipeline": ir_tools.default_pipeline(request["module"])},
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


    mm.context()
    enzyme = ("enzyme_ad.jax.enzyme_call",) if importlib.util.find_spec("enzyme_ad") is not None else ()
    for name in ("reducer.levels.mlir.passes", "reducer.levels.mlir.text") + enzyme:
        importlib.import_module(name)


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


if __name__ == "__main__":
    serve()
