"""Adjoint missing: an operation has no derivative rule, in Enzyme-JAX's MLIR AD or in JAX.

Signature: source (`enzyme` or `jax`), the operation (`stablehlo.reduce_precision`,
`stablehlo.custom_call` with its `target` such as `lapack_spotrf_ffi`, `schur`, `while_loop` …)
and, for JAX, which rule is missing (jvp, transpose, reverse, batching). When Enzyme reports several
operations, the signature keeps the first one in program order, and a candidate keeps the failure
as long as that operation is still among those reported.
"""
from __future__ import annotations

import re

from oracles.base import Oracle, Signature, excerpt
from oracles.outcome import RunResult

ENZYME_ADJOINT = re.compile(
    r"could not compute the adjoint for this operation\s+(?:(?P<ssa>%[\w#]+)(?::\d+)?(?:\s*,\s*%[\w#:]+)*\s*=\s*)?"
    r"\"?(?P<op>[A-Za-z_][\w]*\.[\w.]+)\"?(?P<rest>.*)$", re.M)
ENZYME_UNSUPPORTED = re.compile(r"Unsupported (?P<what>[\w ]+?) rev autodiff\(\d+\):\s*(?P<rest>.*)$", re.M)
CALL_TARGET = re.compile(r'call_target_name\s*=\s*"(?P<target>[^"]+)"|custom_call\s*@(?P<at>[\w.$-]+)')
OP_IN_TEXT = re.compile(r'"?(?P<op>(?:stablehlo|chlo|mhlo|func|enzyme|arith|math|tensor)\.[\w.]+)"?')

JAX_RULES = [
    (re.compile(r"Differentiation rule for '(?P<op>[\w-]+)' not implemented"), "jvp"),
    (re.compile(r"Transpose rule \(for reverse-mode differentiation\) for '(?P<op>[\w-]+)' not implemented"),
     "transpose"),
    (re.compile(r"Batching rule for '(?P<op>[\w-]+)' not implemented"), "batching"),
    (re.compile(r"Reverse-mode differentiation does not work for (?P<op>lax\.while_loop)"), "reverse"),
    (re.compile(r"(?P<op>Pure callback)s do not support JVP"), "jvp"),
    (re.compile(r"(?P<op>IO callback)s do not support JVP"), "jvp"),
    (re.compile(r"The derivatives of (?P<op>eigenvectors) are not implemented"), "jvp"),
    (re.compile(r"Derivatives of non-symmetric (?P<op>eigenvectors) are only valid"), "jvp"),  # jax 0.10
    (re.compile(r"(?P<op>Betainc) gradient with respect to a and b not supported"), "jvp"),
]
JAX_OP_NAMES = {"lax.while_loop": "while_loop", "Pure callback": "pure_callback",
                "IO callback": "io_callback", "eigenvectors": "eig", "Betainc": "betainc"}


def _ssa_order(ssa: str | None) -> float:
    digits = re.sub(r"\D", "", ssa or "")
    return float(digits) if digits else float("inf")


def enzyme_ops(text: str) -> list[tuple[float, str, str]]:
    """(program order, operation, call target) for every operation Enzyme could not differentiate."""
    found = []
    for m in ENZYME_ADJOINT.finditer(text):
        target = CALL_TARGET.search(m.group("rest"))
        found.append((_ssa_order(m.group("ssa")), m.group("op"),
                      (target.group("target") or target.group("at")) if target else ""))
    for m in ENZYME_UNSUPPORTED.finditer(text):
        op = OP_IN_TEXT.search(m.group("rest"))
        found.append((float("inf"), op.group("op") if op else m.group("what").strip().replace(" ", "_"), ""))
    return found


class AdjointMissing(Oracle):
    name = "adjoint-missing"

    def owner(self, sig: Signature) -> str:
        return "enzyme-jax" if sig.get("source") == "enzyme" else "jax"

    def classify(self, run: RunResult) -> Signature | None:
        text = run.output
        ops = enzyme_ops(text)
        if ops:
            _, op, target = min(ops, key=lambda o: o[0])
            fields = [("source", "enzyme"), ("op", op)] + ([("target", target)] if target else [])
            shown = f"`{op}`" + (f" (`{target}`)" if target else "")
            wanted = target or op
            lines = [line for line in text.splitlines() if "could not compute the adjoint" in line and wanted in line]
            header = [line for line in text.splitlines()
                      if "Failed to parse pipeline" in line or "Pipeline failed" in line]
            return Signature(self.name, tuple(fields), f"Enzyme-JAX: no adjoint for {shown}",
                             "\n".join(dict.fromkeys(header[-2:] + lines[-2:])))
        for pattern, mode in JAX_RULES:
            m = pattern.search(text)
            if m:
                op = JAX_OP_NAMES.get(m.group("op"), m.group("op"))
                return Signature(self.name, (("source", "jax"), ("op", op), ("rule", mode)),
                                 f"JAX: no {mode} rule for `{op}`", excerpt(text, m.group(0), 2, 3))
        return None

    def judge(self, wanted: Signature, run: RunResult) -> tuple[bool, Signature | None]:
        seen = self.classify(run)
        if seen is None or run.timed_out:  # a run counts only when its process ended (Oracle.judge)
            return False, None
        if wanted.get("source") == "enzyme" and seen.get("source") == "enzyme":
            present = {(op, target) for _, op, target in enzyme_ops(run.output)}
            return (wanted.get("op"), wanted.get("target")) in present, seen
        return wanted == seen, seen
