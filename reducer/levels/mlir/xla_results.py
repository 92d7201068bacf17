"""The IR level's oracle for a wrong result of XLA, and the operation at fault.

A run of the `xla-results` kind (`reducer.levels.mlir.xla_check.compare`) prints one verdict line:
the module's results as XLA compiles it, against a reference compilation of the same module (XLA's
optimisations off). `XlaResults` turns a disagreeing verdict into a signature of the wrong-result
family (the family a script whose `jit` result disagrees with op-by-op evaluation gets) with
`source=xla`, whose `op` is the operation at fault: found once (`ResultCulprit`, a localiser,
`reducer.faults`) by keeping each operation of the module alone (the `isolate-culprit` pass: its
operands made arguments, `failure_names.Isolating`) and comparing that one-operation module's results;
the first that differs on its own is named, else `function` (the fault lies in how XLA combines
operations, say a fusion). Candidates are then judged on their
verdict and on still holding that operation.
"""
from __future__ import annotations

from oracles.outcome import Signature
from reducer.levels.mlir.failure_names import Isolating
from reducer.levels.mlir.verdicts import OnVerdict, read
from reducer.levels.mlir.xla_check import RESULTS

FAMILY = "wrong-result"
#: operations that compute nothing XLA could get wrong on their own
NOT_COMPUTED = {"stablehlo.constant", "stablehlo.return", "func.return", "func.func", "func.call", "builtin.module"}


def verdict(output: str) -> dict | None:
    """The last verdict line a results run printed, or None."""
    return read(output, RESULTS)


def signature(op: str, report: dict, output: str) -> Signature:
    worst = (report.get("differences") or [{}])[0]
    where = (f"output {worst.get('output')} at index {tuple(worst.get('index', ()))}: {worst.get('value')} against "
             f"{worst.get('reference')} ({worst.get('count')} of {worst.get('of')} elements differ)"
             if "index" in worst else str(worst.get("what", "")))
    reference = report.get("reference") or {}
    options = " ".join(f"--{k}={v}" for k, v in reference.items())
    last = [line for line in output.strip().splitlines() if not line.startswith(RESULTS)][-3:]
    off = reference.get("xla_disable_hlo_passes", "")
    if list(reference) == ["xla_disable_hlo_passes"] and "," not in off:  # the culprit pass alone disabled
        fields, against = ((("reference", "without-pass"), ("xla-pass", off)),
                           f"the same module without XLA pass `{off}`")
    else:
        fields, against = (("reference", "unoptimized"),), "XLA's unoptimised compilation"
    return Signature(FAMILY, (("source", "xla"), *fields, ("op", op)),
                     f"XLA: compiled result disagrees with {against} (`{op}`)",
                     "\n".join([f"against XLA with {options}", where, *last]))


class XlaResults(OnVerdict):
    """A results run whose verdict is a disagreement (`verdicts.OnVerdict`); `op` is set by its
    localiser (`ResultCulprit`)."""

    name = FAMILY
    marker = RESULTS

    def signature(self, op: str, report: dict, output: str) -> Signature:
        return signature(op, report, output)


class ResultCulprit(Isolating):
    """The localiser of the operation whose results alone XLA gets wrong (`wrong(module)`: its
    results differ from the reference's); `WHOLE` when none does."""

    shows = "its result alone differs from the reference"
    none = ("no operation's result differs on its own: the signature names the function (XLA's fault lies in how "
            "it combines them)")

    def ops(self, program: str) -> list[str]:
        seen: list[str] = []
        for op in self.rep.ops(program):
            if op not in NOT_COMPUTED and op not in seen:
                seen.append(op)
        return seen
