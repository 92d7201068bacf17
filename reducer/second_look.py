"""The long-lived runner's verdicts, looked at again in children of their own.

Candidates run one after another in one warm interpreter (`--runner trust`, the default): fast, but
an earlier candidate can leave something behind that makes a later one fail. The result is then run
in a child of its own (`runner_misled`); where it does not fail there, the source level goes on from
the newest accepted program that does (`last_that_holds`, bisected) with every interesting verdict
confirmed in a child of its own (`confirm`) from then on (`restart`).
"""
from __future__ import annotations

import threading

from reducer.established import EstablishedFailure

RUNNER_MODES = {
    "trust": "candidates run one after another in one warm interpreter; the result is checked in a child of "
             "its own, and if it does not fail there the reduction goes back to the last accepted program that "
             "does and goes on confirming (default)",
    "confirm": "as trust, with every interesting verdict confirmed in a forked child of its own",
    "off": "a forked child per candidate",
}


def confirm(job, source: str, oracle, wanted, cancel: threading.Event):
    """An interesting verdict from the long-lived runner, checked in a child of its own: no earlier
    candidate can have left anything behind there."""
    again = job.execute(source, job.candidate_limits(), cancel, isolated=True)
    verdict = job.judge(oracle, wanted, again)
    if not verdict[0] and not again.cancelled:
        with job.aside_lock:
            job.unconfirmed += 1
        job.log(f"the runner's verdict did not hold in a child of its own (seen there: {verdict[1]})")
    return again, verdict


def trusts_runner(job, established: EstablishedFailure) -> bool:
    """Whether the long-lived runner's verdicts go unconfirmed (the result then runs in a child of its own)."""
    trusted = job.options.warm and job.sandbox.reuse and job.options.runner == "trust"
    return trusted and not established.oracle.runs_candidates


def runner_misled(job, best: str, established: EstablishedFailure) -> bool:
    """Whether trusted runner verdicts led to a result that fails only after other candidates."""
    if not trusts_runner(job, established):
        return False
    run, left = job.execute(best, job.limits, isolated=True), job.remaining()
    if run.timed_out and left is not None and left < 2.0:  # cut by --max-time: nothing learnt
        return False
    return not job.judge(established.oracle, established.signature, run)[0]


def last_that_holds(job, accepted: list[str], established: EstablishedFailure) -> str:
    """The newest accepted program that fails in a child of its own (bisected; the first holds)."""
    good, bad = 0, len(accepted) - 1
    while bad - good > 1:
        mid = (good + bad) // 2
        run = job.execute(accepted[mid], job.limits, isolated=True)
        if job.judge(established.oracle, established.signature, run)[0]:
            good = mid
        else:
            bad = mid
    return accepted[good]


def restart(job, best: str, established: EstablishedFailure) -> str | None:
    """Where the source level goes on from when trusted runner verdicts led to a result that fails
    only after other candidates (None: the result stands); verdicts are confirmed from then on."""
    if not runner_misled(job, best, established):
        return None
    start = last_that_holds(job, job.accepted, established)
    job.log(f"the result ({job.rep.size(best)} tokens) does not fail in a child of its own: an earlier "
            f"candidate left something behind in the long-lived runner; going on from the last accepted "
            f"program that does ({job.rep.size(start)} tokens), with interesting verdicts confirmed")
    return start
