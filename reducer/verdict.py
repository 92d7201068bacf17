"""How a run ended, in words, and the final check's verdict: what the log and the report say about a
run of the original or of the result (`reducer.job.Job.verify`)."""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import oracles
from oracles.base import final_exception, innermost_library_frame
from oracles.outcome import RunResult
from reducer.errors import NEEDS_INPUT, NO_FAILURE, OTHER_FAILURE, ReducerError
from reducer.readers.inputs import needs_input


@dataclass
class Verdict:
    """What the final check found: a line for the log and report, whether the result reproduces,
    and the run the report quotes."""

    text: str
    ok: bool
    run: RunResult | None = None
    every: bool = False  # every run showed the signature, none cut short


def last_words(run: RunResult) -> str:
    """How a run ended, in one line: its final exception, a timeout, or its last output line."""
    ended = final_exception(run.output)
    if ended:
        return f"{ended[0]}: {ended[1]}"[:200]
    if run.timed_out:
        return "timed out"
    if run.returncode == 0:
        return "no failure"
    lines = [line for line in run.output.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit status {run.returncode}")[:200]


def no_backend(run: RunResult) -> str | None:
    """A reason when JAX could not start the requested backend (say, --platform gpu without a GPU):
    JAX 0.10.2 then fails `assert _default_backend is not None` in `xla_bridge.backends` (with
    `JAX_PLATFORMS=cuda`), or, where the sandbox gives it the CPU beside the GPU and names the GPU as
    the default (`JAX_PLATFORM_NAME=cuda`), raises `Unknown backend cuda` at the first use of the
    default backend: the default backend's platform, not only some backend, must be the GPU."""
    for line in run.output.splitlines():
        if "Unable to initialize backend" in line:
            why = line.split("Unable to initialize backend", 1)[1].strip(" :")[:160]
            return "JAX cannot start the requested backend: " + why
    ended = final_exception(run.output)
    if ended and ended[0] == "RuntimeError" and ended[1].startswith("Unknown backend cuda"):
        return f"JAX found no device for the requested platform ({ended[1][:160]})"
    if ended and ended[0] == "AssertionError" and \
            innermost_library_frame(run.output) == "jax/_src/xla_bridge.py:backends":
        return "JAX found no device for the requested platform (xla_bridge.backends has no default backend)"
    return None


def own_output(run: RunResult, lines: int = 16) -> str:
    """The end of what a run printed, for a report about a program that no longer fails as expected."""
    text = "\n".join(run.output.rstrip().splitlines()[-lines:])
    how = "timed out" if run.timed_out else f"exit status {run.returncode}"
    return f"{text}\n({how})" if text else f"(no output; {how})"


def verify_runs(least: int, rate: float, miss: float = 0.01) -> int:
    """How many runs verify a result whose failure shows in `rate` of runs: at least `least`, and enough
    that all of them miss it with probability under `miss`."""
    if not 0.0 < rate < 1.0:
        return least
    return max(least, math.ceil(math.log(miss) / math.log(1.0 - rate)))


def not_failing(script, run: RunResult, requested, options) -> ReducerError:
    """The error for an original `script` that does not show the failure asked for (`requested`:
    the --oracle given, or None)."""
    if requested is not None and requested.runs_candidates:
        return ReducerError(f"{script}: the --oracle command rejects the original script "
                            f"({last_words(run)})", OTHER_FAILURE)
    reason = needs_input(run)
    if reason:
        return ReducerError(f"{script}: {reason}", NEEDS_INPUT)
    if run.returncode == 0:
        return ReducerError(f"{script}: does not fail: nothing to reduce", NO_FAILURE)
    if requested is not None:
        seen = oracles.detect(run, options.platform, options.hangs)
        what = str(seen[1]) if seen else last_words(run)
        return ReducerError(f"{script}: fails, but not as --oracle {options.oracle} expects; "
                            f"saw: {what}", OTHER_FAILURE)
    return ReducerError(f"{script}: fails with no recognised failure ({last_words(run)}); "
                        f"use --oracle regex:PATTERN or script:COMMAND", OTHER_FAILURE)


def final_checks(job, program: str, established, original: str, fresh_run, judge) -> Verdict:
    """Run the result `verify_runs` times in fresh interpreters (`fresh_run`, more for a failure that
    comes and goes: enough that it shows in one of them but once in a hundred reductions); when none
    fails, run the original again to tell a failure lost by reduction from one that comes and goes.
    A run that --max-time cut short proves nothing either way. `judge` judges runs (`Job.judge`)."""
    if job.out_of_time():
        return Verdict("not run (--max-time reached first)", True, established.run)
    n = verify_runs(job.options.verify_runs, established.rate)
    with ThreadPoolExecutor(max_workers=max(1, min(n, job.options.jobs))) as pool:
        runs = list(pool.map(lambda _: fresh_run(program), range(n)))
    verdicts = [judge(established.oracle, established.signature, r) for r in runs]
    late = job.out_of_time()
    cut = sum(1 for r, (ok, _) in zip(runs, verdicts) if not ok and r.timed_out and late)
    good = sum(1 for ok, _ in verdicts if ok)
    run = next((r for r, (ok, _) in zip(runs, verdicts) if ok), established.run)
    if good == n - cut:
        if not cut:
            return Verdict(f"yes ({good}/{n} runs show the same signature)", True, run, every=True)
        others = f"; the {good} others show the same signature" if good else ""
        return Verdict(f"not finished within --max-time ({cut}/{n} runs cut short{others})", True, run)
    seen = ", ".join(dict.fromkeys(str(s) if s is not None else last_words(r) for r, (ok, s) in zip(runs, verdicts)
                                   if not ok))
    if good:
        return Verdict(f"only {good}/{n} runs show the signature (nondeterministic); others: {seen}", True, run)
    failing = next(r for r, (ok, _) in zip(runs, verdicts) if not ok and not (r.timed_out and late))
    if job.out_of_time():
        return Verdict(f"no: 0/{n} runs of the result show it; saw {seen} (no time left to run the original "
                       f"again)", False, failing)
    if judge(established.oracle, established.signature, fresh_run(original))[0]:
        return Verdict(f"no: the failure was lost (0/{n} runs of the result show it, the original still "
                       f"does; saw {seen})", False, failing)
    return Verdict(f"no: nondeterministic (0/{n} runs of the result and a new run of the original show it; "
                   f"saw {seen})", False, failing)
