"""Writers for what an IR-level reduction leaves behind: the Python runner with its header, and the
bug report (the module, the shortest failing pipeline, an `enzymexlamlir-opt` command line, the
runner, the output excerpt, the environment and how it was reduced)."""
from __future__ import annotations

from dataclasses import dataclass

from oracles import kinds
from oracles.base import Signature
from reducer import bug_report, env as envmod
from reducer.files import scrub
from reducer.levels.mlir.run_module import ENZYME, GRADIENT, PIPELINE_KINDS, XLA_KINDS, XLA_RESULTS, runner_source
from reducer.levels.mlir.pipeline import opt_command


@dataclass
class ModuleSummary:
    source_name: str
    kind: str  # mlir_run.ENZYME, GRADIENT or XLA
    original_ops: int
    final_ops: int
    original_passes: int
    final_passes: int
    seconds: float
    tested: int
    accepted: int
    cache_hits: int
    verified: str
    interrupted: bool = False
    isolation: str = ""
    #: XLA's options the runner compiles with (`options`) and the results kind's `reference`
    xla: dict | None = None
    #: what the search for XLA's culprit pass found (`xla_passes.culprit`)
    xla_pass: dict | None = None
    #: the module bears the marks of JAX's lowering (`jax.result_info`): JAX made it
    from_jax: bool = False

    @property
    def rate(self) -> float:
        return self.tested / self.seconds if self.seconds > 0 else 0.0


def header(sig: Signature, info: dict, summary: ModuleSummary, name: str = "repro.py") -> str:
    """The comment lines a module's reproducer opens with: the failure, its signature, how to run it,
    the versions and how it was reduced."""
    what = {ENZYME: "runs Enzyme-JAX's pass pipeline on the module",
            GRADIENT: "differentiates the module with Enzyme-JAX's pass pipeline, runs the gradient with XLA and "
                      "compares it with finite differences",
            XLA_RESULTS: "compiles the module with XLA twice, as XLA compiles it by default and as the reference, "
                         "runs both on the same inputs and compares the results"}.get(
        summary.kind, "compiles the module with XLA for this machine's default platform and runs it on fixed inputs")
    lines = [f"# Reproducer for: {sig.title or sig}",
             f"# Signature: {sig}",
             f"# Run: python {name}   (it {what})",
             f"# Versions: {envmod.versions_line(info)}" if info else "",
             f"# Reduced by reducer from {summary.source_name}: {summary.original_ops} -> {summary.final_ops} "
             f"operations" + (f", pipeline {summary.original_passes} -> {summary.final_passes} passes"
                              if summary.kind in PIPELINE_KINDS else "")
             + f", in {summary.seconds:.0f} s ({summary.tested} candidates tested)."]
    return "\n".join(line for line in lines if line)


def runner(module_text: str, pipeline: str | None, sig: Signature, info: dict, summary: ModuleSummary,
           name: str = "repro.py") -> str:
    """The tool's own runner of the module (`run_module.runner_source`), with the reproducer's header."""
    return runner_source(summary.kind, module_text, pipeline, header(sig, info, summary, name), xla=summary.xla)


def reproduce_section(module_text: str, pipeline: str | None, runner_text: str, kind: str,
                      module_file: str = "repro.mlir", runner_name: str = "repro.py", hlo_text: str | None = None,
                      platform: str = "cpu") -> tuple[list[str], list[str]]:
    """Markdown lines: the module, the pipeline and the opt command, and how to run it from Python;
    then, for the report's collapsed sections, the Python runner and the module as HLO text (for
    XLA's own tools)."""
    out = [f"The module (`{module_file}`):", "", "```mlir", module_text.rstrip(), "```", ""]
    later = []
    if kind in XLA_KINDS and hlo_text:
        out += [f"As HLO text for XLA's own tools (`repro.hlo`, below): `run_hlo_module --input_format=hlo "
                f"--platform={platform} repro.hlo` (from `xla/tools`).", ""]
        later += bug_report.details("The module as HLO text (repro.hlo)", ["```", hlo_text.rstrip(), "```"])
    if kind in PIPELINE_KINDS and pipeline:
        out += ["The shortest pipeline that still fails (`pipeline.txt`):", "", "```", pipeline, "```", "",
                "With Enzyme-JAX's opt tool" + (" (the differentiated module it prints is the one whose gradient is "
                                                "wrong)" if kind == GRADIENT else "") + ":",
                "", "```", opt_command(pipeline, module_file), "```", ""]
    out += [f"From Python: `python {runner_name}` (the reproducer, below).", ""]
    later = bug_report.details(f"The reproducer ({runner_name})", ["```python", runner_text.rstrip(), "```"]) + later
    return out, later


def _tool(kind: str) -> str:
    return "Enzyme-JAX's pass pipeline" if kind in PIPELINE_KINDS else "XLA"


def xla_happens(sig: Signature) -> str | None:
    """What goes wrong in XLA, said with the phase it happened in."""
    phase, platform = sig.get("phase"), sig.get("platform")
    if kinds.wrong_result(sig) and sig.get("source") == "xla":
        op = (f"; the operation whose result alone already differs: `{sig.get('op')}`" if sig.get("op") != "function"
              else "; no operation's result differs on its own: the fault lies in how XLA compiles them together")
        return ("The module's results as XLA compiles it by default differ from those of the same module compiled "
                "with XLA's optimisations off (backend optimisation level 0, and the HLO passes that change the "
                f"module disabled), on the same inputs{op}.")
    if not kinds.crash(sig):
        return None
    if sig.get("how") == "signal":
        if phase == "compile":
            return (f"XLA's compiler is killed by a signal on {platform} while compiling the module: "
                    f"{sig.get('detail')}.")
        return (f"XLA compiles the module for {platform}; running the compiled module kills the process: "
                f"{sig.get('detail')}.")
    if sig.get("how") == "xla-status":
        doing = {"compile": "compiling", "execute": "running"}.get(phase, "processing")
        return f"XLA returns an error status on {platform} while {doing} the module: `{sig.get('detail')}`."
    return None


def culprit_sentence(found: dict | None) -> str | None:
    """What the search for XLA's culprit pass found, for the report."""
    if not found:
        return None
    if found.get("pass"):
        name = found["pass"]
        return (f"Disabling XLA's HLO pass `{name}` makes the failure go away "
                f"(`XLA_FLAGS=--xla_disable_hlo_passes={name} python repro.py` runs cleanly): the fault is in that "
                f"pass, or in what it hands the backend.")
    return found.get("why", "") + "."


#: the collapsed section on how a reproducer was made
MADE = "How this reproducer was made"


def made_lines(old: str) -> list[str]:
    """The lines on how a reproducer was made, from a report written before (collapsed, or as the
    section reports had before they collapsed it)."""
    for start in (f"<summary>{MADE}</summary>", f"## {MADE}"):
        k = old.find(start)
        if k >= 0:
            lines = old[k + len(start):].splitlines()
            lines = lines[:lines.index("</details>")] if "</details>" in lines else lines
            return lines[next((n for n, line in enumerate(lines) if line.strip()), len(lines)):]
    return []


def tracker(kind: str, from_jax: bool) -> str | None:
    """Why a failure of XLA alone goes to XLA (JAX named only for a module JAX made: a module may come
    from anywhere, say Reactant.jl); the links are the report's "Where to file" section."""
    if kind not in XLA_KINDS:
        return None
    return ("No Enzyme pass runs here: this is a failure of XLA itself, to be filed with XLA"
            + (" (or with JAX, which made the module)" if from_jax else "")
            + " with the module, the platform and the XLA flags above.")


def what_happens(sig: Signature, kind: str, excerpt: str = "") -> str:
    """What goes wrong, said of the module and the tool that processes it (a module may come from
    anywhere, say Reactant.jl, so neither JAX nor `enzyme_jax_ir` is named)."""
    tool = _tool(kind)
    if kind in XLA_KINDS and xla_happens(sig):
        return xla_happens(sig)
    if kinds.enzyme_adjoint(sig):
        target = f" (custom call target `{sig.get('target')}`)" if sig.get("target") else ""
        return (f"Running Enzyme-JAX's pass pipeline on the module fails: Enzyme reports `could not compute the "
                f"adjoint for this operation` for `{sig.get('op')}`{target}.")
    if kinds.numeric_gradient(sig):
        return (f"The gradient Enzyme-JAX's pass pipeline computes for the module (reverse mode) disagrees with "
                f"central finite differences of the module's own function, run with XLA; the operation whose "
                f"gradient alone is wrong: `{sig.get('op')}`.")
    if kinds.activity_mismatch(sig):
        return f"{tool} fails on the module with a {sig.get('kind').replace('-', ' ')} error."
    if kinds.crash(sig):
        said = bug_report.crash_sentence(sig, {"signal": f"The process running {tool} on the module",
                                         "xla-status": tool, "hang": f"{tool} on the module",
                                         "internal": f"{tool} on the module"})
        return said + (f" It dies while the pass `{sig.get('pass')}` runs (the shortest prefix of the pipeline "
                       f"that dies ends with it)." if sig.get("pass") else "")
    return bug_report._what_happens(sig, excerpt)


def expected(sig: Signature, kind: str) -> str:
    tool = _tool(kind)
    if kinds.enzyme_adjoint(sig):
        return (f"The pipeline differentiates the module: `{sig.get('op')}` needs an adjoint rule in Enzyme-JAX "
                "(or a clear \"not supported\" diagnostic naming it).")
    if kinds.numeric_gradient(sig):
        return (f"The gradient agrees with finite differences of the same function (within the tolerances the "
                f"reproducer states): `{sig.get('op')}` needs a correct derivative rule in Enzyme-JAX.")
    if kind in XLA_KINDS and kinds.wrong_result(sig):
        return ("The results agree within the tolerances the reproducer states: an optimisation must not change what "
                "the module computes.")
    if kind in XLA_KINDS and kinds.crash(sig):
        return ("XLA compiles and runs the module, or rejects it with an error that says what is wrong; it must not "
                "crash the process.")
    if kinds.crash(sig):
        return (f"{tool} processes the module, or rejects it with a diagnostic that explains what is wrong; it must "
                "not crash the process.")
    return f"{tool} processes the module without this failure."


def report(module_text: str, pipeline: str | None, runner_text: str, sig: Signature, run_excerpt: str,
           info: dict, summary: ModuleSummary, private_paths: tuple[str, ...] = (),
           runner_name: str = "repro.py", made: list[str] | None = None, hlo_text: str | None = None) -> str:
    """The bug report; `made` replaces the lines on how the reproducer was made (`reducer report`
    keeps the ones the reduction wrote: `made_lines`)."""
    out = [f"# {sig.title or sig}", "", what_happens(sig, summary.kind, scrub(run_excerpt, *private_paths)), ""]
    culprit = culprit_sentence(summary.xla_pass)
    out += [culprit, ""] if culprit else []
    out += ["## Reproducer", ""]
    shown, runner = reproduce_section(module_text, pipeline, runner_text, summary.kind, runner_name=runner_name,
                                      hlo_text=hlo_text, platform=sig.get("platform") or "cpu")
    out += shown
    out += ["## What happens", "", "```", scrub(run_excerpt.strip(), *private_paths) or "(no output)", "```", ""]
    if kinds.crash(sig) and sig.get("native"):
        out += ["The native frames (shared object + offset, innermost first) come from a signal handler reducer "
                f"adds to every candidate; with symbols: `gdb -batch -ex run -ex bt --args python {runner_name}`.", ""]
    out += ["## What was expected", "", expected(sig, summary.kind), ""]
    said = tracker(summary.kind, summary.from_jax)
    out += [said, ""] if said else []
    later = runner + bug_report.details(bug_report.ENVIRONMENT, ["```", envmod.render(info), "```"])
    if made is not None:
        later += bug_report.details(MADE, made)
    else:
        passes = (f", pipeline {summary.original_passes} → {summary.final_passes} passes"
                  if summary.kind in PIPELINE_KINDS else "")
        later += bug_report.details("How this reproducer was made", bug_report.how_made(
            f"Reduced automatically by `reducer` (IR level) from `{summary.source_name}`: {summary.original_ops} → "
            f"{summary.final_ops} operations{passes} in {summary.seconds:.0f} s, {summary.tested} candidates tested "
            f"({summary.rate:.0f} per second{summary.isolation}), {summary.accepted} accepted, {summary.cache_hits} "
            f"cache hits. Every candidate passed the MLIR verifier before it ran, and every accepted one showed the "
            f"same failure signature:", sig, summary.verified, summary.interrupted, thing="module")[2:])
    return bug_report.with_filing(out, later, sig, owner="xla" if summary.kind in XLA_KINDS else "enzyme-jax")
