"""Keep one distinctive equation alone: the program becomes that equation on fresh inputs (ones),
summed to a scalar when a transformation differentiates it, under the same transformations.

A failure of one primitive (a missing adjoint of `cumprod`, `eigh` or `top_k`, a custom rule's
structure mismatch) needs nothing else of a model, and one accepted candidate here saves the
hundreds of equation-by-equation cuts that would reach the same program. Only equations of
primitives that are not everyday arithmetic and reshaping are tried, rarest primitives first, one
equation per primitive, in every nested jaxpr (the body of an inner `jit` too)."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import INEXACT, REAL_FLOATING, Arg, Equation, Jaxpr, Spec, Var, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish

MAX_TRIED = 6  # primitives tried per round
COMMON = {
    "add", "sub", "mul", "div", "neg", "max", "min", "pow", "integer_pow", "square", "sqrt", "rsqrt", "abs",
    "sign", "exp", "log", "tanh", "logistic", "dot_general", "reshape", "broadcast_in_dim", "squeeze",
    "expand_dims", "transpose", "convert_element_type", "reduce_sum", "reduce_max", "reduce_min",
    "select_n", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "stop_gradient", "copy", "copy_p",
    "iota", "concatenate", "slice", "dynamic_slice", "dynamic_update_slice", "jit", "enzyme", "pjit",
}
SCALAR_OUT = set(jp.GRAD_LIKE) | {"vjp", "jvp"}  # transformations that want one scalar output


def _avals(j: Jaxpr, i: int) -> dict:
    found = {v.name: v for v in j.inputs}
    for e in j.eqns[:i]:
        found.update((o.name, o) for o in e.outputs)
    return found


class IsolateEquation(JaxprPass):
    name = "isolate-equation"

    def points(self, spec: Spec) -> list:
        if "vmap" in spec.kinds():
            return []
        seen: dict = {}
        for path, j in spec.jaxpr.walk():
            for i, e in enumerate(j.eqns):
                if e.primitive not in COMMON and e.primitive not in jp.VALUE_PRIMS:
                    count, where = seen.get(e.primitive, (0, (path, i)))
                    seen[e.primitive] = (count + 1, where)
        if jp.count_eqns(spec.jaxpr) <= 2:
            return []
        ranked = sorted(seen.items(), key=lambda kv: kv[1][0])
        return [where for _, (_, where) in ranked[:MAX_TRIED]]

    def apply(self, spec: Spec, point) -> str | None:
        path, i = point
        new = clone(spec)
        j = new.jaxpr.at(path)
        e, avals = j.eqns[i], _avals(j, i)
        ins = [avals[a] for a in dict.fromkeys(names(e.inputs))]
        top = Jaxpr(ins, [e], [o.name for o in e.outputs])
        if set(new.kinds()) & SCALAR_OUT:
            floats = [o for o in e.outputs if o.dtype.startswith(REAL_FLOATING)]
            if not floats:
                return None
            top.outputs = [self._scalar(top, floats[0], jp.fresh_namer(new))]
        new.jaxpr, new.args = top, [Arg(v.shape, v.dtype) for v in ins]
        differentiable = [k for k, v in enumerate(ins) if v.dtype.startswith(INEXACT)]
        for t in new.transforms:
            if t.argnums is not None:
                if not differentiable:
                    return None
                t.argnums = differentiable
        return finish(new)

    @staticmethod
    def _scalar(top: Jaxpr, out: Var, fresh) -> str:
        if not out.shape:
            return out.name
        total = fresh()
        top.eqns.append(Equation("reduce_sum", [out.name], [Var(total, (), out.dtype)],
                                 {"axes": {"t": list(range(len(out.shape)))}, "out_sharding": None}))
        return total
