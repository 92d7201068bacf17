"""Wrong gradients and wrong results at the traced level: judged on the jaxpr itself.

The program's own comparison (its prints, its exit message) is never the evidence, at this level as
at the source level (`reducer.watches`). A captured call is replayed with a check (`with_check`):

- `gradient`: a call that differentiates an `enzyme_jax_ir` function (grad, value_and_grad, vjp,
  jvp … outside `enzyme`): Enzyme-JAX's derivative of the jaxpr against JAX's AD of the same jaxpr,
  and the first operation at which they part, exactly as the gradient watch does it;
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

import json
import os

from reducer.levels.jaxpr import program as jp

#: signature fields only the whole program shows: the written-back script restores them
PROGRAM_FIELDS = ("program-compares", "program-exit")
GRADIENT_FORWARD = {"jvp", "jacfwd"}
DIFFERENTIATING = jp.GRAD_LIKE | {"vjp", "jvp"}


class NumericMismatch(Exception):
    """The replayed call's two values disagree (the run's failure, as the program's was)."""


def check_of(signature) -> str:
    """The check a failure with this signature needs ("gradient", "result"), or "" for none."""
    if signature.family == "activity-mismatch" and signature.get("kind") == "numeric":
        return "gradient"
    if signature.family == "wrong-result":
        return "result"
    return ""


def with_check(spec: str, check: str) -> str:
    """The spec text a worker replays with `check`."""
    data = jp.loads(spec)
    data["check"] = check
    return jp.dumps(data)


def fits(spec: dict, check: str) -> bool:
    """Whether the spec's transformations are what `check` compares."""
    kinds = [t["t"] for t in spec["transforms"]]
    if check == "gradient":
        if "enzyme" not in kinds or "vmap" in kinds:
            return False
        outside = kinds[:kinds.index("enzyme")]  # Enzyme-JAX's derivative runs only compiled: a `jit` too
        return kinds[-1] == "enzyme" and "jit" in outside and any(k in DIFFERENTIATING for k in outside)
    return bool(kinds) and kinds[0] == "jit"


def same(oracle, wanted, run) -> tuple[bool, object]:
    """Whether a replay shows the wanted numeric failure, all but the program's own fields."""
    seen = oracle.classify(run)
    if seen is None or run.timed_out or seen.family != wanted.family:
        return False, seen
    strip = lambda sig: {k: v for k, v in sig.fields if k not in PROGRAM_FIELDS}  # noqa: E731
    return strip(seen) == strip(wanted), seen


# -- in the worker --------------------------------------------------------------------------------
def run_check(spec: dict) -> None:
    """Replay `spec` with its check; writes the watch's report, raises NumericMismatch on a disagreement."""
    from reducer.levels.jaxpr.codec import registry

    registry()
    import jax

    jax.config.update("jax_enable_x64", bool(spec.get("x64")))
    entry = _gradient(spec) if spec["check"] == "gradient" else _result(spec)
    key = "checks" if spec["check"] == "gradient" else "results"
    bad = bool(entry and entry.get("mismatch"))
    report = {"program": {"exit": 1 if bad else 0}, "gradients": {"enzyme": 1, "plain": 0}, "checks": [],
              "results": []}
    report[key] = [entry] if entry else []
    out = os.environ.get("REDUCER_HARNESS_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(report, fh, default=repr)
    if bad:
        raise NumericMismatch(f"{spec['check']} check: the two values disagree at `{entry.get('operation')}`")


def _values(spec: dict) -> list:
    return [jp.make_value(a["shape"], a["dtype"], a.get("values")) for a in spec["args"]]


def _gradient(spec: dict) -> dict | None:
    import jax.numpy as jnp
    from enzyme_ad.jax import enzyme_jax_ir

    from reducer.levels.jaxpr.params import enzyme_kwargs
    from reducer.watches.gradients import Sample, _compare

    if not fits(spec, "gradient"):
        return None
    kinds = [t["t"] for t in spec["transforms"]]
    options = spec["transforms"][-1].get("options")
    args = _values(spec)
    outer = next(t for t in spec["transforms"] if t["t"] in DIFFERENTIATING)
    positions = outer.get("argnums") if "argnums" in outer else range(len(args))
    active = tuple(i for i in positions if jnp.issubdtype(jnp.result_type(args[i]), jnp.inexact))
    if not active:
        return None
    mode = "forward" if any(k in GRADIENT_FORWARD for k in kinds) else "reverse"
    fun = jp._as_fun(spec["jaxpr"])
    return _compare(Sample("f", fun, tuple(args), {}, active, mode, enzyme_jax_ir(**enzyme_kwargs(options))))


def _result(spec: dict) -> dict | None:
    import jax

    from reducer.watches.results import Call, _compare

    if not fits(spec, "result"):
        return None
    inner = dict(spec, transforms=spec["transforms"][1:])
    fun, args = jp.build(inner)
    compiled = jax.jit(fun)(*args)
    return _compare(Call("f", fun, tuple(args), {}, compiled))


# -- the written-back script ----------------------------------------------------------------------
def finish_script(text: str, spec: dict, wanted) -> str:
    """The written-back script `text` (which ends by printing the transformed call) made to compute
    both values and, as the program did, stop with its message when they disagree."""
    lines = text.rstrip("\n").splitlines()
    call = lines[-1]
    if not (call.startswith("print(") and call.endswith(")")):
        return text
    got = call[len("print("):-1]
    inputs = got[got.index("(") + 1:-1]
    check = check_of(wanted)
    body = [f"got = {got}", "print(got)"]
    if check == "gradient" and wanted.get("program-compares"):
        reference, name = reference_chain(spec["transforms"])
        body += reference + [f"want = {name}({inputs})", "print(want)"]
    elif check == "result":
        reference, name = reference_chain(spec["transforms"][1:])
        body += reference + ["with jax.disable_jit():", f"    want = {name}({inputs})"]
    else:  # the program took Enzyme-JAX's gradient alone: it stops (or not) as it did
        message = wanted.get("program-exit")
        return "\n".join(lines[:-1] + body + ([f"raise SystemExit({message!r})"] if message else [])) + "\n"
    from reducer.watches import gradients, results

    rtol, atol = (gradients.RTOL, gradients.ATOL) if check == "gradient" else (results.RTOL, results.ATOL)
    if jp.one_result(spec):
        body += ["same = jnp.allclose(got, want, rtol=%g, atol=%g, equal_nan=True)" % (rtol, atol)]
    else:
        body += ["same = all(jnp.allclose(x, y, rtol=%g, atol=%g, equal_nan=True)" % (rtol, atol),
                 "           for x, y in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)))"]
    message = wanted.get("program-exit")
    if message == "AssertionError":  # a bare `assert` stopped it
        body += ["assert same"]
    elif message:
        body += ["if not same:", f"    raise SystemExit({message!r})"]
    else:
        body += ["print('the two values agree' if same else 'the two values disagree')"]
    return "\n".join(lines[:-1] + body) + "\n"


def reference_chain(transforms: list) -> tuple[list[str], str]:
    """Lines that apply `transforms` but `enzyme` to the script's function `f` (JAX's own AD of it),
    and the name of the result."""
    lines, current = [], "f"
    for k, t in enumerate(t for t in reversed(transforms) if t["t"] != "enzyme"):
        kind, name = t["t"], f"reference{k}"
        if kind == "jit":
            lines.append(f"{name} = jax.jit({current})")
        elif kind in jp.GRAD_LIKE:
            lines.append(f"{name} = jax.{kind}({current}, argnums={jp.argnums_source(t['argnums'])})")
        elif kind == "vjp":
            lines += [f"def {name}(*xs):", f"    out, pullback = jax.vjp({current}, *xs)",
                      "    return pullback(jax.tree_util.tree_map(jnp.ones_like, out))"]
        elif kind == "jvp":
            lines += [f"def {name}(*xs):", f"    return jax.jvp({current}, xs, tuple(jnp.ones_like(x) for x in xs))"]
        else:
            raise ValueError(f"no reference for the transformation {kind!r}")
        current = name
    return lines, current
