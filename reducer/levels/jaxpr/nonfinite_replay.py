"""Non-finite values at the traced level: a captured call replayed, its outputs checked for NaN and
Inf, and the operation at fault named exactly as the program's own run names it.

A program that fails its own check on a non-finite value (`assert jnp.isfinite(grads).all()`)
raises nothing inside JAX: the values come back from a transformed call and the check reads them.
The traced level records those calls ahead, with the values they got (`reducer.levels.jaxpr.calls_recorded_ahead`),
and replays each with the `nonfinite` check (`value_checks.with_check`). In the worker, `run_check`:

1. runs the transformed call, compiled; when every output is finite the replay passes;
2. else writes the call back as the script the traced level would write (`as_script`, ending at
   the call, where JAX's checks stop it) and runs that script here twice, with JAX's NaN checks and with its
   NaN and Inf checks on, reading the operation at fault from the `FloatingPointError`'s traceback
   with the very code that reads the program's own run (`reducer.faults.nonfinite.located`);
3. writes what it found into the run's harness report under `nonfinite` and fails the run;
4. on the level's first replay of a captured call (`explain`), also tries the operation at fault
   alone, on the values its inputs had (`reducer.levels.jaxpr.fault_alone`), judged the same way,
   and reports the first such program that shows the same fault under `alone`: the level starts
   from it (`start`) instead of shrinking a large call one slow candidate at a time; and it reports
   the values the call's equations computed under `recorded`, so that a cut of the call keeps them
   (`promote-to-inputs`).

So a candidate is judged by what its written-back script will show, not by a second opinion of
this level: `same` asks for the same `in` and `op` as the program's failure. The written-back
script ends in the program's kind of check (`finish`), the call reading the functions and scalars
it is given in place (`inlined`: `jax.grad(lax.sqrt)(0.0)`).
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import tempfile
import time
import traceback

from oracles import nonfinite as nonfinite_kinds
from oracles.outcome import Signature
from reducer.compile_cache import every_compile_kept
from reducer.faults import cause as causes
from reducer.faults import jax_checks, nonfinite
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr import replay_origin, spelling, tidy
from reducer.levels.jaxpr.model import CALLED, EXPLAINED, Spec

SCRIPT = replay_origin.SCRIPT  # the written-back script, run where the replay runs


class NonFinite(FloatingPointError):
    """The replayed call returned a NaN or an Inf (the run's failure, as the program's check was)."""


def _floating(x) -> bool:
    import jax.numpy as jnp

    dtype = getattr(x, "dtype", None)
    return dtype is not None and bool(jnp.issubdtype(dtype, jnp.inexact))


def finite(x) -> bool:
    import numpy as np

    try:
        return not _floating(x) or bool(np.isfinite(np.asarray(x)).all())
    except (TypeError, ValueError):
        return True


def _output(text: str, infs: bool, eager: bool = False) -> str:
    """What running the script `text` (in the current folder) prints when it fails, with JAX's
    checks on (`jit` off too, with `eager`); "" when it does not fail."""
    import jax

    jax_checks.install()
    flags = (jax_checks.CHECKS if infs else jax_checks.CHECKS[:1]) + (("jax_disable_jit",) if eager else ())
    before = {f: getattr(jax.config, f) for f in (*jax_checks.CHECKS, "jax_disable_jit")}
    jax.clear_caches()  # a function compiled before without the checks would skip them
    code = compile(text, os.path.abspath(SCRIPT), "exec")
    said = io.StringIO()  # what the checks print before the traceback (`jax_checks.PASSED_ON`)
    try:
        for f in flags:
            jax.config.update(f, True)
        with contextlib.redirect_stderr(said):
            exec(code, {"__name__": "__main__", "__file__": os.path.abspath(SCRIPT)})
        return ""
    except BaseException:  # what the script raises, as its own run would print it
        return said.getvalue() + traceback.format_exc()
    finally:
        for f, v in before.items():
            jax.config.update(f, v)


def locate(spec: Spec) -> dict | None:
    """The operation at fault, as the written-back script of `spec` shows it under JAX's checks."""
    import linecache

    import numpy as np

    from reducer.levels.jaxpr import as_script
    from reducer.levels.jaxpr.as_users_write import as_users_write

    users = as_users_write(spec)
    with spelling.default_float(causes.by_float64_alone(spec.cause)):  # as `write_back` spells it
        text, arrays = as_script.emit(users)
    lines = text.rstrip("\n").splitlines()
    text = "\n".join(lines[:-1] + [f"g = {lines[-1][len('print('):-1]}"]) + "\n"
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="reducer-nonfinite-") as folder:
        os.chdir(folder)
        try:
            with open(SCRIPT, "w") as fh:
                fh.write(text)
            if arrays:
                np.savez(as_script.NPZ, **arrays)
            linecache.checkcache()
            outputs = {infs: _output(text, infs) for infs in (False, True)}
            found = nonfinite.located(outputs.__getitem__, text)
            if not nonfinite.met(found):  # op by op, as the origin does
                eager = {infs: _output(text, infs, eager=True) for infs in (False, True)}
                outputs, found = (eager, met) if (met := nonfinite.located(eager.__getitem__, text)) else \
                    (outputs, found)
            bound = {e.primitive for _, j in users.jaxpr.walk() for e in j.eqns}
            return replay_origin.with_origin(found, text, outputs, bound, spec.cause) if found else found
        finally:
            os.chdir(here)


def judged(spec, timed: dict | None = None) -> dict | None:
    """Replay `spec`: None when every output is finite, else the fault its written-back script
    shows under JAX's checks ({} when they name none). `timed[CALLED]` gets the call's own seconds."""
    import jax

    from reducer.faults import checked_value

    began = time.monotonic()
    fun, args = jp.build(spec)
    outs = jax.tree_util.tree_leaves(jax.block_until_ready(fun(*args)))
    if timed is not None:
        timed[CALLED] = time.monotonic() - began
    if all(finite(o) for o in outs):
        return None
    found = locate(spec) or {}
    return {"value": checked_value.named(checked_value.kinds_of(outs)), **found} if found else found


def run_check(spec) -> None:
    """In the worker: replay `spec`; on a non-finite output, report the fault and raise NonFinite.
    On the first replay (`explain`), the smallest program of the operation at fault alone that
    shows the same fault goes into the report too, under `alone` (`fault_alone`)."""
    started = time.monotonic()
    with every_compile_kept():  # the written-back script runs again and again, its caches cleared
        timed: dict = {}
        found = judged(spec, timed)
        report = {"program": {"exit": 0 if found is None else 1}, "nonfinite": found, **timed}
        replayed = time.monotonic()
        if found and "op" in found and spec.explain:  # within about the time the replay took, not to time out
            held = {**found, "value": spec.checked or found["value"]}  # not the kinds of gradients it does not read
            report["alone"] = smallest_alone(spec, held, replayed + max(10.0, replayed - started))
    if found and spec.explain:
        report["recorded"] = jp.recorded(spec)
        report[EXPLAINED] = time.monotonic() - replayed
    out = os.environ.get("REDUCER_HARNESS_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(report, fh)
    if found is not None:
        where = f" from `{found['op']}` ({found['in']})" if "op" in found else ""
        raise NonFinite(f"invalid value in the replayed call's result{where}")


def smallest_alone(spec, found: dict, deadline: float = float("inf")) -> str | None:
    """The text of the first program of the operation at fault alone, on the values it got, whose
    replay shows the same fault as `spec`'s (`found`), the cause of its 0 included where it names
    one (a `log` of a recorded 0 shows no `exp` that underflowed), and the formula whose stable form
    fixes it (an `exp` alone is no `log1p(exp(x))`); None when none does before `deadline` (a
    `time.monotonic()` value)."""
    from reducer.levels.jaxpr import fault_alone

    held = nonfinite_kinds.held_fields(found)
    try:
        for candidate in fault_alone.candidates(spec, found, finite):
            if time.monotonic() > deadline:
                return None
            candidate.cause = spec.cause
            seen = judged(candidate)
            if seen and all(seen.get(k) == found.get(k) for k in held) and nonfinite_kinds.same_point(seen, found) \
                    and nonfinite_kinds.covers(seen.get("value", ""), found.get("value", "")):
                return candidate.to_json()
    except Exception:  # a program the forward run or a replay cannot build: the level starts from the call
        return None
    return None


def start(spec: str, first, log) -> str:
    """The spec the level reduces, given the first replay `first` of the captured `spec`: the
    operation at fault alone when that replay found a program of it showing the same fault."""
    alone = (first.harness or {}).get("alone")
    if not alone:
        return spec
    log(f"jaxpr level: the operation at fault alone, on the values it got, shows the same fault "
        f"({jp.count_eqns(jp.parse(spec).jaxpr)} -> {jp.count_eqns(jp.parse(alone).jaxpr)} equations); "
        f"reduced from there")
    return alone


# -- judging a replay -----------------------------------------------------------------------------
def same(wanted: Signature, run) -> tuple[bool, Signature | None]:
    """Whether a replay shows the wanted non-finite value, as the family judges it
    (`oracles.nonfinite.same_replay`)."""
    return nonfinite_kinds.same_replay(wanted, run.harness.get("nonfinite") if not run.timed_out else None)


def fault_line(run) -> str:
    found = run.harness.get("nonfinite") or {}
    if "op" not in found:
        return ""
    return (f"the replayed call's first non-finite value ({found['kind']}) is made by `{found['prim']}`, "
            f"at fault: in={found['in']} op={found['op']} from={found['from']}")


# -- the written-back script ----------------------------------------------------------------------
def finish(lines: list[str], got: str, spec, wanted: Signature) -> str:
    """The written-back script `lines`, whose last line printed the call `got`, made to end in the
    program's kind of check: `assert jnp.isfinite(g).all()`, `raise TYPE(…)` for one that raised, or
    `raise SystemExit(…)` with the program's message for one that exited with it (no traceback)."""
    import builtins

    kind, check = wanted.get("type") or "AssertionError", wanted.get("check")
    lines, got = inlined(lines[:-1], got, spec)
    body = lines + [f"g = {got}"]
    finite_all = "jnp.isfinite(g).all()" if jp.one_result(spec) else \
        "all(jnp.isfinite(x).all() for x in jax.tree_util.tree_leaves(g))"
    if jp.one_result(spec) and all(not a.shape for a in spec.args):
        finite_all = "jnp.isfinite(g)"  # a scalar's, as users write it
    if check in ("raise", "exit") and kind != "AssertionError":
        if not hasattr(builtins, kind):  # the program's own exception class
            body = [f"class {kind}(Exception):", "    pass", ""] + body
        return "\n".join(body + [f"if not {finite_all}:", f"    raise {kind}({_message(wanted, kind)!r})"]) + "\n"
    return "\n".join(body + [f"assert {finite_all}"]) + "\n"


def _message(wanted: Signature, kind: str) -> str:
    """The message the program raised `kind` with, as its output showed it (the user's words, not
    ours; an exit prints it alone, as its last line), or "non-finite value" when its output does not show one."""
    lines = (wanted.excerpt or "").splitlines()
    said = [line.strip() for line in lines if line.strip()][-1:] if wanted.get("check") == "exit" else \
        [line[len(kind) + 1:].strip() for line in lines if line.startswith(f"{kind}:")]
    return said[-1] if said and said[-1] else "non-finite value"


def _plain(value: ast.expr, spec) -> ast.expr | None:
    """What a call may read in place of a name bound to `value`: a function by its dotted name
    (`lax.sqrt`), a number, or a float32 scalar as the number itself (JAX's default float type)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
        return value
    chain = value
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    if isinstance(value, ast.Attribute) and isinstance(chain, ast.Name):
        return value
    if spec.x64 or not isinstance(value, ast.Call) or value.keywords:
        return None
    text = ast.unparse(value)
    if text in tidy.LITERALS:
        return ast.Constant(tidy.LITERALS[text])
    arg = value.args[0] if ast.unparse(value.func) == "jnp.float32" and len(value.args) == 1 else None
    return arg if isinstance(arg, ast.Constant) and isinstance(arg.value, float) else None


def _globals_read(node: ast.AST, bound: frozenset) -> set:
    """The names read in `node` that are not parameters of a function around the read."""
    found = set()
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.Lambda)):
            found |= _globals_read(child, bound | {a.arg for a in child.args.args})
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id not in bound:
            found.add(child.id)
        else:
            found |= _globals_read(child, bound)
    return found


def _given_to_own_functions(call: ast.AST) -> set:
    """The names `call` hands straight to a function of the script's own (`f(a)`): there a number
    would stay a Python number (`0.0 / 0.0` raises), where JAX's calls make it an array."""
    return {arg.id for node in ast.walk(call) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            for arg in node.args if isinstance(arg, ast.Name)}


def inlined(lines: list[str], got: str, spec) -> tuple[list[str], str]:
    """`lines` without the assignments of names only the call `got` reads, and `got` with their values
    in place: `jax.grad(lax.sqrt)(0.0)`, as users write it, rather than `f = lax.sqrt`, `a = …`."""
    try:
        tree, call = ast.parse("\n".join(lines)), ast.parse(got, mode="eval")
    except SyntaxError:
        return lines, got
    read = _globals_read(tree, frozenset()) | _given_to_own_functions(call)
    values, drop = {}, set()
    for node in tree.body:
        one = isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        value = _plain(node.value, spec) if one else None
        if value is not None and node.targets[0].id not in read:
            values[node.targets[0].id] = value
            drop.update(range(node.lineno, node.end_lineno + 1))

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return values.get(node.id, node) if isinstance(node.ctx, ast.Load) else node

    got = ast.unparse(Inline().visit(call))
    kept = [line for k, line in enumerate(lines, 1) if k not in drop]
    return [line for k, line in enumerate(kept)
            if line.strip() or k < 2 or kept[k - 1].strip() or kept[k - 2].strip()], got
