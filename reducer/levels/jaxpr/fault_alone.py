"""The operation at fault alone, on the values it got: for a non-finite value, the smallest traced
program to start from, found before the engine shrinks the captured call equation by equation.

A NaN gradient in a model of a hundred equations is made by one of them (`sqrt` at 0, `arccos` at
1), and the replay of the captured call names its operation (`nonfinite_replay.locate`). Here, in
the worker, the captured call's jaxpr runs forward on its arguments, keeping every intermediate
value (in the bodies of inner `jit` calls too); each equation of that operation becomes a program of
its own on the values its inputs had: under the derivative the fault is in (`grad` of its sum, or
`jvp`), or under none for a value made forward. An elementwise operation is tried first at one
point (the first element whose derivative, or value, is not finite), then on its whole arrays. The
first program whose replay shows the same fault is the level's start (`nonfinite_replay.run_check`
reports it): fx_minifier's move of turning a node into an input fed by its recorded value, aimed at
once at the node the fault is in, which spares the engine the slow candidates of a large call.

A value made forward may be of another kind than the one the program checks: `arctanh` at ±1 makes
±Inf, and the mean of a +Inf and a -Inf is the NaN. Then the operation alone shows an Inf, another
failure, and the start is the operation with the equations its non-finite values flow through, up
to the first that makes the checked kind (`flow`), each other input fed its recorded value. Where
the 0 the operation turned non-finite has a cause (a softmax's `exp` that underflowed, under the
`log`), the operation on a recorded 0 shows none: the start is the flow from that `exp` on. A value
no fix of the program's takes away, made inside a public call (`bessel_jn`'s `scan`), is that call's:
the start is the call alone, on the values it got (`oracles.nonfinite.inside_call`).
"""
from __future__ import annotations

from typing import Callable, Iterator

from reducer.faults import cause as causes
from oracles import nonfinite as nonfinite_kinds
from reducer.faults import checked_value
from reducer.levels.jaxpr import program as jp
from reducer.levels.jaxpr.model import REAL_FLOATING, Arg, Equation, Jaxpr, Literal, Spec, Transform, Var
from reducer.levels.jaxpr.params import flat_values

MAX_EQUATIONS = 4  # equations of the faulty operation tried, in program order
MAX_FLOW = 24  # equations a value may flow through, from the cause of its 0 or on to the checked kind


def intermediate_values(spec: Spec) -> dict:
    """(path, name) -> value of every variable of the spec's jaxpr, and of the bodies of its inner
    `jit` calls (path: the jaxpr's, as `Jaxpr.walk` gives it), run forward on the spec's arguments."""
    found: dict = {}
    _forward(spec.jaxpr, (), jp.arguments(spec), found)
    return found


def _forward(j: Jaxpr, path: tuple, args: list, found: dict) -> list:
    env = {v.name: a for v, a in zip(j.inputs, args)}
    avals = j.variables()
    for i, e in enumerate(j.eqns):
        ins = [env[a] if isinstance(a, str) else jp.make_value((), a.dtype, [a.value]) for a in e.inputs]
        if e.primitive == "jit":
            outs = _forward(e.subs[0], path + ((i, 0),), ins, found)
        else:
            inputs = [avals[a] for a in dict.fromkeys(x for x in e.inputs if isinstance(x, str))]
            outs = jp.interpret(Jaxpr(inputs, [e], [o.name for o in e.outputs]), [env[v.name] for v in inputs])
        env.update((o.name, v) for o, v in zip(e.outputs, outs))
    found.update(((path, name), v) for name, v in env.items())
    return [env[a] if isinstance(a, str) else jp.make_value((), a.dtype, [a.value]) for a in j.outputs]


def _equations(j: Jaxpr, wanted: Callable[[Equation], bool], path: tuple = ()) -> Iterator[tuple[tuple, Equation]]:
    """The `wanted` equations of `j` (of one primitive, or calls of one function) and of the bodies of
    its other inner `jit` calls, in order."""
    for i, e in enumerate(j.eqns):
        if wanted(e):
            yield path, e
        elif e.primitive == "jit":
            yield from _equations(e.subs[0], wanted, path + ((i, 0),))


def call_not_kept(j: Jaxpr, fault) -> str:
    """Why no script written back from the traced program `j` can show a value made inside a public
    call (`oracles.nonfinite.inside_call`): the call is not one of its equations (a `jit` of its name)
    but its body, inlined (`vonmises.logpdf`), so a written-back script makes its operations, not the
    call; "" where the fault is not a call's or the call is kept."""
    name = fault.get("from") if nonfinite_kinds.inside_call(fault) else None
    if not name or next(_equations(j, lambda e: e.primitive == "jit" and e.params.get("name") == name), None):
        return ""
    return (f"the value is made inside `{name}`, whose operations the traced program holds inlined, not as a "
            f"call: no script written back from it calls `{name}`")


def _mode(spec: Spec, where: str) -> list[Transform]:
    """The transformation a fault `in` `where` is taken under, on a program of its own: the
    captured call's `jit` for a value made forward (compiled, it rounds as the program did)."""
    if where == "forward":
        return [Transform("jit")] if spec.kinds()[:1] == ["jit"] else []
    return [Transform("jvp")] if where == "jvp" else [Transform("grad", argnums=[])]


def _at(value, point: int | None, shape: tuple):
    """`value`, or its element at the flat index `point` of the operation's result of `shape` (a
    size-1 axis broadcast by the operation itself)."""
    import numpy as np

    value = np.asarray(value)
    if point is None:
        return value
    return value.reshape(()) if value.size == 1 else np.broadcast_to(value, shape).reshape(-1)[point]


def alone(spec: Spec, path: tuple, e: Equation, where: str, values: dict, point: int | None = None,
          masked: bool = False) -> Spec | None:
    """Equation `e` of the jaxpr at `path` alone, on the values its inputs had (those at the flat
    index `point`, for an elementwise one), under the transformation a fault `in` `where` is taken
    under (a derivative of its sum); `masked`, at one point, its value then dropped by a `where`
    (`where(False, e, 0.0)`: the `where` trap, whose zero cotangent turns an infinite derivative into
    NaN); None when it cannot be differentiated."""
    avals = spec.jaxpr.at(path).variables()
    inputs = [avals[a] for a in dict.fromkeys(x for x in e.inputs if isinstance(x, str))]
    at = [_at(values[(path, v.name)], point, e.outputs[0].shape) for v in inputs]
    args = [Arg(tuple(a.shape), v.dtype, flat_values(a)) for v, a in zip(inputs, at)]
    shaped = [Var(v.name, a.shape, v.dtype) for v, a in zip(inputs, args)]
    outs = [Var(o.name, () if point is not None else o.shape, o.dtype) for o in e.outputs]
    body = Jaxpr(shaped, [Equation(e.primitive, list(e.inputs), outs, e.params, e.subs, e.src)], [outs[0].name])
    if masked and point is not None:
        dropped = Var(outs[0].name + "_masked", (), outs[0].dtype)
        body.eqns.append(Equation("select_n", [Literal(False, "bool"), Literal(0.0, outs[0].dtype), outs[0].name],
                                  [dropped]))
        body.outputs = [dropped.name]
    transforms = _mode(spec, where)
    if transforms and transforms[0].kind == "grad":
        floats = [k for k, v in enumerate(inputs) if v.dtype.startswith(REAL_FLOATING)]
        if not floats or not outs[0].dtype.startswith(REAL_FLOATING):
            return None
        transforms[0].argnums = floats
        if outs[0].shape:
            total = Var(outs[0].name + "_sum", (), outs[0].dtype)
            body.eqns.append(Equation("reduce_sum", [outs[0].name], [total],
                                      {"axes": {"t": list(range(len(outs[0].shape)))}, "out_sharding": None}))
            body.outputs = [total.name]
    return Spec(transforms, body, args, x64=spec.x64)


def elementwise(spec: Spec, path: tuple, e: Equation) -> bool:
    """Whether every array input of `e` has its one output's shape, or is broadcast to it by the
    operation (a size-1 axis): an operation at each point."""
    import numpy as np

    avals = spec.jaxpr.at(path).variables()
    shapes = [avals[a].shape for a in e.inputs if isinstance(a, str)]
    out = tuple(e.outputs[0].shape) if len(e.outputs) == 1 else None
    try:
        return out is not None and all(np.broadcast_shapes(tuple(s), out) == out for s in shapes)
    except ValueError:
        return False


def first_bad_point(candidate: Spec, finite: Callable) -> int | None:
    """The first flat index at which the program `candidate` (an elementwise operation on arrays)
    has a non-finite value: of its derivative (per input, the same shape) or of its result."""
    import jax
    import numpy as np

    fun, args = jp.build(candidate)
    outs = jax.tree_util.tree_leaves(fun(*args))
    size = max((int(np.size(o)) for o in outs), default=0)
    for k in range(size):
        if any(np.size(o) == size and not finite(np.asarray(o).reshape(-1)[k]) for o in outs):
            return k
    return None


def candidates(spec: Spec, fault: dict, finite: Callable) -> Iterator[Spec]:
    """Programs of the operation at fault alone, smallest first: at one point, then whole; then with
    the equations its values flow through (`flow`), alone where the fault names a cause of its 0."""
    if any(t.kind == "vmap" for t in spec.transforms):
        return
    values, where = intermediate_values(spec), fault["in"]
    if nonfinite_kinds.inside_call(fault):  # the public call is where it is: not its body's operation
        called = lambda e: e.primitive == "jit" and e.params.get("name") == fault["from"]  # noqa: E731
        for path, e in list(_equations(spec.jaxpr, called))[:MAX_EQUATIONS]:
            made = alone(spec, path, e, where, values)
            if made is not None:
                yield made
        return
    cause = fault.get("cause") or ""
    held = causes.named(cause)  # the operation on a recorded 0 shows no cause: its ways from the cause only
    for path, e in list(_equations(spec.jaxpr, lambda e: e.primitive == fault["op"]))[:MAX_EQUATIONS]:
        whole = alone(spec, path, e, where, values)
        if whole is None:
            continue
        if not held and elementwise(spec, path, e) and e.outputs[0].shape:
            point = first_bad_point(whole if where == "forward" else _unsummed(whole), finite)
            # a NaN made in a derivative is most often an infinite one that a `where` gave a zero cotangent
            trap = where != "forward" and "nan" in fault.get("value", "").split(",")
            for masked in ((True, False) if trap else (False,)) if point is not None else ():
                yield alone(spec, path, e, where, values, point, masked)
        if not held:
            yield whole
        if where == "forward" and fault.get("value"):
            made = flow(spec, path, e, values, fault["value"], causes.fix(cause)[0] if held else None)
            if made is not None:
                yield made


def flow(spec: Spec, path: tuple, e: Equation, values: dict, kind: str,
         cause: tuple[str, ...] | None = None) -> Spec | None:
    """Equation `e` of the jaxpr at `path` with the equations its values flow through: after it,
    those its non-finite values reach, up to the first whose result holds the non-finite `kind`
    (`nan`); before it, where the 0 it turned non-finite was made by the `cause` operations (`exp`),
    those between that operation and `e`. Run forward (as the captured call ran it) on the values
    their other inputs had; None when no such equations are found, or none beside `e`."""
    import numpy as np

    j = spec.jaxpr.at(path)
    at = next(i for i, x in enumerate(j.eqns) if x is e)
    value = lambda name: np.asarray(values[(path, name)])  # noqa: E731
    before = _back_to(j, at, cause) if cause else []
    after = _on_to(j, at, value, kind)
    if (cause and not before) or after is None or not (before or after):
        return None
    chain = before + [e] + after
    made = {o.name for x in chain for o in x.outputs}
    avals = j.variables()
    inputs = list({a: avals[a] for x in chain for a in x.inputs if isinstance(a, str) and a not in made}.values())
    args = [Arg(tuple(v.shape), v.dtype, flat_values(value(v.name))) for v in inputs]
    ending = next(o.name for o in chain[-1].outputs if nonfinite_kinds.covers(_kinds(value(o.name)), kind))
    body = Jaxpr(inputs, [Equation(x.primitive, list(x.inputs), x.outputs, x.params, x.subs, x.src) for x in chain],
                 [ending])
    return Spec(_mode(spec, "forward"), body, args, x64=spec.x64)


def _kinds(value) -> str:
    return checked_value.named(checked_value.kinds_of(value))


def _on_to(j: Jaxpr, at: int, value, kind: str) -> list[Equation] | None:
    """The equations after `j.eqns[at]` that its non-finite values flow through, up to the first
    whose result holds `kind`: [] when its own result does, None when none does within
    MAX_FLOW equations."""
    carried = {o.name for o in j.eqns[at].outputs if _kinds(value(o.name))}
    if not carried:
        return None
    if any(nonfinite_kinds.covers(_kinds(value(v)), kind) for v in carried):
        return []
    chain = []
    for x in j.eqns[at + 1:]:
        bad = [o.name for o in x.outputs if _kinds(value(o.name))]
        if not bad or not carried & {a for a in x.inputs if isinstance(a, str)}:
            continue
        chain.append(x)
        carried.update(bad)
        if any(nonfinite_kinds.covers(_kinds(value(v)), kind) for v in bad):
            return chain
        if len(chain) >= MAX_FLOW:
            return None
    return None


def _calls(x: Equation, ops: tuple[str, ...]) -> bool:
    """Whether equation `x` is one of `ops` or binds one in a jaxpr of its own (`jax.nn.softmax`'s
    `exp`)."""
    return x.primitive in ops or any(y.primitive in ops for sub in x.subs for _, inner in sub.walk()
                                     for y in inner.eqns)


def _back_to(j: Jaxpr, at: int, op: tuple[str, ...]) -> list[Equation]:
    """The equations before `j.eqns[at]` on the ways from an `op` equation (or a call binding it) to
    its inputs, within MAX_FLOW equations before it; [] when no way starts at one."""
    first = max(0, at - MAX_FLOW)
    maker = {o.name: i for i in range(first, at) for o in j.eqns[i].outputs}
    reaches: dict[int, bool] = {}
    for i in range(first, at):  # in order: what an equation reads is made before it
        x = j.eqns[i]
        reaches[i] = _calls(x, op) or any(reaches.get(maker.get(a, -1), False) for a in x.inputs if isinstance(a, str))
    chosen: set[int] = set()
    todo = [maker[a] for a in j.eqns[at].inputs if isinstance(a, str) and a in maker]
    while todo:
        i = todo.pop()
        if i in chosen or not reaches[i]:
            continue
        chosen.add(i)
        if not _calls(j.eqns[i], op):
            todo += [maker[a] for a in j.eqns[i].inputs if isinstance(a, str) and a in maker]
    return [j.eqns[i] for i in sorted(chosen)]


def _unsummed(whole: Spec) -> Spec:
    """`whole`'s derivative per point: the same program without its sum, under `jvp`'s ones or, for
    `grad`, `vjp`'s (each point's derivative alone, as the operation is elementwise)."""
    new = whole.clone()
    if new.jaxpr.eqns[-1].primitive == "reduce_sum" and len(new.jaxpr.eqns) > 1:
        new.jaxpr.outputs = [new.jaxpr.eqns[-1].inputs[0]]
        new.jaxpr.eqns = new.jaxpr.eqns[:-1]
    new.transforms = [Transform("vjp") if t.kind == "grad" else t for t in new.transforms]
    return new
