"""Oracles of the IR level's numeric runs. A gradient check (`gradient_check`) or a comparison of
XLA's results (`xla_check.compare`) prints one verdict line, JSON after a marker, with the
module's operations; `OnVerdict` turns a disagreeing verdict into a signature whose `op` is the
operation at fault (found once, then fixed), and holds a candidate to that operation: a run shows
the wanted failure when it disagrees, its module still holds the operation, and the rest of its
signature is the same.
"""
from __future__ import annotations

import json

from oracles.base import Oracle
from oracles.outcome import RunResult, Signature


def read(output: str, marker: str) -> dict | None:
    """The last verdict line after `marker` in a run's output, or None."""
    found = None
    for line in output.splitlines():
        if line.startswith(marker):
            try:
                found = json.loads(line[len(marker):])
            except ValueError:
                continue
    return found


class OnVerdict(Oracle):
    """A run whose verdict is a disagreement; `op` is the operation at fault, "function" until it is
    found or when none is alone. Subclasses name the `marker` and make the `signature`."""

    marker = ""

    def __init__(self, op: str = "function"):
        self.op = op

    def signature(self, op: str, report: dict, output: str) -> Signature:
        raise NotImplementedError

    def classify(self, run: RunResult) -> Signature | None:
        report = read(run.output, self.marker)
        if report is None or not report.get("mismatch") or run.returncode in (0, None):
            return None
        return self.signature(self.op, report, run.output)

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        seen = self.classify(run)
        if seen is None or run.timed_out:
            return False, None
        op, report = wanted.get("op"), read(run.output, self.marker)
        holds = op == "function" or op in report.get("ops", [])
        others = [f for f in wanted.fields if f[0] != "op"] == [f for f in seen.fields if f[0] != "op"]
        return holds and others, self.signature(op, report, run.output) if holds and others else seen
