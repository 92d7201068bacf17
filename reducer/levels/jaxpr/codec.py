"""Turning a JAX jaxpr into the traced-program spec (plain JSON data) and back into JAX objects.

A spec jaxpr is `{"in": [[var, shape, dtype]…], "eqns": [eqn…], "out": [atom…]}`; an equation is
`{"p": primitive name, "in": [atom…], "out": [[var, shape, dtype]…], "params": {…}, "subs": [jaxpr…]}`;
an atom is a variable name or a literal `{"lit": value, "dtype": name}`. Nested jaxprs live in
`subs` (the body of `while`, `scan`, `cond` branches, an inner `jit`, an `enzyme_jax_ir` call),
never in `params`. Parameters are encoded by a restricted encoder (numbers, strings, tuples, dtypes,
enums, named tuples, small arrays); anything else makes the equation unencodable. Call-like
primitives whose rules are Python functions (`custom_jvp_call`, `custom_vjp_call`, `remat`,
`closed_call`) are inlined while encoding, and `custom_linear_solve` becomes its `solve` jaxpr.
An `enzyme_primal` equation is encoded as an `enzyme_jax_ir` call of its function only when it
is a plain call (no Enzyme derivative in its pipeline). Two pseudo-primitives stand for values: `__const__`
(recorded values, or ones when too large) and `__fill__` (a constant array: zeros or ones).
"""
from __future__ import annotations

import enum
import importlib
import itertools
import sys

import numpy as np

MAX_VALUES = 4096  # arrays up to this many elements keep their values
INLINED = {"custom_jvp_call", "custom_jvp_call_jaxpr", "custom_vjp_call", "custom_vjp_call_jaxpr", "remat", "remat2",
           "checkpoint", "closed_call", "core_call", "call", "custom_vmap_call"}
SOLVES = {"custom_linear_solve"}  # inlined as their `solve` jaxpr
VALUE_PRIMS = {"__const__", "__fill__"}


class Unencodable(Exception):
    """A parameter or equation the spec cannot express."""


# -- primitives by name ---------------------------------------------------------------------------
_REGISTRY: dict | None = None


def registry() -> dict:
    """name -> (Primitive, "module:attribute") for every primitive found in jax and enzyme_ad."""
    global _REGISTRY
    if _REGISTRY is not None:
        return _REGISTRY
    import jax  # noqa: F401
    from jax._src import core

    for name in ("jax._src.lax.lax", "jax._src.lax.control_flow", "jax._src.lax.slicing", "jax._src.lax.linalg",
                 "jax._src.lax.special", "jax._src.lax.fft", "jax._src.lax.convolution", "jax._src.lax.parallel",
                 "jax._src.lax.windowed_reductions", "jax._src.prng", "jax._src.ad_util",
                 "jax._src.lax.ann", "jax._src.lax.other", "enzyme_ad.jax.primitives"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    found: dict = {}
    rank: dict = {}
    for modname, mod in sorted(list(sys.modules.items())):
        if mod is None or not (modname.startswith("jax._src") or modname.startswith("enzyme_ad")):
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, core.Primitive):
                # the canonical spelling first: `name_p`, then any `…_p`, then a public attribute
                r = (attr == f"{value.name}_p", attr.endswith("_p"), not attr.startswith("_"))
                if value.name not in found or r > rank[value.name]:
                    found[value.name], rank[value.name] = (value, f"{modname}:{attr}"), r
    _REGISTRY = found
    return found


# -- parameters -----------------------------------------------------------------------------------
def _path(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(path: str):
    mod, qual = path.split(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def encode_param(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, np.dtype):
        return {"dtype": str(v)}
    if isinstance(v, type) and issubclass(v, np.generic):
        return {"dtype": str(np.dtype(v))}
    if isinstance(v, enum.Enum):
        return {"enum": _path(type(v)), "name": v.name}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"nt": _path(type(v)), "f": {k: encode_param(getattr(v, k)) for k in v._fields}}
    if isinstance(v, (tuple, list)):
        return {"t": [encode_param(x) for x in v]}
    if isinstance(v, (np.ndarray, np.generic)) and np.size(v) <= MAX_VALUES:
        return {"arr": np.asarray(v).tolist(), "dtype": str(np.asarray(v).dtype)}
    from jax.sharding import Sharding

    if isinstance(v, Sharding):
        return None  # candidates run on one device: where a value is placed does not matter
    raise Unencodable(f"parameter of type {type(v).__name__}")


def decode_param(d):
    if not isinstance(d, dict):
        return d
    if "dtype" in d and "arr" not in d:
        return np.dtype(d["dtype"]) if d["dtype"] != "bfloat16" else _bf16()
    if "enum" in d:
        return getattr(_resolve(d["enum"]), d["name"])
    if "nt" in d:
        return _resolve(d["nt"])(**{k: decode_param(x) for k, x in d["f"].items()})
    if "t" in d:
        return tuple(decode_param(x) for x in d["t"])
    if "arr" in d:
        arr = np.asarray(d["arr"], dtype=dtype_of(d["dtype"]))
        return arr[()] if arr.ndim == 0 else arr  # a NumPy scalar stays one: parameters are hashed
    raise ValueError(f"bad parameter encoding {d!r}")


def _bf16():
    import jax.numpy as jnp

    return jnp.dtype("bfloat16")


def dtype_of(name: str):
    return _bf16() if name == "bfloat16" else np.dtype(name)


# -- encoding a jaxpr -----------------------------------------------------------------------------
class Encoder:
    """Encodes jaxprs with globally unique variable names `v0`, `v1` …"""

    def __init__(self, max_values: int = MAX_VALUES):
        self.counter = itertools.count()
        self.max_values = max_values

    def fresh(self) -> str:
        return f"v{next(self.counter)}"

    @staticmethod
    def aval(v) -> tuple[list, str]:
        a = v.aval
        return [int(d) for d in a.shape], str(a.dtype)

    def const_eqn(self, name: str, value) -> dict:
        arr = np.asarray(value)
        params = {"values": arr.ravel().tolist()} if arr.size <= self.max_values else {"fill": 1}
        return {"p": "__const__" if "values" in params else "__fill__", "in": [],
                "out": [[name, list(arr.shape), str(arr.dtype)]], "params": params, "subs": []}

    def closed(self, closed) -> dict:
        """A ClosedJaxpr as a spec jaxpr; its constants become `__const__` equations."""
        env: dict = {}
        consts = []
        for var, value in zip(closed.jaxpr.constvars, closed.consts):
            env[var] = self.fresh()
            consts.append(self.const_eqn(env[var], value))
        body = self.jaxpr(closed.jaxpr, env)
        body["eqns"] = consts + body["eqns"]
        return body

    def jaxpr(self, jaxpr, env: dict | None = None) -> dict:
        env = dict(env or {})
        ins = []
        for v in jaxpr.invars:
            env[v] = self.fresh()
            ins.append([env[v], *self.aval(v)])
        eqns: list = []
        self._eqns(jaxpr.eqns, env, eqns)
        return {"in": ins, "eqns": eqns, "out": [self.atom(v, env) for v in jaxpr.outvars]}

    def atom(self, v, env):
        from jax._src import core

        if isinstance(v, core.Literal):
            val = np.asarray(v.val)
            return {"lit": val.item(), "dtype": str(v.aval.dtype)}
        return env[v]

    def _eqns(self, eqns, env, out: list) -> None:
        for e in eqns:
            name = e.primitive.name
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
            outs = []
            for var in e.outvars:
                env[var] = self.fresh()
                outs.append([env[var], *self.aval(var)])
            eqn = {"p": name, "in": ins, "out": outs, "params": {}, "subs": []}
            self._special(e, eqn)
            out.append(eqn)

    def _bind_out(self, var, atom, env, out) -> None:
        if isinstance(atom, str):
            env[var] = atom
            return
        env[var] = self.fresh()  # a literal returned by an inlined call: a constant equation
        out.append(self.const_eqn(env[var], np.asarray(atom["lit"], dtype=dtype_of(atom["dtype"]))))

    def _special(self, e, eqn: dict) -> None:
        name, p = e.primitive.name, e.params
        if name in ("jit", "pjit"):
            eqn["p"] = "jit"
            eqn["params"] = {"name": p.get("name", "f")}
            eqn["subs"] = [self.closed(p["jaxpr"])]
        elif name == "while":
            eqn["params"] = {"cond_nconsts": p["cond_nconsts"], "body_nconsts": p["body_nconsts"]}
            eqn["subs"] = [self.closed(p["cond_jaxpr"]), self.closed(p["body_jaxpr"])]
        elif name == "scan":
            eqn["params"] = {k: encode_param(p[k]) for k in ("num_consts", "num_carry", "length", "reverse")}
            eqn["params"]["unroll"] = int(p["unroll"])
            eqn["subs"] = [self.closed(p["jaxpr"])]
        elif name == "cond":
            eqn["subs"] = [self.closed(b) for b in p["branches"]]
        elif name == "enzyme_primal":
            eqn["p"] = "enzyme"
            eqn["subs"] = [self.closed(enzyme_inner_jaxpr(e))]
        else:
            try:
                eqn["params"] = {k: encode_param(v) for k, v in p.items()}
            except Unencodable as exc:
                raise Unencodable(f"{name}: {exc}") from None


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
