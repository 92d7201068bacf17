"""Whether the traced level can hold a failure, decided before spending a capturing run on it.

The capture (`reducer.levels.jaxpr.capture`) records each transformed call ahead, before it compiles
and runs, when the failure leaves no exception (a death by a signal, a hang, a numeric mismatch:
`reducer.levels.jaxpr.calls_recorded_ahead`), and encodes a jaxpr keeping the script's own `custom_jvp` /
`custom_vjp` rules (`reducer.levels.jaxpr.custom_rules`; libraries' rules are inlined). One kind of
failure is out of its reach, and known to be from the script and the failure signature alone, and
one from the fix the reduction holds it to:

- the failure is raised by the program's own Python code on traced values (`if` on a tracer:
  `TracerBoolConversionError`, `ConcretizationTypeError` …): a jaxpr holds primitives, not that code;
- a JAX function differs from the NumPy or SciPy function it documents it implements, and its
  namesake computing it makes the program run through (`reducer.faults.numpy_twins`): a candidate
  must keep calling it, and a traced program writes its body out.

Failures of primitives (a missing adjoint, an XLA error status) do not depend on custom rules and
stay in reach.
"""
from __future__ import annotations

from oracles.base import Signature
from reducer.faults import numpy_twins

TRACE_TIME = {"TracerBoolConversionError", "ConcretizationTypeError", "TracerIntegerConversionError",
              "TracerArrayConversionError", "UnexpectedTracerError"}


def out_of_reach(source: str, signature: Signature, fix: str | None = None) -> str:
    """Why capturing `source` cannot reproduce a failure with `signature`, held to `fix` (the
    counterfactual the reduction found before any level: `reducer.counterfactual`), ("" when it may)."""
    if fix == numpy_twins.FIX:
        return ("a JAX function differs from the NumPy or SciPy function it implements: a traced program "
                "writes its body out, and keeps neither the call nor the comparison")
    if signature.get("type") in TRACE_TIME:
        return (f"the failure ({signature.get('type')}) is raised by the program's own Python code on traced "
                "values, which a jaxpr does not hold")
    return ""
