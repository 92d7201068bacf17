"""Pipeline error: Enzyme-JAX's MLIR pass pipeline fails for another reason than a missing adjoint.

A verifier failure (`'complex.conj' op operand #0 must be complex type …`), an unsupported construct
(`WhileOp does not have known iteration count for cache removal`) …: Enzyme-JAX raises `Failed to
parse pipeline` with the diagnostic after `Pipeline failed:`. Signature: the pass, where the output
names it (MLIR's `Pipeline failed while executing [`PASS` …]`), the operation the diagnostic names,
and its message with types, values and SSA names normalised. Missing adjoints are
`adjoint-missing`'s, which `auto` tries first.
"""
from __future__ import annotations

import re

from oracles.base import Oracle, Signature, excerpt, first_clause, normalize_message
from oracles.outcome import RunResult

_FAILED = re.compile(r"^Pipeline failed:\s*\n(?P<diag>(?:.+\n?)+)", re.M)
_MLIR_ERROR = re.compile(r"^(?:loc\(.*?\)|<unknown>|[^\s:]+:\d+:\d+):\s*error:\s*(?P<msg>.+)$", re.M)
_PASS = re.compile(r"Pipeline failed while executing \[`(?P<pass>[^`]+)`")
_OP = re.compile(r"'(?P<op>[a-z_]+\.[\w.]+)' op\b|\b(?P<named>[A-Z]\w*Op)\b")
_SSA = re.compile(r"%[\w#.:]+")
_TYPE = re.compile(r"'[^']*'|\b(?:tensor|memref|vector|complex)<[^\s]*>")


def diagnostic(text: str) -> str | None:
    """The first line of the diagnostic Enzyme-JAX reported for a failed pipeline."""
    found = list(_FAILED.finditer(text))
    if found:
        lines = [line.strip() for line in found[-1].group("diag").splitlines() if line.strip()]
        if lines:
            return lines[0]
    if "Failed to parse pipeline" in text:
        m = _MLIR_ERROR.search(text)
        if m:
            return m.group("msg").strip()
    return None


def normalise(message: str) -> str:
    return normalize_message(_TYPE.sub("<type>", _SSA.sub("%v", message)))


class PipelineError(Oracle):
    name = "pipeline-error"

    def owner(self, sig: Signature) -> str:
        return "enzyme-jax"

    def classify(self, run: RunResult) -> Signature | None:
        text = run.output
        if "could not compute the adjoint" in text:
            return None
        diag = diagnostic(text)
        if diag is None:
            return None
        op = _OP.search(diag)
        op_name = (op.group("op") or op.group("named")) if op else ""
        passed = _PASS.search(text)
        fields = [("source", "enzyme")] + ([("pass", passed.group("pass"))] if passed else [])
        fields += [("op", op_name), ("message", normalise(diag))]
        shown = f" on `{op_name}`" if op_name else (f": {first_clause(diag)}" if first_clause(diag) else "")
        return Signature(self.name, tuple(fields), f"Enzyme-JAX: the pass pipeline fails{shown}",
                         excerpt(text, diag, 2, 2))
