"""The operation at fault, by keeping each operation of a failing program alone: the first whose
program of its own (the operation, its operands made arguments) still fails is named; when none
does, `WHOLE` (the fault lies in how the operations combine).

`Alone` is the search; a level says which operations are worth trying, in which order (`ops`), how
one is kept alone (`alone`), and in words what its failing alone shows (`shows`, `none`).
"""
from __future__ import annotations

from typing import Callable

from oracles.outcome import RunResult, Signature
from reducer.faults import Fault

WHOLE = "function"  # the `op` of a fault that no single operation shows


class Alone:
    """The localiser of the operation that fails alone; `wrong(program)` says whether a program of
    one operation still fails, `log` hears what was found."""

    fields = ("op",)
    #: what the operation's failing alone shows, and the line logged when no operation does
    shows = "it fails on its own"
    none = "no operation fails on its own: the signature names the function"

    def __init__(self, wrong: Callable[[str], bool], log: Callable[[str], None]):
        self.wrong, self.log = wrong, log

    def ops(self, program: str) -> list[str]:
        """The operations worth keeping alone, each once, in the order they are tried."""
        raise NotImplementedError

    def alone(self, program: str, op: str) -> str | None:
        """`program` with only `op` kept, its operands made arguments; None when it cannot be."""
        raise NotImplementedError

    def locate(self, program: str, run: RunResult | None = None, signature: Signature | None = None) -> Fault:
        for op in self.ops(program):
            alone = self.alone(program, op)
            if alone and self.wrong(alone):
                self.log(f"operation at fault: {op} ({self.shows})")
                return Fault(op, (("op", op),), f"`{op}` is at fault: kept alone, its operands made arguments, "
                                                f"{self.shows}.")
        self.log(self.none)
        said = self.none.split(": ")[0]
        return Fault(WHOLE, (("op", WHOLE),), f"{said[:1].upper()}{said[1:]}: the fault lies in how the operations "
                                              f"combine.")
