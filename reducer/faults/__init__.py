"""Fault location: what in a failing program is at fault (an operation, a compiler pass), found for
the failure once and confirmed on candidates, so that the signature can name it (`op=`, `pass=`)
and the report can say why.

Every localiser implements `Localiser`: `fields`, the signature fields its faults set, and
`locate(program, run, signature)`, which finds the fault of a failing run of a program and hands
back a `Fault` (the fields that name it and the sentence of evidence), or None. Each localiser is
built with what it needs to run programs (a sandbox, the IR worker, a job), so that `locate` asks
for nothing more. The localisers, by where they live:

- `reducer.faults.nonfinite.NonFiniteValues`: where a NaN or an Inf is made (`in`, `op`, `from`),
  from runs with JAX's own checks on;
- `reducer.levels.jaxpr.crash_site.CrashingOperation`: the operation a crash (a death by a signal) happens in
  (`op`), by replaying the crashing call cut short;
- `reducer.levels.mlir.failure_names.FailingPass`: the pass of an Enzyme-JAX pipeline that fails (`pass`),
  the last of the shortest prefix that fails as the whole does (the title of a pass failure names
  it, through the bisection `failure_names.failing_pass`; its fields stay as they are);
- `reducer.levels.mlir.crash_pass.CrashingPass`: the same for a pipeline that kills the process;
- `reducer.levels.mlir.wrong_gradient.GradientCulprit`: the operation whose gradient alone is wrong
  (`op`), each kept alone in turn (`reducer.faults.alone.Alone`);
- `reducer.levels.mlir.xla_results.ResultCulprit`: the operation whose result alone XLA gets wrong
  (`op`), the same way;
- `reducer.levels.mlir.xla_passes.CulpritPass`: the HLO pass of XLA a failure needs (`xla-pass`),
  the one whose removal alone makes the failure go away.

`reducer.faults.attach.Attached` puts a localiser between a job's runs and its oracle (`CrashingOperation` has
the same `establish` / `attach` shape, since the crash oracle reads its operation from a key of its
own). `signed` puts a fault's fields into a signature, `render` writes them for the log. A new
localiser is one class with `fields` and `locate`, in the level that knows its programs or, when it
knows none, here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from oracles.outcome import RunResult, Signature


@dataclass(frozen=True)
class Fault:
    """What is at fault: its name, the signature fields that say so (`("op", "sqrt")` …), the
    evidence, in a sentence for the log and the report, and where the localiser makes one, the title
    of a signature that names it ('': the oracle's)."""

    name: str
    fields: tuple[tuple[str, str], ...]
    evidence: str
    title: str = ""

    def get(self, key: str, default: str = "") -> str:
        return dict(self.fields).get(key, default)


@runtime_checkable
class Localiser(Protocol):
    #: the signature fields a fault of this localiser sets
    fields: tuple[str, ...]

    def locate(self, program: str, run: RunResult | None, signature: Signature | None) -> Fault | None:
        """The fault behind the failure `signature` that `run` of `program` showed, or None; raises
        `CutShort` when the runs that would say were cut short (the fault is then unknown)."""


class CutShort(Exception):
    """A localiser's own runs timed out: whether the run carries the fault is not known."""


def render(fields: tuple[tuple[str, str], ...]) -> str:
    """Fields as the log writes them: `op=sqrt in=grad`."""
    return " ".join(f"{k}={v}" for k, v in fields)


def signed(sig: Signature, fault: Fault | None) -> Signature:
    """`sig` naming `fault`: its fields after the signature's own, under the fault's title where it
    has one; `sig` as it is without a fault."""
    if fault is None:
        return sig
    return Signature(sig.family, sig.fields + fault.fields, fault.title or sig.title, sig.excerpt)
