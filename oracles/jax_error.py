"""JAX error: an exception raised inside JAX or one of its libraries, on purpose.

`UnexpectedTracerError`, `TracerArrayConversionError`, `ConcretizationTypeError`, `odeint`'s
`TypeError` on its arguments …: errors JAX raises for the user, which the other families do not
claim. `auto` tries this family last. Signature: the library (`jax`, `jaxlib`, `enzyme_ad`, `flax`,
`optax`, `equinox`), the exception type, the module and function that raised it (the innermost frame
of the traceback, which must lie inside the library) and the first line of its message with values
normalised (numbers, shapes, quoted names, what follows "got").
"""
from __future__ import annotations

import re

from oracles.base import (Oracle, Signature, excerpt, final_exception, first_clause, innermost_library_frame,
                          normalize_message)
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

    def owner(self, sig: Signature) -> str:
        return of_package(sig.get("library") or "jax")

    def classify(self, run: RunResult) -> Signature | None:
        if run.returncode in (0, None) or run.timed_out:
            return None
        ended = final_exception(run.output)
        if not ended:
            return None
        frame = innermost_library_frame(run.output)
        if frame is None:
            return None
        kind, message = ended
        fields = (("library", frame.split("/", 1)[0]), ("type", kind), ("raised-in", frame),
                  ("message", normalise(message)))
        shown = LIBRARY_NAMES.get(fields[0][1], fields[0][1])
        words = first_clause(message)
        return Signature(self.name, fields, f"{shown}: `{kind}` in `{frame.rsplit(':', 1)[-1]}`"
                         + (f": {words}" if words else f" raised in `{frame}`"),
                         excerpt(run.output, f"{kind}:", 3, 3))
