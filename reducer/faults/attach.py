"""A localiser between a job's runs and its oracle: the fault found for the original becomes part of
the signature, and each candidate that shows the failure carries the fault found for it, so that
the oracle's verdict compares the two.

`Attached.establish` locates the fault of the original's failing run once; `attach` gives a
candidate's run the fault it arises at (a run whose failure is not the kind the fault belongs to, or
whose check differs from the original's, is left as it is, and costs nothing). The fault travels in the
run's harness record under `KEY`, where
the oracle that names it reads it (`oracles.own_check` for non-finite values).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from oracles.base import Oracle
from oracles.outcome import RunResult, Signature
from reducer.faults import CutShort, Fault, Localiser, render

KEY = "fault"


def carrying(run: RunResult, fault: Fault) -> RunResult:
    """`run` with the fields that name its fault, where the oracle reads them."""
    return dataclasses.replace(run, harness={**run.harness, KEY: {"fields": [list(f) for f in fault.fields]}})


class Attached:
    """`localiser` for the failures `applies` says it can place, judged by `oracle`."""

    def __init__(self, localiser: Localiser, oracle: Oracle, applies: Callable[[Signature, RunResult], bool]):
        self.localiser, self.oracle, self.applies = localiser, oracle, applies
        self.fault: Fault | None = None
        self.finding = ""  # what `establish` found, in a sentence for the log
        #: what a candidate's failure must already share with the original's before its fault is
        #: looked for (the fields both the unlocated and the located signature have and that tell
        #: failures apart, such as the exception's type)
        self.shared: tuple[tuple[str, str], ...] = ()

    def establish(self, program: str, run: RunResult, sig: Signature) -> tuple[Signature, RunResult]:
        """The signature with the fault of the original's failure, when one is found."""
        if not self.applies(sig, run):
            return sig, run
        try:
            self.fault = self.localiser.locate(program, run, sig)
        except CutShort as exc:
            self.fault, why = None, f" ({exc})"
        else:
            why = ""
        if self.fault is None:
            self.finding = f"no fault located{why}; candidates need only fail the same way"
            return sig, run
        run = carrying(run, self.fault)
        self.finding = f"at fault: {render(self.fault.fields)}. {self.fault.evidence}"
        located = self.oracle.classify(run) or sig
        self.shared = tuple((k, sig.get(k)) for k, _ in located.fields
                            if sig.get(k) is not None and k not in getattr(self.oracle, "loose", ()))
        return located, run

    def expect(self, sig: Signature) -> None:
        """Runs must show the fault `sig` names (a resumed reduction's, a written-back script's); the
        localiser too, where it holds what it looks for (`ValueOrigin.expect`)."""
        fields = tuple((k, sig.get(k)) for k in self.localiser.fields)
        self.fault = Fault(sig.get("op"), fields, "")
        expect = getattr(self.localiser, "expect", None)
        if expect is not None:
            expect(sig)

    def attach(self, program: str, run: RunResult, spec: str | None = None) -> RunResult:
        """`run` with the fault it arises at, when it fails the way the located failure does; a run of
        a traced candidate (`spec`, no script) is left as it is: the localiser runs scripts."""
        if self.fault is None or KEY in run.harness or not program:
            return run
        seen = self.oracle.classify(run)
        if seen is None or not self.applies(seen, run) or any(seen.get(k) != v for k, v in self.shared):
            return run  # another failure: no need to look for its fault (each look costs runs)
        try:
            found = self.localiser.locate(program, run, seen)
        except CutShort:  # unknown, as for a run cut short itself: judged so (and told so by verification)
            return dataclasses.replace(run, timed_out=True)
        return carrying(run, found) if found is not None else run
