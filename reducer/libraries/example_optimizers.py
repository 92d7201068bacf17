"""JAX's own `jax.example_libraries.optimizers`: a constructor (`optimizers.adam(step_size)`) gives
three functions, `opt_init(params)`, `opt_update(step, grads, state)` and `get_params(state)`; the
step size is positive, the descent's minus sign the library's own."""
from __future__ import annotations

import ast
import re

from reducer.libraries.base import Fix, OptimizerLibrary, Toy

#: the module's functions that make no optimizer: schedules, pytree helpers, gradient clipping
NOT_OPTIMIZERS = re.compile(r"schedule|decay|constant|piecewise|polynomial|inverse_time|pack|norm|clip|"
                            r"^optimizer$|^Optimizer", re.I)

POSITIVE = Fix(
    "descend-example-libraries",
    "from jax.example_libraries import optimizers as _reducer_optimizers\n"
    "def _reducer_positive(step_size, _given=_reducer_optimizers.make_schedule):\n"
    "    import jax.numpy as jnp\n"
    "    schedule = _given(step_size)\n"
    "    return lambda i: jnp.abs(schedule(i))\n"
    "_reducer_optimizers.make_schedule = _reducer_positive\n",
    "the step sizes of `jax.example_libraries.optimizers` taken positive, as `make_schedule` expects "
    "(each update subtracts the step size times the gradient itself)")


class ExampleOptimizers(OptimizerLibrary):
    name = "jax.example_libraries.optimizers"
    modules = ("jax.example_libraries.optimizers",)
    toy_imports = {"jax": "import jax"}
    target = "opt_init, opt_update, get_params"
    fix = POSITIVE

    def used_in(self, program: str) -> bool:
        return "example_libraries" in program

    def makes(self, function: str) -> bool:
        return not NOT_OPTIMIZERS.search(function)

    def uses(self, tree: ast.Module) -> list[ast.expr]:
        """The functions a constructor gave, where the program calls one (`opt_update(i, g, state)`)."""
        unpacked = {e.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], ast.Tuple) and len(n.targets[0].elts) == 3
                    for e in n.targets[0].elts if isinstance(e, ast.Name)}
        return [n.func for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id in unpacked]

    @staticmethod
    def _functions(toy: Toy) -> list[str]:
        return [part.strip() for part in toy.optimizer.split(",")]

    def one_update(self, toy: Toy) -> tuple[list[str], str]:
        init, update, get = self._functions(toy)
        return ([f"{toy.state} = {update}(0, jax.grad({toy.loss})({toy.params}), {init}({toy.params}))"],
                f"{get}({toy.state})")

    def first_state(self, toy: Toy) -> list[str]:
        return [f"{toy.state} = {self._functions(toy)[0]}({toy.params})"]

    def step(self, toy: Toy, variable: str) -> list[str]:
        _, update, get = self._functions(toy)
        return [f"{toy.state} = {update}({variable}, jax.grad({toy.loss})({toy.params}), {toy.state})",
                f"{toy.params} = {get}({toy.state})"]
