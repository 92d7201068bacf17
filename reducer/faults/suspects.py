"""The operations whose fixes are tried for the origin of a non-finite value
(`reducer.faults.origin`), in order, each with the user's call it was reached through: those JAX's
NaN and Inf checks name, in the order they met them, then a few the program calls itself whose
derivative is infinite somewhere. An operation whose non-finite value can only be an overflow
(`safe_ops.OVERFLOW_ONLY`) is left to the float64 fix and the stable formulas."""
from __future__ import annotations

from reducer.faults import nonfinite, safe_ops

#: the most operations tried that JAX's checks do not name, but the program calls (`vias`)
MORE_CALLED = 3


def candidates(*found: dict | None, overflows: bool = False) -> list[str]:
    """The operations worth fixing, once each, in the order JAX's checks met them; with `overflows`,
    those that can only overflow too (for `reducer.faults.float64_fix`)."""
    names = [n for f in found if f for n in (f.get("op"), f.get("prim")) if n]
    # an operation by its primitive's name where it stands for one (`norm` is `sqrt`, `arctanh` `atanh`)
    names = [safe_ops.primitives(n)[0] if len(safe_ops.primitives(n)) == 1 else n for n in names]
    return [n for n in dict.fromkeys(names)
            if n not in nonfinite.SPREADING and (overflows or n not in safe_ops.OVERFLOW_ONLY) and safe_ops.known(n)]


def vias(named: list[str], guessed: dict | None, program: str) -> dict[str, str]:
    """The operations whose fixes are tried, each with the user's call it was reached through: those
    JAX's checks `named`, in their order, then up to `MORE_CALLED` more that the program calls
    itself and whose derivative is infinite somewhere (`nonfinite.singular_calls`: the `arccos`
    whose infinite derivative a clip's zero turns into a NaN that JAX's checks meet later, in
    another operation)."""
    vias = {op: (guessed or {}).get("from", op) if op in named_by(guessed) else op for op in named}
    for name in nonfinite.singular_calls(program):
        for op in candidates({"op": name}):
            if len(vias) < len(named) + MORE_CALLED:
                vias.setdefault(op, name)
    return vias


def named_by(found: dict | None) -> tuple[str, ...]:
    """The primitives of the operation JAX's checks named in `found` (`norm`: `sqrt`), not of the
    derivative rule's step they stopped at (`norm`'s `div`)."""
    return safe_ops.primitives((found or {}).get("op") or "")
