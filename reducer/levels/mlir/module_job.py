"""The job for an MLIR module (an Enzyme-JAX dump, a plain module, HLO text or an XLA dump folder:
`inputs`): the same chain as a script's, started at the IR level.

`MlirReduction` is a `reducer.levels.chain.ChainJob`, as a script's job is: before its chain it
establishes how the module fails (`reducer.levels.mlir.module_runs.ModuleRuns`: the first runs,
the signature, the operation or pass at fault, where candidates run), then runs the chain
`(IrLevel,)` (`reducer.levels.mlir.ir_level`) through the same shrink / take / verify path: the
job verifies the result in fresh interpreters, keeps other failures in `also-interesting/`, keeps
`best.mlir` and `state.json` for --resume as the level accepts candidates, and writes
`signature.json`, `env.json` and `reduce.log`; `finish` returns `repro.mlir`, `pipeline.txt` (or
`repro.hlo` for XLA), the runner `repro.py` and `report.md`, made with the environment and the verdict.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from reducer.errors import NO_RESUME, ReducerError
from reducer.established import EstablishedFailure, Options
from reducer.levels.base import LevelContext
from reducer.levels.chain import ChainJob
from reducer.levels.mlir import inputs, module as mm, module_report, module_repro, pipeline as pl
from reducer.levels.mlir.ir_level import IrLevel
from reducer.levels.mlir.module_shrink import module_files, sizes, summarise, with_xla_pass
from reducer.levels.mlir.module_runs import ModuleFailure, ModuleRuns
from reducer.levels.mlir.run_module import XLA_KINDS
from reducer.verdict import Verdict
from reducer.workers.sandbox import RunResult


@dataclass(frozen=True)
class MlirOptions(Options):
    """The job's options, with the IR level's defaults and its own settings."""

    jobs: int = 1
    runs: int = 1
    verify_runs: int = 2
    stall: float | None = None
    #: "worker" (a warm worker process), "here" (this very process), or None: decided by the first run
    isolation: str | None = None
    runner_name: str = "repro.py"
    #: write report.md, signature.json, env.json and reduce.log too
    full_outputs: bool = True


class MlirReduction(ChainJob):
    """The job for an MLIR module and its pipeline (`reducer.job.Job` owns what jobs share)."""

    suffix, comment, unit, file_name = ".mlir", "//", "operations", "repro.mlir"

    def __init__(self, text: str, source_name: str, out: Path, options: MlirOptions, log=None, on_event=None,
                 resume: bool = False, dumped: list | None = None, from_xla: bool = False):
        super().__init__(out, options, on_event, log, resume, scratch_prefix="reducer-mlir-")
        try:
            self.runs = ModuleRuns(text, source_name, options, self.scratch, self.log, self.bounded,
                                   options.isolation, options.runner_name, dumped, from_xla)
        except BaseException:
            super().close()
            raise
        self.own_sandbox, self.requested, self.rep = self.runs.sandbox, self.runs.requested, self.runs.rep
        self.first_limits = self.runs.first_limits
        self.full_outputs = options.full_outputs
        self.source_name = source_name
        self.given_sha1 = hashlib.sha1(self.runs.text.encode()).hexdigest()  # the module as given, for --resume
        self.counts0 = (0, 0)  # operations and pipeline passes of the original

    @classmethod
    def from_file(cls, path: Path, out: Path | None, options: MlirOptions, **kw) -> "MlirReduction":
        """The job for an MLIR module, a file of HLO text, or an XLA dump folder (`mlir.inputs`)."""
        path = Path(path)
        given = inputs.read(path)
        return cls(given.modules[0][1], given.modules[0][0], out or Path.cwd() / f"reduced-{path.stem}", options,
                   dumped=given.modules[1:], from_xla=given.from_xla, **kw)

    def close(self) -> None:
        self.runs.close()
        super().close()

    # -- what the module's first runs learnt ------------------------------------------------------
    @property
    def how(self) -> ModuleFailure | None:
        """How the module fails and its candidates run, once established (`ModuleRuns.establish`)."""
        return self.established.module if self.established is not None else None

    @property
    def kind(self) -> str:
        """The kind of run the module fails in (`reducer.levels.mlir.run_module`); before it is
        established, the kind of run it starts with."""
        return self.how.kind if self.how else self.runs.given_kind

    @property
    def isolation(self) -> str:
        """Where candidates run: "worker", "here", "subprocess" or "script"."""
        return self.how.isolation if self.how else "subprocess"

    @property
    def original(self) -> str:
        """The module that fails, as the first runs adopted it (the module as given before)."""
        return self.how.original if self.how else self.runs.text

    def original_program(self) -> str:
        return self.original

    def fresh_run(self, program: str) -> RunResult:
        return self.runs.run_candidate(program, self.how, fresh=True)

    def check(self) -> EstablishedFailure:
        """`reducer check`: one run and its signature (`ModuleRuns.check`)."""
        self.established = self.runs.check()
        return self.established

    def establish(self, start: str | None = None) -> EstablishedFailure:
        """How the module (or `start`, a module it was reduced to) fails (`ModuleRuns.establish`)."""
        self.established = self.runs.establish(self.judge, start)
        return self.established

    # -- the chain ----------------------------------------------------------------------------------
    def levels(self) -> tuple:
        return (IrLevel(self.runs),)

    def context(self, established: EstablishedFailure, level) -> LevelContext:
        """A level's context, shrinking stopped in time for the final checks."""
        return dataclasses.replace(super().context(established, level),
                                   until=self.shrink_deadline(max(established.seconds, 1.0)))

    def state(self, established: EstablishedFailure) -> dict:
        return {"source": self.source_name, "source_sha1": self.given_sha1,
                "signature": established.signature.to_dict(), "counts0": list(self.counts0)}

    def begin(self) -> tuple[EstablishedFailure, str]:
        established = self.establish()
        self.counts0 = ops, passes = sizes(self.runs, self.original)
        self.log(f"reducing {self.source_name} ({ops} operations" + (f", pipeline of {passes} passes" if passes else "")
                 + f"), output in {self.out}")
        self.log(self.runs.described(established))
        return established, self.original

    def resume_from(self) -> tuple[EstablishedFailure, str]:
        """The interrupted run's best module, checked to still fail in the same way."""
        state, best, wanted = self.read_state()
        if state.get("source_sha1") != self.given_sha1:
            raise ReducerError(f"{self.out}: was made from another version of {self.source_name}", NO_RESUME)
        established = self.establish(start=best)
        if not established.oracle.same(wanted, established.signature):
            raise ReducerError(f"{self.out}/best.mlir no longer shows {wanted} (saw {established.signature})",
                               NO_RESUME)
        self.counts0 = tuple(state.get("counts0", (0, 0)))
        self.resume_level(state, best)
        self.log(f"resuming {self.out}: {self.rep.size(best)} operations, {state.get('tested', 0)} candidates "
                 f"tested before")
        self.established = established = dataclasses.replace(established, signature=wanted)
        return established, best

    # -- outputs ------------------------------------------------------------------------------------
    def short_reproducer(self, how: ModuleFailure, module_text: str, sig, summary,
                         info: dict) -> tuple[str | None, str]:
        """For a module XLA fails on, the reproducer a maintainer would write (`module_repro`), once a
        fresh run confirms it (what that said goes into `summary.verified`), and what it printed; None
        keeps the runner."""
        if how.kind not in XLA_KINDS:
            return None, ""
        try:
            text, said, output = module_repro.for_runs(
                self.runs, how, module_text, sig, module_report.header(sig, info, summary, self.runs.runner_name))
        except Exception as exc:  # the runner is filed instead: nothing is lost
            text, said, output = None, f"no short reproducer ({type(exc).__name__}: {str(exc)[:200]})", ""
        self.log(f"reproducer: {said}" + ("" if text else "; the tool's runner is filed instead"))
        summary.verified = f"{summary.verified}; {said}" if text else summary.verified
        return text, output

    def finish(self, best: str, established: EstablishedFailure, verdict: Verdict, info: dict, stopped: bool,
               follow) -> dict:
        """What the module's reduction leaves (`follow`, a following level's result: none follows a module)."""
        runs, previous, done = self.runs, self.previous, (self.chain[-1] if self.chain else None)
        how = established.module  # with what the level's search for XLA's culprit pass found
        how = dataclasses.replace(how, xla_pass=done.culprit) if done is not None and done.culprit else how
        spent = time.monotonic() - self.started + previous.get("seconds", 0.0)
        summary = summarise(runs, how, best, self.counts0, spent,
                            previous.get("tested", 0) + sum(r.tested for r in self.chain),
                            previous.get("accepted", 0) + sum(r.accepted for r in self.chain),
                            done.cache_hits if done else 0, verdict.text, stopped)
        sig = with_xla_pass(established.signature, how.xla_pass)
        hlo_text = done.files.get("repro.hlo") if done is not None and done.program == best else None
        pipeline, module_text = mm.split(best)
        short, printed = self.short_reproducer(how, module_text, sig, summary, info) if not stopped else (None, "")
        files = module_files(runs, how, best, sig, summary, info, hlo_text)
        runner_text = files[runs.runner_name] = short or files[runs.runner_name]
        if self.full_outputs:
            excerpt = self.excerpt(established, verdict)
            excerpt = module_repro.excerpt(printed, excerpt) if short and printed else excerpt
            files["report.md"] = module_report.report(
                module_text, pipeline, runner_text, sig, excerpt, info, summary,
                private_paths=(str(self.scratch),), runner_name=runs.runner_name, hlo_text=files.get("repro.hlo"))
            files["signature.json"] = sig.to_json() + "\n"
        seconds = done.seconds if done else 0.0
        return {"out": str(self.out), "signature": sig.to_dict(), "kind": how.kind, "xla_pass": how.xla_pass,
                "original_ops": self.counts0[0], "final_ops": summary.final_ops,
                "size": {"unit": self.unit, "from": self.counts0[0], "to": summary.final_ops},
                "original_passes": self.counts0[1], "final_passes": summary.final_passes, "ops": self.rep.ops(best),
                "module": module_text, "pipeline": pipeline,
                "opt_command": pl.opt_command(pipeline) if pipeline else None,
                "runner": runs.runner_name, "runner_text": runner_text, "seconds": round(summary.seconds, 1),
                "reduce_seconds": round(seconds, 2), "tested": summary.tested, "accepted": summary.accepted,
                "cache_hits": summary.cache_hits, "per_second": round(done.tested / seconds, 1) if seconds else 0.0,
                "isolation": how.isolation, "files": files}
