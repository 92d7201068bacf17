"""Optax: a `GradientTransformation` whose `init(params)` and `update(grads, state, params)` the
program calls; the update is added to the parameters. Its rates are positive: the descent's minus
sign is the library's own (`scale_by_learning_rate`)."""
from __future__ import annotations

import ast
import re

from reducer.libraries.base import Fix, OptimizerLibrary, Toy

#: what an Optax function makes when it makes no transformation (`warmup_cosine_decay_schedule`,
#: `apply_updates`, `l2_loss`, `global_norm`)
NOT_TRANSFORMATIONS = re.compile(r"schedule|apply_updates|loss|entropy|global_norm|^tree|^safe_", re.I)

DESCEND = Fix(
    "descend",
    "import optax as _reducer_optax\nfrom optax._src import transform as _reducer_transform\n"
    "def _reducer_descend(rate=None, *, _given=_reducer_transform.scale_by_learning_rate, **kw):\n"
    "    import jax.numpy as jnp\n"
    "    if callable(rate):\n"
    "        return _given(lambda count, rate=rate: jnp.abs(rate(count)), **kw)\n"
    "    return _given(None if rate is None else abs(rate), **kw)\n"
    "_reducer_transform.scale_by_learning_rate = _reducer_optax.scale_by_learning_rate = _reducer_descend\n",
    "Optax's learning rates taken positive, as `optax.scale_by_learning_rate` expects (it negates them itself)")


class Optax(OptimizerLibrary):
    name = "Optax"
    modules = ("optax",)
    toy_imports = {"jax": "import jax", "optax": "import optax"}
    fix = DESCEND

    def makes(self, function: str) -> bool:
        return not NOT_TRANSFORMATIONS.search(function)

    def uses(self, tree: ast.Module) -> list[ast.expr]:
        return [n.func.value for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and (n.func.attr == "init" and len(n.args) == 1 or n.func.attr == "update" and n.args)]

    def one_update(self, toy: Toy) -> tuple[list[str], str]:
        return ([f"{toy.updates}, {toy.state} = {toy.optimizer}.update(jax.grad({toy.loss})({toy.params}), "
                 f"{toy.optimizer}.init({toy.params}), {toy.params})"], f"{toy.params} + {toy.updates}")

    def first_state(self, toy: Toy) -> list[str]:
        return [f"{toy.state} = {toy.optimizer}.init({toy.params})"]

    def step(self, toy: Toy, variable: str) -> list[str]:
        return [f"{toy.updates}, {toy.state} = {toy.optimizer}.update(jax.grad({toy.loss})({toy.params}), "
                f"{toy.state}, {toy.params})", f"{toy.params} = {toy.params} + {toy.updates}"]
