"""The operation a crash happens in: for a process that dies by a signal, the primitive whose
lowering, compilation or derivative kills it.

A dying process cannot say which operation it was compiling, so the crashing call (the last one
recorded ahead, `reducer.levels.jaxpr.calls_recorded_ahead`) is replayed cut short: the prefix of its jaxpr up to
equation k computes what the rest of the function needs from it (its values read later or returned)
and returns them, under the call's own transformations (a gradient as a `vjp`, since a prefix need
not return a scalar; only floating-point values are returned where the chain differentiates). The
operation at fault is the first equation whose prefix dies the same way, found one by one (the
function's whole prefix must die, or there is no answer; prefixes cut at odd places may fail in
other ways, so bisection could land past it); an inner `jit` found so is entered, and an
`enzyme_jax_ir` call is searched as its own derivative (`jit ∘ vjp ∘ enzyme`). With a
wanted operation (the one the reduction's signature names) two tests confirm it: the prefix through
its first equation dies, the one before it does not. Each test runs in a forked child of a warm
worker (`reducer.levels.jaxpr.worker.run_spec`), so only that child dies.

`CrashingOperation` is the localiser (`reducer.faults`: field `op`) with the `establish` / `attach` shape of
`reducer.faults.attach.Attached`: the operation travels in the run's harness record under `KEY`,
where the crash oracle reads it.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from oracles import kinds
from oracles.crash import OPERATION, without_operation
from oracles.outcome import RunResult, Signature
from reducer.faults import Fault
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import INEXACT, Arg, Equation, Jaxpr, Spec, Transform, Var, names
from reducer.levels.jaxpr.passes._edit import clone
from reducer.levels.jaxpr.passes.inline_calls import inline_body

MAX_TESTS = 24
#: what a gradient-taking transformation becomes for a prefix (outermost first)
AS_PULLBACK = {"grad": ["vjp"], "value_and_grad": ["vjp"], "jacrev": ["vjp"], "jacfwd": ["jvp"],
               "hessian": ["jvp", "vjp"]}
DIFFERENTIATING = jp.GRAD_LIKE | {"vjp", "jvp", "enzyme"}  # where a cut returns floating-point values only
ENTERED = {"jit"}


def frontier(j: Jaxpr, k: int) -> list[Var]:
    """The outputs of equations 0..k that the equations after k or the function's results read."""
    later = {a for e in j.eqns[k + 1:] for a in names(e.inputs)}
    later.update(names(j.outputs))
    return [o for e in j.eqns[:k + 1] for o in e.outputs if o.name in later]


def _floating(out: Var) -> bool:
    return out.dtype.startswith(INEXACT)


def prefix(spec: Spec, k: int) -> str | None:
    """The spec of the function cut after equation k, or None when it would return nothing."""
    new = clone(spec)
    j = new.jaxpr
    differentiates = bool(set(new.kinds()) & DIFFERENTIATING)
    outs = [o for o in frontier(j, k) if _floating(o) or not differentiates]
    if not outs:
        return None
    j.eqns, j.outputs = j.eqns[:k + 1], [o.name for o in outs]
    transforms = []
    for t in new.transforms:
        transforms += [Transform(kind) for kind in AS_PULLBACK[t.kind]] if t.kind in AS_PULLBACK else [t]
    new.transforms = transforms
    j.dce()
    return new.to_json()


class Search:
    """Finds the operation at fault in one crashing spec; `dies(spec_text)` runs a prefix and says
    whether it dies the same way. Tests are counted and never repeated."""

    def __init__(self, dies, budget: int = MAX_TESTS):
        self.dies, self.budget, self.tested = dies, budget, 0
        self._seen: dict[str, bool] = {}

    def test(self, text: str | None) -> bool:
        if text is None:
            return False
        if text not in self._seen:
            if self.tested >= self.budget:
                raise TimeoutError("out of tests")
            self.tested += 1
            self._seen[text] = self.dies(text)
        return self._seen[text]

    def operation(self, spec: Spec, wanted: str | None = None) -> str:
        """The operation at fault ('' when the cut-short function never dies the same way)."""
        try:
            return self._operation(spec, wanted, 0, None, depth=0)
        except TimeoutError:
            return ""

    def _operation(self, spec: Spec, wanted: str | None, start: int, stop: int | None, depth: int) -> str:
        """The search among equations `start`..`stop` (the prefixes before `start` live; the one
        through `stop` is known to die) or, without `stop`, from `start` on."""
        eqns = spec.jaxpr.eqns
        last = len(eqns) - 1 if stop is None else stop
        cut = {k: prefix(spec, k) for k, e in enumerate(eqns)
               if start <= k <= last and e.primitive not in jp.VALUE_PRIMS}
        points = [k for k in cut if cut[k] is not None]
        if not points:
            return ""
        if wanted:
            first = next((n for n, k in enumerate(points) if contains_op(eqns[k], wanted)), None)
            if first is not None and self.test(cut[points[first]]) and (
                    first == 0 or not self.test(cut[points[first - 1]])):
                return self._found(spec, points[first], wanted, depth)
        if stop is None and not self.test(cut[points[-1]]):
            return ""
        # one by one from the start: a prefix that stops at an odd place can fail otherwise
        # (Enzyme-JAX raises on some), so the first dying prefix is not found by bisection
        k = next(k for k in points if k == points[-1] or self.test(cut[k]))
        return self._found(spec, k, wanted, depth)

    def _found(self, spec: Spec, k: int, wanted: str | None, depth: int) -> str:
        """The operation at fault, given that equation k is the first whose prefix dies: itself, or
        for an inner `jit`, the first of its own equations whose prefix dies, or for an
        `enzyme_jax_ir` call, the operation at fault of its own derivative."""
        e = spec.jaxpr.eqns[k]
        if e.primitive == "enzyme" and e.subs and e.subs[0].eqns and depth < 4:
            return self._operation(enzyme_derivative(spec, e), wanted, 0, None, depth + 1) or e.primitive
        if e.primitive in ENTERED and e.subs and e.subs[0].eqns and depth < 4:
            inner = clone(spec)
            inline_body(inner.jaxpr, k, e.subs[0], e.inputs)
            end = k + len(e.subs[0].eqns) - 1
            return self._operation(inner, wanted, k, end, depth + 1) or e.primitive
        return e.primitive


def contains_op(e: Equation, op: str) -> bool:
    """Whether equation `e` is `op`, or an inner `jit` or `enzyme_jax_ir` call that holds it."""
    return e.primitive == op or (e.primitive in ENTERED | {"enzyme"} and any(contains_op(x, op) for sub in e.subs
                                                                             for x in sub.eqns))


def enzyme_derivative(spec: Spec, e: Equation) -> Spec:
    """The spec of the `enzyme_jax_ir` function called by equation `e`, differentiated on its own as
    the call's chain differentiates it (`jit ∘ vjp ∘ enzyme`, or `jvp` in forward mode): a crash in
    Enzyme-JAX's derivative of the call is one of its own equations'."""
    forward = bool(set(spec.kinds()) & {"jvp", "jacfwd"})
    body = e.subs[0]
    enzyme = Transform("enzyme", options=e.params.get("options") or None)
    return Spec([Transform("jit"), Transform("jvp" if forward else "vjp"), enzyme], body,
                [Arg(v.shape, v.dtype) for v in body.inputs], x64=spec.x64)


def operation(spec_text: str, dies, wanted: str | None = None, budget: int = MAX_TESTS) -> str:
    """The operation at fault in the crashing call `spec_text` ('' when none is found)."""
    return Search(dies, budget).operation(jp.parse(spec_text), wanted)


# -- runs -----------------------------------------------------------------------------------------
#: where a run's harness report carries the operation at fault, for `oracles.crash`
KEY = OPERATION
MAX_CALLS = 3  # recorded calls tried, latest first: a crash at exit leaves calls that all run fine


def placeable(sig: Signature | None) -> bool:
    """Whether `sig` is a failure whose operation can be looked for: a death by a signal."""
    return kinds.signal_crash(sig)


def evidence(op: str) -> str:
    """Why `op` is the operation a crash happens in."""
    return (f"the crash happens in `{op}`: its recorded call, cut short after `{op}`, dies the same way, "
            f"and cut before it does not")


class CrashingOperation:
    """Names the operation at fault in the runs of one reduction that die by a signal, by replaying
    their crashing call (recorded ahead by a capturing run of the script, or the traced level's
    own candidate) in forked children of the workers of the sandbox `sandbox()` gives (the job's as it
    is when the run is made: its data files change as levels hand theirs on)."""

    fields = ("op",)

    def __init__(self, sandbox: Callable[[], object], limits, oracle, wanted: Signature | None = None):
        self.sandbox, self.limits, self.oracle = sandbox, limits, oracle
        self.wanted = wanted  # once set: the failure whose operation runs must confirm
        self.finding = ""  # what `establish` found, in a sentence for the log
        self._named: dict = {}  # (recorded call, wanted operation) -> its operation: script candidates often share one

    def dies(self, like: Signature):
        from reducer.levels.jaxpr.worker import run_spec

        def dies(text: str) -> bool:
            run = run_spec(self.sandbox(), text, self.limits, min(self.limits.timeout, 30.0))
            seen = self.oracle.classify(run)
            return placeable(seen) and without_operation(seen) == without_operation(like)

        return dies

    def of_spec(self, spec: str, like: Signature) -> str:
        key = (spec, like.get("op"))
        if key not in self._named:
            self._named[key] = operation(spec, self.dies(like), like.get("op") or None)
        return self._named[key]

    def of_script(self, source: str, like: Signature) -> str:
        """The operation at fault of `source`'s crash: its calls recorded ahead, latest first."""
        from reducer.levels.jaxpr.worker import CapturedScript

        box = self.sandbox()
        run = box.run(CapturedScript(box.script_name, source), self.limits, isolated=True)
        for spec in run.harness.get("ahead", [])[:MAX_CALLS]:
            op = self.of_spec(spec, like)
            if op:
                return op
        return ""

    def locate(self, program: str, run: RunResult | None, signature: Signature) -> Fault | None:
        """The operation at fault of the crash `signature` of the script `program` (confirming the
        operation `signature` names, where it names one)."""
        op = self.of_script(program, signature) if placeable(signature) else ""
        return Fault(op, (("op", op),), evidence(op)) if op else None

    def expect(self, sig: Signature) -> None:
        """Later runs must die in the operation `sig` names."""
        self.wanted = sig

    def name(self, run: RunResult, op: str) -> RunResult:
        return dataclasses.replace(run, harness={**run.harness, KEY: op}) if op else run

    def attach(self, source: str, run: RunResult, spec: str | None = None) -> RunResult:
        """`run` with its operation at fault, when it dies the way the wanted failure does and that
        failure names one; else `run` as it is."""
        wanted = self.wanted
        if wanted is None or not wanted.get("op") or run.harness.get(KEY):
            return run
        seen = self.oracle.classify(run)
        if not placeable(seen) or without_operation(seen) != without_operation(wanted):
            return run
        if spec:
            return self.name(run, self.of_spec(spec, wanted))
        fault = self.locate(source, run, wanted)
        return self.name(run, fault.name if fault else "")

    def establish(self, source: str, run: RunResult, sig: Signature) -> tuple[Signature, RunResult]:
        """The reduction's signature with the operation at fault of the original's crash, when one
        is found; later runs must show the same."""
        if not placeable(sig) or sig.get("op"):
            return sig, run
        fault = self.locate(source, run, sig)
        run = self.name(run, fault.name if fault else "")
        sig = self.oracle.classify(run) or sig
        self.wanted = sig
        self.finding = (fault.evidence if fault else
                        "no operation at fault found for the crash (its recorded calls, cut short, do not die the same "
                        "way); candidates need only die the same way")
        return sig, run
