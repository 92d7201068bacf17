"""The whole hunt: build the probes, run them, group the failures, reduce one program per
signature, and write `hunt.json`, `hunt.md` and one folder per finding.

The findings depend only on the probes and their verdicts, taken in probe order (never in the
order runs finished), so the local and the Ray executor give the same summary for the same sweep.
Each finding's folder holds `program.py` (the first program that showed it) and, once reduced,
the reduction's output (`repro.py`, `report.md`, `signature.json` …), so that `reducer corpus add
FOLDER` takes it as it takes any reduction.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from oracles.outcome import Signature
from reducer import corpus as corpusmod
from reducer.errors import USAGE, ReducerError
from reducer.files import write_atomic
from reducer.hunt import report
from reducer.executors import make_executor
from reducer.hunt.judge import Verdict, judge
from reducer.hunt.programs import program
from reducer.hunt.table import Probe, load_table, probes, select
from reducer.workers.sandbox import Limits


@dataclass
class HuntOptions:
    ops: str | None = None
    modes: tuple[str, ...] = ("grad",)
    routes: tuple[str, ...] = ("jax", "enzyme")
    dtypes: tuple[str, ...] = ("float32",)
    platform: str = "cpu"
    budget: float | None = None
    out: Path = Path("hunt")
    executor: str = "local"
    jobs: int = 2
    timeout: float = 120.0
    memory_mb: int | None = 4096
    reduce: bool = True
    reduce_time: float = 120.0
    corpus: Path | None = None


@dataclass
class Finding:
    signature: Signature
    recognised: bool
    probes: list[Probe] = field(default_factory=list)
    known: dict | None = None
    reduced: dict | None = None

    @property
    def id(self) -> str:
        return corpusmod.case_id(self.signature)

    def to_dict(self) -> dict:
        return {"id": self.id, "signature": self.signature.to_dict(), "count": len(self.probes),
                "first": self.probes[0].id, "programs": [p.id for p in self.probes],
                "modes": sorted({p.mode for p in self.probes}), "dtypes": sorted({p.dtype for p in self.probes}),
                "routes": sorted({p.route for p in self.probes}), "recognised": self.recognised,
                "detail": self.signature.excerpt.splitlines()[0][:200] if self.signature.excerpt else "",
                "known": self.known, "folder": f"findings/{self.id}"}


def group(verdicts: list[Verdict | None]) -> list[Finding]:
    """One finding per signature, in the order of the first probe that showed it."""
    found: dict[tuple, Finding] = {}
    for verdict in verdicts:
        if verdict is None or verdict.signature is None:
            continue
        sig = verdict.signature
        key = (sig.family, sig.fields)
        if key not in found:
            found[key] = Finding(sig, verdict.recognised)
        found[key].probes.append(verdict.probe)
    return list(found.values())


def known_case(sig: Signature, root: Path | None) -> dict | None:
    """The corpus case with this signature, if the corpus has one."""
    if root is None or not Path(root).is_dir():
        return None
    case = corpusmod.find_known(sig, Path(root))
    return None if case is None else {"case": case.id, "title": case.title, "upstream": case.upstream}


def sweep(opts: HuntOptions, on_progress: Callable[[dict], None] = lambda e: None) -> dict:
    """Run the hunt `opts` describes; returns the summary written to `hunt.json`."""
    ops = select(load_table(), opts.ops)
    if not ops:
        raise ReducerError(f"--ops {opts.ops!r} matches no operation of the table", USAGE)
    plist, not_applicable = probes(ops, opts.modes, opts.routes, opts.dtypes)
    start = time.monotonic()
    limits = Limits(timeout=opts.timeout, memory_mb=opts.memory_mb)
    executor = make_executor(opts.executor, opts.jobs, opts.platform, limits)
    verdicts: list[Verdict | None] = [None] * len(plist)
    interrupted = False
    try:
        try:
            run_probes(executor, plist, verdicts, opts, start, on_progress)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what ran so far is still summarised
            interrupted = True
            executor.interrupt()
        findings = group(verdicts)
        for finding in findings:
            finding.known = known_case(finding.signature, opts.corpus)
        if opts.reduce and not interrupted:
            try:
                reduce_findings(executor, findings, opts, start, on_progress)
            except KeyboardInterrupt:
                interrupted = True
    finally:
        executor.close()
    summary = summarise(opts, ops, plist, verdicts, findings, not_applicable, time.monotonic() - start,
                        executor.name)
    summary["interrupted"] = interrupted
    write_outputs(opts.out, summary, findings, plist, verdicts)
    return summary


def run_probes(executor, plist: list[Probe], verdicts: list, opts: HuntOptions, start: float, on_progress) -> None:
    sources = [program(p) for p in plist]
    done = 0
    for index, run in executor.run(sources):
        verdicts[index] = judge(plist[index], run, opts.platform)
        done += 1
        on_progress({"event": "probe", "done": done, "total": len(plist), "probe": plist[index].id,
                     "finding": str(verdicts[index].signature or ""), "seconds": round(time.monotonic() - start, 1)})
        if opts.budget is not None and time.monotonic() - start > opts.budget:
            executor.interrupt()
            break


def reduce_findings(executor, findings: list[Finding], opts: HuntOptions, start: float, on_progress) -> None:
    """The normal reduction of each new finding the oracles recognise, within the budget."""
    for finding in findings:
        if not finding.recognised or finding.known:
            continue
        left = None if opts.budget is None else opts.budget - (time.monotonic() - start)
        if left is not None and left < 20:
            break
        spec = corpusmod.oracle_spec(finding.signature)
        max_time = opts.reduce_time if left is None else min(opts.reduce_time, left)
        on_progress({"event": "reduce", "finding": finding.id})
        finding.reduced = _kept_if_same(finding, executor.reduce(program(finding.probes[0], references=False),
                                                                 spec, max_time))


def _kept_if_same(finding: Finding, reduced: dict) -> dict:
    """The reduction, when it reduced the finding's failure; else only why not (no files: the
    finding's own program stays its reproducer)."""
    seen = reduced["summary"].get("signature")
    if seen and (seen["family"], seen["fields"]) != (finding.signature.family, dict(finding.signature.fields)):
        shown = Signature.from_dict(seen)
        return {"summary": {"status": reduced["summary"].get("status"),
                            "error": f"the reduction followed another failure ({shown}); not kept"}, "files": {}}
    return reduced


def summarise(opts: HuntOptions, ops, plist, verdicts, findings, not_applicable, seconds, executor) -> dict:
    ran = [v for v in verdicts if v is not None]
    contained: dict[str, int] = {}
    for v in ran:
        if v.contained:
            contained[v.contained] = contained.get(v.contained, 0) + 1
    return {
        "sweep": {"operations": len(ops), "modes": list(opts.modes), "routes": list(opts.routes),
                  "dtypes": list(opts.dtypes), "platform": opts.platform, "programs": len(plist),
                  "not_applicable": not_applicable, "ran": len(ran), "not_run": len(plist) - len(ran),
                  "clean": sum(1 for v in ran if v.signature is None),
                  "failing": sum(1 for v in ran if v.signature is not None), "contained": contained},
        "findings": [f.to_dict() for f in findings],
        "reductions": {f.id: {k: f.reduced["summary"].get(k) for k in
                              ("original_tokens", "final_tokens", "verified", "seconds", "status", "error")}
                       for f in findings if f.reduced},
        "run": {"seconds": round(seconds, 1), "executor": executor, "jobs": opts.jobs},
    }


def write_outputs(out: Path, summary: dict, findings: list[Finding], plist, verdicts) -> None:
    out = Path(out)
    for finding in findings:
        folder = out / "findings" / finding.id
        folder.mkdir(parents=True, exist_ok=True)
        first = finding.probes[0]
        write_atomic(folder / "program.py", program(first))
        files = (finding.reduced or {}).get("files") or {}
        for name, text in files.items():
            write_atomic(folder / name, text)
        if "repro.py" not in files:
            write_atomic(folder / "repro.py", program(first, references=not finding.recognised))
            sig = finding.signature
            write_atomic(folder / "signature.json", json.dumps(sig.to_dict(), indent=2) + "\n")
    write_atomic(out / "hunt.json", json.dumps(summary, indent=1) + "\n")
    write_atomic(out / "hunt.md", report.markdown(summary))
    lines = [json.dumps({"probe": p.id, "verdict": str(v.signature) if v and v.signature else
                         ("clean" if v else "not run")}) for p, v in zip(plist, verdicts)]
    write_atomic(out / "probes.jsonl", "\n".join(lines) + "\n")
