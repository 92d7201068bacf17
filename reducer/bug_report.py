"""Writers for what a reduction leaves behind: the reproducer with its header, and the bug report.

The report follows what JAX's bug template asks for (a self-contained reproducer and the
`jax.print_environment_info()` output) and adds what Enzyme-JAX's maintainers need: the operation,
the excerpt of the diagnostic, and how the reproducer was obtained.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import oracles
from oracles import kinds
from oracles.base import Signature
from oracles.nonfinite import CALL_RIGHT, IN_FLOAT64, inside_call, inside_call_words
from oracles.wrong_result import SAID
from reducer import env as envmod, filing
from reducer.files import scrub
from reducer.faults import source_fix
from reducer.faults.float64_fix import WIDE
from reducer.faults.cause import fix as cause_fix
from reducer.faults.cause import is_rounding
from reducer.faults.rounding_fix import ROUNDED
from reducer.faults.rounding_fix import evidence as rounding_evidence
from reducer.faults.stable_fix import FORMULAS, function, in_words
from reducer.faults.nonfinite import evidence as nonfinite_evidence

#: what JAX function lowers to a LAPACK custom call, by the routine in its target name
LAPACK_ROUTINES = {"potrf": "jnp.linalg.cholesky", "trsm": "jax.scipy.linalg.solve_triangular",
                   "syevd": "jnp.linalg.eigh", "heevd": "jnp.linalg.eigh", "geqrf": "jnp.linalg.qr",
                   "orgqr": "jnp.linalg.qr", "ungqr": "jnp.linalg.qr", "gesdd": "jnp.linalg.svd",
                   "gesvd": "jnp.linalg.svd", "getrf": "jnp.linalg.lu", "geev": "jnp.linalg.eig",
                   "gees": "jax.scipy.linalg.schur", "gehrd": "jax.scipy.linalg.hessenberg",
                   "sytrd": "jax.lax.linalg.tridiagonal"}
MAX_LINE = 300
#: a reproducer longer than this goes into a collapsed section: the report's first screen stays a screen
SHOWN_LINES = 40

GRADIENT_CHECK_NOTE = ("the verdict comes from reducer's harness, which compares each Enzyme-JAX gradient "
                       "with JAX's own AD of the same function")


@dataclass
class ReductionSummary:
    script_name: str
    original_tokens: int
    final_tokens: int
    seconds: float
    tested: int
    accepted: int
    cache_hits: int
    verified: str  # "yes (3/3 runs)", "no: …", "not run (interrupted)"
    levels: list[str] = field(default_factory=list)  # the levels that shrank it, as the job recorded them
    interrupted: bool = False
    failure_rate: str = ""


def run_command(sig: Signature, script: str = "repro.py") -> str:
    if kinds.numeric_gradient(sig):
        return f"REDUCER_CHECK_GRADIENTS=1 python -m reducer.harness {script}   # or: python {script}"
    return f"python {script}"


def reproducer(code: str, sig: Signature, info: dict, summary: ReductionSummary, fixed_by: str = "") -> str:
    """The reproducer with its header; `fixed_by` the change that makes it run through, where it is
    one of XLA's flags (`reducer.xla_culprit`): the header gives the command that shows it."""
    flags = re.search(r"`(XLA_FLAGS=[^`]+)`", fixed_by)
    header = [
        f"# Reproducer for: {sig.title or sig}",
        f"# Signature: {sig}",
        f"# Run: {run_command(sig)}" + ("  (JAX_PLATFORMS=cuda, on a GPU)" if sig.get("platform") == "gpu" else ""),
        f"# Versions: {envmod.versions_line(info)}",
    ] + ([f"# Environment: {' '.join(f'{k}={v}' for k, v in info['environment_variables'].items())}"]
         if info.get("environment_variables") else []) + [
        f"# Reduced by reducer from {summary.script_name}: {summary.original_tokens} -> {summary.final_tokens} tokens"
        f" in {summary.seconds:.0f} s ({summary.tested} candidates tested).",
    ] + ([f"# Runs through with: {flags.group(1)} {run_command(sig)}"] if flags else [])
    return "\n".join(header) + "\n" + code


#: a traceback's frame of the runner that started a program (`runpy`, the tool's harness), not the program's
RUNNER_FRAME = re.compile(r'^\s*File "(<frozen runpy>|[^"]*/reducer/harness\.py)"')


def as_run_of_repro(excerpt: str, script: str, header_lines: int) -> str:
    """What a run printed, as a run of `repro.py` prints it: the candidate's file (`script`) named
    `repro.py`, its line numbers moved past the reproducer's header, and the runner's frames (with
    their source lines) left out."""
    shown, skip = [], False
    for line in excerpt.splitlines():
        skip = bool(RUNNER_FRAME.match(line)) or (skip and line.startswith("    "))
        if skip:
            continue
        shown.append(re.sub(rf'File "{re.escape(script)}", line (\d+)',
                            lambda m: f'File "repro.py", line {int(m.group(1)) + header_lines}', line))
    return "\n".join(shown)


def jax_function_for(target: str) -> str | None:
    """`jnp.linalg.cholesky` for `lapack_spotrf_ffi`, and so on."""
    for routine, function in LAPACK_ROUTINES.items():
        if routine in target:
            return function
    return None


def trim(text: str) -> str:
    return "\n".join(line if len(line) <= MAX_LINE else line[:MAX_LINE] + " …" for line in text.splitlines())


#: who does what a crash signature says, by how it crashed (the IR level names its own tool)
CRASH_SUBJECTS = {"signal": "The process", "xla-status": "XLA", "hang": "The program", "internal": "JAX"}


def crash_sentence(sig: Signature, subjects: dict | None = None) -> str:
    """What a `crash` signature says happened, in one sentence; `subjects` overrides who did it."""
    how, detail, platform = sig.get("how"), sig.get("detail"), sig.get("platform")
    who = {**CRASH_SUBJECTS, **(subjects or {})}
    if how == "signal":
        op = (f", in `{sig.get('op')}` (the crashing call, cut short right after that operation, dies the same way; "
              f"cut before it, it does not)") if sig.get("op") else ""
        return f"{who['signal']} is killed by a signal on {platform}: {detail}{op}."
    if how == "xla-status":
        return f"{who['xla-status']} returns an error status on {platform}: `{detail}`."
    if how == "cuda":
        return f"The CUDA runtime reports `{detail}`."
    if how == "hang":
        return f"{who['hang']} does not finish within the time limit."
    return f"{who['internal']} fails with an internal error: {detail}."


def _case(sig: Signature) -> str:
    """Which of the report's stock sentences fit the failure."""
    if kinds.adjoint_missing(sig):
        return "enzyme-adjoint" if kinds.enzyme_adjoint(sig) else "jax-rule"
    if kinds.activity_mismatch(sig):
        return "numeric" if kinds.numeric_gradient(sig) else "activity"
    return sig.family


def as_printed(sig: Signature, excerpt: str) -> str:
    """The failure's message as the program printed it (the signature's masks numbers, arrays and
    names), where the excerpt shows it."""
    masked = sig.get("message") or ""
    parts = [re.escape(part) for part in filing.MASKS.split(masked)]
    if len(parts) > 1 and all(len(p) < 200 for p in parts):  # as the last line that ends with it shows it
        shown = (re.search(".+?".join(parts) + r"\s*$", line) for line in reversed(excerpt.splitlines()))
        found = next((found for found in shown if found), None)
        if found:
            return trim(found.group(0).strip())
    kind = sig.get("type")
    for line in reversed(excerpt.splitlines()):
        head, sep, rest = line.strip().partition(": ")
        if kind and sep and head.split(".")[-1] == kind and rest.strip():
            return trim(rest.strip())
    return masked


def _what_happens(sig: Signature, excerpt: str = "") -> str:
    case = _case(sig)
    if case == "enzyme-adjoint":
        function = jax_function_for(sig.get("target"))
        target = (f" (custom call target `{sig.get('target')}`" + (f", what `{function}` lowers to" if function else "")
                  + ")") if sig.get("target") else ""
        return (f"Differentiating the program in reverse mode through Enzyme-JAX (`enzyme_jax_ir`) fails while "
                f"running the Enzyme MLIR pass pipeline: Enzyme reports `could not compute the adjoint for this "
                f"operation` for `{sig.get('op')}`{target}, and JAX raises the pipeline error.")
    if case == "crash":
        return crash_sentence(sig)
    sentences = {
        "jax-rule": lambda: (f"JAX has no {sig.get('rule')} rule for `{sig.get('op')}`, so the transformation the "
                             "program applies fails before anything runs."),
        "numeric": lambda: ("The program computes the same gradient with Enzyme-JAX and with JAX's own AD, and the "
                            "two disagree beyond the tolerance; " + GRADIENT_CHECK_NOTE + "."),
        "activity": lambda: (f"Differentiation fails with a {sig.get('kind').replace('-', ' ')} error "
                             f"({'Enzyme-JAX' if sig.get('source') == 'enzyme' else 'JAX'})."),
        "wrong-result": lambda: (f"A `jit`-compiled function returns a different result from the same function run "
                                 f"{_references(sig)}; the first operation whose values differ is `{sig.get('op')}`."),
        "jax-error": lambda: (f"JAX's own NaN or Inf check, which the program switched on (`jax.debug_nans`), "
                              f"stops the program: {as_printed(sig, excerpt)}. " + _value_words(sig)
                              if kinds.located_value(sig) else
                              f"`{sig.get('library')}` raises `{sig.get('type')}` in `{sig.get('raised-in')}`: "
                              f"{as_printed(sig, excerpt)}"),
        "pipeline-error": lambda: ("Enzyme-JAX's pass pipeline fails" + (f" in `{sig.get('pass')}`" if sig.get("pass")
                                   else "") + (f" on `{sig.get('op')}`" if sig.get("op") else "")
                                   + f": {as_printed(sig, excerpt)}"),
        "regex": lambda: f"The program fails with a diagnostic matching `{sig.get('pattern')}` (shown below).",
        "nonfinite": lambda: (f"The program's own check (`{sig.get('check')}`) fails on a non-finite value. "
                              + _value_words(sig)),
        "own-check": lambda: (f"A check of the program's own (`{sig.get('check')}`) fails with `{sig.get('type')}`"
                              + (f": {as_printed(sig, excerpt)}" if sig.get("message") else "") + ". No library raised "
                              "it: whether JAX computed a wrong value or the check expects too much is what the "
                              "reproducer shows."),
    }
    return sentences.get(case, lambda: f"The program fails: {sig}.")()


EXPECTED = {
    "jax-rule": "The derivative is computed, or JAX documents the transformation as unsupported with a clear error.",
    "numeric": "Enzyme-JAX's gradient agrees with JAX's AD (and with finite differences) within the stated tolerance.",
    "activity": "Either the gradient is computed, or the error points at the user's rule with a clear message.",
    "crash": ("The program runs to completion, or fails with a Python exception that explains what is wrong; "
              "it must not crash the process or fail inside JAX."),
    "pipeline-error": "Enzyme-JAX's pipeline transforms the module, or refuses it with an error naming the operation.",
    "nonfinite": ("The values the program checks are finite: the derivative (or value) at fault is finite, or the "
                  "function documents where it is not and how to keep the gradient finite."),
    "own-check": "The program's check holds: the values it reads are what the program's mathematics says they are.",
}


def _references(sig: Signature) -> str:
    """How the references a wrong result disagrees with computed it, in words."""
    named = [SAID.get(r, r) for r in (sig.get("reference") or "op-by-op").split(",")]
    return " and ".join(dict.fromkeys(named))


def _expected(sig: Signature) -> str:
    if _case(sig) == "wrong-result":
        return f"The compiled function returns what the same function returns {_references(sig)}, within the tolerance."
    if _case(sig) == "enzyme-adjoint":
        return (f"The gradient is computed, as JAX's own AD computes it: `{sig.get('op')}` needs an adjoint rule "
                "in Enzyme-JAX (or a clear \"not supported\" error naming the JAX function).")
    return EXPECTED.get(_case(sig), "The program runs without this failure.")


def report(code: str, sig: Signature, run_excerpt: str, info: dict, summary: ReductionSummary,
           mlir: str | None = None, private_paths: tuple[str, ...] = (), pipeline: str | None = None,
           mlir_runner: str | None = None, versions: str = "", known: str = "", mlir_failure: str = "",
           traced: str = "", opt_line: str = "", fixed_by: str = "", owner: str | None = None,
           mlir_tool: str = "Enzyme-JAX", fixed_code: str = "", expected: str = "", happens: str = "") -> str:
    """The bug report; `versions` is the "Versions" section `reducer bisect` wrote (reducer.versions.record);
    `known` the corpus case with the same signature (reducer.corpus.known_line), so no duplicate is filed;
    `traced` what the traced level's reduced program still needed (`TracedResult.story`); `opt_line` the
    command that runs `pipeline` with Enzyme-JAX's opt tool (`reducer.levels.mlir.pipeline.opt_command`);
    `fixed_by` the counterfactual the reproducer survives, in words, and `owner` whose bug that makes it
    (`reducer.counterfactual.WHAT`, `OWNERS`); `mlir_tool` what failed on the module `mlir` (Enzyme-JAX's
    pipeline, or XLA compiling and running it); `fixed_code` the reproducer with the fix written in,
    shown as a diff (`reducer.fixes`); `expected` what the program expects, where the fix says it better
    than the family (`reducer.counterfactual.EXPECTED`), and `happens` what happens, where the fix says it
    better (`reducer.fixes`).
    What a maintainer reads first comes first; the module, the versions, the environment and how the
    reproducer was made follow in collapsed sections."""
    out = [f"# {sig.title or sig}", ""]
    if known:
        out += [f"> Already known to reducer's regression corpus ({known}): look for the existing report before "
                "filing a new one.", ""]
    shown, later = _reproducer(code, sig)
    out += [happens or _what_happens(sig, scrub(run_excerpt, *private_paths)), "", *shown]
    out += ["## What happens", "", "```", trim(scrub(run_excerpt.strip(), *private_paths)) or "(no output)", "```", ""]
    out += ["## What was expected", "", expected or _expected(sig), ""]
    if fixed_by:
        out += [f"With {fixed_by}, the reproducer runs through.", ""]
    if fixed_code:
        out += [f"With {_origin_fix(sig) or 'this change'}, it runs through; as a change to `repro.py`:", "",
                "```diff", source_fix.as_diff(reproducer(code, sig, info, summary),
                                              reproducer(fixed_code, sig, info, summary)), "```", ""]
    if mlir:
        module = []
        if mlir_failure:
            module += [f"XLA on this module: {mlir_failure.removeprefix('XLA: ')}." if mlir_tool == "XLA"
                       else f"Enzyme-JAX's pipeline on this module: {mlir_failure}.", ""]
        module += ["```mlir", mlir.rstrip(), "```", ""]
        if pipeline:
            module += ["The shortest Enzyme-JAX pipeline that still fails on it (`repro.mlir`, `pipeline.txt`):", "",
                       "```", pipeline, "```", ""]
            module += ["With Enzyme-JAX's opt tool:", "", "```", opt_line, "```", ""] if opt_line else []
        if mlir_tool == "XLA":
            module += ["As HLO text for XLA's own tools: `repro.hlo`.", ""]
        if mlir_runner:
            module += [f"Or from Python: `python {mlir_runner}`.", ""]
        later += details("The module XLA compiled for it (repro.mlir)" if mlir_tool == "XLA"
                         else "The module before AD, and its pipeline", module)
    if versions:
        later += details(VERSIONS, versions.rstrip("\n").splitlines())
    later += details(ENVIRONMENT, ["```", envmod.render(info), "```"])
    by_levels = f" ({', '.join(summary.levels)} level)" if summary.levels else ""
    later += details("How this reproducer was made", how_made(
        f"Reduced automatically by `reducer`{by_levels} from "
        f"`{summary.script_name}`: {summary.original_tokens} → {summary.final_tokens} Python tokens in "
        f"{summary.seconds:.0f} s, {summary.tested} candidates tested, {summary.accepted} accepted, "
        f"{summary.cache_hits} cache hits. Every accepted candidate showed the same failure signature:",
        sig, summary.verified, summary.interrupted,
        notes=[note for note in (traced, summary.failure_rate and f"Failure rate: {summary.failure_rate}.")
               if note])[2:])
    return with_filing(out, later, sig, owner=owner, fix=fixed_by or _origin_fix(sig))


def _reproducer(code: str, sig: Signature) -> tuple[list[str], list[str]]:
    """The reproducer's section, and the collapsed one that holds its code when it is longer than a
    screen (a reduction stopped short of its end leaves a long one)."""
    shown = code.rstrip()
    lines, count = ["```python", shown, "```"], shown.count("\n") + 1
    if count <= SHOWN_LINES:
        return ["## Reproducer", "", f"Run with `{run_command(sig)}`:", "", *lines, ""], []
    return (["## Reproducer", "", f"Run with `{run_command(sig)}`; `repro.py` is {count} lines long (the reduction "
             "stopped before it got shorter), in the collapsed section below.", ""],
            details(f"repro.py ({count} lines)", lines))


def _overflow(sig: Signature) -> str:
    """Why, for a value float32 cannot hold (`reducer.faults.float64_fix`), float64 neither, or a formula
    whose terms all underflowed (`reducer.faults.stable_fix`)."""
    via = sig.get("from") or sig.get("op")
    if sig.get("fix") in FORMULAS and sig.get("cause", "none") != "none":
        return (f"`{sig.get('cause').removesuffix('-underflow')}` underflows to 0 in every term of a formula written "
                f"by hand, and `{sig.get('op')}` of that 0 is not finite; computed by `{function(sig.get('fix'))}`, "
                f"which subtracts the largest term first, the program runs through. This is the program's own "
                f"arithmetic, not a bug of JAX or XLA.")
    if sig.get("fix") in FORMULAS:
        return (f"`{sig.get('op')}` overflows in a formula written by hand, and the program made float64 still "
                f"fails; computed by `{function(sig.get('fix'))}`, which cannot overflow there, it runs through. "
                f"This is the program's own arithmetic, not a bug of JAX or XLA.")
    return (f"`{via}` overflows float32 here: its value is finite in float64, and the program fails again with "
            f"`{sig.get('op')}` alone in float32. The usual remedy is a formula that cannot overflow "
            f"(`jax.nn.softplus` for `log(1 + exp(x))`, `jax.scipy.special.logsumexp`, the maximum subtracted "
            f"before `exp`). This is the program's own arithmetic, not a bug of JAX or XLA.")


def _value_words(sig: Signature) -> str:
    """Where a located non-finite value comes from, and whose bug that makes it (`reducer.faults.origin`)."""
    if sig.get("fix") in (WIDE, *FORMULAS):
        return _overflow(sig)
    if sig.get("fix") == ROUNDED or sig.get("fix") == "inner-where" and is_rounding(sig.get("cause") or ""):
        return _rounding(sig)
    if inside_call(sig):
        return inside_call_words(sig)
    return (nonfinite_evidence({k: sig.get(k) for k in ("op", "from", "in")}) + " This is most often the program's "
            "own code (JAX documents the derivative of `where` this way), not a bug of JAX: file it with JAX only if "
            "the operation's value or derivative should be finite there.")


def _rounding(sig: Signature) -> str:
    """Why, for a value float32's rounding put outside its operation's domain (`reducer.faults.rounding_fix`)."""
    return (rounding_evidence(sig.get("from") or sig.get("op"), sig.get("cause") or "") + " The usual remedy is a "
            "form that cannot cancel (`jnp.var`, or the mean subtracted before squaring), a clamp into the domain "
            "(`jnp.maximum(v, 0.0)`) where the exact value may be 0, or float64 data. This is the program's own "
            "arithmetic, not a bug of JAX or XLA.")


def _origin_fix(sig: Signature) -> str:
    """What made a non-finite value's reproducer run through, in words (`reducer.faults.origin`)."""
    located = kinds.located_value(sig)
    if located and sig.get("fix") == WIDE:
        return (f"`{sig.get('op')}` computed in float64 (the program made float64 by "
                f"`jax.config.update(\"jax_enable_x64\", True)`)")
    if located and sig.get("fix") in FORMULAS:
        return in_words(sig.get("fix"))
    if located and sig.get("fix") == ROUNDED:
        ops = "`, `".join(cause_fix(sig.get("cause") or "rounding")[0])
        return (f"`{ops}` computed in float64" if ops else "the program's data in float64") + \
            " (the program made float64 by `jax.config.update(\"jax_enable_x64\", True)`)"
    if located and sig.get("fix") in CALL_RIGHT:
        return (f"`{sig.get('from')}` alone computed in float64, its result given back in float32" if
                sig.get("fix") == IN_FLOAT64 else f"`{sig.get('from')}` computed by its NumPy or SciPy namesake")
    if not located or sig.get("fix") != "inner-where":
        return ""
    return (f"`{sig.get('op')}` evaluated at a safe point where its value or derivative is not finite (the "
            f"inner `where` JAX's FAQ describes)")


#: the collapsed sections' summaries
VERSIONS, ENVIRONMENT = "Versions: where the bug starts", "Environment"


def opening(summary: str) -> str:
    """The line a collapsed section under `summary` opens with."""
    return f"<details><summary>{summary}</summary>"


def details(summary: str, lines: list[str]) -> list[str]:
    """A section GitHub shows collapsed, under `summary` (a heading of its own first is left out)."""
    lines = list(lines)
    while lines and (not lines[0].strip() or lines[0].startswith("## ")):
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return [opening(summary), "", *lines, "", "</details>", ""]


def with_filing(top: list[str], later: list[str], sig: Signature, owner: str | None = None, fix: str = "") -> str:
    """The report: `top` (its title first), the "Where to file" section with the links that file it
    (`reducer.filing`; the issue's body is the report without its title), then `later`."""
    title = top[0].lstrip("# ").strip()
    body = "\n".join(top[2:] + later).strip()
    filed = filing.filing(sig, title, body, owner)
    where = filing.section(filed, fix, oracles.why_own(sig)) if filed.repo is None else filing.section(filed, fix)
    return "\n".join(top + where + later).rstrip("\n") + "\n"


def how_made(story: str, sig: Signature, verified: str, interrupted: bool, thing: str = "program",
             notes: list[str] = ()) -> list[str]:
    """The report's last section: `story` (what was reduced, how far and how fast), the signature every
    accepted candidate showed, the verification, `notes`, and whether the reduction was interrupted."""
    out = ["## How this reproducer was made", "", story, "", "```", str(sig), "```", "",
           f"Verified in a fresh interpreter: {verified}."]
    for note in notes:
        out += ["", note]
    if interrupted:
        out += ["", f"The reduction was interrupted; this is the smallest {thing} found until then."]
    return out
