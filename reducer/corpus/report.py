"""Re-running a case (or a reduce output folder, or one of `reducer reduce FILE.mlir`) and rewriting its
`report.md`."""
from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

from oracles.base import Signature
from reducer import bug_report, env as envmod
from reducer.corpus.facts import reduction_facts, strip_header
from reducer.corpus.cases import CASE_FILE, LABELS, REPRODUCES, bad_case, load_case, oracle_spec
from reducer.corpus.check import run_module_once, run_once
from reducer.errors import BAD_CASE, ReducerError
from reducer.files import write_atomic
from reducer.levels.mlir.pipeline import opt_command
from reducer.levels.source.representation import tokens


def refresh_report(folder: Path, timeout: float | None = None) -> tuple[Path, str, str]:
    """Re-run a case (or a `reducer reduce` output folder) once and rewrite its report.md.

    Returns the report's path, the status and its detail.
    """
    folder = Path(folder)
    if (folder / CASE_FILE).is_file() or not (folder / "signature.json").is_file():
        case = load_case(folder)
        sig, spec, platform, origin, title = case.signature, case.oracle, case.platform, case.origin, case.title
        fix = case.fixed_by
    else:
        if not (folder / "repro.py").is_file():
            raise bad_case(folder, "no repro.py")
        try:
            data = json.loads((folder / "signature.json").read_text())
            sig, fix = Signature.from_dict(data), str(data.get("fixed_by") or "")
            spec = oracle_spec(sig)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise bad_case(folder / "signature.json", f"unreadable signature: {exc}") from None
        platform, title = sig.get("platform") or "cpu", sig.title or str(sig)
        origin = reduction_facts(folder, strip_header((folder / "repro.py").read_text()))
    code = strip_header((folder / "repro.py").read_text())
    status, detail, seen, excerpt, private = run_once(folder / "repro.py", spec, sig, platform, timeout, fix)
    info = envmod.collect(platform=platform)
    today = datetime.date.today().isoformat()
    if status == REPRODUCES:
        verified = f"re-run by `reducer report` on {today}: {LABELS[status]}"
        verified = f"{origin['verified']}; {verified}" if origin.get("verified") else f"yes ({verified})"
    else:
        verified = f"no: re-run by `reducer report` on {today}: {LABELS[status]}: {detail}"
        excerpt = excerpt or f"(the reproducer no longer shows this failure: {LABELS[status]}: {detail})"
    summary = bug_report.ReductionSummary(
        script_name=str(origin.get("script") or "the original program"),
        original_tokens=int(origin.get("original_tokens", 0) or 0),
        final_tokens=int(origin.get("reduced_tokens", tokens(code)) or tokens(code)),
        seconds=float(origin.get("seconds", 0) or 0), tested=int(origin.get("tested", 0) or 0),
        accepted=int(origin.get("accepted", 0) or 0), cache_hits=int(origin.get("cache_hits", 0) or 0),
        verified=verified, levels=list(origin.get("levels") or []))
    ir = {}
    if (folder / "repro.mlir").is_file():
        lines = (folder / "repro.mlir").read_text().splitlines()
        while lines and lines[0].startswith("//"):  # the pipeline, shown on its own below
            lines.pop(0)
        ir["mlir"] = "\n".join(lines) + "\n"
        if (folder / "pipeline.txt").is_file():
            ir["pipeline"] = (folder / "pipeline.txt").read_text().strip()
            ir["opt_line"] = opt_command(ir["pipeline"])
        if (folder / "repro_mlir.py").is_file():
            ir["mlir_runner"] = "repro_mlir.py"
    from reducer.versions.record import markdown, stored

    bisected = stored(folder)  # kept from `reducer bisect`
    text = bug_report.report(code, dataclasses.replace(sig, title=title), excerpt, info, summary,
                       private_paths=tuple(private), versions=markdown(bisected) if bisected else "", **ir)
    write_atomic(folder / "report.md", text)
    return folder / "report.md", status, detail


def refresh_module_report(folder: Path, timeout: float | None = None) -> tuple[Path, str, str]:
    """`reducer report` on the output of `reducer reduce FILE.mlir` (or a case made from one): run
    repro.mlir once as the IR level does and rewrite report.md, keeping how it was made."""
    from reducer.levels.mlir import module_report, module_repro, module as mm

    try:
        wanted = (load_case(folder).signature if (folder / CASE_FILE).is_file()
                  else Signature.from_dict(json.loads((folder / "signature.json").read_text())))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReducerError(f"{folder}/signature.json: unreadable signature ({type(exc).__name__})", BAD_CASE) from None
    platform = wanted.get("platform") or "cpu"
    done = run_module_once(folder / "repro.mlir", wanted, timeout)
    status, detail, excerpt = done.status, "" if done.status == REPRODUCES else done.detail, done.excerpt
    pipeline, module_text = mm.split(done.module)
    old = (folder / "report.md").read_text() if (folder / "report.md").is_file() else ""
    made = module_report.made_lines(old)
    while made and (not made[-1].strip() or made[-1].startswith("Re-run by `reducer report`")):
        made.pop()
    made += ["", f"Re-run by `reducer report` on {datetime.date.today().isoformat()}: {LABELS[status]}"
             + (f" ({detail})." if detail else ".")]
    runner = folder / "repro.py"
    summary = module_report.ModuleSummary(folder.name, done.kind, 0, 0, 0, 0, 0.0, 0, 0, 0, "",
                                          xla_pass={"pass": wanted.get("xla-pass")} if wanted.get("xla-pass") else None)
    runner_text = (runner.read_text() if runner.is_file()
                   else module_report.runner(module_text, pipeline, wanted, {}, summary))
    if status == REPRODUCES and module_repro.is_short(runner_text):  # the report shows what the reproducer prints
        excerpt = module_repro.excerpt(module_repro.run_file(runner, timeout), excerpt)
    text = module_report.report(module_text, pipeline, runner_text, wanted, excerpt, envmod.collect(platform=platform),
                            summary, private_paths=tuple(done.private), made=made)
    write_atomic(folder / "report.md", text)
    return folder / "report.md", status, detail
