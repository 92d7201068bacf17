"""Make arrays scalars: first every array of the jaxpr (each input keeping its first value), then,
when that loses the failure, only the arrays of one element (what `shrink-dims` leaves). The shape
parameters that build them (`shape`, `new_sizes`, a scalar's `broadcast_dimensions`) follow, and a
reduction of what is now a scalar goes, its users reading the scalar itself. A wrong derivative
isolated on fresh inputs and summed (`isolate-equation`) then comes back as the operation at one
point: `jax.grad(enzyme_jax_ir()(lax.digamma))(1.5)`, with no sum for the source level to peel off.
Where the jaxpr needs its shapes (a matrix product, an axis parameter) the replay fails and the
candidate is not kept."""
from __future__ import annotations

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, finish

REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"}
SHAPE_PARAMS = ("shape", "new_sizes")


def _unit(shape) -> bool:
    return bool(shape) and all(d == 1 for d in shape)


def _array(shape) -> bool:
    return bool(shape)


class OnePoint(JaxprPass):
    name = "one-point"

    def points(self, spec: dict) -> list:
        shapes = [a["shape"] for a in spec["args"]]
        shapes += [o[1] for _, j in jp.jaxprs(spec["jaxpr"]) for e in j["eqns"] for o in e["out"]]
        points = ["every array"] if any(_array(s) for s in shapes) else []
        if any(_unit(s) for s in shapes) and not all(_unit(s) for s in shapes if s):
            points.append("one-element arrays")
        return points

    def apply(self, spec: dict, point) -> str:
        which = _array if point == "every array" else _unit
        new = clone(spec)
        for a in new["args"]:
            if which(a["shape"]):
                a["shape"] = []
                if a.get("values") and not a["dtype"].startswith("complex"):
                    a["values"] = a["values"][:1]  # its first value
                else:  # ones
                    a.pop("values", None)
        for _, j in jp.jaxprs(new["jaxpr"]):
            self._scalars(j, which)
        return finish(new)

    @staticmethod
    def _scalars(j: dict, which) -> None:
        """Make `j`'s chosen shapes scalars, in place; reductions of a scalar go."""
        rank = {}
        for v in j["in"]:
            v[1] = [] if which(v[1]) else v[1]
            rank[v[0]] = len(v[1])
        kept, mapping = [], {}
        for e in j["eqns"]:
            e["in"] = [mapping.get(a, a) if isinstance(a, str) else a for a in e["in"]]
            scalar_in = [a for a in e["in"] if isinstance(a, str) and rank.get(a) == 0]
            if e["p"] in REDUCTIONS and len(e["in"]) == 1 and scalar_in and len(e["out"]) == 1:
                mapping[e["out"][0][0]] = e["in"][0]  # the sum of a scalar is that scalar
                continue
            for o in e["out"]:
                o[1] = [] if which(o[1]) else o[1]
                rank[o[0]] = len(o[1])
            for k in SHAPE_PARAMS:
                value = e["params"].get(k)
                items = value["t"] if isinstance(value, dict) and "t" in value else value
                if isinstance(items, (list, tuple)) and which(list(items)):
                    e["params"][k] = {"t": []}
            if e["p"] == "broadcast_in_dim" and scalar_in:
                e["params"]["broadcast_dimensions"] = {"t": []}
            kept.append(e)
        j["eqns"] = kept
        jp.rename(j, mapping)
