"""Activity mismatch: tangents, cotangents or activities that do not fit, and wrong gradients.

Covers Enzyme's `Constant memory is stored (or returned) to a differentiable variable` and
`Mismatched activity`; JAX's custom_vjp / custom_jvp structure, shape and dtype mismatches and
gradients of integer inputs; and the silent kind, a gradient that is numerically wrong. For that
one the verdict comes from the harness (`reducer.harness`), which compares every Enzyme-JAX
gradient the program takes with JAX's own AD of the same function: the program's prints or exit
message are never evidence on their own. When the original program itself computed both gradients
and stopped with a message, the candidate must still do both, so the reproducer keeps showing the
comparison the user saw. The signature names the operation at fault: the first equation of the
function's jaxpr whose Enzyme-JAX derivative already disagrees (`reducer.cross_checks.locate`). Where
the check also took float64 finite differences there (`reducer.cross_checks.differences`), the excerpt
opens with the three derivatives and which one they support; they are not part of the signature.
"""
from __future__ import annotations

import re

from oracles.base import Oracle, Signature, excerpt, program_exit
from oracles.outcome import RunResult, program_outcome

#: Enzyme-JAX's messages for a value whose activity does not fit, each with the kind it names
ENZYME = (
    (re.compile(r"Constant memory is stored \(or returned\) to a differentiable variable"),
     "constant-stored-to-active"),
    (re.compile(r"Mismatched activity for"), "mismatched-activity"),
)
#: JAX's message for a custom_jvp / custom_vjp rule whose output does not fit: which rule, and what
CUSTOM_RULE = re.compile(
    r"Custom (?P<rule>VJP bwd|JVP|VJP fwd) rule (?:\S+ for function \S+ )?(?:must|should) produce(?P<what>"
    r" an output with the same (?:container \(pytree\) structure|shape/dtypes)"
    r"| primal and tangent outputs with (?:equal container \(pytree\) structures"
    r"|(?:corresponding|equal) shapes and dtypes))?")
RULES = {"VJP bwd": "custom_vjp", "JVP": "custom_jvp", "VJP fwd": "custom_vjp-fwd"}
#: JAX's other messages for tangents and cotangents that do not fit
JAX = (
    (re.compile(r"requires real- or complex-valued inputs \(input dtype that is a sub-dtype of np\.inexact\)"),
     "integer-input"),
    (re.compile(r"primal and tangent arguments to jax\.jvp must have the same tree structure"), "jvp-structure"),
    (re.compile(r"primal and tangent arguments to jax\.jvp (?:do not match; dtypes|must have equal types)"),
     "jvp-dtype"),
    (re.compile(r"Type of cotangent input to vjp pullback function \(.*\) is not the expected tangent type"),
     "vjp-cotangent-type"),
)


def mismatch_message(text: str) -> tuple[str, str, re.Match] | None:
    """The first activity or tangent message found in `text`: (source, kind, match)."""
    for pattern, kind in ENZYME:
        m = pattern.search(text)
        if m:
            return "enzyme", kind, m
    m = CUSTOM_RULE.search(text)
    if m:
        what = m.group("what") or ""
        fit = "structure" if "structure" in what else "shape-dtype" if what else "output"
        return "jax", f"{RULES[m.group('rule')]}-{fit}", m
    for pattern, kind in JAX:
        m = pattern.search(text)
        if m:
            return "jax", kind, m
    return None


class ActivityMismatch(Oracle):
    name = "activity-mismatch"
    needs_gradient_checks = True
    watches = ("gradients",)

    def owner(self, sig: Signature) -> str:
        return "enzyme-jax" if sig.get("source") == "enzyme" or sig.get("kind") == "numeric" else "jax"

    def classify(self, run: RunResult) -> Signature | None:
        text = run.output
        found = mismatch_message(text)
        if found is None:
            return self._numeric(run)
        source, kind, m = found
        return Signature(self.name, (("source", source), ("kind", kind)),
                         f"{'Enzyme-JAX' if source == 'enzyme' else 'JAX'}: {kind.replace('-', ' ')}",
                         excerpt(text, m.group(0), 2, 4))

    def _numeric(self, run: RunResult) -> Signature | None:
        checks = [c for c in run.harness.get("checks", []) if c.get("mismatch")]
        if not checks:
            return None
        run = program_outcome(run)
        counts = run.harness.get("gradients", {})
        worst = max(checks, key=lambda c: c.get("max_abs_err", 0.0))
        op = worst.get("operation", "function")
        fields = [("source", "enzyme"), ("kind", "numeric"), ("reference", "jax-ad"), ("op", op)]
        if counts.get("enzyme") and counts.get("plain"):
            fields.append(("program-compares", "yes"))
        if run.returncode not in (0, None):
            fields.append(("program-exit", program_exit(run.output)))
        detail = (f"harness: Enzyme-JAX gradient of `{worst['function']}` = {worst.get('enzyme')}, "
                  f"JAX AD = {worst.get('reference')} (max abs error {worst.get('max_abs_err'):.3g}, "
                  f"rtol={worst.get('rtol')}, atol={worst.get('atol')}); first disagreeing operation: `{op}`"
                  + (f" at {worst['inputs']}" if worst.get("inputs") else ""))
        if worst.get("at_fault"):
            detail = fault_sentence(worst["at_fault"]) + "\n" + detail
        return Signature(self.name, tuple(fields), f"Enzyme-JAX: gradient of `{op}` disagrees with JAX's AD",
                         detail + "\n" + "\n".join(run.output.strip().splitlines()[-4:]))


#: what float64 finite differences say of the two derivatives (`reducer.cross_checks.differences`)
WRONG = {"enzyme": "they agree with JAX's AD: Enzyme-JAX's derivative is the wrong one",
         "jax-ad": "they agree with Enzyme-JAX, not with JAX's AD: JAX's derivative is the wrong one, not Enzyme-JAX's",
         "both": "neither derivative agrees with them",
         "": "they cannot tell which is wrong"}


def reference(sig: Signature) -> str | None:
    """What a wrong derivative's fix replaces Enzyme-JAX with (`reducer.counterfactual`): JAX's own AD
    ("enzyme"), for Enzyme-JAX's derivative disagreeing in value; None otherwise."""
    return "enzyme" if sig.family == "activity-mismatch" and sig.get("kind") == "numeric" else None


def fault_sentence(found: dict) -> str:
    """The sentence for the operation at fault of a replayed check: "Enzyme-JAX's derivative of
    `digamma` at 0.7 is X; JAX's is Y; finite differences give Z", and which of the two they support."""
    at = found.get("at")
    where = (f"at {_number(at)}" if not isinstance(at, list)
             else "at (" + ", ".join(_number(x) for x in at) + ") along ones")
    if found.get("input"):  # the operation's first floating-point input goes unnamed
        where += f" (its input {found['input']})"
    text = (f"Enzyme-JAX's derivative of `{found['operation']}` {where} is {_number(found['enzyme'])}; "
            f"JAX's is {_number(found['jax'])}")
    if found.get("defined"):
        return (text + f"; `{found['operation']}`'s derivative is 0 by definition, as JAX's AD has it (finite "
                "differences see the identity it computes and cannot judge it): Enzyme-JAX differentiates through it")
    if found.get("fd") is None:
        return text + "; finite differences could not be computed there"
    return (text + f"; float64 central finite differences (step {found['step']:.3g}) give {_number(found['fd'])}: "
            + WRONG.get(found.get("wrong", ""), WRONG[""]))


def _number(x) -> str:
    return f"{x:.6g}" if isinstance(x, (int, float)) else str(x)

