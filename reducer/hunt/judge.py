"""A probe's run turned into a verdict: clean, or a finding with its signature.

A program that failed is judged by the project's oracles (`oracles.detect`), as a user's program
would be; its signature is theirs, and the normal reduction can take it. A program that ran to the
end printed its derivative and its references (`reducer.hunt.programs`); the hunt compares them
itself, as its family says (`oracles.wrong_derivative`): the Enzyme-JAX route against JAX's AD,
every real dtype against float64 central finite differences. A run no family recognises is a finding
too (`oracles.unrecognised`), for a person to judge.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import oracles
from oracles import unrecognised, wrong_derivative
from oracles.outcome import RunResult, Signature
from reducer.hunt.programs import MARKER
from reducer.hunt.table import Probe


@dataclass
class Verdict:
    probe: Probe
    signature: Signature | None  # None: clean
    recognised: bool = False  # the signature comes from the oracles: the normal reduction can take it
    detail: str = ""
    contained: str = ""  # "timeout", "signal", "memory" when the sandbox had to stop or bury it


def values(run: RunResult) -> dict | None:
    """The values the program printed on its last marker line, or None."""
    for line in reversed(run.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                return json.loads(line[len(MARKER):])
            except ValueError:
                return None
    return None


def contained(run: RunResult) -> str:
    if run.timed_out:
        return "timeout"
    if run.signal is not None:
        return "signal"
    if "MemoryError" in run.output[-4000:] or "RESOURCE_EXHAUSTED" in run.output[-4000:]:
        return "memory"
    return ""


def judge(probe: Probe, run: RunResult, platform: str = "cpu") -> Verdict:
    """The verdict on one run of `probe`'s program."""
    seen = values(run)
    if run.returncode == 0 and not run.timed_out and seen is not None:
        sig = wrong_derivative.classify(seen, probe.op.name, probe.route, probe.mode, probe.dtype)
        return Verdict(probe, sig, detail=sig.excerpt if sig else "")
    found = oracles.detect(run, platform, hangs=False)
    how = contained(run)
    if found is not None:
        return Verdict(probe, found[1], recognised=True, detail=str(found[1]), contained=how)
    if run.timed_out:
        return Verdict(probe, unrecognised.TIMEOUT, detail="timed out", contained=how)
    sig = unrecognised.signature(run)
    return Verdict(probe, sig, detail=sig.title, contained=how)
