"""The job's data-file step: the reduced program made standalone, and what the job calls around it.

`make_standalone` runs the reduced program once under the recorder (`recorder.record`), rewrites it
(`writeback.rewrite`), and checks that the rewritten program fails as the reduction's failure says with
only the files it still needs (first only those a kept call reads, then all it still names); if it
does not, the reduced program and its data files are kept as they were. `Standalone` is what it made:
the program, `repro_data.npz`, the user's files copied beside the reproducer, and the report's note.

Around it, the job (`reducer.reduce.Reduction`) calls `deadline` (shrinking stops early enough for
the step's runs), `after_shrinking` (the step, unless the job was stopped), `notes` (for the report)
and `write` (the files, into the output folder).
"""
from __future__ import annotations

import dataclasses
import io
import os
import shutil
import tempfile
from pathlib import Path

from reducer.data_literals import DATA_NPZ, LITERAL_ELEMENTS
from reducer.data_literals.recorder import record
from reducer.data_literals.writeback import rewrite
from reducer.files import write_atomic


@dataclasses.dataclass
class Standalone:
    """What `make_standalone` made: the program to verify and write, the files beside it, a note, and the
    data files its checks run with (none: the job's own)."""
    program: str
    npz: bytes | None = None  # repro_data.npz
    beside: tuple[Path, ...] = ()  # the user's data files the reproducer still reads, copied beside it
    note: str = ""
    files: tuple[Path, ...] = ()  # what it failed with first, then the job's others

    def write(self, out: Path) -> list[str]:
        """Write repro_data.npz (atomically) and the kept data files into `out`; the names written."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        names = []
        if self.npz is not None:
            write_atomic(out / DATA_NPZ, self.npz)
            names.append(DATA_NPZ)
        for path in self.beside:
            target = out / path.name
            if path.is_dir():  # never the output folder into itself, where it lies inside the data folder
                shutil.copytree(path, target, dirs_exist_ok=True, ignore=lambda folder, names: [
                    n for n in names if (Path(folder) / n).resolve() == out.resolve()])
            else:
                write_atomic(target, path.read_bytes())
            names.append(path.name)
        return names


def make_standalone(job, program: str, established) -> Standalone:
    """The reduced `program` with the data it reads written in (see the package's docstring), checked
    to fail as `established` says with only the files it still needs; else `program` as it was."""
    box = job.sandbox
    originals = tuple(box.data_files)
    if not any(_is_user_data(p, job) for p in originals):  # modules beside it, or a level's own data only
        return Standalone(program)
    limits = dataclasses.replace(job.limits, timeout=job.bounded(max(job.limits.timeout, 20.0)))
    records, scratch = record(box, program, limits)
    # a level's own data (the traced level's inputs.npz) stays as that level wrote it
    levels = {p.name for p in originals if not _is_user_data(p, job) and p.suffix != ".py"}
    records = [r for r in records if os.path.relpath(r["path"], scratch).split(os.sep)[0] not in levels]
    try:
        return _written_in(job, program, established, records, scratch, originals)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _written_in(job, program: str, established, records: list[dict], scratch: Path, originals: tuple) -> Standalone:
    """`make_standalone` once `program` ran under the recorder in `scratch` (with copies of `originals`)."""
    if not records:
        return Standalone(program, beside=_named(originals, program, job))
    done = rewrite(program, records, scratch / ".reducer-data")
    in_scratch = {p: scratch / p.name for p in originals}
    gone = {p for p, copy in in_scratch.items() if _covered(copy, done.rewritten) and not _covered(copy, done.kept)}
    if done.sites == 0:
        return Standalone(program, beside=_named(originals, program, job),
                          note=_kept_note(records))
    npz = None
    files = [p for p in originals if p not in gone and _still_named(p, done.program)]
    folder = Path(tempfile.mkdtemp(prefix="standalone-", dir=job.scratch))
    if done.arrays:
        import numpy as np

        buffer = io.BytesIO()
        np.savez(buffer, **done.arrays)
        npz = buffer.getvalue()
        (folder / DATA_NPZ).write_bytes(npz)
        files.append(folder / DATA_NPZ)
    # first with only what it still reads (files no recorded call reads, a docstring naming them, stay out)
    read = [p for p in files if not _is_user_data(p, job) or _covered(in_scratch.get(p, p), done.kept)
            or p.name == DATA_NPZ]
    files = _first_that_fails(job, established, done.program, (tuple(read), tuple(files)), originals)
    if files is None:
        job.log("standalone reproducer: the program with its data written in does not fail the same way; "
                "keeping its data files beside repro.py")
        return Standalone(program, beside=_named(originals, program, job),
                          note="The reproducer reads its data files, copied beside it: written into it, the data "
                               "did not reproduce the failure.")
    beside = tuple(p for p in originals if p in files and _is_user_data(p, job))
    return Standalone(done.program, npz=npz, beside=beside, note=_written_note(job, done, npz, beside),
                      files=files + tuple(p for p in originals if p not in files))


def _first_that_fails(job, established, program: str, trials: tuple, originals: tuple) -> tuple | None:
    """The first of `trials` (sets of data files) `program` fails with as `established` says; None when
    it fails with none."""
    for trial in dict.fromkeys(trials):
        run = job.execute(program, job.limits, fresh=True, data_files=trial)
        if job.judge(established.oracle, established.signature, run)[0]:
            return trial
    return None


def _written_note(job, done, npz: bytes | None, beside: tuple) -> str:
    """What went into the reproducer and what stays beside it: logged, and the report's note."""
    read_names = sorted({Path(p).name for p in done.rewritten})
    wrote = [f"{len(read_names)} data file(s) written into the reproducer ({done.sites} read(s) replaced"
             + (f", arrays over {LITERAL_ELEMENTS} elements in {DATA_NPZ}" if npz else "") + ")"
             ] if read_names else []
    kept = [f"still read from beside it: {', '.join(p.name for p in beside)} (loaded in a way that cannot be "
            f"written back)"] if beside else []
    job.log("standalone reproducer: " + ("; ".join(wrote + kept) or "nothing to write in"))
    note = ("Data the program read from " + ", ".join(f"`{n}`" for n in read_names) + " is written into "
            "the reproducer" + (f" (larger arrays in `{DATA_NPZ}`, beside it)" if npz else "") + "."
            if read_names else "")
    if beside:
        note += (" " if note else "") + ("The reproducer still reads " + ", ".join(f"`{p.name}`" for p in beside)
                                         + " (pickled objects or a loader that cannot be written back): the "
                                           "file is copied beside it.")
    return note


def _covered(copy: Path, paths: set) -> bool:
    real = os.path.realpath(copy)
    return any(p == real or p.startswith(real + os.sep) for p in paths)


def _still_named(path: Path, program: str) -> bool:
    return path.name in program or (path.suffix == ".py" and path.stem in program) or path.name == DATA_NPZ \
        or path.is_dir()


def _is_user_data(path: Path, job) -> bool:
    """A data file of the user's (not one a level wrote into the job's scratch folder)."""
    try:
        inside = Path(path).resolve().relative_to(Path(job.scratch).resolve())
    except ValueError:
        return path.suffix != ".py"
    return inside.parts[:1] == ("arguments",) and path.suffix != ".py"  # files the arguments named, staged


def _named(originals, program: str, job) -> tuple[Path, ...]:
    """The user's data files (not modules, not a level's files) a program as it is still names."""
    return tuple(p for p in originals if _still_named(p, program) and _is_user_data(p, job))


def _kept_note(records: list[dict]) -> str:
    names = sorted({Path(r["path"]).name for r in records})
    if not names:
        return ""
    return ("The reproducer still reads " + ", ".join(f"`{n}`" for n in names) + " (loaded in a way that cannot be "
            "written back): the file is copied beside it.")



# -- what the job calls around it ---------------------------------------------------------------------
def deadline(job, established, seconds: float | None = None) -> float | None:
    """When shrinking stops: before the final checks, and, with data files, the two runs that make the
    reproducer standalone; each about `seconds` long (the latest interesting candidate's run, else
    the original's)."""
    seconds = established.seconds if seconds is None else seconds
    when = job.shrink_deadline(seconds, established.rate)
    if when is None or not job.sandbox.data_files or job.data is not None:  # not made, or made already
        return when
    return when - min(0.15 * job.options.max_time, 2 * (1.5 * seconds + 5.0))


def after_shrinking(job, best: str, established) -> str:
    """The data `best` reads written in, before the final checks (not after a stop, nor a bug of the
    tool's): the program the final checks take; `job.data` keeps the `Standalone` for the outputs."""
    if job.stop.is_set() or job.bug is not None:
        return best
    job.data = make_standalone(job, best, established)
    return job.data.program


def notes(data: Standalone | None) -> list[str]:
    """The report's note on the data written in, if the step made one."""
    return [data.note] if data and data.note else []


def write(data: Standalone | None, out: Path) -> None:
    """repro_data.npz and the data files the reproducer still reads, into `out`, if the step ran."""
    if data is not None:
        data.write(out)
