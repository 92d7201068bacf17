"""Whether the traced level can hold a failure, decided before spending a capturing run on it.

The capture (`reducer.levels.jaxpr.capture`) records a failing call from inside the process, when the
call raises, and encodes its jaxpr with `custom_jvp` / `custom_vjp` rules inlined (their primal
function stands for them). Two kinds of failure are therefore out of its reach, and known to be
from the script and the failure signature alone:

- the process dies by a signal, or hangs: no exception is raised, so nothing is recorded;
- the script defines its own `custom_jvp` / `custom_vjp` rules and the failure is one JAX meets
  while differentiating through such rules (an activity mismatch: cotangent structure, shape or
  dtype; or an internal error inside JAX): the captured program no longer has the rules.

- the failure is raised by the program's own Python code on traced values (`if` on a tracer:
  `TracerBoolConversionError`, `ConcretizationTypeError` …): a jaxpr holds primitives, not that code.

Failures of primitives (a missing adjoint, an XLA error status) do not depend on custom rules and
stay in reach.
"""
from __future__ import annotations

import ast

from oracles.base import Signature

RULE_METHODS = {"defjvp", "defjvps", "defvjp"}
RULE_MAKERS = {"custom_jvp", "custom_vjp"}
TRACE_TIME = {"TracerBoolConversionError", "ConcretizationTypeError", "TracerIntegerConversionError",
              "TracerArrayConversionError", "UnexpectedTracerError"}


def defines_custom_rules(source: str) -> bool:
    """Whether the script makes its own differentiation rules (`f.defjvp(…)`, `f.defvjp(…)`,
    `@jax.custom_vjp` …)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in RULE_METHODS | RULE_MAKERS:
            return True
        if isinstance(node, ast.Name) and node.id in RULE_MAKERS:
            return True
    return False


def out_of_reach(source: str, signature: Signature) -> str:
    """Why capturing `source` cannot reproduce a failure with `signature` ("" when it may)."""
    how = signature.get("how")
    if signature.family == "crash" and how in ("signal", "hang"):
        return ("the process dies by a signal: there is no exception to capture" if how == "signal"
                else "the program hangs: there is no exception to capture")
    if signature.get("type") in TRACE_TIME:
        return (f"the failure ({signature.get('type')}) is raised by the program's own Python code on traced "
                "values, which a jaxpr does not hold")
    in_rules = signature.family == "activity-mismatch" or (signature.family == "crash" and how == "internal-error")
    if in_rules and defines_custom_rules(source):
        return "the failure arises in differentiating the script's own custom_jvp / custom_vjp rules, which capture inlines"
    return ""
