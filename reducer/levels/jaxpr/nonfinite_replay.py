"""Non-finite values at the traced level: a captured call replayed, its outputs checked for NaN and
Inf, and the operation at fault named exactly as the program's own run names it.

A program that fails its own check on a non-finite value (`assert jnp.isfinite(grads).all()`)
raises nothing inside JAX: the values come back from a transformed call and the check reads them.
The traced level records those calls ahead, with the values they got (`reducer.levels.jaxpr.ahead`),
and replays each with the `nonfinite` check (`value_checks.with_check`). In the worker, `run_check`:

1. runs the transformed call, compiled; when every output is finite the replay passes;
2. else writes the call back as the script the traced level would write (`as_script`, ending at
   the call, where JAX's checks stop it) and runs that script here twice, with JAX's NaN checks and with its
   NaN and Inf checks on, reading the operation at fault from the `FloatingPointError`'s traceback
   with the very code that reads the program's own run (`reducer.faults.nonfinite.located`);
3. writes what it found into the run's harness report under `nonfinite` and fails the run.

So a candidate is judged by what its written-back script will show, not by a second opinion of
this level: `same` asks for the same `in` and `op` as the program's failure.
"""
from __future__ import annotations

import json
import os
import tempfile
import traceback

from oracles.outcome import Signature
from reducer.faults import nonfinite
from reducer.levels.jaxpr import program as jp
from reducer.watches.gradients import FORWARD

SCRIPT = "replayed.py"


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


def _output(text: str, infs: bool) -> str:
    """What running the script `text` (in the current folder) prints when it fails, with JAX's
    checks on; "" when it does not fail."""
    import jax

    flags = nonfinite.CHECKS if infs else nonfinite.CHECKS[:1]
    before = {f: getattr(jax.config, f) for f in nonfinite.CHECKS}
    jax.clear_caches()  # a function compiled before without the checks would skip them
    code = compile(text, os.path.abspath(SCRIPT), "exec")
    try:
        for f in flags:
            jax.config.update(f, True)
        exec(code, {"__name__": "__main__", "__file__": os.path.abspath(SCRIPT)})
        return ""
    except BaseException:  # what the script raises, as its own run would print it
        return traceback.format_exc()
    finally:
        for f, v in before.items():
            jax.config.update(f, v)


def locate(spec: dict) -> dict | None:
    """The operation at fault, as the written-back script of `spec` shows it under JAX's checks."""
    import linecache

    import numpy as np

    from reducer.levels.jaxpr import as_script
    from reducer.levels.jaxpr.value_checks import as_users_write

    users = as_users_write(spec)
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
            return nonfinite.located(lambda infs: _output(text, infs), text)
        finally:
            os.chdir(here)


def run_check(spec: dict) -> None:
    """In the worker: replay `spec`; on a non-finite output, report the fault and raise NonFinite."""
    import jax

    fun, args = jp.build(spec)
    outs = jax.tree_util.tree_leaves(jax.block_until_ready(fun(*args)))
    bad = [o for o in outs if not finite(o)]
    found = (locate(spec) or {}) if bad else None
    out = os.environ.get("REDUCER_HARNESS_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"program": {"exit": 1 if bad else 0}, "nonfinite": found}, fh)
    if bad:
        where = f" from `{found['op']}` ({found['in']})" if "op" in found else ""
        raise NonFinite(f"invalid value in the replayed call's result{where}")


def likeliest_first(specs: list[str], wanted: Signature) -> list[str]:
    """The captured calls in the order worth replaying for the non-finite value `wanted`: those that
    take a derivative (the one it is found in, or for a value made forward any: a `where` hides it
    from the value itself, not from its derivative), then those replayed on the values the program
    gave them, then the smaller."""
    def key(text: str) -> tuple:
        spec = jp.loads(text)
        kinds = {t["t"] for t in spec["transforms"]}
        takes = {"grad": jp.GRAD_LIKE | {"vjp"}, "jvp": FORWARD}.get(wanted.get("in"),
                                                                          jp.GRAD_LIKE | {"vjp", "jvp"})
        guessed = sum("values" not in a for a in spec["args"])
        return (not kinds & takes, guessed > 0, jp.count_eqns(spec["jaxpr"]))

    return sorted(specs, key=key)


# -- judging a replay -----------------------------------------------------------------------------
def same(wanted: Signature, run) -> tuple[bool, Signature | None]:
    """Whether a replay shows the wanted non-finite value: made in the same place (`in`, `op`)."""
    found = run.harness.get("nonfinite") if not run.timed_out else None
    if not found or "op" not in found:
        return False, None
    fields = tuple((k, found[k] if k in ("in", "op") else wanted.get(k)) for k, _ in wanted.fields)
    seen = Signature("nonfinite", fields, wanted.title)
    return all(found[k] == wanted.get(k) for k in ("in", "op")), seen


def fault_line(run) -> str:
    found = run.harness.get("nonfinite") or {}
    if "op" not in found:
        return ""
    return (f"the replayed call's first non-finite value ({found['kind']}) is made by `{found['prim']}`, "
            f"at fault: in={found['in']} op={found['op']} from={found['from']}")


# -- the written-back script ----------------------------------------------------------------------
def finish(lines: list[str], got: str, spec: dict, wanted: Signature) -> str:
    """The written-back script `lines`, whose last line printed the call `got`, made to end in the
    program's kind of check: `assert jnp.isfinite(g).all()`, or `raise TYPE(…)` for one that raised."""
    import builtins

    kind, check = wanted.get("type") or "AssertionError", wanted.get("check")
    body = lines[:-1] + [f"g = {got}"]
    finite_all = "jnp.isfinite(g).all()" if jp.one_result(spec) else \
        "all(jnp.isfinite(x).all() for x in jax.tree_util.tree_leaves(g))"
    if check == "raise" and kind != "AssertionError":
        if not hasattr(builtins, kind):  # the program's own exception class
            body = [f"class {kind}(Exception):", "    pass", ""] + body
        return "\n".join(body + [f"if not {finite_all}:", f"    raise {kind}('non-finite value')"]) + "\n"
    return "\n".join(body + [f"assert {finite_all}"]) + "\n"
