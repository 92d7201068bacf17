"""Keep one distinctive equation alone: the program becomes that equation on fresh inputs (ones),
summed to a scalar when a transformation differentiates it, under the same transformations.

A failure of one primitive (a missing adjoint of `cumprod`, `eigh` or `top_k`, a custom rule's
structure mismatch) needs nothing else of a model, and one accepted candidate here saves the
hundreds of equation-by-equation cuts that would reach the same program. Only equations of
primitives that are not everyday arithmetic and reshaping are tried, rarest first, one equation per
primitive, in every nested jaxpr (the body of an inner `jit` too).

A call of a named jitted function (`jnp.sinc`, `jnp.linalg.norm`: a `jit` equation with the user's
call's name) is one such equation too, and it keeps the values its inputs had in the captured call
where they were recorded: a value failure is made at a point (`sinc` at 0), and ones would lose it."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr import public_calls
from reducer.levels.jaxpr.model import INEXACT, REAL_FLOATING, Arg, Equation, Jaxpr, Spec, Var, names
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish, recorded_values

MAX_TRIED = 6  # equations tried per round
CALLS_EACH = 3  # calls of one named function tried per round
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


def _kind(e: Equation) -> str | None:
    """What makes `e` worth keeping alone: its primitive, or the name of the function a `jit` calls
    where that may be a public one (`public_calls.function_name`)."""
    if e.primitive == "jit":
        name = public_calls.function_name(e)
        return f"jit:{name}" if name else None
    return e.primitive if e.primitive not in COMMON and e.primitive not in jp.VALUE_PRIMS else None


class IsolateEquation(JaxprPass):
    name = "isolate-equation"

    def points(self, spec: Spec) -> list:
        if "vmap" in spec.kinds():
            return []
        seen: dict = {}
        for path, j in spec.jaxpr.walk():
            for i, e in enumerate(j.eqns):
                kind = _kind(e)
                if kind is not None:
                    seen.setdefault(kind, []).append((path, i))
        if jp.count_eqns(spec.jaxpr) <= 2:
            return []
        ranked = sorted(seen.items(), key=lambda kv: len(kv[1]))
        return [where for kind, found in ranked for where in self._tried(kind, found)][:MAX_TRIED]

    @staticmethod
    def _tried(kind: str, found: list) -> list:
        """Which of a kind's equations to try: a primitive's first; a named call's top-level ones,
        the last first (each on the values it had: the norm of a distance, not of an embedding),
        CALLS_EACH at most, else its first."""
        top = [where for where in found if not where[0]]
        return top[::-1][:CALLS_EACH] if kind.startswith("jit:") and top else found[:1]

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
        named = e.primitive == "jit" and not path
        new.jaxpr = top
        new.args = [Arg(v.shape, v.dtype, recorded_values(self.recorded, v) if named else None) for v in ins]
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
