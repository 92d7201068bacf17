"""What a reduction is asked (`Options`, from the command line) and what establishing its failure
learns (`EstablishedFailure`): both frozen, made once and read by the job and every level."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oracles.base import Oracle, Signature
from oracles.outcome import RunResult
from reducer.workers.sandbox import Limits


def default_memory_mb(jobs: int) -> int:
    """Each candidate's address-space limit by default: 70% of memory shared by the jobs."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError):
        return 8192
    return max(2048, int(total * 0.7 / max(1, jobs)))


@dataclass(frozen=True)
class Options:
    """What the command line asks of a reduction; each level reads the options that apply to it.
    Frozen: what a run learns or decides on the way lives on the job or in `EstablishedFailure`."""

    oracle: str = "auto"
    timeout: float | None = None
    platform: str = "cpu"
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    runs: int = 3
    verify_runs: int = 3
    max_time: float | None = None
    stall: float | None = 600.0  # stop after this many seconds without progress
    memory_mb: int | None = None
    hangs: bool = False
    keep_aside: int = 5
    warm: bool = True
    reorder: bool = False  # passes in order of last round's yield (Engine.pass_order)
    runner: str = "trust"  # reducer.second_look.RUNNER_MODES
    levels: str = "auto"  # "auto" or a comma list of: source, jaxpr (reducer.levels.jaxpr.level.parse_levels)


@dataclass(frozen=True)
class EstablishedFailure:
    """What establishing the failure learned, in one frozen object: the oracle, its signature, the run
    that showed it, how often the original showed it, its slowest first run, the candidates' limits,
    how many runs a candidate gets (`votes`: more when the failure comes and goes), the watches the
    verdicts rest on, the data files candidates need beside them, whether candidates run with
    the harness's gradient checks (None: as the sandbox was made), the fix they must survive where it
    was found before shrinking, the finder that places its fault in each run, and for a module, how
    its candidates run."""

    oracle: Oracle
    signature: Signature
    run: RunResult | None
    rate: float
    seconds: float
    limits: Limits | None = None
    votes: int = 1
    watches: tuple[str, ...] = ()
    data_files: tuple[Path, ...] = ()
    gradient_checks: bool | None = None
    fix: str | None = None  # the fix candidates must survive, found before shrinking (`reducer.counterfactual`)
    #: how a module's candidates run, as its first runs found it (`reducer.levels.mlir.module_runs.ModuleFailure`)
    module: Any = None
    #: the program `run` ran, where it is not the original (a resumed run's best script)
    program: str | None = None
    #: what places the fault the signature names in each candidate's run (`reducer.levels.fault_finders`)
    fault_finder: Any = None
