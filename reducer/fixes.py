"""What a report says of the fix of the reduced program: the fix in words and whose bug that makes
it (the counterfactual the reduction held candidates to, `reducer.counterfactual`), XLA's culprit
pass for a failure of XLA's (`reducer.xla_culprit`), JAX's function that differs from its NumPy or
SciPy namesake for a failure its twin fixes (`reducer.faults.numpy_twins`), and, for a non-finite value made in the
program's own code, the fix written into the reproducer (`reducer.faults.source_fix`), kept only
when a fresh run of it runs through, for the report to show as a diff."""
from __future__ import annotations

import dataclasses

from oracles.outcome import Signature
from reducer import xla_culprit
from reducer.counterfactual import EXPECTED
from reducer.faults import numpy_twins, stable_fix
from reducer.faults.named_origin import ROUNDED, WIDE, Origin
from reducer.faults.source_fix import in_float64, rewrites
from reducer.prologue import with_prologue

#: the most rewrites of the reproducer run
TRIES = 3


def for_report(job, program: str, established, fix: str | None, searched: bool) -> tuple[Signature, dict, str | None]:
    """(the report's signature, its keyword arguments on the fix: `fixed_by`, `owner`, `fixed_code`,
    `expected`, and `happens` where the fix says what happens better than the family; XLA's culprit
    pass or None)."""
    sig, fixed_by, owner, culprit = xla_culprit.for_report(job, program, established, fix, searched)
    said = {"fixed_by": fixed_by, "owner": owner, "expected": EXPECTED.get(fix or "", "")}
    pair = twin_at_fault(job, program, established.seconds) if fix == "numpy" and searched else None
    if pair:
        ours, theirs = pair
        sig = dataclasses.replace(sig, title=f"`{ours}` differs from `{theirs}`, which it implements")
        return sig, {**said, "fixed_by": f"`{ours}` computed by `{theirs}`", "fixed_code": "",
                     "happens": f"`{ours}` gives a value that `{theirs}` does not give on the same input, and the "
                                f"program's own check (`{sig.get('check')}`), which compares them, fails.",
                     "expected": f"`{ours}` gives what `{theirs}` gives: JAX documents it as its implementation."
                     }, culprit
    return sig, {**said, "fixed_code": written_fix(job, program, sig) if searched else ""}, culprit


def twin_at_fault(job, program: str, seconds: float) -> tuple[str, str] | None:
    """The JAX function whose NumPy or SciPy twin alone makes `program` run through, and the twin,
    qualified (`numpy_twins.namesakes`); halves of the names the program reads that have a twin, twinned
    together while a half does (`xla_culprit.halve`), each try a fresh run of about `seconds`; None where no one
    function's twin does, or out of time."""
    names = [name for name in numpy_twins.named_in(program) if numpy_twins.namesakes(name)]
    tries = xla_culprit.Tries(job, lambda chosen: with_prologue(program, numpy_twins.line(tuple(chosen)) + "\n"),
                              max(1.0, seconds))
    try:
        name = xla_culprit.halve(names, tries.through)
    except TimeoutError:
        job.log(f"JAX's function at fault: out of time after {tries.count} tries among {len(names)} names")
        return None
    pair = numpy_twins.namesakes(name, program) if name else None
    job.log(f"JAX's function at fault: `{pair[0]}`, which runs through computed by `{pair[1]}`" if pair else
            "no one JAX function computed by its NumPy or SciPy twin makes the reproducer run through")
    return pair


def written_fix(job, program: str, sig: Signature) -> str:
    """The reproducer with the inner `where` written around the call at its non-finite value's origin
    (for an overflow, the program made float64, its operation too; for a value float32's rounding put
    outside the domain, the program made float64; for an overflow of float64 too or an
    underflow of a formula's every term, the formula computed by JAX's function), when a fresh run of it
    runs through; "" when no rewrite does (or the origin is not known)."""
    origin = Origin.of(sig)
    if origin is None:
        return ""
    tried = [in_float64(program)] if origin.fix == ROUNDED else \
        [in_float64(program), in_float64(program, origin.op)] if origin.fix == WIDE else \
        [stable_fix.rewritten(program, origin.fix)] if origin.fix in stable_fix.FORMULAS else \
        rewrites(program, origin.op, origin.via)[:TRIES]
    tried = [candidate for candidate in tried if candidate]
    for k, candidate in enumerate(tried):
        run = job.fresh_run(candidate)
        if run.returncode == 0 and not run.timed_out:
            job.log(f"the fix written into the reproducer runs through (rewrite {k + 1} of {len(tried)})")
            return candidate
        if run.timed_out:
            job.log("the fix written into the reproducer: out of time (--max-time)")
            return ""
    job.log(f"no fix written into the reproducer runs through ({len(tried)} rewrites): the report gives it in words")
    return ""
