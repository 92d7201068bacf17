"""Fault location: what in a failing program is at fault (an operation, a compiler pass), found for
the failure once and confirmed on candidates, so that the signature can name it (`op=`, `pass=`)
and the report can say why.

Every localiser implements `Localiser`: `locate` finds the fault of a failing run of a program and
hands back a `Fault`: the signature fields that name it and the sentence of evidence.
`reducer.faults.attach` puts a localiser between a job's runs and its oracle. A new localiser is
one module here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from oracles.outcome import RunResult, Signature


@dataclass(frozen=True)
class Fault:
    """What is at fault: its name, the signature fields that say so (`("op", "sqrt")` …), and the
    evidence, in a sentence for the log and the report."""

    name: str
    fields: tuple[tuple[str, str], ...]
    evidence: str

    def get(self, key: str, default: str = "") -> str:
        return dict(self.fields).get(key, default)


class Localiser(Protocol):
    #: the signature fields a fault of this localiser sets
    fields: tuple[str, ...]

    def locate(self, program: str, run: RunResult, signature: Signature) -> Fault | None:
        """The fault behind the failure `signature` that `run` of `program` showed, or None."""
