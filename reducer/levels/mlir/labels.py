"""What an IR-level failure is called: Enzyme-JAX reports every failure of `run_pass_pipeline` as
an error status (`INVALID_ARGUMENT: Failed to parse module`, `INVALID_ARGUMENT: Failed to parse
pipeline`, `INTERNAL: Failed to parse pipeline … Pipeline failed:` for a pass that fails), which
the crash oracle alone would call an XLA error; so would it a module XLA's own parser refuses.
`relabel` says which it is, and `failing_pass` finds, once, the pass of the pipeline that fails
(the shortest prefix that fails with the same diagnostic), so that the title names it;
`named_ops` lists the operations a failure names, which dead-code removal must keep, and `culprit_of`
the one at fault.
"""
from __future__ import annotations

import re

from oracles.outcome import Signature
from reducer.levels.mlir import pipeline as pl

#: (how, title) by what the output says (Enzyme-JAX's status, then XLA's parser); the first that matches wins
KINDS = [
    (re.compile(r"Failed to parse module"), "parse", "Enzyme-JAX cannot parse the module"),
    (re.compile(r"PassPipeline Parser|does not refer to a registered pass"), "pipeline-parse",
     "Enzyme-JAX cannot parse the pass pipeline"),
    (re.compile(r"Pipeline failed"), "pass-failure", "Enzyme-JAX's pass pipeline fails"),
    (re.compile(r"not found for custom op|custom op '[^']*' is unknown|parsed with an unregistered dialect"),
     "parse", "XLA cannot parse the module"),
]
PASS_TITLE = "Enzyme-JAX pass `{name}` fails"


NAMED_OP = re.compile(r"'(?P<name>[A-Za-z_][\w$]*\.[\w$.]+)' op\b|custom op '(?P<custom>[A-Za-z_][\w$]*\.[\w$.]+)'")


def named_ops(sig) -> set[str]:
    """The operations a failure signature names: its `op`, and those its diagnostic quotes
    (`'memref.alloc' op …`); dead-code removal never erases them."""
    found = {sig.get("op")} if sig.get("op") else set()
    for _, value in sig.fields:
        found.update(m.group("name") or m.group("custom") for m in NAMED_OP.finditer(str(value)))
    return found


def relabel(sig: Signature, output: str, diagnostic: str) -> Signature:
    """`sig` (an `xla-status` crash of an Enzyme-JAX run, with its first diagnostic) under the
    name of what happened; other signatures as they are."""
    if sig.family != "crash" or sig.get("how") != "xla-status":
        return sig
    for pattern, how, title in KINDS:
        if pattern.search(output):
            fields = tuple((k, how if k == "how" else v) for k, v in sig.fields) + (("diagnostic", diagnostic),)
            return Signature(sig.family, fields, f"{title}: {diagnostic}", sig.excerpt)
    return Signature(sig.family, sig.fields + (("diagnostic", diagnostic),), sig.title, sig.excerpt)


def same_kind(wanted: Signature, seen: Signature) -> bool:
    """Signatures match on family and fields; the title may have been made more precise since."""
    return wanted.family == seen.family and wanted.fields == seen.fields


def without_pass(sig: Signature) -> Signature:
    """The signature a candidate's run can show: a crash's pass (`crashing.named`) is found once,
    for the original."""
    return Signature(sig.family, tuple(f for f in sig.fields if f[0] not in ("pass", "xla-pass")), sig.title,
                     sig.excerpt)


def as_seen(wanted: Signature, seen: Signature) -> Signature:
    """`wanted` under `seen`'s title when they are the same failure (the title of the failure
    being reduced may name its pass; a candidate's run cannot)."""
    return Signature(wanted.family, wanted.fields, seen.title, wanted.excerpt) if same_kind(wanted, seen) else wanted


def failing_pass(pipeline: str, fails_same) -> str | None:
    """The first top-level pass of `pipeline` whose prefix already fails as the whole does
    (`fails_same(prefix)`, bisected); None when it is not a pipeline."""
    try:
        passes = pl.parse(pipeline)
    except ValueError:
        return None
    lo, hi = 1, len(passes)
    while lo < hi:  # the smallest prefix that fails so
        mid = (lo + hi) // 2
        if fails_same(pl.render(passes[:mid])):
            hi = mid
        else:
            lo = mid + 1
    return passes[lo - 1].name if passes else None


def is_pass_failure(sig: Signature) -> bool:
    return sig.family == "pipeline-error" or sig.get("how") == "pass-failure"


def named(sig: Signature, name: str | None) -> Signature:
    """A pass failure's signature whose title names the pass."""
    if not name or not is_pass_failure(sig):
        return sig
    what = sig.get("diagnostic") or sig.get("message")
    on = f" on `{sig.get('op')}`" if sig.get("op") else ""
    return Signature(sig.family, sig.fields, f"{PASS_TITLE.format(name=name)}{on}: {what}"[:200], sig.excerpt)


def culprit_of(sig: Signature) -> tuple[str, str] | None:
    """The operation a signature names as the one at fault, with its custom call target, for the
    pass that keeps only it (`isolate-culprit`): a missing adjoint's, a wrong gradient's, a wrong
    result's of XLA (not "function": no single operation)."""
    op = sig.get("op")
    if sig.family == "adjoint-missing" and sig.get("source") == "enzyme" and op:
        return op, sig.get("target")
    numeric = sig.family == "activity-mismatch" and sig.get("kind") == "numeric"
    xla = sig.family == "wrong-result" and sig.get("source") == "xla"
    return (op, "") if (numeric or xla) and op not in ("", "function") else None
