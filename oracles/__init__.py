"""Failure families. Each oracle turns a run into a signature; `auto` recognises the family.

To add a family: one module with an `Oracle` subclass, and one line in `FAMILIES`.
"""
from __future__ import annotations

from oracles.activity_mismatch import ActivityMismatch
from oracles.adjoint_missing import AdjointMissing
from oracles import activity_mismatch, owners, wrong_result
from oracles.base import Oracle, Signature
from oracles.crash import Crash
from oracles.generic import Regex, Script
from oracles.jax_error import JaxError
from oracles.outcome import RunResult
from oracles.own_check import OwnCheck
from oracles.pipeline_error import PipelineError
from oracles.wrong_result import WrongResult

#: the families `--oracle auto` tries, in this order
FAMILIES = {
    "adjoint-missing": AdjointMissing,
    "activity-mismatch": ActivityMismatch,
    "pipeline-error": PipelineError,
    "crash": Crash,
    "wrong-result": WrongResult,
    "jax-error": JaxError,
    "own-check": OwnCheck,
}

__all__ = ["Oracle", "Signature", "FAMILIES", "make_oracle", "oracle_spec", "detect", "Regex", "Script", "Crash"]


def make_oracle(spec: str, platform: str = "cpu", hangs: bool = False) -> Oracle | None:
    """The oracle named by `--oracle` (None for `auto`). Raises ValueError on a bad spec."""
    if spec == "auto":
        return None
    if spec.startswith("regex:"):
        return Regex(spec[len("regex:"):])
    if spec.startswith("script:"):
        return Script(spec[len("script:"):])
    if spec == "crash":
        return Crash(platform, hangs)
    if spec == "nonfinite":  # the own-check family, once a NaN's operation is located
        return OwnCheck()
    if spec in FAMILIES:
        return FAMILIES[spec]()
    known = ", ".join(["auto", *FAMILIES, "regex:PATTERN", "script:COMMAND"])
    raise ValueError(f"unknown oracle {spec!r} (known: {known})")


def oracle_spec(sig: Signature) -> str:
    """The `--oracle` that recognises a signature of this family (`make_oracle`'s spec)."""
    if sig.family in FAMILIES or sig.family == "nonfinite":
        return sig.family
    if sig.family == "regex":
        return "regex:" + sig.get("pattern")
    if sig.family == "script":
        return "script:" + sig.get("command")
    raise ValueError(f"no oracle for signature family {sig.family!r}")


def detect(run: RunResult, platform: str = "cpu", hangs: bool = False,
           own_checks: bool = True, skip: tuple[str, ...] = ()) -> tuple[Oracle, Signature] | None:
    """The first family that recognises the failure in `run`, with its signature; `own_checks` false
    where the program is the tool's own runner (an IR module's), whose checks are no user's; the
    families named in `skip` are passed over."""
    for name, cls in FAMILIES.items():
        if cls is OwnCheck and not own_checks or name in skip:
            continue
        oracle = Crash(platform, hangs) if cls is Crash else cls()
        sig = oracle.classify(run)
        if sig is not None:
            return oracle, sig
    return None


def project(sig, oracle=None) -> owners.Project:
    """The project that owns the failure `sig`, as its family says: the `oracle` that judged it, or
    the one the project builds for the signature."""
    if oracle is None:
        oracle = make_oracle(oracle_spec(sig), sig.get("platform") or "cpu")
    return owners.PROJECTS[oracle.owner(sig)]


def why_own(sig: Signature) -> str:
    """Why the failure `sig` is the program's own code's, in its family's words (where `project` is the
    program)."""
    try:
        oracle = make_oracle(oracle_spec(sig), sig.get("platform") or "cpu")
    except ValueError:  # a family no oracle names (a test's own): the plain words
        oracle = None
    return (oracle or Oracle()).why_own(sig)


def reference(sig: Signature) -> str | None:
    """What the fix of a difference the harness found replaces the part at fault with, as its family
    says (`activity_mismatch.reference`, `wrong_result.reference`): the fix the reproducer must
    survive (`reducer.counterfactual`); None when the program does not stop by itself."""
    if not sig.get("program-exit"):
        return None
    return activity_mismatch.reference(sig) or wrong_result.reference(sig)


#: the families whose failure may be one of XLA's passes
XLA_PASS_FAMILIES = ("wrong-result", "crash")


def xla_owns(sig, oracle=None) -> bool:
    """Whether the failure is XLA's, so that one of its passes may be at fault: a wrong result, or a
    crash XLA owns (a signal, an error status; not a hang, nor an internal error of a library), as
    the `oracle` that judged it says."""
    return sig.family in XLA_PASS_FAMILIES and project(sig, oracle).repo == owners.PROJECTS["xla"].repo \
        and sig.get("how") != "hang"
