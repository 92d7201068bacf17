"""The IR level's oracle for a wrong gradient, and the operation at fault.

A run of the `gradient` kind (`reducer.levels.mlir.gradient_check`) prints one verdict line: the
pipeline's gradient against finite differences of the module's own function, with the module's
operations. `WrongGradient` turns a disagreeing verdict into a signature of the activity-mismatch
family (the family a script whose Enzyme-JAX gradient disagrees with JAX's gets), whose `op` is the
operation at fault: found once (`GradientCulprit`, a localiser, `reducer.faults`) by keeping each
operation of the module alone (the `isolate-culprit` pass: its operands made arguments,
`failure_names.Isolating`) and checking that one-operation module's gradient; the first that disagrees on
its own is named, else `function`. Candidates are then judged on their verdict and on still holding
that operation.
"""
from __future__ import annotations

import re

from oracles.outcome import Signature
from reducer.levels.mlir.gradient_check import MARKER
from reducer.levels.mlir.failure_names import Isolating
from reducer.levels.mlir.verdicts import OnVerdict, read

#: operations that have no derivative of their own to get wrong
NOT_DIFFERENTIATED = {"stablehlo.constant", "chlo.constant", "stablehlo.return", "func.return", "func.func",
                      "func.call", "builtin.module", "stablehlo.iota"}
FAMILY = "activity-mismatch"
REVERSE = re.compile(r"enzyme-wrap\{[^{}]*mode=ReverseMode")


def differentiates(pipeline: str | None) -> bool:
    """Whether the pipeline differentiates in reverse mode (the mode whose gradient is checked)."""
    return bool(pipeline and REVERSE.search(pipeline))


def verdict(output: str) -> dict | None:
    """The last verdict line a gradient run printed, or None."""
    return read(output, MARKER)


def magnitude(error: float) -> float:
    """An error for ordering: NaN (a gradient that is not a number) counts as the largest."""
    return float("inf") if error != error else error


def signature(op: str, report: dict, output: str) -> Signature:
    worst = max(report.get("directions") or [{}], key=lambda d: magnitude(d.get("error", 0.0)))
    detail = (f"Enzyme-JAX's gradient of @{report.get('function')}: directional derivative {worst.get('enzyme')}; "
              f"{report.get('reference')}: {worst.get('reference')} (tolerance {worst.get('tolerance')})")
    last = [line for line in output.strip().splitlines() if not line.startswith(MARKER)][-3:]
    return Signature(FAMILY, (("source", "enzyme"), ("kind", "numeric"), ("reference", "finite-differences"),
                              ("op", op)),
                     f"Enzyme-JAX: gradient of `{op}` disagrees with finite differences", "\n".join([detail, *last]))


class WrongGradient(OnVerdict):
    """A gradient run whose verdict is a disagreement (`verdicts.OnVerdict`); `op` is set by its
    localiser (`GradientCulprit`)."""

    name = FAMILY
    marker = MARKER

    def signature(self, op: str, report: dict, output: str) -> Signature:
        return signature(op, report, output)


def candidates_for_culprit(ops: list[str]) -> list[str]:
    """The operations worth checking alone, each once: those of the chlo dialect and custom calls
    (special functions, library calls: where derivative rules are written by hand) first, then
    the others, each group in the module's order."""
    seen: list[str] = []
    for op in ops:
        if op not in NOT_DIFFERENTIATED and op not in seen:
            seen.append(op)
    return sorted(seen, key=lambda op: not (op.startswith("chlo.") or op == "stablehlo.custom_call"))


class GradientCulprit(Isolating):
    """The localiser of the operation whose gradient alone is wrong (`wrong(module)`: the module's
    gradient disagrees with finite differences); `WHOLE` when none is."""

    shows = "its gradient alone disagrees with finite differences"
    none = "no operation's gradient disagrees on its own: the signature names the function"

    def ops(self, program: str) -> list[str]:
        return candidates_for_culprit(self.rep.ops(program))
