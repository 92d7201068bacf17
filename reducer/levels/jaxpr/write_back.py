"""Writing a reduced traced program back as a script, and checking that the script reproduces.

The script spells the program in public `jax.numpy` / `jax.lax` calls (`reducer.levels.jaxpr.as_script`);
when that form loses the failure, the primitives are bound directly instead. Each form runs in fresh
interpreters through a sandbox of its own (with the arrays it reads in `inputs.npz`) and is judged
through the job's judge.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from oracles.base import Oracle, Signature
from reducer.faults import cause as causes
from reducer.faults import float64_fix
from reducer.levels import fault_finders
from reducer.levels.jaxpr import as_script, as_users_write
from reducer.levels.jaxpr import value_checks
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr import spelling, tidy
from reducer.workers.sandbox import Limits, Sandbox


def plain_judge(oracle: Oracle, wanted: Signature, run) -> tuple[bool, Signature | None]:
    """`oracle.judge`, for a caller without a job."""
    return oracle.judge(wanted, run)


FORMS = ((False, "public calls", "public jax.numpy / jax.lax calls"),
         (True, "bound primitives", "primitives bound directly"))


def write_back(spec: str, sandbox: Sandbox, limits: Limits, oracle: Oracle, wanted: Signature, runs: int,
               log, verdict=plain_judge, late=lambda need: False) -> tuple[str, dict, str] | None:
    """The script for `spec` that reproduces the failure in fresh interpreters, its arrays and verdict.
    Each form that does not is logged with what its run showed instead and where it stopped; when
    none does, the log says "write-back failed" (a bug of the emitter, not an outcome). No form is
    tried once `late(need)`: --max-time would pass within the `need` seconds the last form's runs
    took (loaded, four forms' runs went 56 s past it, then 22 s when each waited for it to pass)."""
    users = as_users_write.as_users_write(jp.parse(spec))
    alone = as_users_write.gradient_alone(users, wanted)
    tried = [(alone, False, "the gradient alone", "the gradient alone, public jax.numpy / jax.lax calls")]
    tried = tried if alone else []
    need = 0.0
    for text, arrays, bind_all, short, long in _scripts(tried + [(users, *form) for form in FORMS], wanted):
        if late(need):
            log("jaxpr level: write-back stopped: --max-time reached before every written-back form was tried")
            return None
        try:
            compile(text, "repro.py", "exec")
        except SyntaxError as exc:
            log(f"jaxpr level: the written-back script ({short}) is not valid Python, line {exc.lineno}: "
                f"{(exc.text or '').strip()[:160]}")
            continue
        began = time.monotonic()
        good, why = _verify(text, arrays, bind_all, sandbox, limits, oracle, wanted, runs, verdict)
        need = time.monotonic() - began
        if good == runs:
            return text, arrays, f"yes ({good}/{runs} runs of the written-back script, {long})"
        log(f"jaxpr level: the written-back script ({short}) showed the failure in {good}/{runs} runs; {why}")
    log("jaxpr level: write-back failed: no written-back form reproduces the reduced traced program")
    return None


def _scripts(forms: list[tuple], wanted: Signature):
    """(text, arrays, bind_all, short, long) of each form's script, in order: tidied first
    (`reducer.levels.jaxpr.tidy`: values used once inlined), then as emitted, which is tried when
    the tidy one loses the failure."""
    # an overflow that float64 fixes (or a rounding that the program made float64 takes away): float32
    # spelled as JAX's default float, which the fix makes float64 as it made the program's values (a
    # `jnp.float32` literal would stay float32)
    widened = wanted.get("fix") == float64_fix.WIDE or causes.by_float64_alone(wanted.get("cause") or "")
    for written, bind_all, short, long in forms:
        with spelling.default_float(widened):
            text, arrays = as_script.emit(written, bind_all=bind_all)
        if value_checks.check_of(wanted):  # the script computes both values and stops as the program did
            text = value_checks.finish_script(text, written, wanted)
        tidier = tidy.tidy(text, literals=not widened)
        if tidier != text:
            yield tidier, arrays, bind_all, f"tidy, {short}", f"{long}, values used once inlined"
        yield text, arrays, bind_all, short, long


def _verify(text: str, arrays: dict, bind_all: bool, sandbox: Sandbox, limits: Limits, oracle: Oracle,
            wanted: Signature, runs: int, verdict=plain_judge) -> tuple[int, str]:
    """How many of `runs` fresh runs of the script (run side by side) show the failure, and what the
    first that does not showed instead."""
    import numpy as np

    extra = ()
    if arrays:
        holder = Path(sandbox.root) / f"jaxpr-inputs-{int(bind_all)}"
        holder.mkdir(parents=True, exist_ok=True)
        np.savez(holder / as_script.NPZ, **arrays)
        extra = (holder / as_script.NPZ,)
    checker = Sandbox(Path(sandbox.root) / "jaxpr-verify", script_name=sandbox.script_name,
                      data_files=tuple(sandbox.data_files) + extra, platform=sandbox.platform,
                      check_gradients=sandbox.check_gradients, extra_env=dict(sandbox.extra_env))
    finder = fault_finders.in_sandbox(checker, limits, oracle, wanted)

    def judged(_) -> tuple:
        run = checker.run(text, limits, fresh=True)
        return run, verdict(oracle, wanted, finder.attach(text, run) if finder else run)

    try:  # side by side: on a loaded machine two fresh runs one after the other took most of a minute
        with ThreadPoolExecutor(max_workers=max(1, runs)) as pool:
            done = list(pool.map(judged, range(runs)))
    finally:
        checker.close()
    good = sum(1 for _, (ok, _) in done if ok)
    for run, (ok, seen) in done:
        if not ok:
            return good, f"it showed {seen or 'no failure'}{where_it_stopped(run.stderr, text, sandbox.script_name)}"
    return good, ""


def where_it_stopped(stderr: str, text: str, script: str = "repro.py") -> str:
    """`: <exception line>, at line N: <source>` for the last exception the written-back script
    `text` (run as `script`) raised, at its last frame in the script."""
    import re

    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    error = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]+(Error|Exception)\b", ln)), "")
    frames = [int(n) for n in re.findall(rf'File "[^"]*{re.escape(script)}", line (\d+)', stderr)]
    source = text.splitlines()
    at = ""
    if frames and 0 < frames[-1] <= len(source):
        at = f", at line {frames[-1]}: {source[frames[-1] - 1].strip()[:160]}"
    return (f": {error[:200]}" if error else "") + at
