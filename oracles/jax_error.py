"""JAX error: an exception raised inside JAX or one of its libraries, on purpose.

`UnexpectedTracerError`, `TracerArrayConversionError`, `ConcretizationTypeError`, `odeint`'s
`TypeError` on its arguments …: errors JAX raises for the user, which the other families do not
claim. `auto` tries this family last. Signature: the library (`jax`, `jaxlib`, `enzyme_ad`, `flax`,
`optax`, `equinox`), the exception type, the module and function that raised it (the innermost frame
of the traceback, which must lie inside the library), the first line of its message with values
normalised (numbers, shapes, quoted names, what follows "got"), and the library function the program
called on its way there (`entered`): `jnp.searchsorted` failing inside JAX on a sharded query raises
the same `ValueError` at the same place as the program building the same bad `NamedSharding` itself,
which is the program's mistake, not JAX's.

JAX's own NaN check, which the program switched on (`jax.debug_nans`), is a value failure: its
`FloatingPointError: invalid value (nan) encountered in mul` says where a NaN spread, not why, and
`jax.grad(lambda x: jnp.log(0.0 * x) * 0.0)(1.0)` raises the same. Once the value's origin is
located (`reducer.faults.origin`, attached to the run as for a check of the program's on a NaN), the
signature names it too (`op`, `in`, `point`, `cause`, `fix`: `oracles.nonfinite`), and the failure
is the program's own code's where the origin's fix is the program's.
"""
from __future__ import annotations

import re

from oracles.base import (Oracle, Signature, entered_library_call, excerpt, final_exception, first_clause,
                          innermost_library_frame, normalize_message)
from oracles.kinds import held_fields, jax_value_check, located_value
from oracles.library_check import library_check
from oracles.nonfinite import made_where, programs_fix
from oracles.outcome import RunResult
from oracles.owners import of_package

LIBRARY_NAMES = {"jax": "JAX", "enzyme_ad": "Enzyme-JAX", "flax": "Flax", "optax": "Optax", "equinox": "Equinox"}
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_GOT = re.compile(r"\b(got|but got|received|found)\b\s+.*$", re.I)
_FUNCTION_AT = re.compile(r"\bfunction \S+ at <path>:N\b|\bthe function \S+\b")


def normalise(message: str) -> str:
    """A message with what changes while reducing taken out: values, names, quoted text."""
    text = _QUOTED.sub("<q>", message)
    text = _GOT.sub(lambda m: f"{m.group(1)} <value>", text)
    text = normalize_message(text)
    return _FUNCTION_AT.sub("function <f>", text)


class JaxError(Oracle):
    name = "jax-error"
    #: of a located non-finite value, the public call that reached it
    loose = ("from",)

    def owner(self, sig: Signature) -> str:
        """The library's; the program's for a non-finite value its own arithmetic made (its origin's fix
        is the program's: an inner `where`, float64, a stable formula)."""
        fixed = located_value(sig) and programs_fix(sig)
        return "program" if fixed else of_package(sig.get("library") or "jax")

    def why_own(self, sig: Signature) -> str:
        if jax_value_check(sig):
            return "JAX raised the failure only because the program asked it to check its values (`jax.debug_nans`)"
        return super().why_own(sig)

    def same(self, wanted: Signature, seen: Signature) -> bool:
        named = {k for k, _ in wanted.fields}
        return wanted.family == seen.family and \
            held_fields(wanted, named, self.loose) == held_fields(seen, named, self.loose)

    def classify(self, run: RunResult) -> Signature | None:
        if run.returncode in (0, None) or run.timed_out:
            return None
        ended = final_exception(run.output)
        if not ended or library_check(run.output):  # the program's check, which a library raised for it
            return None
        frame = innermost_library_frame(run.output)
        if frame is None:
            return None
        kind, message = ended
        fields = (("library", frame.split("/", 1)[0]), ("type", kind), ("raised-in", frame),
                  ("message", normalise(message)))
        shown = LIBRARY_NAMES.get(fields[0][1], fields[0][1])
        words = first_clause(message)
        title = f"{shown}: `{kind}` in `{frame.rsplit(':', 1)[-1]}`" + \
            (f": {words}" if words else f" raised in `{frame}`")
        sig = Signature(self.name, fields, title, excerpt(run.output, f"{kind}:", 3, 3))
        if jax_value_check(sig):  # the value's origin tells failures apart, not where the check raised
            fault = run.harness.get("fault")
            if fault:  # where the value was made (`reducer.faults.origin`)
                at = tuple(tuple(f) for f in fault["fields"])
                sig = Signature(self.name, fields + at, f"{made_where(at)} fails JAX's NaN check: {words}",
                                sig.excerpt)
            return sig
        entered = entered_library_call(run.output)
        return Signature(self.name, fields + (("entered", entered),), title, sig.excerpt) if entered else sig
