"""Drop operands that nested jaxprs never read: an input of an inner `jit` or `enzyme_jax_ir`
body, a constant of a `while` its condition or body never reads, a loop-carried value that only
feeds itself and that nothing after the loop uses, a branch operand no branch of a `cond` reads."""
from __future__ import annotations

from typing import Iterator

from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.passes._edit import JaxprPass, clone, edit, equations, finish


def _unread(sub: dict, k: int) -> bool:
    return sub["in"][k][0] not in jp.uses(sub)


def droppable(j: dict, i: int) -> Iterator[int]:
    """Positions k (in the equation's operand list) that can go."""
    e = j["eqns"][i]
    p, subs = e["p"], e["subs"]
    if p in ("jit", "enzyme"):
        yield from (k for k in range(len(e["in"])) if _unread(subs[0], k))
    elif p == "cond":
        yield from (k + 1 for k in range(len(e["in"]) - 1) if all(_unread(s, k) for s in subs))
    elif p == "while":
        nc, nb = e["params"]["cond_nconsts"], e["params"]["body_nconsts"]
        cond, body = subs
        yield from (k for k in range(nc) if _unread(cond, k))
        yield from (nc + k for k in range(nb) if _unread(body, k))
        used_after = jp.uses(j)
        for k in range(len(e["out"])):
            if _unread(cond, nc + k) and e["out"][k][0] not in used_after and _unread(_without_out(body, k), nb + k):
                yield nc + nb + k


def _without_out(body: dict, k: int) -> dict:
    """The loop body with carried output `k` gone (and what only it needed)."""
    copy = clone({"j": body})["j"]
    del copy["out"][k]
    jp.dce(copy)
    return copy


def drop(e: dict, k: int) -> None:
    """Remove operand `k` of equation `e` (one `droppable` gave) and what matches it inside."""
    p, subs = e["p"], e["subs"]
    if p in ("jit", "enzyme"):
        del subs[0]["in"][k]
    elif p == "cond":
        for s in subs:
            del s["in"][k - 1]
    elif p == "while":
        nc, nb = e["params"]["cond_nconsts"], e["params"]["body_nconsts"]
        cond, body = subs
        if k < nc:
            del cond["in"][k]
            e["params"]["cond_nconsts"] -= 1
        elif k < nc + nb:
            del body["in"][k - nc]
            e["params"]["body_nconsts"] -= 1
        else:
            c = k - nc - nb
            del cond["in"][nc + c]
            del body["out"][c]
            jp.dce(body)
            del body["in"][nb + c]
            del e["out"][c]
    del e["in"][k]


class DropOperands(JaxprPass):
    name = "drop-operands"

    def points(self, spec: dict) -> list:
        out = []
        for path, i, _ in equations(spec, ("jit", "enzyme", "cond", "while")):
            ks = list(droppable(jp.at(spec["jaxpr"], path), i))
            out += ([(path, i, tuple(reversed(ks)))] if len(ks) > 1 else []) + [(path, i, (k,)) for k in ks]
        return out

    def apply(self, spec: dict, point) -> str:
        path, i, ks = point  # dropped last first, so that earlier positions stay valid
        new, _, ne = edit(spec, path, i)
        for k in ks:
            drop(ne, k)
        return finish(new)
