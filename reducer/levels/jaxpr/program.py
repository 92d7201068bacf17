"""The traced-program level's representation: a spec (JSON text) and how to run it.

A spec is `{"transforms": [outermost … innermost], "jaxpr": spec jaxpr, "args": [{"shape", "dtype",
"values"?}…], "x64"?: true}` (see `reducer.levels.jaxpr.codec` for the jaxpr part). Running it rebuilds a function that
interprets the jaxpr by binding primitives looked up by name (control flow, inner `jit` and
`enzyme_jax_ir` calls through their public APIs), applies the transformations (`jit`, `grad`,
`value_and_grad`, `vjp`, `jvp`, `vmap`, `jacrev`, `jacfwd`, `hessian`, `enzyme`) and calls it on
the arguments. `JaxprSpec` is the engine's representation: size = equations (nested included, a
`while` whose lanes stop one by one counting twice: it stands for a loop and a select) + inputs +
transformations; the key adds the number of array elements and recorded values.
"""
from __future__ import annotations

import json
from typing import Iterator

from reducer.levels.jaxpr import custom_rules
from reducer.levels.jaxpr.codec import VALUE_PRIMS
from reducer.levels.jaxpr.params import decode_params, dtype_of
from reducer.levels.jaxpr.params import array_of, enzyme_kwargs, key_impl

GRAD_LIKE = {"grad", "value_and_grad", "jacrev", "jacfwd", "hessian"}


# -- text -----------------------------------------------------------------------------------------
def dumps(spec: dict) -> str:
    return json.dumps(spec, separators=(",", ":"), sort_keys=True)


def loads(text: str) -> dict:
    return json.loads(text)


# -- walking --------------------------------------------------------------------------------------
def jaxprs(j: dict, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """Every jaxpr inside `j` (itself first), with its path: (eqn index, sub index) pairs."""
    yield path, j
    for i, e in enumerate(j["eqns"]):
        for k, s in enumerate(e["subs"]):
            yield from jaxprs(s, path + ((i, k),))


def at(j: dict, path: tuple) -> dict:
    for i, k in path:
        j = j["eqns"][i]["subs"][k]
    return j


def count_eqns(j: dict) -> int:
    return sum((0 if e["p"] in VALUE_PRIMS else 1) + sum(count_eqns(s) for s in e["subs"]) for e in j["eqns"])


def uses(j: dict) -> set:
    """Variables read by the equations and outputs of `j` (nested jaxprs are closed: not looked into)."""
    used = {a for a in j["out"] if isinstance(a, str)}
    for e in j["eqns"]:
        used.update(a for a in e["in"] if isinstance(a, str))
    return used


def dce(j: dict) -> None:
    """Drop equations none of whose outputs are used, in every nested jaxpr too."""
    for e in j["eqns"]:
        for s in e["subs"]:
            dce(s)
    live = {a for a in j["out"] if isinstance(a, str)}
    kept = []
    for e in reversed(j["eqns"]):
        if any(o[0] in live for o in e["out"]):
            kept.append(e)
            live.update(a for a in e["in"] if isinstance(a, str))
    j["eqns"] = kept[::-1]


def all_vars(j: dict) -> Iterator[str]:
    for _, sub in jaxprs(j):
        for v in sub["in"]:
            yield v[0]
        for e in sub["eqns"]:
            for o in e["out"]:
                yield o[0]


def fresh_namer(spec: dict):
    n = max((int(v[1:]) for v in all_vars(spec["jaxpr"]) if v[1:].isdigit()), default=-1) + 1

    def fresh() -> str:
        nonlocal n
        n += 1
        return f"v{n - 1}"

    return fresh


def rename(j: dict, mapping: dict) -> None:
    """Replace uses of variables in `j`'s equations and outputs (not in nested jaxprs)."""
    for e in j["eqns"]:
        e["in"] = [mapping.get(a, a) if isinstance(a, str) else a for a in e["in"]]
    j["out"] = [mapping.get(a, a) if isinstance(a, str) else a for a in j["out"]]


def elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# -- the engine's representation ------------------------------------------------------------------
class JaxprSpec:
    def parse(self, program: str) -> dict:  # the work item jaxpr passes read (and never change)
        return loads(program)

    def size(self, program: str) -> int:
        spec = loads(program)
        masked = sum(masked_loop(e) for _, j in jaxprs(spec["jaxpr"]) for e in j["eqns"])  # + its per-lane select
        return count_eqns(spec["jaxpr"]) + masked + len(spec["jaxpr"]["in"]) + len(spec["transforms"])

    def key(self, program: str) -> tuple:
        spec = loads(program)
        elems = sum(elements(o[1]) for _, j in jaxprs(spec["jaxpr"]) for e in j["eqns"] for o in e["out"])
        elems += sum(elements(a["shape"]) for a in spec["args"])
        values = sum(len(e["params"].get("values", ())) for _, j in jaxprs(spec["jaxpr"]) for e in j["eqns"])
        values += sum(len(a.get("values", ())) for a in spec["args"])
        outs = len(spec["jaxpr"]["out"])
        return (self.size(program), outs, elems, values, len(program))

    def verify(self, program: str) -> bool:
        try:
            spec = loads(program)
            return well_formed(spec)
        except (ValueError, KeyError, TypeError, IndexError):
            return False


def argnums_source(argnums) -> str:
    """How a script spells `argnums`: one position as an int (the gradient is then one array, as users
    write it), several as a tuple."""
    return repr(argnums[0]) if len(argnums) == 1 else repr(tuple(argnums))


def one_result(spec: dict) -> bool:
    """Whether the transformed call returns a single array (no tuple to walk when comparing it)."""
    through = all(t["t"] in ("jit", "enzyme") or (t["t"] == "grad" and len(t["argnums"]) == 1)
                  for t in spec["transforms"])
    return through and len(spec["jaxpr"]["out"]) == 1


def well_formed(spec: dict) -> bool:
    j = spec["jaxpr"]
    if len(spec["args"]) != len(j["in"]) or not j["out"]:
        return False
    for t in spec["transforms"]:
        if t["t"] in GRAD_LIKE and (not t["argnums"] or max(t["argnums"]) >= len(j["in"])):
            return False
        if t["t"] in ("grad", "value_and_grad", "hessian") and len(j["out"]) != 1:
            return False
        if t["t"] == "vmap" and len(t["in_axes"]) != len(j["in"]):
            return False
    return _scoped(j, set())


def _scoped(j: dict, outer: set) -> bool:
    defined = {v[0] for v in j["in"]}
    for e in j["eqns"]:
        if any(isinstance(a, str) and a not in defined for a in e["in"]):
            return False
        for s in e["subs"]:
            if not _scoped(s, set()):
                return False
        defined.update(o[0] for o in e["out"])
    return all(not isinstance(a, str) or a in defined for a in j["out"])


# -- running --------------------------------------------------------------------------------------
def make_value(shape, dtype: str, values=None, fill=1):
    import numpy as np

    if key_impl(dtype) is not None:  # a PRNG key array: made from its key data
        import jax

        impl = key_impl(dtype)
        data = array_of(values, shape, dtype) if values is not None else \
            np.zeros(tuple(shape) + tuple(impl.key_shape), np.uint32)
        return jax.random.wrap_key_data(data, impl=impl.name)
    if values is not None:
        return array_of(values, shape, dtype)
    dt = dtype_of(dtype)
    return np.full(tuple(shape), fill, dtype=dt)


def interpret(j: dict, args) -> list:
    """Evaluate a spec jaxpr on `args` (arrays or tracers)."""
    import jax
    from jax import lax

    from reducer.levels.jaxpr.codec import registry

    env = {v[0]: a for v, a in zip(j["in"], args)}

    def read(a):
        if isinstance(a, str):
            return env[a]
        return make_value((), a["dtype"], [a["lit"]])

    for e in j["eqns"]:
        ins = [read(a) for a in e["in"]]
        p, params, subs = e["p"], e["params"], e["subs"]
        if p == "__const__":
            o = e["out"][0]
            outs = [make_value(o[1], o[2], params["values"])]
        elif p == "__fill__":
            o = e["out"][0]
            outs = [make_value(o[1], o[2], fill=params.get("fill", 0))]
        elif p == "jit":
            outs = list(jax.jit(_as_fun(subs[0]))(*ins))
        elif p == "enzyme":
            from enzyme_ad.jax import enzyme_jax_ir

            outs = list(enzyme_jax_ir(**enzyme_kwargs(params.get("options")))(_as_fun(subs[0]))(*ins))
        elif p == "while":
            outs = _while(e, ins)
        elif p == "scan":
            nc, nk = params["num_consts"], params["num_carry"]
            consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
            body = subs[0]

            def step(c, x, consts=consts, body=body, nk=nk):
                r = interpret(body, consts + list(c) + list(x))
                return tuple(r[:nk]), tuple(r[nk:])

            c, ys = lax.scan(step, tuple(init), tuple(xs), length=params["length"], reverse=params["reverse"],
                             unroll=params.get("unroll", 1))
            outs = list(c) + list(ys)
        elif p == "cond" and params.get("branches_platforms"):
            outs = list(lax.platform_dependent(*ins[1:], **platform_branches(e, [_as_fun(s) for s in subs])))
        elif p == "cond":
            outs = list(lax.switch(ins[0], [_as_fun(s) for s in subs], *ins[1:]))
        elif p in custom_rules.KINDS:
            outs = custom_rules.run(e, ins, interpret)
        else:
            prim = registry()[p][0]
            r = prim.bind(*ins, **decode_params(params, subs))
            outs = list(r) if prim.multiple_results else [r]
        for o, v in zip(e["out"], outs):
            env[o[0]] = v
    return [read(a) for a in j["out"]]


def _while(e: dict, ins: list) -> list:
    """The outputs of a `while` spec equation on `ins` (a batched predicate's lanes stop one by one)."""
    from jax import lax

    nc, nb = e["params"]["cond_nconsts"], e["params"]["body_nconsts"]
    cc, bc, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    cond, body = e["subs"]
    return list(lax.while_loop(lambda c: any_lane(interpret(cond, cc + list(c))[0]),
                               lambda c: masked_step(interpret(cond, cc + list(c))[0],
                                                     interpret(body, bc + list(c)), c) if
                               masked_loop(e) else tuple(interpret(body, bc + list(c))),
                               tuple(init)))


def platform_branches(e: dict, branches: list) -> dict:
    """`lax.platform_dependent`'s keyword arguments for a `cond` with `branches_platforms`: each
    platform (or `default`) named with its branch."""
    platforms = decode_params(e["params"], e["subs"])["branches_platforms"]
    return {name: branch for group, branch in zip(platforms, branches)
            for name in (["default"] if group is None else group)}


def out_shape(j: dict, k: int) -> list:
    """The shape of output `k` of the spec jaxpr `j` (a literal's is ())."""
    a = j["out"][k]
    if not isinstance(a, str):
        return []
    for v in j["in"]:
        if v[0] == a:
            return v[1]
    for e in j["eqns"]:
        for o in e["out"]:
            if o[0] == a:
                return o[1]
    return []


def batched_predicate(cond: dict) -> bool:
    """Whether a `while`'s condition returns one predicate per lane: what `vmap` of a loop whose
    condition depends on the mapped values leaves, and `lax.while_loop` does not accept."""
    return bool(out_shape(cond, 0))


def masked_loop(e: dict) -> bool:
    """Whether equation `e` is a `while` with a batched predicate whose lanes stop one by one (as
    JAX runs it); with the parameter `any_lane` set, every lane steps while any goes on."""
    return e["p"] == "while" and batched_predicate(e["subs"][0]) and not e["params"].get("any_lane")


def any_lane(pred):
    """A `while` condition as `lax.while_loop` takes it: a batched predicate goes on while any lane does."""
    import jax.numpy as jnp

    return jnp.any(pred) if getattr(pred, "ndim", 0) else pred


def masked_step(pred, new: list, old) -> tuple:
    """One step of a batched-predicate `while` (JAX's own batching rule): the lanes whose predicate
    holds take the body's values, the others keep theirs (lanes on the leading axis)."""
    import jax.numpy as jnp

    return tuple(jnp.where(pred.reshape(pred.shape + (1,) * (jnp.ndim(n) - pred.ndim)), n, o)
                 for n, o in zip(new, old))


def _as_fun(j: dict):
    def fun(*xs):
        return tuple(interpret(j, list(xs)))

    return fun


def _ones_like_tree(tree):
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(jnp.ones_like, tree)


def build(spec: dict):
    """The transformed function and its arguments."""
    import jax

    jax.config.update("jax_enable_x64", bool(spec.get("x64")))
    j = spec["jaxpr"]

    def f(*xs):
        outs = interpret(j, list(xs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    for t in reversed(spec["transforms"]):
        kind = t["t"]
        if kind == "jit":
            f = jax.jit(f)
        elif kind in GRAD_LIKE:
            f = getattr(jax, kind)(f, argnums=tuple(t["argnums"]))
        elif kind == "enzyme":
            from enzyme_ad.jax import enzyme_jax_ir

            f = enzyme_jax_ir(**enzyme_kwargs(t.get("options")))(f)
        elif kind == "vmap":
            f = jax.vmap(f, in_axes=tuple(t["in_axes"]))
        elif kind == "vjp":
            def f(*xs, g=f):
                out, pullback = jax.vjp(g, *xs)
                return pullback(_ones_like_tree(out))
        elif kind == "jvp":
            def f(*xs, g=f):
                return jax.jvp(g, xs, tuple(_ones_like_tree(x) for x in xs))
        else:
            raise ValueError(f"unknown transformation {kind!r}")
    args = [make_value(a["shape"], a["dtype"], a.get("values")) for a in spec["args"]]
    return f, args


def run(program: str):
    """Run a spec (raises what the transformed program raises)."""
    import jax

    f, args = build(loads(program))
    return jax.block_until_ready(f(*args))
