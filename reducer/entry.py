"""One way in: the job for whatever the user hands over.

A script (`.py`), a notebook (`.ipynb`), a test's node id or a module (`-m NAME`) is a program for
the source level and the levels it chains (`reducer.reduce.Reduction`, which reads each form through
`reducer.readers.inputs`);
an MLIR module, a file of HLO text or an XLA dump folder is a module: its job
(`reducer.levels.mlir.module_job.MlirReduction`) runs the same chain, started at the IR level. The
command line, the corpus and the pytest plugin ask `job_for` and talk to the job alone.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from reducer.readers import user_code
from reducer.errors import USAGE, ReducerError
from reducer.established import Options
from reducer.job import Job

#: options that do not apply to a module, with why (given there, they are refused)
NOT_FOR_MODULES = {
    "--runner": "a module's candidates run in the IR level's workers, not in a script runner",
    "--levels": "a module is reduced at the IR level (and its pipeline) only",
    "--runs": "the IR level establishes a module's failure from one run",
}


def is_module(path: Path) -> bool:
    """Whether the input is for the IR level: an MLIR module, HLO text, or an XLA dump folder."""
    path = Path(path)
    if path.is_dir():
        from reducer.levels.mlir.xla_dump import looks_like_dump

        return looks_like_dump(path)
    if path.suffix in (".mlir", ".hlo"):
        return True
    if path.suffix == ".txt" and path.is_file():
        with open(path, "rb") as fh:
            return fh.read(4096).lstrip().startswith(b"HloModule")
    return False


def job_for(path: Path | None, out: Path | None, options: Options, resume: bool = False, given: dict | None = None,
            args: tuple[str, ...] = (), known=None, module: str | None = None, after_earlier: bool = False,
            **reports) -> Job:
    """The job for `path`: `given` holds the command-line options the user set (those that do not
    apply to a module are refused in one line), `args` the program's own arguments; `reports`, where
    it reports as it runs (`on_event`, `log`). With `module` (and no `path`), the job for what
    `python -m MODULE` runs from the working directory, found without running the package's code (a
    one-line error when there is none), reduced as a script. With `after_earlier`, a test's node id
    runs after the tests before it in its module (`reducer.errors.FailsAfterEarlierTests`)."""
    if module is not None:
        from reducer.readers.user_modules import module_source

        module_source(module)  # not found: one line
        return _script_job(Path(user_code.MODULE + module), out, options, resume, known, args, **reports)
    if is_module(path):
        for name, why in NOT_FOR_MODULES.items():
            if (given or {}).get(name) is not None:
                raise ReducerError(f"{name} does not apply to a module: {why}", USAGE)
        if args:
            raise ReducerError("arguments after `--` do not apply to a module: it has no command line", USAGE)
        return module_job(path, out, options, resume=resume, **reports)
    return _script_job(path, out, options, resume, known, args, after_earlier, **reports)


def _script_job(path: Path, out: Path | None, options: Options, resume: bool, known, args, after_earlier=False,
                **reports) -> Job:
    """A script's job; what making the user's own code part of it did, or why not, goes to its log."""
    from reducer.reduce import Reduction

    job = Reduction(path, out, options, resume=resume, known=known, args=tuple(args), after_earlier=after_earlier,
                    **reports)
    for line in user_code.NOTES.pop(str(job.script), ()):
        job.log(line)
    return job


def module_job(path: Path, out: Path | None, options: Options, resume: bool = False, **reports) -> Job:
    """The job for a module: the chain started at the IR level; the options that apply to scripts
    only are left out."""
    from reducer.levels.mlir.module_job import MlirOptions, MlirReduction

    kept = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if f.name not in ("runner", "levels", "runs", "verify_runs")}
    return MlirReduction.from_file(path, out, MlirOptions(**kept), resume=resume, **reports)
