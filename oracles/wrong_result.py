"""Wrong result: a `jit`-compiled function returns another value than the same function run op by op.

The verdict comes from the harness's own comparison (`reducer.watches.results`), never from what the
program prints: for a program that fails, the harness runs the first call of each of its
`jit`-compiled functions again under `jax.disable_jit` and compares the results (floating point:
rtol 1e-4, atol 1e-6; other types exactly). Signature: the reference (`op-by-op`), the operation at
fault (the first equation of the function's jaxpr whose compiled value already differs, or
`function` when no single one does) and how the program itself stopped, so that the reduced program
still compares the two results and fails on it. `auto` tries this family after the crash family.
"""
from __future__ import annotations

from oracles.base import Oracle, Signature, final_exception
from oracles.outcome import RunResult, program_outcome


class WrongResult(Oracle):
    name = "wrong-result"
    needs_gradient_checks = True  # the harness's watches are on …
    watches = ("results",)  # … and of them, only the one comparing results

    def classify(self, run: RunResult) -> Signature | None:
        run = program_outcome(run)
        if run.returncode in (0, None):
            return None
        bad = [r for r in run.harness.get("results", []) if r.get("mismatch")]
        if not bad:
            return None
        worst = max(bad, key=lambda r: r.get("max_abs_err", 0.0))
        op = worst.get("operation", "function")
        ended = final_exception(run.output)
        last = ended[1] or ended[0] if ended else _last_line(run.output)
        fields = (("source", "jit"), ("reference", "op-by-op"), ("op", op), ("program-exit", last))
        detail = (f"harness: `jit({worst['function']})` gives {worst.get('jit')} at {worst.get('index')}, "
                  f"op by op {worst.get('eager')} (max abs difference {worst.get('max_abs_err', 0.0):.3g}, "
                  f"rtol={worst.get('rtol')}, atol={worst.get('atol')}); first differing operation: `{op}`"
                  + (f" on inputs starting {worst['inputs']}" if worst.get("inputs") else ""))
        return Signature(self.name, fields, f"`jit` result disagrees with op-by-op evaluation (`{op}`)",
                         detail + "\n" + "\n".join(run.output.strip().splitlines()[-4:]))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
