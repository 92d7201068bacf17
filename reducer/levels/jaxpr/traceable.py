"""Whether the traced level can hold a failure, decided before spending a capturing run on it.

The capture (`reducer.levels.jaxpr.capture`) records each transformed call ahead, before it compiles
and runs, when the failure leaves no exception (a death by a signal, a hang, a numeric mismatch:
`reducer.levels.jaxpr.calls_recorded_ahead`), and encodes a jaxpr keeping the script's own `custom_jvp` /
`custom_vjp` rules (`reducer.levels.jaxpr.custom_rules`; libraries' rules are inlined). One kind of
failure is out of its reach, and known to be from the script and the failure signature alone:

- the failure is raised by the program's own Python code on traced values (`if` on a tracer:
  `TracerBoolConversionError`, `ConcretizationTypeError` …): a jaxpr holds primitives, not that code.

Failures of primitives (a missing adjoint, an XLA error status) do not depend on custom rules and
stay in reach.
"""
from __future__ import annotations

from oracles.base import Signature

TRACE_TIME = {"TracerBoolConversionError", "ConcretizationTypeError", "TracerIntegerConversionError",
              "TracerArrayConversionError", "UnexpectedTracerError"}


def out_of_reach(source: str, signature: Signature) -> str:
    """Why capturing `source` cannot reproduce a failure with `signature` ("" when it may)."""
    if signature.get("type") in TRACE_TIME:
        return (f"the failure ({signature.get('type')}) is raised by the program's own Python code on traced "
                "values, which a jaxpr does not hold")
    return ""
