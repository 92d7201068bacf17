"""A check of the program's that a library raised for it: Equinox's `eqx.error_if` and
`eqx.branched_error_if`, and JAX's `checkify` (a `checkify.check` of the program's, or the float and
index checks the program asked `checkify.checkify` for). The program wrote the check, or switched it
on, and the library only reports it, so the failure is the program's own check (`oracles.own_check`),
not a bug of the library that raised it (`oracles.jax_error`), nor of XLA: under `jax.jit` Equinox's
error comes back through a host callback as `INTERNAL: CpuCallback error calling callback`, which
`oracles.crash` would otherwise read as XLA's error status.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from oracles.base import final_exception

#: the exception line of a check a library raised: Equinox's (private under `jax.jit`), checkify's
_RAISED = re.compile(r"^(?:equinox\.(?:_errors\.)?)?(?P<eqx>_?EquinoxRuntimeError): (?P<eqx_msg>.*)$|"
                     r"^jax\._src\.checkify\.(?P<ck>FailedCheckError|NaNError|DivisionByZeroError|OOBError): "
                     r"(?P<ck_msg>.*)$", re.M)
#: Equinox's header line under `eqx.filter_jit`, which names no check
_HEADER = "Above is the stack outside of JIT"
#: the exceptions a run ends with when such a check stopped it
_ENDS = ("EquinoxRuntimeError", "_EquinoxRuntimeError", "JaxRuntimeError", "XlaRuntimeError")
#: checkify's own checks on values: a non-finite value made, a division by zero
_ON_NONFINITE = ("NaNError", "DivisionByZeroError")
#: what checkify adds to a message: where the check failed, and that it was a `check`
_WHERE = re.compile(r"\s+at \S+:\d+ \([^)]*\)|\s*\(`check` failed\)|\.$")
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+, in \S+\n(?P<source>    .*)$', re.M)


class LibraryCheck(NamedTuple):
    """The check: its exception's type, the check's name (`error_if`, `checkify`), its message (less
    where checkify says it failed), the program's line that made it where the output shows one, the
    exception's line, and whether it is checkify's own check on a non-finite value."""

    kind: str
    check: str
    message: str
    line: str
    raised: str
    on_nonfinite: bool


def library_check(output: str) -> LibraryCheck | None:
    """The check of the program's that a library raised and that stopped the run, if one did."""
    ended = final_exception(output)
    if ended is None or ended[0] not in _ENDS:
        return None
    found = [m for m in _RAISED.finditer(output) if not (m.group("eqx_msg") or "").startswith(_HEADER)]
    if not found:
        return None
    m = found[-1]
    kind = (m.group("eqx") or m.group("ck")).lstrip("_")
    message = (m.group("eqx_msg") if m.group("eqx") else m.group("ck_msg")) or ""
    check = "error_if" if m.group("eqx") else "checkify"
    return LibraryCheck(kind, check, _WHERE.sub("", message).strip(), _made_at(output[:m.start()], check),
                        m.group(0), kind in _ON_NONFINITE)


def _made_at(before: str, check: str) -> str:
    """The last line of the program's shown before the check's exception that makes such a check."""
    calls = ("error_if",) if check == "error_if" else ("check(", "checkify")
    lines = [m.group("source").strip() for m in _FRAME_LINE.finditer(before)]
    return next((line for line in reversed(lines) if any(c in line for c in calls)), "")
