"""The fix of a `log` of a sigmoid that is exactly 1 (or 0), run inside a candidate's own process:
wherever the program takes `log(1 - sigmoid(z))`, `log1p(-sigmoid(z))` or `log(sigmoid(z))`, JAX's
`log_sigmoid(-z)` (`log_sigmoid(z)`) is computed instead, however far apart the program writes the
sigmoid and the `log`.

A sigmoid is exactly 1 in float32 beyond a logit of 17 and in float64 beyond 37, so no float is
wide enough to keep such a `log` off its pole, and the inner `where` makes its value finite only
with a wrong derivative; `log_sigmoid` is finite and right. `reducer.faults.stable_fix` rewrites the
formula where one expression writes it; users most often split it over a model's method and a loss
(`p = model.predict_proba(x)` there, `jnp.log(1.0 - p)` here), which only the operations the program
binds show: the sigmoid's output (`lax.logistic_p`), the 1 minus it (`sub_p` of a constant 1) or its
negation (`neg_p`), through the casts `jax.numpy` makes of its operands (`convert_element_type_p`),
then the `log` (`log_p`, `log1p_p`) of one of those. Each is followed by identity
as the program runs op by op (`jit` turned off: a compiled function's operations are traced apart),
under `grad` and `vmap` alike, and only where the program binds it (`safe_ops.where_bound`). A
candidate whose `log` meets a 0 written in, or one NumPy made, still fails with it: it is not the
failure.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from functools import partial

from reducer.faults import safe_ops, stable_fix

#: what the fix is named by, as a signature's `fix` (`reducer.faults.stable_fix.FORMULAS`)
FIX = stable_fix.LOG_SIGMOID
#: the statement, run before a program's first, that installs the fix in its process
LINE = "from reducer.faults.saturated import install as _reducer_saturated; _reducer_saturated()"
#: values followed, at most (the oldest forgotten first): a sigmoid meets its `log` a few operations later,
#: and a training loop makes new ones each step
_KEPT = 64
SIGMOID, ONE_MINUS, NEGATED = "sigmoid", "1-sigmoid", "-sigmoid"
#: how a program names a sigmoid (a library's own, as in a gated cell, is not one whose `log` it takes)
_NAMED = re.compile(r"sigmoid|expit|logistic")
_made: OrderedDict[int, tuple[str, object, object]] = OrderedDict()


def may_write(program: str) -> bool:
    """Whether `program` may take a sigmoid's `log` (it names a sigmoid)."""
    return bool(_NAMED.search(program))


def install() -> None:
    """Patch the primitives that make and take the `log` of a sigmoid in this process, and evaluate it
    op by op (`jax_disable_jit`): under `jit` each `jax.numpy` function is traced apart, with tracers
    of its own, so a value is followed from one operation to the next only where none is compiled."""
    import jax
    from jax._src.lax import lax

    jax.config.update("jax_disable_jit", True)

    for prim in (lax.logistic_p, lax.sub_p, lax.neg_p, lax.log_p, lax.log1p_p, lax.convert_element_type_p):
        prim.bind = safe_ops.where_bound(prim, prim.bind, partial(_bound, prim.name, prim.bind))


def _bound(name: str, bind, args, params):
    """The operation `name` bound where the program binds it: a sigmoid's `log` computed as `log_sigmoid`,
    the values on the way to one remembered."""
    made = [_made.get(id(a)) for a in args]
    made = [m if m is not None and m[2] is a else None for m, a in zip(made, args)]
    if name == "log" and made[0] and made[0][0] in (SIGMOID, ONE_MINUS):
        return _log_sigmoid(made[0][1], made[0][0] == ONE_MINUS, args[0])
    if name == "log1p" and made[0] and made[0][0] == NEGATED:
        return _log_sigmoid(made[0][1], True, args[0])
    out = bind(*args, **params)
    if name == "logistic":
        _remember(out, SIGMOID, args[0])
    elif name == "sub" and made[1] and made[1][0] == SIGMOID and _one(args[0]):
        _remember(out, ONE_MINUS, made[1][1])
    elif name == "neg" and made[0] and made[0][0] == SIGMOID:
        _remember(out, NEGATED, made[0][1])
    elif name == "convert_element_type" and made[0] and out is not args[0]:  # what `jnp` does to an operand
        _remember(out, made[0][0], made[0][1])
    return out


def _log_sigmoid(logit, negated: bool, like):
    """`log_sigmoid` of the logit (negated), of the shape and type of the `log`'s input `like`."""
    import jax
    import jax.numpy as jnp

    value = jax.nn.log_sigmoid(-logit if negated else logit)
    return jnp.broadcast_to(value, jnp.shape(like)).astype(jnp.result_type(like))


def _remember(out, kind: str, logit) -> None:
    _made[id(out)] = (kind, logit, out)
    while len(_made) > _KEPT:
        _made.popitem(last=False)


def _one(x) -> bool:
    """Whether `x` is a constant 1 (a literal the program wrote, under `jit` too)."""
    import numpy as np
    from jax._src import core

    if not isinstance(x, (int, float)) and not core.is_concrete(x):
        return False
    value = np.asarray(x)
    return value.size > 0 and bool((value == 1).all())
