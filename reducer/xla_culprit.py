"""XLA's culprit pass for a script's failure: the one HLO pass whose removal makes the reduced
reproducer run through.

A wrong `jit` result or a crash while compiling or running a compiled function is XLA's bug
(`oracles.xla_owns`). The reproducer is run once with XLA's per-pass dump (`--xla_dump_to`,
`--xla_dump_hlo_pass_re=.*`): the passes that changed any of its modules
(`reducer.levels.mlir.xla_check.passes_in_dump`, those no compilation can do without left out) are
then disabled (`--xla_disable_hlo_passes`), in fresh interpreters: all of them, then halves while
a half makes the program run through (its own check passes, or it no longer crashes), so that
about log2(n) runs find the one pass whose removal alone does, verified by that very run.
`XLA_FLAGS` is set by a prologue before the program's first statement, as the counterfactual's
fixes are (`reducer.prologue.xla_flags`). The runs go to the job's sandbox directly:
they are looked at for their exit alone, so the job's fault location does not run on them.
"""
from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import oracles
from oracles.outcome import Signature
from reducer.counterfactual import OWNERS, WHAT
from reducer.prologue import xla_flags as flags
from reducer.levels.mlir.xla_check import ESSENTIAL, passes_in_dump

MAX_PASSES = 40
#: the share of --max-time kept for the search, at most, and the tries that share is meant to hold
SHARE, TRIES = 0.2, 20


def reserve(job, established, seconds: float | None, fix: str | None = None) -> float:
    """Seconds of --max-time kept for the search when the failure may be a pass's, or, held to NumPy's
    twins (`fix`), a JAX function's (`reducer.fixes.twin_at_fault`): each try a fresh run of about
    `seconds`, else the original's; 0 without --max-time, or for another failure."""
    searched = oracles.xla_owns(established.signature, established.oracle) or fix == "numpy"
    if not job.options.max_time or not searched:
        return 0.0
    seconds = established.seconds if seconds is None else seconds
    return min(SHARE * job.options.max_time, TRIES * (1.5 * seconds + 3.0))


def for_report(job, program: str, established, fix: str | None, searched: bool) -> tuple:
    """What the report says of the reduced `program`: its signature, the fix in words and the owner
    (the counterfactual `fix`'s, the culprit pass's where `searched` finds one, else the oracle's
    that judged it), and the pass."""
    sig = established.signature
    culprit = search(job, program, job.log, sig, established.oracle) if searched else None
    owner = OWNERS.get(fix or "") or established.oracle.owner(sig)
    return (*named(sig, culprit, WHAT.get(fix or "", ""), owner), culprit)


def named(sig: Signature, culprit: str | None, fixed_by: str, owner: str | None) -> tuple:
    """The signature, the fix in words and the owner a report gives, with the culprit pass where one
    was found: in the title, as the fix, and XLA as the owner."""
    if not culprit:
        return sig, fixed_by, owner
    return dataclasses.replace(sig, title=f"{sig.title or sig} (XLA pass `{culprit}`)"), fixed_by_pass(culprit), "xla"


def search(job, program: str, log, sig: Signature | None = None, oracle=None) -> str | None:
    """The HLO pass whose removal alone makes `program` run through (None when none does, or when
    --max-time leaves no room, or `sig` is no failure of XLA's); each try runs in a fresh
    interpreter (`run`)."""
    if sig is not None and not oracles.xla_owns(sig, oracle):
        return None
    folder = Path(tempfile.mkdtemp(prefix="xla-passes-", dir=job.scratch))
    first = run(job, flags(program, f"--xla_dump_to={folder} --xla_dump_hlo_pass_re=.*"))
    passes = [p for p in passes_in_dump(str(folder)) if p not in ESSENTIAL][:MAX_PASSES]
    tries = Tries(job, lambda off: flags(program, f"--xla_disable_hlo_passes={','.join(off)}"),
                  max(1.0, first.seconds or 1.0))
    try:
        name = halve(passes, tries.through)
    except TimeoutError:
        log(f"XLA's culprit pass: out of time after {tries.count} tries among {len(passes)} passes")
        return None
    if name:
        log(f"XLA's culprit pass: with `{name}` disabled (--xla_disable_hlo_passes={name}) the reproducer runs "
            f"through ({tries.count} tries among the {len(passes)} passes that change its modules)")
    else:
        log(f"XLA's culprit pass: no one of the {len(passes)} passes that change the reproducer's modules makes it "
            f"run through when disabled alone ({tries.count} tries)")
    return name


class Tries:
    """Runs of the program with some of its parts taken away (`program_for(parts)`: passes disabled,
    functions computed by their twins), counted, within --max-time: one that --max-time would cut
    short raises `TimeoutError` instead of telling a cut run from a failing one."""

    def __init__(self, job, program_for, seconds: float):
        self.job, self.program_for, self.seconds, self.count = job, program_for, seconds, 0

    def through(self, parts: list[str]) -> bool:
        left = self.job.remaining()
        if left is not None and left < 2 * self.seconds:
            raise TimeoutError
        self.count += 1
        done = run(self.job, self.program_for(parts))
        return done.returncode == 0 and not done.timed_out


def run(job, program: str):
    """One run of `program` in a fresh interpreter of the job's sandbox, ended before --max-time is."""
    limits = dataclasses.replace(job.limits, timeout=job.bounded(job.limits.timeout))
    return job.sandbox.run(program, limits, fresh=True)


def halve(passes: list[str], through) -> str | None:
    """The one pass whose removal alone makes `through` true: halves of the passes disabled together
    while one half does, then each of what is left alone (two passes needed together have no
    culprit). `through(disabled)` is a run; the answer is always one that ran through alone."""
    if not passes or not through(passes):
        return None
    while len(passes) > 1:
        half = len(passes) // 2
        first, second = passes[:half], passes[half:]
        if through(first):
            passes = first
        elif through(second):
            passes = second
        else:
            return next((p for p in passes if through([p])), None)
    return passes[0]


def fixed_by_pass(name: str) -> str:
    """The culprit's removal, in the words of a report's "With …, the reproducer runs through"."""
    return f"XLA's HLO pass `{name}` disabled (`XLA_FLAGS=--xla_disable_hlo_passes={name}`)"
