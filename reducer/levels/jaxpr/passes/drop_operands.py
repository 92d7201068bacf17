"""Drop operands that nested jaxprs never read: an input of an inner `jit` or `enzyme_jax_ir`
body, a constant of a `while` its condition or body never reads, a loop-carried value that only
feeds itself and that nothing after the loop uses, a branch operand no branch of a `cond` reads."""
from __future__ import annotations

from copy import deepcopy
from typing import Iterator

from reducer.levels.jaxpr.model import Equation, Jaxpr, Spec
from reducer.levels.jaxpr.passes._edit import JaxprPass, edit, equations, finish


def _unread(sub: Jaxpr, k: int) -> bool:
    return sub.inputs[k].name not in sub.uses()


def droppable(j: Jaxpr, i: int) -> Iterator[int]:
    """Positions k (in the equation's operand list) that can go."""
    e = j.eqns[i]
    p, subs = e.primitive, e.subs
    if p in ("jit", "enzyme"):
        yield from (k for k in range(len(e.inputs)) if _unread(subs[0], k))
    elif p == "cond":
        yield from (k + 1 for k in range(len(e.inputs) - 1) if all(_unread(s, k) for s in subs))
    elif p == "while":
        nc, nb = e.params["cond_nconsts"], e.params["body_nconsts"]
        cond, body = subs
        yield from (k for k in range(nc) if _unread(cond, k))
        yield from (nc + k for k in range(nb) if _unread(body, k))
        used_after = j.uses()
        for k in range(len(e.outputs)):
            if _unread(cond, nc + k) and e.outputs[k].name not in used_after and \
                    _unread(_without_out(body, k), nb + k):
                yield nc + nb + k


def _without_out(body: Jaxpr, k: int) -> Jaxpr:
    """The loop body with carried output `k` gone (and what only it needed)."""
    copy = deepcopy(body)
    del copy.outputs[k]
    copy.dce()
    return copy


def drop(e: Equation, k: int) -> None:
    """Remove operand `k` of equation `e` (one `droppable` gave) and what matches it inside."""
    p, subs = e.primitive, e.subs
    if p in ("jit", "enzyme"):
        del subs[0].inputs[k]
    elif p == "cond":
        for s in subs:
            del s.inputs[k - 1]
    elif p == "while":
        nc, nb = e.params["cond_nconsts"], e.params["body_nconsts"]
        cond, body = subs
        if k < nc:
            del cond.inputs[k]
            e.params["cond_nconsts"] -= 1
        elif k < nc + nb:
            del body.inputs[k - nc]
            e.params["body_nconsts"] -= 1
        else:
            c = k - nc - nb
            del cond.inputs[nc + c]
            del body.outputs[c]
            body.dce()
            del body.inputs[nb + c]
            del e.outputs[c]
    del e.inputs[k]


class DropOperands(JaxprPass):
    name = "drop-operands"

    def points(self, spec: Spec) -> list:
        out = []
        for path, i, _ in equations(spec, ("jit", "enzyme", "cond", "while")):
            ks = list(droppable(spec.jaxpr.at(path), i))
            out += ([(path, i, tuple(reversed(ks)))] if len(ks) > 1 else []) + [(path, i, (k,)) for k in ks]
        return out

    def apply(self, spec: Spec, point) -> str:
        path, i, ks = point  # dropped last first, so that earlier positions stay valid
        new, _, ne = edit(spec, path, i)
        for k in ks:
            drop(ne, k)
        return finish(new)
