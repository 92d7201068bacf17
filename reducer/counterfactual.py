"""The bug, fixed: a program that stops on its own check of a wrong value must run through when the
part at fault computes what the reference computes.

A wrong gradient or a wrong `jit` result is judged by the harness's own comparison; how the program
stopped (`program-exit`) is part of the signature, so that the reproducer still fails by itself. That
alone would let the source level keep the message and drop the comparison (`raise SystemExit(
"gradient mismatch")`): a script that fails whether or not the bug is there. So each interesting
candidate is run once more with the faulty part replaced by its reference, and kept only if that run
ends cleanly:

- a wrong Enzyme-JAX gradient: `enzyme_jax_ir(...)` becomes the identity, so JAX's own AD runs;
- a wrong `jit` result: `jax_disable_jit`, so every compiled function runs op by op; one wrong against
  the CPU alone (`--platform gpu`, `reference=cpu`): op by op on the CPU (`jax_default_device`);
- a value of JAX's NumPy or SciPy function that the program compares with NumPy's or SciPy's: each
  function computed by its namesake (`reducer.faults.numpy_twins`), where `jit` op by op alone does
  not make the candidate run through too (`EACH_CANDIDATE`);
- a NaN the program counts on JAX's check to stop (`jax_debug_nans` on, `except FloatingPointError`):
  JAX's check kept in place as it documents (`reducer.faults.nan_check`);
- a loss that rises (a check of an ordering or a value, in a program that trains with an optimizer
  library `reducer.libraries` knows): the library's own fix, every learning rate positive as it
  documents (Optax's `scale_by_learning_rate` negates the rate itself; so does each update of
  `jax.example_libraries.optimizers`); a rate written negative climbs the loss.

A failure the program's own check decides (`own-check`, or a `regex:` / `script:` oracle) names no
reference; each of those the program can be given (Enzyme-JAX's derivative by JAX's where it calls
`enzyme_jax_ir`, op by op where it calls `jit`) is tried on the starting program, and the first that
makes it run through is the one every interesting candidate must survive.

The same fix tells, before anything is reduced, whether a difference the harness found is why the
program stops at all (`why_it_stops`): a program that stops as well with it taken away fails for
another reason, and is judged by how it stops (its own check on a NaN, its assertion).

The replacement is a prologue put before the program's first statement. When the starting program
itself does not run through with it (it fails later for another reason, or it stops unconditionally),
the check is left off for that reduction and the log says so.
"""
from __future__ import annotations

import dataclasses
import threading

import oracles
from oracles import kinds, own_check
from oracles.outcome import Signature
from reducer import libraries
from reducer.faults import nan_check, numpy_twins
from reducer.prologue import with_prologue

PROLOGUES = {
    "enzyme": ("import enzyme_ad.jax as _reducer_enzyme\n"
               "_reducer_enzyme.enzyme_jax_ir = lambda *args, **kwargs: (lambda fun: fun)\n"),
    "jit": "import jax as _reducer_jax\n_reducer_jax.config.update('jax_disable_jit', True)\n",
    "cpu": ("import jax as _reducer_jax\n"
            "_reducer_jax.config.update('jax_default_device', _reducer_jax.devices('cpu')[0])\n"
            "_reducer_jax.config.update('jax_disable_jit', True)\n"),
    "nan-check": nan_check.LINE + "\n",
    "numpy": numpy_twins.LINE + "\n",
    "values": nan_check.VALUES_ALONE + "\n",
    "float64": "import jax as _reducer_jax\n_reducer_jax.config.update('jax_enable_x64', True)\n",
    # each optimizer library's rates as it documents them: the program's own misconfiguration, fixed
    **{name: fix.prologue for name, fix in libraries.fixes().items()},
}
WHAT = {"enzyme": "Enzyme-JAX's derivative replaced by JAX's AD", "jit": "`jit` replaced by op-by-op evaluation",
        "cpu": "`jit` on the GPU replaced by op-by-op evaluation on the CPU",
        "nan-check": "JAX's NaN check made on every call while `jax_debug_nans` (`jax_debug_infs`) reads True, "
                     "as JAX documents it",
        "numpy": "each `jax.numpy` and `jax.scipy` function computed by the NumPy or SciPy function it documents "
                 "it implements",
        **{name: fix.words for name, fix in libraries.fixes().items()}}
#: what the program expects that the fix makes true, where the report says it better than its family
EXPECTED = {"nan-check": "With `jax_debug_nans` (`jax_debug_infs`) on, a call that makes a NaN (an Inf) raises "
                         "`FloatingPointError`, in compiled and op-by-op code alike, as JAX documents; the program "
                         "counts on it."}
#: whose bug a failure is, when the reproducer runs through with this fix (`oracles.owners.PROJECTS`)
OWNERS = {"enzyme": "enzyme-jax", "jit": "xla", "cpu": "xla", "nan-check": "jax", "numpy": "jax",
          **{name: "program" for name in libraries.fixes()}}


def mode(sig: Signature) -> str | None:
    """Which part the fix replaces for this failure, as its family says (`oracles.reference`); None
    when the program does not stop by itself."""
    return oracles.reference(sig)


def modes(sig: Signature, program: str) -> list[str]:
    """The fixes worth trying for this failure: the signature's own, or, for a failure the program's
    own check decides, each reference the program can be given (`own_check.references`), and for a
    check of a loss's trend the fix of each optimizer library it uses: the one that makes the program
    run through is the bug."""
    if mode(sig):
        return [mode(sig)]
    tried = own_check.references(sig, program)
    if own_check.reads_a_trend(sig):
        tried += [lib.fix.name for lib in libraries.OPTIMIZERS if lib.fix is not None and lib.used_in(program)]
    return tried


def fixed(source: str, how: str) -> str:
    """`source` with the prologue of `how` after its docstring and `from __future__` imports."""
    return with_prologue(source, PROLOGUES[how])


#: the fixes that run compiled functions op by op (and the twins, whose compiled calls are NumPy's, on the
#: host), and how many times a candidate's timeout they get: an unseen Flax program's 400 training steps
#: took 52 s op by op, 6 s compiled (its timeout: 24 s)
OP_BY_OP, SLOWER = ("jit", "cpu", "numpy"), 4.0


def runs_clean(job, source: str, how: str, cancel: threading.Event | None = None) -> bool:
    """Whether `source`, with the fix of `how`, runs through in a child of its own (within --max-time,
    and a longer timeout where the fix runs compiled functions op by op)."""
    limits = job.candidate_limits()
    if how in OP_BY_OP:
        limits = dataclasses.replace(limits, timeout=job.bounded(SLOWER * limits.timeout))
    run = job.execute(fixed(source, how), limits, cancel, isolated=True)
    return run.returncode == 0 and not run.timed_out


def explains(job, source: str, sig: Signature) -> bool:
    """Whether the difference the harness found is why the program stops: with it taken away (the
    signature's own fix), the program runs through. A difference the program compares itself
    (`program-compares`) is its failure by construction; a run that times out tells nothing. The
    harness compares every captured call, so it can find a difference of its own beside the one
    that fails the program (`jit`'s `cosh` at the edge of float32 beside overflows that op-by-op
    evaluation makes too)."""
    how = mode(sig)
    if how is None or sig.get("program-compares"):
        return True
    run = job.execute(fixed(source, how), job.candidate_limits(), isolated=True)
    return run.timed_out or run.returncode == 0


def why_it_stops(job, results: list, found: list) -> list:
    """The failures `found` in the original's first `results`, as detected; where the harness's
    difference does not `explain` them, as the next family that recognises each run tells them."""
    oracle, sig = next(h for h in found if h)
    if explains(job, job.source, sig):
        return found
    job.log(f"the program still stops with {WHAT[mode(sig)]}: the difference the harness found "
            f"({sig.title}) is not why; judged by how the program stops")
    again = [oracles.detect(run, job.options.platform, job.options.hangs, skip=(oracle.name,)) for run in results]
    return again if any(again) else found


#: why a candidate must survive a fix, where it is not only that it fails on its own check
WHY = {"nan-check": "the program counts on it, and fails with the values alone, op by op with the checks taken away"}
#: what a program must not run through with for a fix to be the bug's: the values alone for JAX's NaN
#: check (a `jit` that computes other values runs through so, and is not the check's miss); float64 for
#: NumPy's twins of a finite value (a check too tight for float32's rounding passes so: the program's)
CONTROLS = {"nan-check": "values", "numpy": "float64"}
#: what each interesting candidate must not run through with either, where it can be given it
#: (`own_check.can_be_given`): NumPy's twins replace JAX's function inside compiled ones too, so a
#: candidate whose check now fails on XLA's compilation of that function (XLA's bug, not JAX's
#: function's) would run through with them; the starting program was held to `jit` first
#: (`own_check.REFERENCES`)
EACH_CANDIDATE = {"numpy": ("jit",)}


def fixes_the_failure(job, program: str, how: str, sig: Signature | None = None) -> bool:
    """Whether the fix of `how` is the bug's: `program` runs through with it, and not with its control
    (`CONTROLS`; NumPy's twins of a NaN or an Inf located in `sig` have none: float64 may fix an
    overflow inside JAX's function, which is still JAX's)."""
    control = None if how == "numpy" and sig is not None and kinds.nonfinite(sig) else CONTROLS.get(how)
    return runs_clean(job, program, how) and (control is None or not runs_clean(job, program, control))


def survives(job, source: str, how: str, cancel: threading.Event | None = None) -> bool:
    """Whether a candidate holds to the fix of `how`: it runs through with it, and with none of the
    controls `EACH_CANDIDATE` holds it to that it can be given."""
    return runs_clean(job, source, how, cancel) and not any(
        own_check.can_be_given(control, source) and runs_clean(job, source, control, cancel)
        for control in EACH_CANDIDATE.get(how, ()))


def missed_nan_check(job, program: str, sig: Signature) -> bool:
    """Whether the program fails because JAX's NaN check, which it turns on and counts on, let a NaN
    through (`fixes_the_failure` for `nan-check`)."""
    return "nan-check" in modes(sig, program) and fixes_the_failure(job, program, "nan-check")


def value_check_missed(job, program: str, sig: Signature) -> str | None:
    """The fix `nan-check` where a check on a NaN or an Inf fails because JAX's check let it through
    (`missed_nan_check`): then the check's miss is the failure, and no origin of the value is sought."""
    if not kinds.on_nonfinite(sig) or not missed_nan_check(job, program, sig):
        return None
    job.log("the program counts on JAX's NaN check, and runs through with it made as JAX documents it: the "
            "check's miss is the failure, not where the value was made")
    return "nan-check"


def fix_to_survive(job, program: str, sig: Signature, known: str | None = None) -> str | None:
    """The fix each interesting candidate must survive: the first of `modes` that `fixes_the_failure` of
    the starting `program`; `known`, the fix the original was found to need before anything was
    reduced (`value_check_missed`, `twins_first`), is only asked again of a program other than the
    original. Asked once of each program, failure and fix known (`job.fixes_found`): the original's
    may be asked before the levels run and again when the source level starts from it."""
    if (program, sig, known) not in job.fixes_found:
        job.fixes_found[program, sig, known] = _fix_to_survive(job, program, sig, known)
    return job.fixes_found[program, sig, known]


def _fix_to_survive(job, program: str, sig: Signature, known: str | None) -> str | None:
    if known is not None and (program == job.source or runs_clean(job, program, known)):
        return _held_to(job, known)
    tried = [how for how in modes(sig, program) if how != known]  # none asked twice
    for how in tried:
        if fixes_the_failure(job, program, how, sig):
            return _held_to(job, how)
    if tried and mode(sig):
        job.log(f"the program does not run through with {WHAT[tried[0]]}: candidates are judged on the "
                "harness's comparison and the program's exit message alone")
    elif tried:
        job.log(f"the program's own check still fails with {' or '.join(WHAT[h] for h in tried)}: no reference "
                "the check could be held to")
    return None


def twins_first(job, program: str, sig: Signature) -> str | None:
    """The fix to survive (`fix_to_survive`), found before any level runs where NumPy's twins may be it
    (`modes`): then JAX's public function may be at fault, and a level that cannot keep calling it
    (the traced level writes its body out) is not run (`reducer.levels.jaxpr.traceable`)."""
    return fix_to_survive(job, program, sig) if numpy_twins.FIX in modes(sig, program) else None


def _held_to(job, how: str) -> str:
    job.log(f"each interesting candidate must also run through with {WHAT[how]} "
            f"({WHY.get(how, 'so that it fails on its own check, not unconditionally')})")
    return how
