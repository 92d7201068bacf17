"""Turning a JAX jaxpr into the traced-program spec and back into JAX objects.

The encoder builds the typed model (`reducer.levels.jaxpr.model`), whose JSON text is the spec's:
a spec jaxpr is `{"in": [[var, shape, dtype]…], "eqns": [eqn…], "out": [atom…]}`; an equation is
`{"p": primitive name, "in": [atom…], "out": [[var, shape, dtype]…], "params": {…}, "subs": [jaxpr…]}`;
an atom is a variable name or a literal `{"lit": value, "dtype": name}`. Nested jaxprs live in
`subs` (the body of `while`, `scan`, `cond` branches, an inner `jit`, an `enzyme_jax_ir` call),
never in `params` (a jaxpr parameter of another primitive, such as scatter's `update_jaxpr`, is in
`subs` too and `params` names its index). Parameters are encoded by `reducer.levels.jaxpr.params`;
anything it cannot express makes the equation unencodable. Call-like
primitives whose rules are Python functions (`custom_jvp_call`, `custom_vjp_call`, `remat`,
`closed_call`) are inlined while encoding (except the script's own custom rules, kept by
`reducer.levels.jaxpr.custom_rules`), and `custom_linear_solve` becomes its `solve` jaxpr.
Equations that only print (`jax.debug.print`) are left out.
An `enzyme_primal` equation is encoded as an `enzyme_jax_ir` call of its function only when it
is a plain call (no Enzyme derivative in its pipeline). Two pseudo-primitives stand for values: `__const__`
(recorded values, or ones when too large) and `__fill__` (a constant array: zeros or ones).
"""
from __future__ import annotations

import itertools

import numpy as np

from reducer.levels.jaxpr import call_records, custom_rules
from reducer.levels.jaxpr.model import Equation, Jaxpr, Literal, Var
from reducer.levels.jaxpr.params import (MAX_VALUES, Unencodable, array_of, encode_param, enzyme_options,
                                         flat_values)
INLINED = {"custom_jvp_call", "custom_jvp_call_jaxpr", "custom_vjp_call", "custom_vjp_call_jaxpr", "remat", "remat2",
           "checkpoint", "closed_call", "core_call", "call", "custom_vmap_call"}
SOLVES = {"custom_linear_solve"}  # inlined as their `solve` jaxpr
#: equations that only print (`jax.debug.print`, `jax.debug.callback`): left out, as they compute nothing
PRINTS = {"debug_print", "debug_callback"}


# -- encoding a jaxpr -----------------------------------------------------------------------------
class Encoder:
    """Encodes jaxprs with globally unique variable names `v0`, `v1` …"""

    def __init__(self, max_values: int = MAX_VALUES):
        self.counter = itertools.count()
        self.max_values = max_values
        self.in_rule = 0  # > 0 while a custom rule's own jaxpr is encoded: custom calls in it are inlined

    def fresh(self) -> str:
        return f"v{next(self.counter)}"

    def var(self, v, env: dict) -> Var:
        """A fresh spec variable for the JAX variable `v` (named in `env`)."""
        env[v], a = self.fresh(), v.aval
        if not hasattr(a, "shape"):
            raise Unencodable(f"a value of type {type(a).__name__}")
        return Var(env[v], tuple(int(d) for d in a.shape), str(a.dtype))

    def const_eqn(self, name: str, value) -> Equation:
        size = int(np.prod(np.shape(value), dtype=np.int64))
        params = {"values": flat_values(value)} if size <= self.max_values else {"fill": 1}
        return Equation("__const__" if "values" in params else "__fill__", [],
                        [Var(name, tuple(np.shape(value)), str(value.dtype))], params)

    def closed(self, closed) -> dict:
        """A ClosedJaxpr as the JSON data of a spec jaxpr (for callers writing spec data themselves)."""
        return self.closed_jaxpr(closed).to_data()

    def closed_jaxpr(self, closed) -> Jaxpr:
        """A ClosedJaxpr as a spec jaxpr; its constants become `__const__` equations."""
        env: dict = {}
        consts = []
        for var, value in zip(closed.jaxpr.constvars, closed.consts):
            env[var] = self.fresh()
            consts.append(self.const_eqn(env[var], value))
        body = self.jaxpr(closed.jaxpr, env)
        body.eqns = consts + body.eqns
        return body

    def jaxpr(self, jaxpr, env: dict | None = None) -> Jaxpr:
        env = dict(env or {})
        ins = [self.var(v, env) for v in jaxpr.invars]
        eqns: list = []
        self._eqns(jaxpr.eqns, env, eqns)
        return Jaxpr(ins, eqns, [self.atom(v, env) for v in jaxpr.outvars])

    def atom(self, v, env):
        from jax._src import core

        if isinstance(v, core.Literal):
            return Literal(flat_values(v.val)[0], str(v.aval.dtype))
        return env[v]

    def _eqns(self, eqns, env, out: list) -> None:
        for e in eqns:
            name = e.primitive.name
            if not self.in_rule and custom_rules.is_scripts_own(e) and self._custom(e, env, out):
                continue
            if name in PRINTS and not e.outvars:
                continue
            if name in INLINED or name in SOLVES:
                sub, args = _inlined(e)
                inner = sub.jaxpr if hasattr(sub, "jaxpr") else sub
                consts = list(getattr(sub, "consts", ()))
                local = {}
                for var, value in zip(inner.constvars, consts):
                    local[var] = self.fresh()
                    out.append(self.const_eqn(local[var], value))
                for var, a in zip(inner.invars, args):
                    local[var] = self.atom(a, env)
                self._eqns(inner.eqns, local, out)
                for var, o in zip(e.outvars, inner.outvars):
                    self._bind_out(var, self.atom(o, local), env, out)
                continue
            ins = [self.atom(a, env) for a in e.invars]
            eqn = Equation(name, ins, [self.var(var, env) for var in e.outvars])
            call_records.record(e, eqn)  # `src`: the public call it comes from, when a handled one
            with call_records.inside(eqn):
                self._special(e, eqn)
            out.append(eqn)

    def _custom(self, e, env, out: list) -> bool:
        """Encode the script's own custom rule `e` as such (False, and nothing written, when it cannot be)."""
        eqn = Equation("", [self.atom(a, env) for a in e.invars], [])
        try:
            custom_rules.encode(self, e, eqn)
        except Unencodable:
            return False
        eqn.outputs = [self.var(var, env) for var in e.outvars]
        out.append(eqn)
        return True

    def _bind_out(self, var, atom, env, out) -> None:
        if isinstance(atom, str):
            env[var] = atom
            return
        env[var] = self.fresh()  # a literal returned by an inlined call: a constant equation
        out.append(self.const_eqn(env[var], array_of([atom.value], (), atom.dtype)))

    def _special(self, e, eqn: Equation) -> None:
        name, p = e.primitive.name, e.params
        if name in ("jit", "pjit"):
            eqn.primitive = "jit"
            eqn.params = {"name": p.get("name", "f")}
            eqn.subs = [self.closed_jaxpr(p["jaxpr"])]
        elif name == "while":
            eqn.params = {"cond_nconsts": p["cond_nconsts"], "body_nconsts": p["body_nconsts"]}
            eqn.subs = [self.closed_jaxpr(p["cond_jaxpr"]), self.closed_jaxpr(p["body_jaxpr"])]
        elif name == "scan":
            eqn.params = {k: encode_param(p[k]) for k in ("num_consts", "num_carry", "length", "reverse")}
            eqn.params["unroll"] = int(p["unroll"])
            eqn.subs = [self.closed_jaxpr(p["jaxpr"])]
        elif name == "cond":
            eqn.subs = [self.closed_jaxpr(b) for b in p["branches"]]
            if p.get("branches_platforms") is not None:  # `lax.platform_dependent`: one branch lowered
                eqn.params = {"branches_platforms": encode_param(p["branches_platforms"])}
        elif name == "enzyme_primal":
            eqn.primitive = "enzyme"
            eqn.subs = [self.closed_jaxpr(enzyme_inner_jaxpr(e))]
            options = enzyme_options(p.get("argv", ()), True, p.get("pipeline_options"))
            if options:
                eqn.params = {"options": options}
        else:
            eqn.params = self.params(e, eqn.subs)

    def params(self, e, subs: list) -> dict:
        """The parameters of a plain primitive's equation; jaxprs among them go into `subs`."""
        from jax._src import core

        def nest(j) -> int:
            if isinstance(j, core.Jaxpr) and j.constvars:
                raise Unencodable("a Jaxpr parameter with constants")
            subs.append(self.closed_jaxpr(j) if isinstance(j, core.ClosedJaxpr) else self.jaxpr(j))
            return len(subs) - 1

        name, out, functions = e.primitive.name, {}, []
        for k, v in e.params.items():
            try:
                out[k] = encode_param(v, nest)
            except Unencodable as exc:
                if not callable(v):
                    raise Unencodable(f"{name}: {k}: {exc}") from None
                functions.append((k, exc))
        for k, exc in functions:  # a Python function beside the jaxpr it was traced to (reduce's computation)
            if not subs:
                raise Unencodable(f"{name}: {k}: {exc}")
            out[k] = {"fn_of": 0}
        return out


def _inlined(e):
    """The jaxpr an inlined call-like equation `e` stands for, and the equation's inputs it reads.

    `custom_linear_solve` is replaced by its `solve` function applied to its right-hand side (what
    the primitive computes; its implicit-differentiation rules are lost, and the reducer keeps the
    captured program only when the failure survives that)."""
    name, p = e.primitive.name, e.params
    if name in SOLVES:
        lengths = list(p["const_lengths"])
        start = sum(lengths[:2])  # matvec and vecmat constants come first, then solve's
        consts = list(e.invars[start:start + lengths[2]])
        return p["jaxprs"].solve, consts + list(e.invars[sum(lengths):])
    sub = p.get("call_jaxpr") or p.get("jaxpr") or p.get("fun_jaxpr")
    if sub is None:
        raise Unencodable(f"{name} without a jaxpr")
    return sub, list(e.invars)


def enzyme_inner_jaxpr(e):
    """The jaxpr of the Python function an `enzyme_primal` equation calls, over flat arguments."""
    import jax

    source, options = e.params["source"], e.params["pipeline_options"]
    if not isinstance(source, tuple) or len(source) != 5 or not callable(source[3]):
        raise Unencodable("enzyme_primal over a C++ or MLIR source")
    in_tree, in_idx, _, fun, _ = source
    if getattr(options, "ad_level", lambda: 0)() or len(e.invars) != in_tree.num_leaves or \
            any(i != k for i, k in in_idx):
        # what jax.grad / jax.jvp of an enzyme_jax_ir function leaves in a jaxpr: Enzyme's own
        # derivative, carried by its pass pipeline; capture the call through the transformation instead
        raise Unencodable("enzyme_primal carrying Enzyme's derivative (an enzyme-wrap pipeline)")

    def flat(*xs):
        args, kwargs = jax.tree_util.tree_unflatten(in_tree, list(xs))
        return jax.tree_util.tree_leaves(fun(*args, **kwargs))

    return jax.make_jaxpr(flat)(*[jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in e.invars])
