"""What a worker can be asked to run: one request kind per level, each with fields named for what
they carry.

Every level's candidates go through the same sandbox, fork server and long-lived runner
(`reducer.workers.sandbox`); only what the runner does with a candidate differs:

- `ScriptFile`: the source level (and every check in a fresh interpreter): a Python script,
  already written into the candidate's scratch folder, run as `python SCRIPT` would run it, under
  `reducer.harness`.
- `IrModule`: the IR level: an MLIR module and the Enzyme-JAX pass pipeline to run on it, or XLA's
  compiler (`compiler`), as `reducer.levels.mlir.worker` runs them.
- `TracedProgram`: the traced-program level: a jaxpr spec, re-run with its transformations by
  `reducer.levels.jaxpr.worker`.
- `CapturedScript`: a script run under the traced level's capture (`reducer.levels.jaxpr.capture`),
  with each transformed call recorded ahead when `ahead` (`reducer.levels.jaxpr.ahead`): what the
  traced level starts from, and what a crash's operation is looked for in
  (`reducer.levels.jaxpr.crash_site`).

A request crosses the pipes as JSON (`wire`, `from_wire`); its `run()`, in the worker, returns the
exit status a script would have: an exception prints its traceback on standard error and gives 1.
"""
from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from typing import ClassVar

KINDS: dict[str, type] = {}


def _kind(cls: type) -> type:
    KINDS[cls.kind] = cls
    return cls


def wire(request) -> dict:
    """The request as JSON-ready data, its kind included."""
    return {"kind": request.kind, **dataclasses.asdict(request)}


def from_wire(data: dict):
    """The typed request that `wire` wrote."""
    cls = KINDS.get(data.get("kind"))
    if cls is None:
        raise ValueError(f"unknown request kind {data.get('kind')!r} (known: {', '.join(KINDS)})")
    return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def _status_of(call) -> int:
    """Run `call()` under the candidate limits, as a script that makes that call would end."""
    from reducer import harness

    harness.apply_limits()
    try:
        call()
        return 0
    except Exception:
        traceback.print_exc()
        return 1


@_kind
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


@_kind
@dataclass(frozen=True)
class IrModule:
    """An MLIR module in text form; `pipeline` is the Enzyme-JAX pass pipeline run on it when
    `compiler` is "enzyme", and XLA compiles it when `compiler` is "xla"."""

    kind: ClassVar[str] = "mlir"
    module: str
    pipeline: str | None = None
    compiler: str = "enzyme"

    def run(self) -> int:
        from reducer.levels.mlir.worker import run_module

        return _status_of(lambda: run_module(self))


@_kind
@dataclass(frozen=True)
class TracedProgram:
    """A jaxpr spec (`reducer.levels.jaxpr.program`): its jaxpr, transformations and arguments."""

    kind: ClassVar[str] = "jaxpr"
    spec: str

    def run(self) -> int:
        from reducer.levels.jaxpr.worker import run_traced

        return _status_of(lambda: run_traced(self))


@_kind
@dataclass(frozen=True)
class CapturedScript:
    """A candidate script (`source`, written into the scratch folder as `name`) run under the
    capturing harness, every transformed call recorded before it runs when `ahead`."""

    kind: ClassVar[str] = "capture"
    name: str
    source: str
    ahead: bool = True

    def run(self) -> int:
        import os

        from reducer.workers import imports

        imports.lend_nothing()
        from reducer.levels.jaxpr import ahead, capture

        if self.ahead:
            os.environ[ahead.ENV] = "1"
        return capture.main([self.name])
