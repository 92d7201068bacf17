"""A script's own differentiation rules in a traced program: encoded, run again, written back.

A `custom_jvp_call` / `custom_vjp_call` equation whose rule the script itself defines (not JAX's,
Flax's or Optax's own, which are inlined as their primal function) is kept as an equation
`custom_jvp` (subs: the primal function, the rule over primals then tangents) or `custom_vjp`
(subs: the primal, the forward rule returning outputs then residuals, the backward rule over
residuals then cotangents; param `cts`: the structure the backward rule returned, as JSON: a list
`{"tuple": […]}`, `{"list": […]}`, `null`, or an index into its flat outputs). Run again and written
back as `jax.custom_jvp` / `jax.custom_vjp` definitions, so that failures met in differentiating
through the rules (a cotangent structure mismatch, a non-linear tangent) stay in the program.
"""
from __future__ import annotations

import os
import sys

from reducer.levels.jaxpr.model import Equation, Jaxpr
from reducer.levels.jaxpr.params import Unencodable

RULES = {"custom_jvp_call": "custom_jvp", "custom_vjp_call": "custom_vjp"}
KINDS = tuple(RULES.values())


def _libraries() -> tuple:
    """Folders of installed packages (a rule defined there is a library's, not the script's)."""
    import jax

    roots = {os.path.dirname(os.path.dirname(jax.__file__))}
    roots.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def _own(filename: str | None) -> bool:
    return bool(filename) and not os.path.realpath(filename).startswith(_libraries())


def _rule_file(e) -> str | None:
    p = e.params
    if e.primitive.name == "custom_vjp_call":
        bwd = _unbatched(p["bwd"], check=False)
        return getattr(getattr(bwd.f, "__code__", None), "co_filename", None)
    src = getattr(p["jvp_jaxpr_fun"].debug_info, "func_src_info", None) or ""
    return src.rsplit(" at ", 1)[-1].rsplit(":", 1)[0] if " at " in src else None


def is_scripts_own(e) -> bool:
    """Whether the custom-rule equation `e` is the script's own (kept), not a library's (inlined)."""
    return e.primitive.name in RULES and not e.params.get("num_consts") and \
        not e.params.get("symbolic_zeros") and _own(_rule_file(e))


def encode(encoder, e, eqn: Equation) -> None:
    """Fill the spec equation `eqn` for the custom-rule equation `e` (raises Unencodable)."""
    n = len(e.invars)
    if any(str(v.aval.dtype).startswith(("int", "uint", "bool")) for v in e.invars):
        raise Unencodable("a custom rule over integer inputs")
    call = encoder.closed_jaxpr(e.params["call_jaxpr"])
    encoder.in_rule += 1  # a rule calling its own function (`y = softclip(x)` in softclip's jvp) inlines it
    try:
        _encode_rules(encoder, e, eqn, call, n)
    finally:
        encoder.in_rule -= 1


def _encode_rules(encoder, e, eqn: Equation, call: Jaxpr, n: int) -> None:
    from jax._src import core

    if e.primitive.name == "custom_jvp_call":
        jaxpr, consts, out_zeros = e.params["jvp_jaxpr_fun"].call_wrapped(*[False] * n)
        if any(out_zeros):
            raise Unencodable("a custom_jvp rule with symbolically zero tangents")
        eqn.primitive, eqn.params = "custom_jvp", {}
        eqn.subs = [call, encoder.closed_jaxpr(core.ClosedJaxpr(jaxpr, consts))]
        return
    fwd, bwd, cts = _vjp_rules(encoder, e, n)
    eqn.primitive, eqn.params, eqn.subs = "custom_vjp", {"cts": cts}, [call, fwd, bwd]


def _vjp_rules(encoder, e, n: int) -> tuple[Jaxpr, Jaxpr, object]:
    import jax
    from jax._src import core

    p = e.params
    fwd_jaxpr, consts = p["fwd_jaxpr_thunk"].call_wrapped(*[False] * n)
    bwd = _unbatched(p["bwd"])
    if len(bwd.transforms) != 1 or getattr(bwd.transforms[0][0], "__name__", "") != "_flatten_bwd":
        raise Unencodable("a custom_vjp backward rule with nondiff_argnums")
    in_tree = bwd.transforms[0][1][0]
    if in_tree != jax.tree_util.tree_structure(tuple(range(n))):
        raise Unencodable("a custom_vjp function of pytree arguments")
    fwd = encoder.closed_jaxpr(core.ClosedJaxpr(fwd_jaxpr, consts))
    out_tree, res_tree, forwarded = p["out_trees"]()
    k = out_tree.num_leaves
    pruned, outs = fwd.outputs[:len(fwd.outputs) - k], fwd.outputs[len(fwd.outputs) - k:]
    pruned_iter = iter(pruned)
    res = [fwd.inputs[f].name if f is not None else next(pruned_iter) for f in forwarded]
    fwd.outputs = outs + res
    res_avals = [_aval_of(fwd, a) for a in res]
    out_avals = [v.aval for v in e.outvars]

    def flat_bwd(*xs):
        py_res = jax.tree_util.tree_unflatten(res_tree, xs[:len(res_avals)])
        py_cts = jax.tree_util.tree_unflatten(out_tree, xs[len(res_avals):])
        return bwd.f(py_res, py_cts)

    closed, shapes = jax.make_jaxpr(flat_bwd, return_shape=True)(
        *[jax.ShapeDtypeStruct(a[0], a[1]) for a in res_avals],
        *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals])
    if any(str(v.aval.dtype) == "float0" for v in closed.jaxpr.outvars):
        raise Unencodable("a custom_vjp backward rule returning float0 cotangents")
    return fwd, encoder.closed_jaxpr(closed), structure(shapes, iter(range(len(closed.jaxpr.outvars))))


def _unbatched(bwd, check: bool = True):
    """The flat backward rule itself, from under `vmap`s that batch none of its values (a model's
    weights through `jax.vmap(model)(x)`); with `check` (once the forward rule was traced), a rule
    batched for real is unencodable."""
    while getattr(bwd.f, "__name__", "") == "new_bwd" and bwd.f.__closure__:  # jax's batch_custom_vjp_bwd
        cells = dict(zip(bwd.f.__code__.co_freevars, (c.cell_contents for c in bwd.f.__closure__)))
        if "bwd" not in cells:
            break
        dims = cells.get("in_dims", ()) if check else ()
        dims = list(dims() if callable(dims) else dims) + list(cells.get("out_dim_dests", ()))
        if check and any(d is not None for d in dims):
            raise Unencodable("a custom_vjp function batched by vmap")
        bwd = cells["bwd"]
    return bwd


def _aval_of(j: Jaxpr, atom) -> tuple:
    """(shape, dtype) of an atom of the spec jaxpr `j`."""
    from reducer.levels.jaxpr.params import dtype_of

    if not isinstance(atom, str):
        return (), dtype_of(atom.dtype)
    v = j.variables().get(atom)
    if v is not None:
        return tuple(v.shape), dtype_of(v.dtype)
    raise Unencodable(f"a residual {atom} the forward rule does not define")


def structure(tree, leaves) -> object:
    """The JSON form of a pytree of outputs (leaves numbered in order)."""
    if tree is None:
        return None
    if isinstance(tree, (tuple, list)):
        return {type(tree).__name__: [structure(t, leaves) for t in tree]}
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return next(leaves)
    raise Unencodable(f"a custom_vjp backward rule returning a {type(tree).__name__}")


def rebuild(code, values: list):
    """The pytree `structure` describes, with its leaves taken from `values`."""
    if code is None:
        return None
    if isinstance(code, int):
        return values[code]
    kind, items = next(iter(code.items()))
    made = [rebuild(c, values) for c in items]
    return tuple(made) if kind == "tuple" else made


# -- running ------------------------------------------------------------------------------------
def run(e: Equation, ins: list, interpret) -> list:
    """The outputs of a `custom_jvp` / `custom_vjp` spec equation on `ins`, its rules made again."""
    import jax

    call, k = e.subs[0], len(e.outputs)

    def primal(*xs):
        return tuple(interpret(call, list(xs)))

    if e.primitive == "custom_jvp":
        fn = jax.custom_jvp(primal)

        def jvp(primals, tangents):
            r = interpret(e.subs[1], list(primals) + list(tangents))
            return tuple(r[:k]), tuple(r[k:])

        fn.defjvp(jvp)
    else:
        fn = jax.custom_vjp(primal)

        def fwd(*xs):
            r = interpret(e.subs[1], list(xs))
            return tuple(r[:k]), tuple(r[k:])

        def bwd(res, g):
            return rebuild(e.params["cts"], interpret(e.subs[2], list(res) + list(g)))

        fn.defvjp(fwd, bwd)
    return list(fn(*ins))


# -- writing back -------------------------------------------------------------------------------
def _tuple(items: list[str]) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _spelled(code, outs: list[str]) -> str:
    """Python source for the pytree `structure` describes, its leaves named by `outs`."""
    if code is None:
        return "None"
    if isinstance(code, int):
        return outs[code]
    kind, items = next(iter(code.items()))
    made = [_spelled(c, outs) for c in items]
    return _tuple(made) if kind == "tuple" else f"[{', '.join(made)}]"


def _rule(em, fname: str, j: Jaxpr, groups: list[tuple[str, int]], ret, indent: str) -> list[str]:
    """`def fname(group, …):` unpacking each group of `j`'s inputs, then `j`'s body; `ret(outs)`
    is the return expression. A group named with a trailing `=` is one value, not a tuple of them."""
    inner = indent + "    "
    params, unpack, start = [], [], 0
    for group, size in groups:
        names = [em.name(v.name) for v in j.inputs[start:start + size]]
        if group.endswith("=") and len(names) == 1:
            params.append(names[0])
        else:
            params.append(group.rstrip("="))
            if names:
                unpack.append(f"{inner}{', '.join(names)}, = {group.rstrip('=')}")
        start += size
    lines = [f"{indent}def {fname}({', '.join(params)}):", *unpack]
    for v in j.inputs:
        em.shapes[v.name] = v.shape
    lines += em.body(j, inner)
    lines.append(f"{inner}return {ret([em.atom(a) for a in j.outputs])}")
    return lines


def emit_lines(em, e: Equation, ins: list[str], lhs: str, indent: str) -> list[str]:
    """The definition of a `custom_jvp` / `custom_vjp` equation's function and its call, as lines.
    A function of one result is written as users write one: returning that value, not a 1-tuple."""
    subs, n, k = e.subs, len(e.inputs), len(e.outputs)
    one = k == 1
    pn = em.fun_name("primal")
    lines = em.function(pn, subs[0], [em.name(v.name) for v in subs[0].inputs], indent, not one)
    cn = em.fun_name("custom")
    results = lambda outs: outs[0] if one else _tuple(outs)  # noqa: E731
    split = lambda outs: f"{results(outs[:k])}, {_tuple(outs[k:])}"  # noqa: E731
    if e.primitive == "custom_jvp":
        rn = em.fun_name("rule")
        lines += _rule(em, rn, subs[1], [("primals", n), ("tangents", n)],
                       lambda outs: f"{results(outs[:k])}, {results(outs[k:])}", indent)
        lines += [f"{indent}{cn} = jax.custom_jvp({pn})", f"{indent}{cn}.defjvp({rn})"]
    else:
        fn, bn = em.fun_name("fwd"), em.fun_name("bwd")
        lines += em.function(fn, subs[1], [em.name(v.name) for v in subs[1].inputs], indent, True)[:-1]
        lines.append(f"{indent}    return {split([em.atom(a) for a in subs[1].outputs])}")  # outputs, residuals
        n_res = len(subs[2].inputs) - k
        lines += _rule(em, bn, subs[2], [("res", n_res), ("g=" if one else "g", k)],
                       lambda outs: _spelled(e.params["cts"], outs), indent)
        lines += [f"{indent}{cn} = jax.custom_vjp({pn})", f"{indent}{cn}.defvjp({fn}, {bn})"]
    lines.append(f"{indent}{lhs.rstrip(',') if one else lhs} = {cn}({', '.join(ins)})")
    return lines
