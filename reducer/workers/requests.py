"""What a worker can be asked to run: a registry of request kinds, each a frozen dataclass with
fields named for what it carries and a `run()` that the worker calls.

Every level's candidates go through the same sandbox, fork server and long-lived runner
(`reducer.workers.sandbox`); only what the runner does with a candidate differs, and the workers
know no level: a level defines its request kind in its own package and registers it here with
`@kind` (the IR level's `IrModule`, the traced level's `TracedProgram` and `CapturedScript`). The
workers' own kind is `ScriptFile`: a Python script, already written into the candidate's scratch
folder, run as `python SCRIPT` would run it, under `reducer.harness` (the source level, and every
check in a fresh interpreter).

A request crosses the pipes as JSON (`wire`, `from_wire`) that names the module defining its kind,
which the worker imports when the kind is not registered there yet; its `run()`, in the worker,
returns the exit status a script would have: an exception prints its traceback on standard error
and gives 1 (`status_of`).
"""
from __future__ import annotations

import dataclasses
import importlib
import traceback
from dataclasses import dataclass
from typing import ClassVar

KINDS: dict[str, type] = {}


def kind(cls: type) -> type:
    """Register a request kind (a dataclass with a `kind` class variable and a `run()` method)."""
    KINDS[cls.kind] = cls
    return cls


def wire(request) -> dict:
    """The request as JSON-ready data: its kind, the module that defines the kind, its fields."""
    return {"kind": request.kind, "defined_in": type(request).__module__, **dataclasses.asdict(request)}


def from_wire(data: dict):
    """The typed request that `wire` wrote, its kind's module imported first where need be."""
    name = data.get("kind")
    if name not in KINDS and data.get("defined_in"):
        importlib.import_module(data["defined_in"])  # registers the kind
    cls = KINDS.get(name)
    if cls is None:
        raise ValueError(f"unknown request kind {name!r} (known: {', '.join(KINDS)})")
    return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def status_of(call) -> int:
    """Run `call()` under the candidate limits, as a script that makes that call would end."""
    from reducer import harness

    harness.apply_limits()
    try:
        call()
        return 0
    except Exception:
        traceback.print_exc()
        return 1


@kind
@dataclass(frozen=True)
class ScriptFile:
    """A candidate script, written into the scratch folder as `name`."""

    kind: ClassVar[str] = "script"
    name: str

    def run(self) -> int:
        from reducer.workers import imports

        imports.lend_nothing()  # the script sees the modules its own imports load, no others
        from reducer import harness

        return harness.run_script(self.name)
