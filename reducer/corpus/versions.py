"""`reducer corpus check --versions PACKAGE=LIST`: every case run under other releases too.

Each case is run once per version, in that version's cached environment, and marked as it is for
the installed versions: *still reproduces* (the same signature), *fixed* (runs cleanly), *changed*
(fails differently), or *skipped* (the version cannot be installed, or the reproducer fails to
import). The answers go into a table of their own (a column per version) and, in the JUnit file,
into one test suite per version, where a status that differs from the case's expected one is a
failure: the regression corpus then tells when an upgrade fixes or breaks something.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

from reducer.corpus import cases as corpus
from reducer.versions.command import not_installable, prober
from reducer.versions.envs import Environments
from reducer.versions.index import choose_versions
from reducer.versions.probe import FAILS, WORKS, Probe, Reproducer, oracle_for

OTHER_FAILURE = ("fails differently", "fails in another way")


def status_of(probe: Probe) -> str:
    """A probe's verdict in the corpus's words."""
    if probe.verdict == FAILS:
        return corpus.REPRODUCES
    if probe.verdict == WORKS:
        return corpus.FIXED
    return corpus.CHANGED if probe.detail.startswith(OTHER_FAILURE) else corpus.SKIPPED


def check_versions(cases: list[corpus.Case], package: str, spec: str, jobs: int, timeout: float,
                   envs: Environments | None = None, on_done=None) -> tuple[list[str], dict]:
    """The versions `spec` names, and per case id and version: (status, detail)."""
    envs = envs or Environments()
    versions = choose_versions(package, spec)
    known = not_installable(package, versions)
    results: dict[str, dict[str, tuple[str, str]]] = {c.id: {} for c in cases}

    def one(pair) -> None:
        case, version = pair
        if version in known:
            probe = known[version]
        else:
            repro = Reproducer(script=case.repro, source=case.repro.read_text(), platform=case.platform,
                               oracle=oracle_for(case.oracle, case.signature, case.platform), wanted=case.signature,
                               timeout=timeout)
            probe = prober(package, repro, envs)(version)
        results[case.id][version] = (status_of(probe), probe.detail)
        if on_done:
            on_done(case, version, status_of(probe), probe)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, [(c, v) for v in versions for c in cases]))
    return versions, results


def table(cases: list[corpus.Case], package: str, versions: list[str], results: dict) -> str:
    """One row per case, one column per version."""
    head = ["case", "expected"] + [f"{package} {v}" for v in versions]
    rows = [head] + [[c.folder.name, corpus.LABELS[c.expected]] + [corpus.LABELS[results[c.id][v][0]] for v in versions]
                     for c in cases]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for v in versions:
        counts = {s: sum(1 for c in cases if results[c.id][v][0] == s) for s in corpus.LABELS}
        lines.append(f"{package} {v}: " + ", ".join(f"{n} {corpus.LABELS[s]}" for s, n in counts.items() if n))
    return "\n".join(lines)


def junit_xml(main: str, cases: list[corpus.Case], package: str, versions: list[str], results: dict) -> str:
    """The corpus check's JUnit XML, with one more test suite per version."""
    suites = ET.Element("testsuites", name="reducer corpus")
    suites.append(ET.fromstring(main.split("?>", 1)[-1].strip()))
    for v in versions:
        statuses = {c.id: results[c.id][v] for c in cases}
        differ = [c for c in cases if statuses[c.id][0] not in (c.expected, corpus.SKIPPED)]
        suite = ET.SubElement(suites, "testsuite", name=f"reducer corpus on {package} {v}", tests=str(len(cases)),
                              failures=str(len(differ)), errors="0",
                              skipped=str(sum(1 for c in cases if statuses[c.id][0] == corpus.SKIPPED)))
        for c in cases:
            status, detail = statuses[c.id]
            tc = ET.SubElement(suite, "testcase", classname=f"corpus.{package}-{v}.{c.family}", name=c.folder.name)
            if status == corpus.SKIPPED:
                ET.SubElement(tc, "skipped", message=detail)
            elif c in differ:
                ET.SubElement(tc, "failure", message=f"{package} {v}: expected {corpus.LABELS[c.expected]}, got "
                                                     f"{corpus.LABELS[status]}: {detail}")
            ET.SubElement(tc, "system-out").text = f"{package} {v}: {corpus.LABELS[status]}: {detail}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
