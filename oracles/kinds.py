"""What kind of failure a signature is: the questions the levels, the counterfactual, the report and
the corpus ask of a failure, answered where the families are, instead of by family names spelled
across the tool. Each answers from the signature alone."""
from __future__ import annotations

from oracles.outcome import Signature

#: the families whose verdict is the program's own check: its `assert`, a `--oracle regex:`, a `script:`
CHECKED_BY_PROGRAM = ("own-check", "regex", "script")


def own_check(sig: Signature) -> bool:
    """The program's own check fails (an `assert`, `assert_allclose`, a raised error of its own)."""
    return sig.family == "own-check"


def nonfinite(sig: Signature) -> bool:
    """The program's own check fails on a NaN or an Inf whose origin is located (`reducer.faults.origin`)."""
    return sig.family == "nonfinite"


def program_checks(sig: Signature) -> bool:
    """The program's own check decides the failure: an own check, or one on a located non-finite value."""
    return own_check(sig) or nonfinite(sig)


def decided_by_program(sig: Signature) -> bool:
    """The failure is whatever the program, a `--oracle regex:` or a `script:` command says it is, or a
    check on a located non-finite value."""
    return sig.family in CHECKED_BY_PROGRAM or nonfinite(sig)


def reads(sig: Signature) -> str:
    """What the program's failing own check reads ("close", "nonfinite", "order", "value" …); "" for
    another family."""
    return sig.get("reads") if own_check(sig) else ""


def on_nonfinite(sig: Signature) -> bool:
    """A check on a non-finite value: located, or an own check that reads one."""
    return nonfinite(sig) or reads(sig) == "nonfinite"


def jax_value_check(sig: Signature) -> bool:
    """JAX's own NaN or Inf check, switched on by the program (`jax.debug_nans`), raised: a value
    failure whose origin is located as a check's on a non-finite value is."""
    return sig.family == "jax-error" and sig.get("type") == "FloatingPointError" and \
        sig.get("message").startswith("invalid value")


def located_value(sig: Signature) -> bool:
    """A failure on a non-finite value whose origin is located: the program's check's, or JAX's own
    check's (`jax_value_check`) carrying its origin."""
    return nonfinite(sig) or jax_value_check(sig) and bool(sig.get("fix"))


def numeric_gradient(sig: Signature) -> bool:
    """Enzyme-JAX's derivative disagrees in value with JAX's."""
    return sig.family == "activity-mismatch" and sig.get("kind") == "numeric"


def activity_mismatch(sig: Signature) -> bool:
    """Enzyme-JAX's derivative disagrees with JAX's, in value or in structure."""
    return sig.family == "activity-mismatch"


def wrong_result(sig: Signature) -> bool:
    """A result disagrees with its reference (`jit` with op by op, a device with the CPU)."""
    return sig.family == "wrong-result"


def adjoint_missing(sig: Signature) -> bool:
    """A derivative rule or adjoint is missing (JAX's or Enzyme-JAX's)."""
    return sig.family == "adjoint-missing"


def enzyme_adjoint(sig: Signature) -> bool:
    """Enzyme-JAX cannot compute an operation's adjoint."""
    return adjoint_missing(sig) and sig.get("source") == "enzyme"


def pipeline_error(sig: Signature) -> bool:
    """A pass of Enzyme-JAX's pipeline fails."""
    return sig.family == "pipeline-error"


def crash(sig: Signature | None) -> bool:
    """The process crashed: a signal, a hang, an XLA error status, an internal error."""
    return sig is not None and sig.family == "crash"


def signal_crash(sig: Signature | None) -> bool:
    """The process was killed by a signal (a segfault, an abort)."""
    return crash(sig) and sig.get("how") == "signal"


def xla_status(sig: Signature | None) -> bool:
    """XLA returned an error status while compiling or running."""
    return crash(sig) and sig.get("how") == "xla-status"


def same_family(a: Signature, b: Signature) -> bool:
    return a.family == b.family


#: fields a family's signature gained after corpus cases were recorded without them: a signature is
#: held to one only where the other names it too
ADDED_LATER = {"jax-error": ("entered",)}


def held_fields(sig: Signature, named: set[str], loose: tuple[str, ...] = ()) -> tuple:
    """The fields of `sig` two signatures are compared on: not its family's `loose` ones, nor one it
    gained later (`ADDED_LATER`) that the other does not name (`named`: the other's field names)."""
    later = ADDED_LATER.get(sig.family, ())
    return tuple((k, v) for k, v in sig.fields if k not in loose and (k in named or k not in later))


def identical(a: Signature, b: Signature) -> bool:
    """The same family with the same fields: one bug, however its title reads. A program's own check
    failing (`own_check`: `assert_allclose`'s "Not equal to tolerance") names no bug: two are never one."""
    if a.family != b.family or own_check(a):
        return False
    names = {k for k, _ in a.fields} & {k for k, _ in b.fields}
    return held_fields(a, names) == held_fields(b, names)
