"""A test that passes alone and fails after the tests before it in its module, as pytest runs them:
told at the start (the job is made again with them, `cli.run_made`) and on `--resume` of such a run."""
from __future__ import annotations

import hashlib

from reducer.errors import NO_RESUME, FailsAfterEarlierTests, ReducerError
from reducer.workers.sandbox import RunResult


def program_hash(program: str) -> str:
    """The hash a resumable run records of the program it reduced (`check_resumed` reads it)."""
    return hashlib.sha1(program.encode()).hexdigest()


def check_alone(job, alone: RunResult) -> None:
    """Raise FailsAfterEarlierTests where the test passed alone (`alone`) and fails after the tests
    before it (the program with them is made only here: it may ask pytest to collect the module)."""
    if alone.returncode == 0 and job.with_earlier not in (None, job.source) and \
            job.classify(job.execute(job.with_earlier, job.limits)):
        raise FailsAfterEarlierTests(f"{job.script.name}: the test passes alone and fails after the tests "
                                     "before it in its module, as pytest runs them")


def check_resumed(job, made_from: str | None) -> None:
    """Raise where the interrupted run (whose program's hash is `made_from`) reduced the test after the
    tests before it (FailsAfterEarlierTests: the job is made again with them), or another version."""
    if made_from == program_hash(job.source):
        return
    if job.with_earlier not in (None, job.source) and made_from == program_hash(job.with_earlier):
        raise FailsAfterEarlierTests(f"{job.script.name}: it was reduced after the tests before it in its module")
    raise ReducerError(f"{job.out}: was made from another version of {job.script.name}", NO_RESUME)
