"""What an IR-level failure is called: Enzyme-JAX reports every failure of `run_pass_pipeline` as
an error status (`INVALID_ARGUMENT: Failed to parse module`, `INVALID_ARGUMENT: Failed to parse
pipeline`, `INTERNAL: Failed to parse pipeline … Pipeline failed:` for a pass that fails), which
the crash oracle alone would call an XLA error; so would it a module XLA's own parser refuses.
`relabel` says which it is, and `FailingPass` (a localiser, `reducer.faults`) finds, once, the pass
of the pipeline that fails (the shortest prefix that fails the same way, `failing_pass`), so that
the title names it; `named_ops` lists the operations a failure names, which dead-code removal must
keep, and `culprit_of` the one at fault, which `Isolating` (the localiser of an operation wrong on
its own, `reducer.faults.alone`) finds by keeping each operation alone.
"""
from __future__ import annotations

import re
from typing import Callable, Hashable

from oracles import kinds
from oracles.outcome import RunResult, Signature
from reducer.faults import Fault
from reducer.faults.alone import WHOLE, Alone
from reducer.levels.mlir import pipeline as pl

#: (how, title) by what the output says (Enzyme-JAX's status, then XLA's parser); the first that matches wins
KINDS = [
    (re.compile(r"Failed to parse module"), "parse", "Enzyme-JAX cannot parse the module"),
    (re.compile(r"PassPipeline Parser|does not refer to a registered pass"), "pipeline-parse",
     "Enzyme-JAX cannot parse the pass pipeline"),
    (re.compile(r"Pipeline failed"), "pass-failure", "Enzyme-JAX's pass pipeline fails"),
    (re.compile(r"not found for custom op|custom op '[^']*' is unknown|parsed with an unregistered dialect"),
     "parse", "XLA cannot parse the module"),
]
PASS_TITLE = "Enzyme-JAX pass `{name}` fails"


NAMED_OP = re.compile(r"'(?P<name>[A-Za-z_][\w$]*\.[\w$.]+)' op\b|custom op '(?P<custom>[A-Za-z_][\w$]*\.[\w$.]+)'")


def named_ops(sig) -> set[str]:
    """The operations a failure signature names: its `op`, and those its diagnostic quotes
    (`'memref.alloc' op …`); dead-code removal never erases them."""
    found = {sig.get("op")} if sig.get("op") else set()
    for _, value in sig.fields:
        found.update(m.group("name") or m.group("custom") for m in NAMED_OP.finditer(str(value)))
    return found


def relabel(sig: Signature, output: str, diagnostic: str) -> Signature:
    """`sig` (an `xla-status` crash of an Enzyme-JAX run, with its first diagnostic) under the
    name of what happened; other signatures as they are."""
    if not kinds.xla_status(sig):
        return sig
    for pattern, how, title in KINDS:
        if pattern.search(output):
            fields = tuple((k, how if k == "how" else v) for k, v in sig.fields) + (("diagnostic", diagnostic),)
            return Signature(sig.family, fields, f"{title}: {diagnostic}", sig.excerpt)
    return Signature(sig.family, sig.fields + (("diagnostic", diagnostic),), sig.title, sig.excerpt)


def same_kind(wanted: Signature, seen: Signature) -> bool:
    """Signatures match on family and fields; the title may have been made more precise since."""
    return kinds.identical(wanted, seen)


def without_pass(sig: Signature) -> Signature:
    """The signature a candidate's run can show: a crash's pass (`crash_pass.named`) is found once,
    for the original."""
    return Signature(sig.family, tuple(f for f in sig.fields if f[0] not in ("pass", "xla-pass")), sig.title,
                     sig.excerpt)


def as_seen(wanted: Signature, seen: Signature) -> Signature:
    """`wanted` under `seen`'s title when they are the same failure (the title of the failure
    being reduced may name its pass; a candidate's run cannot)."""
    return Signature(wanted.family, wanted.fields, seen.title, wanted.excerpt) if same_kind(wanted, seen) else wanted


def failing_pass(pipeline: str, fails_same) -> str | None:
    """The first top-level pass of `pipeline` whose prefix already fails as the whole does
    (`fails_same(prefix)`, bisected); None when it is not a pipeline."""
    try:
        passes = pl.parse(pipeline)
    except ValueError:
        return None
    lo, hi = 1, len(passes)
    while lo < hi:  # the smallest prefix that fails so
        mid = (lo + hi) // 2
        if fails_same(pl.render(passes[:mid])):
            hi = mid
        else:
            lo = mid + 1
    return passes[lo - 1].name if passes else None


class FailingPass:
    """The localiser of the pass of a pipeline that fails: the last of the shortest prefix of the
    program's pipeline that fails as the whole does. `outcome(module_text, pipeline)` says how a
    pipeline fails on the module (its diagnostic, the signal that kills it), None when it does not."""

    fields = ("pass",)

    def __init__(self, outcome: Callable[[str, str], Hashable | None]):
        self.outcome = outcome

    def applies(self, signature: Signature | None) -> bool:
        """Whether the failure is one a pass of the pipeline can be found for."""
        return signature is None or is_pass_failure(signature)

    def locate(self, program: str, run: RunResult | None, signature: Signature | None) -> Fault | None:
        from reducer.levels.mlir.module import split

        pipeline, module_text = split(program)
        if not pipeline or not self.applies(signature):
            return None
        whole = self.outcome(module_text, pipeline)
        if whole is None or whole == "":
            return None
        name = failing_pass(pipeline, lambda prefix: self.outcome(module_text, prefix) == whole)
        return self.fault(name, whole) if name else None

    def fault(self, name: str, whole) -> Fault:
        return Fault(name, (("pass", name),), f"The shortest prefix of the pipeline that fails as the whole does "
                                              f"ends with `{name}`.")


def is_pass_failure(sig: Signature) -> bool:
    return kinds.pipeline_error(sig) or sig.get("how") == "pass-failure"


def named(sig: Signature, name: str | None) -> Signature:
    """A pass failure's signature whose title names the pass."""
    if not name or not is_pass_failure(sig):
        return sig
    what = sig.get("diagnostic") or sig.get("message")
    on = f" on `{sig.get('op')}`" if sig.get("op") else ""
    return Signature(sig.family, sig.fields, f"{PASS_TITLE.format(name=name)}{on}: {what}"[:200], sig.excerpt)


def culprit_of(sig: Signature) -> tuple[str, str] | None:
    """The operation a signature names as the one at fault, with its custom call target, for the
    pass that keeps only it (`isolate-culprit`): a missing adjoint's, a wrong gradient's, a wrong
    result's of XLA (not "function": no single operation)."""
    op = sig.get("op")
    if kinds.enzyme_adjoint(sig) and op:
        return op, sig.get("target")
    numeric = kinds.numeric_gradient(sig)
    xla = kinds.wrong_result(sig) and sig.get("source") == "xla"
    return (op, "") if (numeric or xla) and op not in ("", WHOLE) else None


class Isolating(Alone):
    """`Alone` for a module: each operation kept alone by the `isolate-culprit` pass run in the IR
    worker of `rep` (the module's representation, `reducer.levels.mlir.representation.MlirModule`)."""

    def __init__(self, rep, wrong: Callable[[str], bool], log: Callable[[str], None]):
        super().__init__(wrong, log)
        self.rep = rep

    def alone(self, program: str, op: str) -> str | None:
        from reducer.levels.mlir.ir_worker import RemoteItem, RemotePass

        item = RemoteItem(program)
        isolate = RemotePass("isolate-culprit", self.rep.worker, self.rep, (op, ""), self.log)
        for point in isolate.points(item)[:1]:  # the operation alone, its operands made arguments
            return isolate.apply(item, point)
        return None
