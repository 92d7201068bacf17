"""Flax's holders of an optimizer: linen's `TrainState.create(…, tx=tx)` and NNX's
`nnx.Optimizer(model, tx)` (or `tx=`); the optimizer is what they are given."""
from __future__ import annotations

import ast


class FlaxHolders:
    name = "Flax"

    def uses(self, tree: ast.Module) -> list[ast.expr]:
        """The optimizers the program gives a holder by keyword."""
        return [k.value for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "tx"]

    def held(self, call: ast.Call) -> ast.expr | None:
        """The optimizer a call is given to hold: `tx=`, or the second argument of an `Optimizer(model, tx)`."""
        for k in call.keywords:
            if k.arg == "tx":
                return k.value
        func = call.func
        named = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return call.args[1] if named == "Optimizer" and len(call.args) >= 2 else None
