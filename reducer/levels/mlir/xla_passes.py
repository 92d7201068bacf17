"""Which of XLA's HLO passes a failure of XLA needs.

Like the shortest failing prefix of an Enzyme-JAX pipeline, but for XLA's own compiler: the passes
that change the reduced module (`xla_check.changing_passes`, from XLA's per-pass dump) are each
disabled in turn (`--xla_disable_hlo_passes`), and the first whose removal makes the failure go
away (the module compiles and runs, or its results agree with the reference) is the culprit
(`CulpritPass`, a localiser, `reducer.faults`: field `xla-pass`, which a wrong result's signature
takes once the culprit's compilation is its reference, `hold_to_culprit`). When none does alone,
turning every optional pass off and the backend's optimisation level to 0 says whether XLA's
optimisations are involved at all.
"""
from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from oracles.outcome import RunResult, Signature
from reducer.faults import Fault
from reducer.levels.mlir import module as mm, run_module as mlir_run
from reducer.levels.mlir.xla_check import ESSENTIAL, passes_in_dump
from reducer.workers.sandbox import Limits


def changing_passes(job, module_text: str, limits: Limits) -> list[str]:
    """The passes that change the module, read from XLA's per-pass dump written by a run in the job's
    sandbox (a compilation that crashes still leaves the passes it ran before it died)."""
    folder = Path(tempfile.mkdtemp(prefix="xla-pass-dump-", dir=job.scratch))  # its own: a dump adds files
    source = (mlir_run.xla_check_source() + "\n\n"
              f"dump_passes({mlir_run.python_literal(module_text)}, {str(folder)!r})\n")
    job.sandbox.run(source, Limits(timeout=max(60.0, limits.timeout)))
    return passes_in_dump(str(folder))


class CulpritPass:
    """The localiser of XLA's culprit pass: the HLO pass whose removal alone makes the failure of
    `job`'s candidates go away (`job.run_candidate` as `how` says, each with XLA's options of its
    own); `log` hears the search."""

    fields = ("xla-pass",)

    def __init__(self, job, how, log):
        self.job, self.how, self.log = job, how, log

    def locate(self, program: str, run: RunResult | None = None, signature: Signature | None = None) -> Fault | None:
        name = self.search(program).get("pass")
        if not name:
            return None
        return Fault(name, (("xla-pass", name),), f"Disabling XLA's HLO pass `{name}` alone "
                                                  f"(--xla_disable_hlo_passes={name}) makes the failure go away.")

    def search(self, program: str) -> dict:
        """{"pass": NAME} when disabling that one pass makes the failure go away; else {"pass": None,
        "why": …}, and "option" when only the backend's optimisation level 0 does."""
        job, how, log = self.job, self.how, self.log
        module_text = mm.split(program)[1]
        passes = [p for p in changing_passes(job, module_text, how.limits) if p not in ESSENTIAL]

        def goes_away(options: dict) -> bool:
            run = job.run_candidate(program, how, xla={**how.xla, "options": options})
            return run.returncode == 0 and not run.timed_out

        log(f"XLA passes that change the module: {', '.join(passes) or 'none'}")
        everything = {"xla_backend_optimization_level": 0, "xla_disable_hlo_passes": ",".join(passes)}
        if not goes_away(everything):
            log("the failure stays with every optional HLO pass off and backend optimisation level 0")
            return {"pass": None, "why": "the failure stays with every optional HLO pass disabled and the backend's "
                                         "optimisation level at 0: no optimisation pass is needed for it"}
        for name in passes:
            if goes_away({"xla_disable_hlo_passes": name}):
                log(f"XLA's culprit pass: {name} (--xla_disable_hlo_passes={name} makes the failure go away)")
                return {"pass": name}
        if goes_away({"xla_backend_optimization_level": 0}):
            log("no single HLO pass; --xla_backend_optimization_level=0 makes the failure go away")
            return {"pass": None, "option": "xla_backend_optimization_level=0",
                    "why": "no single HLO pass makes it go away; the backend's optimisation level 0 does"}
        log("no single HLO pass makes the failure go away; all of them off together does")
        return {"pass": None, "why": "no single HLO pass makes it go away; disabling all of "
                                     f"{', '.join(passes)} together does"}


def culprit(job, how, program: str, log) -> dict:
    """What the search for XLA's culprit pass in `program` found (`CulpritPass.search`)."""
    return CulpritPass(job, how, log).search(program)


def hold_to_culprit(job, how, sig, run, fresh: bool) -> tuple:
    """A wrong result of XLA is held to the pass that makes it: when disabling one HLO pass makes the
    results agree with XLA's unoptimised ones, that compilation becomes the reference every
    candidate is compared with, so that a candidate whose results differ for another reason (say a
    reduction whose order of additions matters) is not taken for the same bug. (signature, run, `how`
    the candidates run: XLA's options for them, what the search for the pass found)."""
    found = culprit(job, how, how.original, job.log)
    name = (found or {}).get("pass")
    if not name:
        return sig, run, dataclasses.replace(how, xla_pass=found)
    held = {**how.xla, "reference": {"xla_disable_hlo_passes": name}}
    again = job.run_candidate(how.original, how, fresh=fresh, xla=held)
    seen = job.results.classify(again)
    if seen is None:  # the pass alone does not account for the difference
        job.log(f"with only {name} disabled the results still differ: the reference stays XLA unoptimised")
        return sig, run, dataclasses.replace(how, xla_pass=found)
    return seen, again, dataclasses.replace(how, xla_pass=found, xla=held)
