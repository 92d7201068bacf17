"""Checking cases: run a reproducer once as `reducer check` does and say whether it still
reproduces, is fixed or has changed; the summary table and the JUnit report."""
from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from oracles.base import Signature
from reducer.corpus.cases import CHANGED, FIXED, LABELS, REPRODUCES, SKIPPED, UNCONDITIONAL, MODULE_RUNNERS, Case
from reducer.counterfactual import WHAT, fixed, mode
from reducer.errors import NEEDS_INPUT, NO_BACKEND, NO_FAILURE, ReducerError

@dataclass
class Outcome:
    """What re-running one case showed."""

    case: Case
    status: str
    detail: str
    seconds: float
    seen: Signature | None = None
    excerpt: str = ""

    @property
    def label(self) -> str:
        return LABELS[self.status]

    @property
    def as_expected(self) -> bool:
        return self.status in (self.case.expected, SKIPPED)


def run_once(repro: Path, spec: str, wanted: Signature, platform: str = "cpu",
             timeout: float | None = None, fix: str = "") -> tuple[str, str, Signature | None, str, list[str]]:
    """Run a reproducer once as `reducer check` does: (status, detail, signature seen, excerpt, private paths);
    `fix` the bug taken away where the family does not say it (a case's `fix`)."""
    from reducer.reduce import Options, Reduction

    job = Reduction(Path(repro), None, Options(oracle=spec, platform=platform, timeout=timeout, jobs=1, runs=1,
                                               warm=False))
    private = [str(job.scratch), str(Path(repro).resolve().parent)]
    try:
        established = job.establish(runs=1)
        fix = mode(wanted) or fix or None
        # the bug taken away (`reducer.counterfactual`): the reproducer's own check must then pass
        still = fix is not None and job.fresh_run(fixed(job.source, fix)).returncode != 0
    except ReducerError as exc:
        message = str(exc).split(": ", 1)[-1]
        if exc.status == NO_FAILURE:
            return FIXED, "runs cleanly", None, "", private
        if exc.status == NO_BACKEND:
            return SKIPPED, message, None, "", private
        if exc.status == NEEDS_INPUT:
            return CHANGED, message, None, "", private
        saw = message.split("; saw: ", 1)[1] if "; saw: " in message else message
        return CHANGED, f"fails differently: {saw}", None, "", private
    finally:
        job.close()
    if established.run is not None:
        same, seen = established.oracle.judge(wanted, established.run)
        seen = seen or established.signature
    else:
        same, seen = established.oracle.same(wanted, established.signature), established.signature
    excerpt = seen.excerpt or established.signature.excerpt
    if same and still:
        return (UNCONDITIONAL, f"still fails with {WHAT[fix]}: its own check does not rest on the bug; reduce "
                "the original again", seen, excerpt, private)
    if same:
        return REPRODUCES, str(wanted), seen, excerpt, private
    return CHANGED, f"fails differently: {seen}", seen, excerpt, private


def module_only(folder: Path) -> bool:
    """Whether a case (or output folder) was reduced from a module (`reducer reduce FILE.mlir`): its
    repro.py runs repro.mlir, and the module is what is re-run."""
    return (folder / "repro.mlir").is_file() and not any((folder / name).is_file() for name in MODULE_RUNNERS)


@dataclass
class ModuleRun:
    """What re-running a module case once as the IR level does showed."""

    status: str
    detail: str
    seen: Signature | None
    excerpt: str
    module: str  # the module as run (its pipeline on the first line, where it has one)
    kind: str
    private: list[str]


def run_module_once(module: Path, wanted: Signature, timeout: float | None = None) -> ModuleRun:
    """Run a module once as `reducer check FILE.mlir` does, against the signature it was reduced to."""
    from oracles import oracle_spec
    from reducer.entry import module_job
    from reducer.errors import OTHER_FAILURE
    from reducer.reduce import Options

    job = module_job(module, None, Options(oracle=oracle_spec(wanted), platform=wanted.get("platform") or "cpu",
                                           timeout=timeout))
    try:
        established = job.check()
        same, seen = established.oracle.judge(wanted, established.run)
        seen = seen or established.signature
        status, detail = (REPRODUCES, str(wanted)) if same else (CHANGED, f"fails differently: {established.signature}")
        excerpt, ran = established.signature.excerpt, established.module  # the module that failed, as it ran
    except ReducerError as exc:
        if exc.status not in (NO_FAILURE, OTHER_FAILURE, NO_BACKEND):
            raise
        status = {NO_FAILURE: FIXED, NO_BACKEND: SKIPPED}.get(exc.status, CHANGED)
        detail, seen = str(exc).split(": ", 1)[-1], None
        excerpt = f"(the module no longer shows this failure: {LABELS[status]}: {detail})"
        ran = job  # the module as given, and the kind of run it starts with
    finally:
        job.close()
    return ModuleRun(status, detail, seen, excerpt, ran.original, ran.kind, [str(job.scratch)])


def check_case(case: Case, timeout: float | None = None) -> Outcome:
    start = time.monotonic()
    if module_only(case.folder):
        done = run_module_once(case.folder / "repro.mlir", case.signature, timeout)
        return Outcome(case, done.status, done.detail, time.monotonic() - start, done.seen, done.excerpt)
    status, detail, seen, excerpt, _ = run_once(case.repro, case.oracle, case.signature, case.platform, timeout,
                                                case.fixed_by)
    return Outcome(case, status, detail, time.monotonic() - start, seen, excerpt)


def check_all(cases: list[Case], jobs: int = 2, timeout: float | None = None, on_done=None) -> list[Outcome]:
    """Check every case, `jobs` at a time; `on_done(outcome)` is called as each one finishes."""
    def one(case: Case) -> Outcome:
        outcome = check_case(case, timeout)
        if on_done:
            on_done(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, cases))


def summary_table(outcomes: list[Outcome]) -> str:
    """A plain-text table, one row per case, and a closing count."""
    rows = [("case", "family", "expected", "status", "seconds", "detail")]
    for o in outcomes:
        mark = "" if o.as_expected else "  <-- differs"
        rows.append((o.case.folder.name, o.case.family, LABELS[o.case.expected], o.label + mark, f"{o.seconds:.1f}",
                     o.detail if o.status != REPRODUCES else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:5], widths)) + ("  " + r[5] if r[5] else "")
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in LABELS}
    differ = sum(1 for o in outcomes if not o.as_expected)
    lines.append("")
    lines.append(f"{len(outcomes)} cases: {counts[REPRODUCES]} still reproduce, {counts[FIXED]} fixed, "
                 f"{counts[CHANGED]} changed" + (f", {counts[SKIPPED]} skipped" if counts[SKIPPED] else "")
                 + (f", {counts[UNCONDITIONAL]} fail without the bug" if counts[UNCONDITIONAL] else "")
                 + f"; {differ} differ from the expected status")
    return "\n".join(lines)


def junit_xml(outcomes: list[Outcome], name: str = "reducer corpus") -> str:
    """JUnit XML: one testcase per case, a failure where the status differs from the expected one."""
    suite = ET.Element("testsuite", name=name, tests=str(len(outcomes)),
                       failures=str(sum(1 for o in outcomes if not o.as_expected)), errors="0",
                       skipped=str(sum(1 for o in outcomes if o.status == SKIPPED)),
                       time=f"{sum(o.seconds for o in outcomes):.2f}")
    for o in outcomes:
        tc = ET.SubElement(suite, "testcase", classname=f"corpus.{o.case.family}", name=o.case.folder.name,
                           time=f"{o.seconds:.2f}")
        if o.status == SKIPPED:
            ET.SubElement(tc, "skipped", message=o.detail)
        elif not o.as_expected:
            failure = ET.SubElement(tc, "failure",
                                    message=f"expected {LABELS[o.case.expected]}, got {o.label}: {o.detail}")
            failure.text = f"{o.case.title}\nsignature: {o.case.signature}\n{o.detail}"
        out = ET.SubElement(tc, "system-out")
        out.text = f"{o.label}: {o.detail}"
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
