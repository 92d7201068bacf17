"""One probe: the reproducer run under one version, in that version's environment, and judged here.

The run uses the environment's interpreter with the project's harness on its path (the harness
needs only the standard library), so the environment holds nothing but the packages under test;
the output is classified in this process by the project's oracles. A version *fails* when a run
shows the wanted signature, *works* when every run ends cleanly, and is *skipped* otherwise: the
reproducer fails to import, fails in another way, or times out. A flaky signature is run as many
times as the reduction needed to see it (any run showing it counts).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import oracles
from oracles.base import Oracle, Signature, final_exception
from oracles.outcome import RunResult
from reducer.files import scrub
from reducer.readers.inputs import data_files
from reducer.workers.sandbox import Limits, Sandbox
from reducer.workers.scratch import folder as scratch_folder, remove as remove_scratch

FAILS, WORKS, SKIPPED = "fails", "works", "skipped"
IMPORT_ERRORS = ("ModuleNotFoundError", "ImportError")


@dataclass
class Probe:
    """What the reproducer did under one version."""

    version: str
    verdict: str  # FAILS, WORKS or SKIPPED
    detail: str
    seconds: float = 0.0
    pins: str = ""  # the environment, as `jax==0.10.1 jaxlib==0.10.1`
    installed: bool = False  # the environment was made for this probe

    def to_dict(self) -> dict:
        return {"version": self.version, "verdict": self.verdict, "detail": self.detail,
                "seconds": round(self.seconds, 1), "environment": self.pins}


@dataclass
class Reproducer:
    """The program to run and how to judge it."""

    script: Path
    source: str
    oracle: Oracle
    wanted: Signature | None  # None: any failure the oracle recognises counts
    runs: int = 1
    platform: str = "cpu"
    timeout: float = 300.0


def oracle_for(spec: str, wanted: Signature | None, platform: str = "cpu") -> Oracle:
    """The oracle that judges the runs: the one `spec` names, or for `auto` the wanted signature's family.
    Raises ValueError for a spec no oracle answers to."""
    if spec == "auto" and wanted is not None:
        spec = oracles.oracle_spec(wanted)
    oracle = oracles.make_oracle(spec, platform)
    if oracle is None:
        raise ValueError("--oracle auto needs the wanted signature (signature.json); name the failure family")
    return oracle


def _last_words(run: RunResult) -> str:
    ended = final_exception(run.output)
    if ended:
        return f"{ended[0]}: {ended[1]}"[:200]
    lines = [line for line in run.output.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else f"exit status {run.returncode}")[:200]


def judge(runs: list[RunResult], repro: Reproducer) -> tuple[str, str]:
    """The verdict on one version from its runs, and the detail shown with it."""
    hits, other = 0, None
    for run in runs:
        if repro.wanted is not None:
            same, seen = repro.oracle.judge(repro.wanted, run)
        else:
            seen = repro.oracle.classify(run)
            same = seen is not None
        if same:
            hits += 1
        elif other is None and run.returncode != 0:
            found = seen or (oracles.detect(run, repro.platform) or (None, None))[1]
            other = found
    n = len(runs)
    if hits:
        return FAILS, "shows the signature" + (f" in {hits} of {n} runs" if n > 1 else "")
    if all(r.returncode == 0 for r in runs):
        return WORKS, "runs cleanly" + (f" ({n} runs)" if n > 1 else "")
    bad = next(r for r in runs if r.returncode != 0)
    ended = final_exception(bad.output)
    if ended and ended[0] in IMPORT_ERRORS:
        return SKIPPED, f"fails to import: {ended[0]}: {ended[1]}"[:240]
    if bad.timed_out:
        return SKIPPED, f"timed out after {bad.seconds:.0f} s"
    if other is not None:
        return SKIPPED, f"fails differently: {other.title or other}"[:240]  # in its own words, not normalised
    return SKIPPED, f"fails in another way: {_last_words(bad)}"


def run_in(python: Path, repro: Reproducer) -> tuple[str, str]:
    """Run the reproducer `repro.runs` times with `python` (stopping at the first run that shows the signature)."""
    scratch = scratch_folder("reducer-bisect-")
    sandbox = Sandbox(scratch / "runs", script_name=repro.script.name,
                      data_files=data_files(repro.script, repro.source), platform=repro.platform,
                      check_gradients=repro.oracle.needs_gradient_checks, python=str(python),
                      extra_env={"PYTHONDONTWRITEBYTECODE": ""})  # the first run leaves .pyc files for the next
    try:
        runs = []
        for _ in range(max(1, repro.runs)):
            runs.append(sandbox.run(repro.source, Limits(timeout=repro.timeout)))
            if judge(runs[-1:], repro)[0] == FAILS:
                break
        verdict, detail = judge(runs, repro)
        return verdict, scrub(detail)  # no paths of this machine in a report
    finally:
        sandbox.close()
        remove_scratch(scratch)


def timed(version: str, work) -> Probe:
    start = time.monotonic()
    probe = work()
    probe.version, probe.seconds = version, time.monotonic() - start
    return probe
