"""The corpus commands: `reducer corpus add`, `reducer corpus check` and `reducer report`.

`corpus add DIR` takes a `reducer reduce` output folder into the corpus; `corpus check` re-runs
every case (or the ones named) and says, per case, *still reproduces*, *fixed* or *changed*, with a
summary table, optional JUnit XML, and exit status 1 when any case differs from its expected
status; `report DIR` re-runs a case once and rewrites its report.md. Bad input gets one line and
its exit status (a broken case: `reducer.errors.BAD_CASE`).
"""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from reducer import corpus as corpusmod, filing
from reducer.errors import ReducerError
from reducer.files import write_atomic

corpus_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="The regression corpus of reduced bugs: add cases, re-check them.")
err = Console(stderr=True)
DIFFERS = 1  # `corpus check`: some case's status differs from its expected one


def fail(message: str, status: int) -> None:
    err.print(f"[bold red]reducer:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


default_corpus = corpusmod.default_root


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
    executor: str = typer.Option("local", "--executor", help="local (--jobs at a time here), or ray: every case a "
                                 "Ray task on RAY_ADDRESS's cluster or a local one"),
    versions: Optional[str] = typer.Option(None, "--versions", help="PACKAGE=LIST (jax=0.10.1,0.10.2 or "
                                           "jax=0.9.0..0.10.2): also run every case under those releases, each "
                                           "in a cached environment of its own (reducer bisect's)"),
):
    """Re-run every case: still reproduces, fixed (runs cleanly) or changed (fails differently).

    Exit 0 when every case shows its expected status (with the installed versions), 1 when any differs.
    """
    if jobs < 1:
        fail("--jobs must be at least 1", 2)
    if versions is not None:
        from reducer.versions.command import parse_versions_option

        try:
            package, spec = parse_versions_option(versions)
        except ReducerError as exc:
            fail(str(exc), exc.status)
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

    if executor not in ("local", "ray"):
        fail(f"--executor must be local or ray, not {executor!r}", 2)
    if executor == "ray":
        from reducer.corpus.ray import check_cases_on_ray

        try:
            outcomes = check_cases_on_ray(loaded, timeout, on_done=progress)
        except ReducerError as exc:
            fail(str(exc), exc.status)
    else:
        outcomes = corpusmod.check_all(loaded, jobs=jobs, timeout=timeout, on_done=progress)
    print(corpusmod.summary_table(outcomes))
    report = junit_report(outcomes)
    if versions is not None:
        report = other_releases(loaded, package, spec, jobs, timeout, report)
    if junit:
        write_atomic(junit, report)
    if any(not o.as_expected for o in outcomes):
        raise typer.Exit(DIFFERS)


def junit_report(outcomes: list) -> str:
    """The corpus's JUnit XML (`corpus.junit_xml`: a testcase per case, named by its folder), each case
    also carrying its signature and the path of its report.md: as properties, in its system-out, and
    in its failure's message, so that a CI page says what failed and which report to open."""
    import xml.etree.ElementTree as ET

    suite = ET.fromstring(corpusmod.junit_xml(outcomes).split("?>", 1)[-1].strip())
    for tc, o in zip(suite.iter("testcase"), outcomes, strict=True):
        report = str(o.case.folder / "report.md")
        props = ET.Element("properties")
        for name, value in (("case", o.case.id), ("signature", str(o.case.signature)), ("report", report)):
            ET.SubElement(props, "property", name=name, value=value)
        tc.insert(0, props)
        failure = tc.find("failure")
        if failure is not None:
            failure.set("message", f"{failure.get('message')} [signature: {o.case.signature}; report: {report}]")
            failure.text = f"{failure.text or ''}\nreport: {report}"
        out = tc.find("system-out")
        if out is not None:
            out.text = f"{out.text or ''}\nsignature: {o.case.signature}\nreport: {report}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


def other_releases(loaded: list, package: str, spec: str, jobs: int, timeout: float, report: str) -> str:
    """`--versions`: every case under each release named; prints the table, returns the JUnit XML with them."""
    from reducer.corpus import versions as corpus_versions

    def progress(case, version, status, probe) -> None:
        print(f"{case.id} on {package} {version}: {corpusmod.LABELS[status]} ({probe.seconds:.1f} s)",
              file=sys.stderr, flush=True)

    try:
        names, results = corpus_versions.check_versions(loaded, package, spec, jobs, timeout, on_done=progress)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    print()
    print(corpus_versions.table(loaded, package, names, results))
    return corpus_versions.junit_xml(report, loaded, package, names, results)


def report_command(
    folder: Path = typer.Argument(..., help="a corpus case folder or a `reducer reduce` output folder"),
    timeout: float = typer.Option(300.0, "--timeout", help="seconds before the run is stopped"),
    json_out: bool = typer.Option(False, "--json", help="print where to file it as JSON (project, tracker, title, "
                                  "new-issue and search links) instead of a line"),
):
    """Re-run a case once and (re)write its report.md with fresh output and environment."""
    if not folder.is_dir():
        fail(f"{folder}: no such folder", 3)
    module_only = (folder / "repro.mlir").is_file() and not (folder / "repro_mlir.py").is_file()
    try:
        refresh = corpusmod.refresh_module_report if module_only else corpusmod.refresh_report
        path, status, detail = refresh(folder, timeout)
    except ReducerError as exc:
        fail(str(exc), exc.status)
    filed = filing.read(path.read_text())
    if json_out:
        print(json.dumps({"report": str(path), "status": status, **(filed.to_dict() if filed else {})}))
        return
    print(f"wrote {path} ({corpusmod.LABELS[status]}" + ("" if status == corpusmod.REPRODUCES else f": {detail}")
          + ")")
    if filed:
        print(filing.said(filed))
