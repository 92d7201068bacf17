"""The corpus commands: `reducer corpus add`, `reducer corpus check` and `reducer report`.

`corpus add DIR` takes a `reducer reduce` output folder into the corpus; `corpus check` re-runs
every case (or the ones named) and says, per case, *still reproduces*, *fixed* or *changed*, with a
summary table, optional JUnit XML, and exit status 1 when any case differs from its expected
status; `report DIR` re-runs a case once and rewrites its report.md. Bad input gets one line and
its exit status (a broken case: `reducer.errors.BAD_CASE`).
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from reducer import corpus as corpusmod
from reducer.errors import ReducerError
from reducer.files import write_atomic

corpus_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="The regression corpus of reduced bugs: add cases, re-check them.")
err = Console(stderr=True)
DIFFERS = 1  # `corpus check`: some case's status differs from its expected one


def fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def default_corpus() -> Path:
    """./corpus when there is one, else the corpus next to the installed (editable) project."""
    here = Path.cwd() / "corpus"
    if here.is_dir():
        return here
    return Path(__file__).resolve().parent.parent / "corpus"


CORPUS_HELP = "the corpus folder (default: ./corpus, else the project's corpus)"


@corpus_app.command("add")
def add(
    out: Path = typer.Argument(..., help="a `reducer reduce` output folder"),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help=CORPUS_HELP),
    original: Optional[Path] = typer.Option(None, "--original", help="the program it was reduced from "
                                            "(default: the one reduce.log names), kept when small"),
    title: Optional[str] = typer.Option(None, "--title", help="the case's title (default: the signature's)"),
    force: bool = typer.Option(False, "--force", help="add it even if a case with this signature exists"),
):
    """Take a reduction's output folder into the corpus as a new case."""
    try:
        case = corpusmod.add(out, corpus or default_corpus(), force=force, original=original, title=title)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    print(f"added {case.folder}  ({case.signature})")


@corpus_app.command("check")
def check(
    cases: Optional[List[str]] = typer.Argument(None, help="case ids or folders (default: every case)"),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help=CORPUS_HELP),
    junit: Optional[Path] = typer.Option(None, "--junit", help="also write a JUnit XML report here"),
    jobs: int = typer.Option(2, "--jobs", "-j", help="cases checked at once"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before a case's run is stopped"),
):
    """Re-run every case: still reproduces, fixed (runs cleanly) or changed (fails differently).

    Exit 0 when every case shows its expected status, 1 when any differs.
    """
    if jobs < 1:
        fail("--jobs must be at least 1", 2)
    try:
        loaded = corpusmod.load_corpus(corpus or default_corpus(), cases or ())
    except ReducerError as exc:
        fail(str(exc), exc.status)
    if not loaded:
        fail(f"{corpus or default_corpus()}: the corpus has no cases", 3)
    lock = threading.Lock()
    done = [0]

    def progress(o: corpusmod.Outcome) -> None:
        with lock:
            done[0] += 1
            print(f"[{done[0]}/{len(loaded)}] {o.case.id}: {o.label} ({o.seconds:.1f} s)", file=sys.stderr,
                  flush=True)

    outcomes = corpusmod.check_all(loaded, jobs=jobs, timeout=timeout, on_done=progress)
    print(corpusmod.summary_table(outcomes))
    if junit:
        write_atomic(junit, corpusmod.junit_xml(outcomes))
    if any(not o.as_expected for o in outcomes):
        raise typer.Exit(DIFFERS)


def report_command(
    folder: Path = typer.Argument(..., help="a corpus case folder or a `reducer reduce` output folder"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before the run is stopped"),
):
    """Re-run a case once and (re)write its report.md with fresh output and environment."""
    if not folder.is_dir():
        fail(f"{folder}: no such folder", 3)
    try:
        path, status, detail = corpusmod.refresh_report(folder, timeout)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    print(f"wrote {path} ({corpusmod.LABELS[status]}" + ("" if status == corpusmod.REPRODUCES else f": {detail}")
          + ")")
