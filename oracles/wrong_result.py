"""Wrong result: a `jit`-compiled function returns another value than a reference computation of the
same function.

The verdict comes from the harness's own comparison (`reducer.cross_checks.results`), never from what the
program prints: for a program that fails, the harness runs the first call of each of its
`jit`-compiled functions again and compares the results with each reference it has: op by op
(`jax.disable_jit`) on the program's device (floating point: rtol 1e-4, atol 1e-6; other types
exactly) and, for a program that ran on a GPU, op by op on the CPU (rtol 1e-3, atol 1e-3 of the
array's largest magnitude, at least 1e-5: GPU float32 math, TF32 matmuls included, differs that
much). Signature: the reference(s) the result disagrees with (`op-by-op`, `cpu`, or both, so that a
fault of the GPU alone, where op by op on the GPU agrees with its `jit`, is a failure of its own),
the operation at fault (the first equation of the function's jaxpr whose compiled value already
differs from that reference, or `function` when no single one does) and how the program itself
stopped, so that the reduced program still compares the two results and fails on it. `auto` tries
this family after the crash family.
"""
from __future__ import annotations

from oracles.base import Oracle, Signature, program_exit
from oracles.outcome import RunResult, program_outcome

#: the references a `jit` result is compared with (`reducer.cross_checks.results`), and how the report calls them
OP_BY_OP, CPU = "op-by-op", "cpu"
SAID = {OP_BY_OP: "op by op", CPU: "op by op on the CPU"}


class WrongResult(Oracle):
    name = "wrong-result"
    needs_gradient_checks = True  # the harness's watches are on …
    watches = ("results",)  # … and of them, only the one comparing results

    def owner(self, sig: Signature) -> str:
        """XLA's: the compiled program computes something else than the same operations run one by one."""
        return "xla"

    def classify(self, run: RunResult) -> Signature | None:
        run = program_outcome(run)
        if run.returncode in (0, None):
            return None
        bad = [r for r in run.harness.get("results", []) if r.get("mismatch")]
        if not bad:
            return None
        worst = max(bad, key=lambda r: r.get("max_abs_err", 0.0))
        op = worst.get("operation", "function")
        # a harness of before the CPU cross-check compared op by op alone
        against = worst.get("disagrees_with") or [OP_BY_OP]
        fields = (("source", "jit"), ("reference", ",".join(against)), ("op", op),
                  ("program-exit", program_exit(run.output)))
        where = {CPU: " on the CPU", f"{OP_BY_OP},{CPU}": " on its device and on the CPU"}.get(fields[1][1], "")
        return Signature(self.name, fields, f"`jit` result disagrees with op-by-op evaluation{where} (`{op}`)",
                         _detail(worst, op) + "\n" + "\n".join(run.output.strip().splitlines()[-4:]))


def against_cpu_alone(sig: Signature) -> bool:
    """Whether a wrong result disagrees with the CPU's op-by-op reference alone (`--platform gpu`):
    a fault of the GPU, where op by op on the GPU agrees with its `jit`."""
    references = (sig.get("reference") or "").split(",")
    return sig.family == "wrong-result" and CPU in references and OP_BY_OP not in references


def reference(sig: Signature) -> str | None:
    """What a wrong result's fix replaces `jit` with (`reducer.counterfactual`): op by op ("jit"), or
    op by op on the CPU ("cpu") for one wrong against the CPU alone; None for another family."""
    if sig.family != "wrong-result":
        return None
    return "cpu" if against_cpu_alone(sig) else "jit"


def _detail(worst: dict, op: str) -> str:
    """What the harness compared: each reference's verdict with its tolerances, then the operation."""
    compared = worst.get("references") or {worst.get("reference", OP_BY_OP): worst}
    parts = []
    for name, r in compared.items():
        said = SAID.get(name, name)
        stated = f"rtol={r.get('rtol')}, atol={r.get('atol')}" + (
            f" or {r['atol_scale']} of the largest magnitude" if r.get("atol_scale") else "")
        if r.get("error"):
            parts.append(f"{said} could not run ({r['error']})")
        elif r.get("mismatch"):
            parts.append(f"`jit({worst['function']})` gives {r.get('jit')} at {r.get('index')}, {said} "
                         f"{r.get('eager')} (max abs difference {r.get('max_abs_err', 0.0):.3g}, {stated})")
        else:
            parts.append(f"{said} agrees (max abs difference {r.get('max_abs_err', 0.0):.3g}, {stated})")
    inputs = f" on inputs starting {worst['inputs']}" if worst.get("inputs") else ""
    return f"harness: {'; '.join(parts)}; first differing operation: `{op}`{inputs}"

