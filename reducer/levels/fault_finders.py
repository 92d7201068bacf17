"""Which fault finder names the fault in a failure's signature: one table (`FINDERS`) and one
protocol (`FaultFinder`), read by the job (the original's fault, a resumed reduction's) and by the
traced level (a written-back script's, a traced candidate's crash).

A finder sits between a reduction's runs and its oracle: `establish` locates the fault of the
original's failing run once and puts it in the signature; `expect` takes the fault a signature
already names (a resumed reduction's, a written-back script's); `attach` gives each candidate's run
the fault it arises at, so that the oracle's verdict compares the two.

- the crashing operation (`levels.jaxpr.crash_site.CrashingOperation`): a death by a signal (`op`);
- the non-finite value's origin (`faults.origin.ValueOrigin` under `faults.attach.Attached`): a check
  on a NaN or an Inf, the program's or JAX's own (`jax.debug_nans`) (`in`, `op`, `from`, …).

A new finder is one row: what it places on the original, what a wanted signature must name for it
to confirm, and how it is built from what runs programs (`Runs`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from oracles import kinds
from oracles.base import Oracle
from oracles.outcome import RunResult, Signature
from reducer.faults import nonfinite, origin
from reducer.faults.attach import Attached
from reducer.levels.jaxpr import crash_site


class FaultFinder(Protocol):
    #: what `establish` found, in a sentence for the log
    finding: str

    def establish(self, program: str, run: RunResult, sig: Signature) -> tuple[Signature, RunResult]:
        """The signature naming the fault of the original's failing `run`, and the run carrying it."""

    def expect(self, sig: Signature) -> None:
        """Later runs must show the fault `sig` already names."""

    def attach(self, program: str, run: RunResult, spec: str | None = None) -> RunResult:
        """`run` (of `program`, or of the traced candidate `spec`) with the fault it arises at."""


@dataclass(frozen=True)
class Runs:
    """What a finder runs programs with: the sandbox and limits of a traced call's replay, the oracle
    that reads a run, how a script runs once more (in a child of its own), and the log."""

    sandbox: Callable[[], object]  # the sandbox as it is when a run is made
    limits: object
    oracle: Oracle
    script: Callable[[str], RunResult]
    log: Callable[[str], None] = lambda line: None


@dataclass(frozen=True)
class Finder:
    name: str
    places: Callable[[Signature, RunResult | None], bool]  # the original's failure: is its fault one it finds
    confirms: Callable[[Signature], bool]  # a wanted signature: does it name a fault this finder confirms
    build: Callable[[Runs], FaultFinder]


def _crashing_operation(runs: Runs) -> FaultFinder:
    return crash_site.CrashingOperation(runs.sandbox, runs.limits, runs.oracle)


def _value_origin(runs: Runs) -> FaultFinder:
    return Attached(origin.ValueOrigin(runs.script, runs.log), runs.oracle, nonfinite.applies)


FINDERS = (
    Finder("the crashing operation", lambda sig, run: crash_site.placeable(sig),
           lambda wanted: crash_site.placeable(wanted) and bool(wanted.get("op")), _crashing_operation),
    Finder("the non-finite value's origin", nonfinite.applies, kinds.located_value, _value_origin),
)


def for_original(runs: Runs, sig: Signature, run: RunResult | None) -> FaultFinder | None:
    """The finder of the original failure `sig`'s fault, not yet established; None when no finder
    places it."""
    finder = next((f for f in FINDERS if f.places(sig, run)), None)
    return finder.build(runs) if finder is not None else None


def for_wanted(runs: Runs, wanted: Signature) -> FaultFinder | None:
    """The finder that confirms on later runs the fault `wanted` names; None when it names none."""
    finder = next((f for f in FINDERS if f.confirms(wanted)), None)
    if finder is None:
        return None
    found = finder.build(runs)
    found.expect(wanted)
    return found


def in_sandbox(sandbox, limits, oracle: Oracle, wanted: Signature, log=lambda line: None) -> FaultFinder | None:
    """`for_wanted`, its scripts run fresh in `sandbox` (the traced level's, a written-back script's)."""
    runs = Runs(lambda: sandbox, limits, oracle, lambda script: sandbox.run(script, limits, fresh=True), log)
    return for_wanted(runs, wanted)
