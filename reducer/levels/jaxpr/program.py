"""The traced-program level's representation: a spec (JSON text) and how to run it.

A spec is `{"transforms": [outermost … innermost], "jaxpr": spec jaxpr, "args": [{"shape", "dtype",
"values"?}…], "x64"?: true}` (see `reducer.levels.jaxpr.codec` for the jaxpr part), read once into the
typed model of `reducer.levels.jaxpr.model` (`parse`), which everything here works on; JSON data (`loads`,
`jaxprs`, `dumps`) is for readers and writers of spec text outside the level. Running it rebuilds a function that
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
from reducer.levels.jaxpr.model import VALUE_PRIMS, Equation, Jaxpr, Spec, names
from reducer.levels.jaxpr.model import dumps  # noqa: F401  (the text of spec data, for writers outside the level)
from reducer.levels.jaxpr.params import Nested, decode_params, dtype_of
from reducer.levels.jaxpr.params import array_of, enzyme_kwargs, key_impl

GRAD_LIKE = {"grad", "value_and_grad", "jacrev", "jacfwd", "hessian"}


# -- text -----------------------------------------------------------------------------------------
def parse(text: str) -> Spec:
    """The model of a spec's text (`reducer.levels.jaxpr.model`)."""
    return Spec.from_json(text)


def loads(text: str) -> dict:
    """A spec's JSON data, for readers of its text outside the level (reports, tests)."""
    return json.loads(text)


def jaxprs(j: dict, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """Every jaxpr inside the JSON data `j` (itself first), with its path, for readers of spec text
    outside the level (the model walks itself: `Jaxpr.walk`)."""
    yield path, j
    for i, e in enumerate(j["eqns"]):
        for k, s in enumerate(e["subs"]):
            yield from jaxprs(s, path + ((i, k),))


# -- walking --------------------------------------------------------------------------------------
def count_eqns(j: Jaxpr) -> int:
    return sum((0 if e.primitive in VALUE_PRIMS else 1) + sum(count_eqns(s) for s in e.subs) for e in j.eqns)


def all_vars(j: Jaxpr) -> Iterator[str]:
    for _, sub in j.walk():
        for v in sub.inputs:
            yield v.name
        for e in sub.eqns:
            for o in e.outputs:
                yield o.name


def fresh_namer(spec: Spec):
    n = max((int(v[1:]) for v in all_vars(spec.jaxpr) if v[1:].isdigit()), default=-1) + 1

    def fresh() -> str:
        nonlocal n
        n += 1
        return f"v{n - 1}"

    return fresh


def elements(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# -- the engine's representation ------------------------------------------------------------------
class JaxprSpec:
    unit = "jaxpr size"  # what `size` counts, as the progress display says it

    def __init__(self):
        self._read: tuple = ("", None)  # the latest text sized, keyed or verified, and its model

    def parse(self, program: str) -> Spec:  # the work item jaxpr passes read (and never change)
        return parse(program)

    def _model(self, program: str) -> Spec:
        """The model of `program` for reading only (a candidate is keyed and verified in turn)."""
        read = self._read  # one read of it: candidates may be judged on several threads
        if read[0] != program:
            read = self._read = (program, parse(program))
        return read[1]

    def size(self, program: str) -> int:
        return self._size(self._model(program))

    @staticmethod
    def _size(spec: Spec) -> int:
        masked = sum(masked_loop(e) for _, j in spec.jaxpr.walk() for e in j.eqns)  # + its per-lane select
        return count_eqns(spec.jaxpr) + masked + len(spec.jaxpr.inputs) + len(spec.transforms)

    def key(self, program: str) -> tuple:
        spec = self._model(program)
        eqns = [e for _, j in spec.jaxpr.walk() for e in j.eqns]
        elems = sum(elements(o.shape) for e in eqns for o in e.outputs) + sum(elements(a.shape) for a in spec.args)
        values = sum(len(e.params.get("values", ())) for e in eqns) + sum(len(a.values or ()) for a in spec.args)
        return (self._size(spec), len(spec.jaxpr.outputs), elems, values, len(program))

    def verify(self, program: str) -> bool:
        try:
            return well_formed(self._model(program))
        except (ValueError, KeyError, TypeError, IndexError):
            return False


def argnums_source(argnums) -> str:
    """How a script spells `argnums`: one position as an int (the gradient is then one array, as users
    write it), several as a tuple."""
    return repr(argnums[0]) if len(argnums) == 1 else repr(tuple(argnums))


def one_result(spec: Spec) -> bool:
    """Whether the transformed call returns a single array (no tuple to walk when comparing it)."""
    through = all(t.kind in ("jit", "enzyme") or (t.kind == "grad" and len(t.argnums) == 1)
                  for t in spec.transforms)
    return through and len(spec.jaxpr.outputs) == 1


def well_formed(spec: Spec) -> bool:
    j = spec.jaxpr
    if len(spec.args) != len(j.inputs) or not j.outputs:
        return False
    for t in spec.transforms:
        if t.kind in GRAD_LIKE and (not t.argnums or max(t.argnums) >= len(j.inputs)):
            return False
        if t.kind in ("grad", "value_and_grad", "hessian") and len(j.outputs) != 1:
            return False
        if t.kind == "vmap" and len(t.in_axes) != len(j.inputs):
            return False
    return _scoped(j)


def _scoped(j: Jaxpr) -> bool:
    defined = {v.name for v in j.inputs}
    for e in j.eqns:
        if any(a not in defined for a in names(e.inputs)):
            return False
        if not all(_scoped(s) for s in e.subs):
            return False
        defined.update(o.name for o in e.outputs)
    return all(a in defined for a in names(j.outputs))


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


def interpret(j: Jaxpr, args, env: dict | None = None) -> list:
    """Evaluate a spec jaxpr on `args` (arrays or tracers); `env`, when given, is left holding every
    variable's value."""
    env = {} if env is None else env
    env.update((v.name, a) for v, a in zip(j.inputs, args))

    def read(a):
        if isinstance(a, str):
            return env[a]
        return make_value((), a.dtype, [a.value])

    for e in j.eqns:
        outs = _outputs(e, [read(a) for a in e.inputs])
        for o, v in zip(e.outputs, outs):
            env[o.name] = v
    return [read(a) for a in j.outputs]


def _outputs(e: Equation, ins: list) -> list:
    """The values of equation `e`'s outputs on the values `ins` of its inputs."""
    import jax
    from jax import lax

    from reducer.levels.jaxpr.primitives import registry

    p, params, subs = e.primitive, e.params, e.subs
    if p == "__const__":
        o = e.outputs[0]
        return [make_value(o.shape, o.dtype, params["values"])]
    if p == "__fill__":
        o = e.outputs[0]
        return [make_value(o.shape, o.dtype, fill=params.get("fill", 0))]
    if p == "jit":
        return list(jax.jit(_as_fun(subs[0]))(*ins))
    if p == "enzyme":
        from enzyme_ad.jax import enzyme_jax_ir

        return list(enzyme_jax_ir(**enzyme_kwargs(params.get("options")))(_as_fun(subs[0]))(*ins))
    if p == "while":
        return _while(e, ins)
    if p == "scan":
        nc, nk = params["num_consts"], params["num_carry"]
        consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
        body = subs[0]

        def step(c, x):
            r = interpret(body, consts + list(c) + list(x))
            return tuple(r[:nk]), tuple(r[nk:])

        c, ys = lax.scan(step, tuple(init), tuple(xs), length=params["length"], reverse=params["reverse"],
                         unroll=params.get("unroll", 1))
        return list(c) + list(ys)
    if p == "cond" and params.get("branches_platforms"):
        return list(lax.platform_dependent(*ins[1:], **platform_branches(e, [_as_fun(s) for s in subs])))
    if p == "cond":
        return list(lax.switch(ins[0], [_as_fun(s) for s in subs], *ins[1:]))
    if p in custom_rules.KINDS:
        return custom_rules.run(e, ins, interpret)
    prim = registry()[p][0]
    r = prim.bind(*ins, **decode_params(params, Nested(tuple(subs), interpret)))
    return list(r) if prim.multiple_results else [r]


def _while(e: Equation, ins: list) -> list:
    """The outputs of a `while` spec equation on `ins` (a batched predicate's lanes stop one by one)."""
    from jax import lax

    nc, nb = e.params["cond_nconsts"], e.params["body_nconsts"]
    cc, bc, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    cond, body = e.subs
    return list(lax.while_loop(lambda c: any_lane(interpret(cond, cc + list(c))[0]),
                               lambda c: masked_step(interpret(cond, cc + list(c))[0],
                                                     interpret(body, bc + list(c)), c) if
                               masked_loop(e) else tuple(interpret(body, bc + list(c))),
                               tuple(init)))


def platform_branches(e: Equation, branches: list) -> dict:
    """`lax.platform_dependent`'s keyword arguments for a `cond` with `branches_platforms`: each
    platform (or `default`) named with its branch."""
    platforms = decode_params(e.params, Nested(tuple(e.subs), interpret))["branches_platforms"]
    return {name: branch for group, branch in zip(platforms, branches)
            for name in (["default"] if group is None else group)}


def out_shape(j: Jaxpr, k: int) -> tuple:
    """The shape of output `k` of the spec jaxpr `j` (a literal's is ())."""
    a = j.outputs[k]
    v = j.variables().get(a) if isinstance(a, str) else None
    return v.shape if v is not None else ()


def batched_predicate(cond: Jaxpr) -> bool:
    """Whether a `while`'s condition returns one predicate per lane: what `vmap` of a loop whose
    condition depends on the mapped values leaves, and `lax.while_loop` does not accept."""
    return bool(out_shape(cond, 0))


def masked_loop(e: Equation) -> bool:
    """Whether equation `e` is a `while` with a batched predicate whose lanes stop one by one (as
    JAX runs it); with the parameter `any_lane` set, every lane steps while any goes on."""
    return e.primitive == "while" and batched_predicate(e.subs[0]) and not e.params.get("any_lane")


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


def _as_fun(j: Jaxpr):
    def fun(*xs):
        return tuple(interpret(j, list(xs)))

    return fun


def _ones_like_tree(tree):
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(jnp.ones_like, tree)


def build(spec: Spec):
    """The transformed function and its arguments."""
    import jax

    jax.config.update("jax_enable_x64", spec.x64)
    j = spec.jaxpr

    def f(*xs):
        outs = interpret(j, list(xs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    for t in reversed(spec.transforms):
        f = _transformed(f, t)
    return f, arguments(spec)


#: the values recorded for a cut (`recorded`): at most this many elements an array, and in all
RECORD_EACH, RECORD_ALL = 4096, 65536


def recorded(spec: Spec) -> dict:
    """The values the top-level equations of `spec`'s function computed on its arguments, by
    variable (flat, as `Arg.values`): what a cut of the program (`promote-to-inputs`) gives the
    values it makes inputs, so that a value failure survives it. The smallest arrays are kept first,
    up to RECORD_ALL elements in all; arrays over RECORD_EACH elements,
    PRNG keys and a function mapped by `vmap` (whose arguments are batches) are left out; none where
    the function cannot be evaluated on its own."""
    import jax

    from reducer.levels.jaxpr.params import flat_values

    if any(t.kind == "vmap" for t in spec.transforms):
        return {}
    jax.config.update("jax_enable_x64", spec.x64)
    env: dict = {}
    try:
        interpret(spec.jaxpr, arguments(spec), env)
    except Exception:
        return {}
    found, total = {}, 0
    outputs = [o for e in spec.jaxpr.eqns for o in e.outputs if o.name in env and key_impl(o.dtype) is None]
    for o in sorted(outputs, key=lambda o: elements(o.shape)):  # the smallest first: most variables kept
        size = elements(o.shape)
        if size > RECORD_EACH or total + size > RECORD_ALL:
            break
        found[o.name] = flat_values(env[o.name])
        total += size
    return found


def arguments(spec: Spec) -> list:
    """The values the transformed function is called on: the recorded ones, else ones."""
    return [make_value(a.shape, a.dtype, a.values) for a in spec.args]


def _transformed(f, t):
    import jax

    if t.kind == "jit":
        return jax.jit(f)
    if t.kind in GRAD_LIKE:
        return getattr(jax, t.kind)(f, argnums=tuple(t.argnums))
    if t.kind == "enzyme":
        from enzyme_ad.jax import enzyme_jax_ir

        return enzyme_jax_ir(**enzyme_kwargs(t.options))(f)
    if t.kind == "vmap":
        return jax.vmap(f, in_axes=tuple(t.in_axes))
    if t.kind == "vjp":
        def pulled(*xs):
            out, pullback = jax.vjp(f, *xs)
            return pullback(_ones_like_tree(out))

        return pulled
    if t.kind == "jvp":
        return lambda *xs: jax.jvp(f, xs, tuple(_ones_like_tree(x) for x in xs))
    raise ValueError(f"unknown transformation {t.kind!r}")


def run(program: str):
    """Run a spec (raises what the transformed program raises)."""
    import jax

    f, args = build(parse(program))
    return jax.block_until_ready(f(*args))
