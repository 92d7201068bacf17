"""Wrong gradients and wrong results at the traced level: judged on the jaxpr itself.

The program's own comparison (its prints, its exit message) is never the evidence, at this level as
at the source level (`reducer.cross_checks`). A captured call is replayed with a check (`with_check`):

- `gradient`: a call that differentiates an `enzyme_jax_ir` function (grad, value_and_grad, vjp,
  jvp … outside `enzyme`): Enzyme-JAX's derivative of the jaxpr against JAX's AD of the same jaxpr,
  and the first operation at which they part, exactly as the gradient watch does it; then, at that
  operation, float64 finite differences as a third opinion on which of the two is wrong
  (`reducer.cross_checks.differences`; on the first replay, for the log), not part of the signature;
- `result`: a `jit`-compiled call: its compiled result against the jaxpr run op by op
  (`jax.disable_jit`), and the first operation whose compiled value differs, as the result watch does.

The check writes the watch's report into the run's harness file and fails the run when the two
disagree, so the oracle (`activity-mismatch` numeric, `wrong-result`) classifies the replay as it
classifies a script's run; `same` then ignores the fields only a whole program has (whether it
compared the two values itself and the message it stopped with). The written-back script
(`finish_script`) gets them back: it computes both values and stops with the program's message
when they disagree, in a fresh interpreter.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import time

from oracles import kinds
from oracles.base import same_but_how_it_stopped
from oracles.outcome import Signature
from oracles.wrong_result import CPU, against_cpu_alone
from reducer.faults import cause as causes
from reducer.levels.jaxpr import nonfinite_replay
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import CALLED, EXPLAINED, Spec

GRADIENT_FORWARD = {"jvp", "jacfwd"}
DIFFERENTIATING = jp.GRAD_LIKE | {"vjp", "jvp"}


class NumericMismatch(Exception):
    """The replayed call's two values disagree (the run's failure, as the program's was)."""


def check_of(signature) -> str:
    """The check a failure with this signature needs ("gradient", "result"), or "" for none."""
    if kinds.numeric_gradient(signature):
        return "gradient"
    if kinds.wrong_result(signature):
        return "result"
    if kinds.nonfinite(signature):
        return "nonfinite"
    return ""


def with_check(spec: str, check: str, explain: bool = False, wanted: Signature | None = None) -> str:
    """The spec text a worker replays with `check`; with `explain`, a gradient check also takes finite
    differences at the operation at fault (once, for the log: not for every candidate), and the
    operation alone is held to the kinds of value the `wanted` failure's check read; where the
    `wanted` failure names a non-finite value's cause, the replay looks for that one alone
    (`reducer.faults.cause.held`)."""
    model = jp.parse(spec)
    cause = (wanted.get("cause") if wanted is not None else "") or ""
    model.check, model.explain = check, model.explain or explain
    model.cause = cause if causes.named(cause) else model.cause
    if explain and wanted is not None:
        model.checked = wanted.get("value") or ""
    return model.to_json()


def matches_check(spec: Spec, check: str) -> bool:
    """Whether the spec's transformations are what `check` compares."""
    kinds = spec.kinds()
    if check == "gradient":
        if "enzyme" not in kinds or "vmap" in kinds:
            return False
        outside = kinds[:kinds.index("enzyme")]  # Enzyme-JAX's derivative runs only compiled: a `jit` too
        return kinds[-1] == "enzyme" and "jit" in outside and any(k in DIFFERENTIATING for k in outside)
    if check == "nonfinite":  # any call whose result the program's check may read
        return True
    return bool(kinds) and kinds[0] == "jit"


def same(oracle, wanted, run) -> tuple[bool, object]:
    """Whether a replay shows the wanted numeric failure, all but the program's own fields."""
    if kinds.nonfinite(wanted):
        return nonfinite_replay.same(wanted, run)
    seen = oracle.classify(run)
    return not run.timed_out and same_but_how_it_stopped(seen, wanted), seen


def fault_line(run) -> str:
    """What a replay's gradient check found at the operation at fault, three derivatives side by side
    (`oracles.activity_mismatch.fault_sentence`); "" when it found none."""
    from oracles.activity_mismatch import fault_sentence

    if "nonfinite" in run.harness:
        return nonfinite_replay.fault_line(run)
    checks = run.harness.get("checks", [])
    found = [c["at_fault"] for c in checks if c.get("at_fault")]
    failed = [c["at_fault_error"] for c in checks if c.get("at_fault_error")]
    if found:
        return fault_sentence(found[0])
    return f"no finite differences at the operation at fault ({failed[0]})" if failed else ""


def replay_seconds(run) -> float:
    """How long a replay of the call takes: a first replay's seconds but those it spent explaining
    (finite differences, the fault alone, the values recorded: `model.EXPLAINED`)."""
    return max(0.0, (run.seconds or 0.0) - float(run.harness.get(EXPLAINED, 0.0)))


def script_seconds(run) -> float:
    """How long the call itself runs, as its written-back script will run it once: a non-finite
    replay's seconds but the runs that locate the value's origin (`model.CALLED`), else the replay's."""
    called = run.harness.get(CALLED)
    return float(called) if called is not None else replay_seconds(run)


# -- in the worker --------------------------------------------------------------------------------
def run_check(spec: Spec) -> None:
    """Replay `spec` (parsed from the text a worker request carries) with its check; writes the
    watch's report, raises NumericMismatch on a disagreement."""
    from reducer.levels.jaxpr.primitives import registry

    registry()
    import jax

    jax.config.update("jax_enable_x64", spec.x64)
    if spec.check == "nonfinite":
        nonfinite_replay.run_check(spec)
        return
    entry = _gradient(spec) if spec.check == "gradient" else _result(spec)
    key = "checks" if spec.check == "gradient" else "results"
    bad = bool(entry and entry.get("mismatch"))
    report = {"program": {"exit": 1 if bad else 0}, "gradients": {"enzyme": 1, "plain": 0}, "checks": [],
              "results": []}
    report[key] = [entry] if entry else []
    if bad and spec.explain:  # the values a cut gives the inputs it makes (`promote-to-inputs`)
        began = time.monotonic()
        report["recorded"] = jp.recorded(spec)
        report[EXPLAINED] = entry.pop(EXPLAINED, 0.0) + time.monotonic() - began
    out = os.environ.get("REDUCER_HARNESS_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(report, fh, default=repr)
    if bad:
        raise NumericMismatch(f"{spec.check} check: the two values disagree at `{entry.get('operation')}`")


def _gradient(spec: Spec) -> dict | None:
    import jax.numpy as jnp
    from enzyme_ad.jax import enzyme_jax_ir

    from reducer.levels.jaxpr.params import enzyme_kwargs
    from reducer.cross_checks.gradients import Sample, _compare

    if not matches_check(spec, "gradient"):
        return None
    kinds = spec.kinds()
    options = spec.transforms[-1].options
    args = jp.arguments(spec)
    outer = next(t for t in spec.transforms if t.kind in DIFFERENTIATING)
    positions = outer.argnums if outer.argnums is not None else range(len(args))
    active = tuple(i for i in positions if jnp.issubdtype(jnp.result_type(args[i]), jnp.inexact))
    if not active:
        return None
    mode = "forward" if any(k in GRADIENT_FORWARD for k in kinds) else "reverse"
    fun = jp._as_fun(spec.jaxpr)
    sample = Sample("f", fun, tuple(args), {}, active, mode, enzyme_jax_ir(**enzyme_kwargs(options)))
    entry = _compare(sample)
    if spec.explain and entry.get("mismatch") and entry.get("operation"):
        from reducer.cross_checks.differences import at_fault

        began = time.monotonic()
        try:
            found = at_fault(sample, entry["operation"])
        except Exception as exc:  # an explanation only: the check's verdict stands without it
            found = None
            entry["at_fault_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if found:
            entry["at_fault"] = found
        entry[EXPLAINED] = time.monotonic() - began
    return entry


def _result(spec: Spec) -> dict | None:
    import jax

    from reducer.cross_checks.results import Call, _compare

    if not matches_check(spec, "result"):
        return None
    fun, args = jp.build(dataclasses.replace(spec, transforms=spec.transforms[1:]))
    compiled = jax.jit(fun)(*args)
    return _compare(Call("f", fun, tuple(args), {}, compiled))


# -- the written-back script ----------------------------------------------------------------------
def finish_script(text: str, spec: Spec, wanted) -> str:
    """`_finished` with NumPy imported where its check needs it."""
    done = _finished(text, spec, wanted)
    if "np.testing." in done and "import numpy as np" not in done.splitlines():
        lines = done.splitlines()
        at = next((k + 1 for k, line in enumerate(lines) if line == "import jax"), 0)
        done = "\n".join(lines[:at] + ["import numpy as np"] + lines[at:]) + "\n"
    return done


def _finished(text: str, spec: Spec, wanted) -> str:
    """The written-back script `text` (which ends by printing the transformed call) made to compute
    both values and, as the program did, stop with its message when they disagree. The calls stay
    nested, as users write them (`jax.jit(jax.grad(f))(a)`), and nothing is printed that the failure
    does not need: every token left here is one the source level would have to remove."""
    lines = text.rstrip("\n").splitlines()
    call = _printed_call(lines[-1])
    if call is None:
        return text
    lines = _one_call(lines)
    got, inputs = ast.unparse(_DefaultArgnums().visit(call)), ", ".join(ast.unparse(a) for a in call.args)
    check, message, cpu = check_of(wanted), wanted.get("program-exit"), against_cpu_alone(wanted)
    if check == "nonfinite":
        return nonfinite_replay.finish(lines, got, spec, wanted)
    if check == "gradient" and wanted.get("program-compares"):
        reference, name = reference_chain(spec.transforms)
        want = f"{name}({inputs})"
        if jp.one_result(spec):  # one comparison of the two calls, as the program wrote it
            return "\n".join(lines[:-1] + reference + _verdict(spec, check, message, got, want)) + "\n"
        body = reference + [f"got = {got}", f"want = {want}"]
    elif check == "result":  # against op by op, or for a GPU's fault alone, op by op on the CPU
        reference, name = reference_chain(spec.transforms[1:])
        opening, args = ["with jax.disable_jit():"], inputs
        if cpu:
            opening = ["cpu = jax.devices('cpu')[0]", "with jax.default_device(cpu), jax.disable_jit():"]
            args = f"*jax.device_put(({inputs},), cpu)"
        body = reference + [f"got = {got}", *opening, f"    want = {name}({args})"]
    else:  # the program took Enzyme-JAX's gradient alone: it stops (or not) as it did
        stop = [f"raise SystemExit({message!r})"] if message else []
        return "\n".join(lines[:-1] + [f"print({got})"] + stop) + "\n"
    return "\n".join(lines[:-1] + body + _verdict(spec, check, message, cpu=cpu)) + "\n"


class _DefaultArgnums(ast.NodeTransformer):
    """Drops `argnums=0` from `jax.grad(...)` and its kind: JAX's default, and a token less to remove."""

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if ast.unparse(node.func) in {f"jax.{kind}" for kind in jp.GRAD_LIKE}:
            node.keywords = [k for k in node.keywords
                             if not (k.arg == "argnums" and isinstance(k.value, ast.Constant) and k.value.value == 0)]
        return node


def _one_call(lines: list[str]) -> list[str]:
    """`lines` with `def f(a, …): b = CALL(a, …); return b` made `f = CALL`, as users write it."""
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return lines
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == "f" and len(node.body) == 2):
            continue
        (assign, ret), params = node.body, [a.arg for a in node.args.args]
        call = assign.value if isinstance(assign, ast.Assign) and len(assign.targets) == 1 else None
        if (isinstance(call, ast.Call) and not call.keywords and not node.decorator_list
                and [ast.unparse(a) for a in call.args] == params and isinstance(ret, ast.Return)
                and ret.value is not None and ast.unparse(ret.value) == ast.unparse(assign.targets[0])):
            return lines[:node.lineno - 1] + [f"f = {ast.unparse(call.func)}"] + lines[node.end_lineno:]
    return lines


def _printed_call(line: str):
    """The call `print(CALL)` prints, as an ast node; None for another line."""
    try:
        node = ast.parse(line).body[0]
    except (SyntaxError, IndexError):
        return None
    printed = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
    if printed is None or ast.unparse(printed.func) != "print" or len(printed.args) != 1:
        return None
    return printed.args[0] if isinstance(printed.args[0], ast.Call) else None


def _verdict(spec: Spec, check: str, message: str, got: str = "got", want: str = "want",
             cpu: bool = False) -> list[str]:
    """Lines that compare `got` with `want` as the watch does (its tolerances, NaNs where both have
    them agreeing; against the CPU, an atol that grows with the reference's largest finite
    magnitude) and stop as the program did."""
    from reducer.cross_checks import derivatives, results

    rtol, atol = (derivatives.RTOL, derivatives.ATOL) if check == "gradient" else (results.RTOL, results.ATOL)
    close = "rtol=%g, atol=%g, equal_nan=True" % (rtol, atol)

    def closeness(reference: str) -> str:
        if not cpu:
            return close
        t = results.TOLERANCES[CPU]
        return (f"rtol={t.rtol:g}, atol=max({t.atol:g}, {t.scale:g} * float(jnp.max(jnp.abs(jnp.where("
                f"jnp.isfinite({reference}), {reference}, 0))))), equal_nan=True")

    if message == "assert_allclose":  # NumPy's comparison, as the program made it (equal_nan is its default)
        if jp.one_result(spec):
            return [f"np.testing.assert_allclose({got}, {want}, {closeness(want).replace(', equal_nan=True', '')})"]
        return [f"for x, y in zip(jax.tree_util.tree_leaves({got}), jax.tree_util.tree_leaves({want})):",
                f"    np.testing.assert_allclose(x, y, {closeness('y').replace(', equal_nan=True', '')})"]
    if jp.one_result(spec):
        same, lines = f"jnp.allclose({got}, {want}, {closeness(want)})", []
    else:
        same = "same"
        lines = [f"same = all(jnp.allclose(x, y, {closeness('y')})",
                 "           for x, y in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)))"]
    if message == "AssertionError":  # a bare `assert` stopped it
        return lines + [f"assert {same}"]
    if message:
        return lines + [f"if not {same}:", f"    raise SystemExit({message!r})"]
    return lines + [f"print('the two values agree' if {same} else 'the two values disagree')"]


def reference_chain(transforms: list) -> tuple[list[str], str]:
    """Lines that define what applying `transforms` but `enzyme` and `jit` to the script's function `f`
    needs (JAX's own AD of it, run op by op as the watches take it), and the expression of the result:
    nested calls, a helper for vjp / jvp."""
    lines, current = [], "f"
    for k, t in enumerate(t for t in reversed(transforms) if t.kind not in ("enzyme", "jit")):
        kind, name = t.kind, f"reference{k}"
        if kind in jp.GRAD_LIKE:
            argnums = jp.argnums_source(t.argnums)
            current = f"jax.{kind}({current}" + (f", argnums={argnums})" if argnums != "0" else ")")
        elif kind == "vjp":
            lines += [f"def {name}(*xs):", f"    out, pullback = jax.vjp({current}, *xs)",
                      "    return pullback(jax.tree_util.tree_map(jnp.ones_like, out))"]
            current = name
        elif kind == "jvp":
            lines += [f"def {name}(*xs):", f"    return jax.jvp({current}, xs, tuple(jnp.ones_like(x) for x in xs))"]
            current = name
        else:
            raise ValueError(f"no reference for the transformation {kind!r}")
    return lines, current
