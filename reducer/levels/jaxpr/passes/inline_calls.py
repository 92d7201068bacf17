"""Inline nested calls: an inner `jit` (and an `enzyme_jax_ir` call, in case the failure does not
need Enzyme; a `custom_jvp` / `custom_vjp` function, in case it does not need the rules) becomes
the equations of its (primal) body."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, finish, splice

CALLS = ("jit", "enzyme", "custom_jvp", "custom_vjp")


def inline_body(j: dict, i: int, sub: dict, ins: list) -> None:
    """Replace equation `i` of `j` by `sub`'s equations applied to `ins`."""
    e = j["eqns"][i]
    body = [dict(x) for x in sub["eqns"]]
    local = {v[0]: a for v, a in zip(sub["in"], ins)}
    holder = {"eqns": body, "out": list(sub["out"])}
    jp.rename(holder, local)
    splice(j, i, holder["eqns"], {o[0]: a for o, a in zip(e["out"], holder["out"])})


class InlineCalls(JaxprPass):
    name = "inline-calls"

    def points(self, spec: dict) -> list:
        return [(path, i) for kind in CALLS for path, i, _ in equations(spec, (kind,))]

    def apply(self, spec: dict, point) -> str:
        path, i = point
        new, target, ne = edit(spec, path, i)
        inline_body(target, i, ne["subs"][0], ne["in"])
        return finish(new)
