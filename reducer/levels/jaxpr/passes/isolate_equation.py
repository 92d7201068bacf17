"""Keep one distinctive equation alone: the program becomes that equation on fresh inputs (ones),
summed to a scalar when a transformation differentiates it, under the same transformations.

A failure of one primitive (a missing adjoint of `cumprod`, `eigh` or `top_k`, a custom rule's
structure mismatch) needs nothing else of a model, and one accepted candidate here saves the
hundreds of equation-by-equation cuts that would reach the same program. Only equations of
primitives that are not everyday arithmetic and reshaping are tried, rarest primitives first, one
equation per primitive, in every nested jaxpr (the body of an inner `jit` too)."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
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


def _avals(j: dict, i: int) -> dict:
    found = {v[0]: v for v in j["in"]}
    for e in j["eqns"][:i]:
        found.update((o[0], o) for o in e["out"])
    return found


class IsolateEquation(JaxprPass):
    name = "isolate-equation"

    def points(self, spec: dict) -> list:
        if any(t["t"] == "vmap" for t in spec["transforms"]):
            return []
        seen: dict = {}
        for path, j in jp.jaxprs(spec["jaxpr"]):
            for i, e in enumerate(j["eqns"]):
                if e["p"] not in COMMON and e["p"] not in jp.VALUE_PRIMS:
                    count, where = seen.get(e["p"], (0, (path, i)))
                    seen[e["p"]] = (count + 1, where)
        if jp.count_eqns(spec["jaxpr"]) <= 2:
            return []
        ranked = sorted(seen.items(), key=lambda kv: kv[1][0])
        return [where for _, (_, where) in ranked[:MAX_TRIED]]

    def apply(self, spec: dict, point) -> str | None:
        path, i = point
        new = clone(spec)
        j = jp.at(new["jaxpr"], path)
        e, avals = j["eqns"][i], _avals(j, i)
        ins = [list(avals[a]) for a in dict.fromkeys(a for a in e["in"] if isinstance(a, str))]
        top = {"in": ins, "eqns": [e], "out": [o[0] for o in e["out"]]}
        if any(t["t"] in SCALAR_OUT for t in new["transforms"]):
            floats = [o for o in e["out"] if o[2].startswith(("float", "bfloat"))]
            if not floats:
                return None
            top["out"] = [self._scalar(top, floats[0], jp.fresh_namer(new))]
        new["jaxpr"], new["args"] = top, [{"shape": list(v[1]), "dtype": v[2]} for v in ins]
        differentiable = [k for k, v in enumerate(ins) if v[2].startswith(("float", "bfloat", "complex"))]
        for t in new["transforms"]:
            if "argnums" in t:
                if not differentiable:
                    return None
                t["argnums"] = differentiable
        return finish(new)

    @staticmethod
    def _scalar(top: dict, out: list, fresh) -> str:
        if not out[1]:
            return out[0]
        total = fresh()
        top["eqns"].append({"p": "reduce_sum", "in": [out[0]], "out": [[total, [], out[2]]],
                            "params": {"axes": {"t": list(range(len(out[1])))}, "out_sharding": None}, "subs": []})
        return total
